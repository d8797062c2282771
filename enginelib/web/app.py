"""The `serve` application: API + pages on Starlette, the worker started with it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from ..validation import MAX_QUERY_CHARS
from . import api, pages
from .openapi import openapi_document
from .origin_guard import OriginGuard
from .security import TokenMiddleware, check_token
from .service import Service

# A GET search carries its query in the URL: up to MAX_QUERY_CHARS characters of up to 4 UTF-8
# bytes, each byte written %XX, besides the other options. With h11's default (16 KiB) a long
# query got uvicorn's plain-text 400 "Invalid HTTP request received.", not the API's JSON.
MAX_REQUEST_HEAD_BYTES = MAX_QUERY_CHARS * 12 + 64 * 1024


# How long a stop (SIGTERM, Ctrl-C) waits for the requests in progress before it cancels them.
# uvicorn's default waits for ever: one client that stopped sending its upload's body kept serve
# running after SIGTERM until that client hung up. A request cut short did nothing: an upload
# is queued only once its body is whole, and the job under way is finished (Service.stop).
GRACEFUL_SHUTDOWN_S = 10


def server_config(app: Starlette, **options: Any) -> Any:
    """The uvicorn.Config `serve` runs ``app`` with (uvicorn is imported only to serve)."""
    import uvicorn

    return uvicorn.Config(app, log_level="warning",
                          h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
                          timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S, **options)


def create_app(
    service: Service, *, token: str | None = None, worker: bool = True,
    on_stop: Callable[[], None] | None = None, check_host: bool | None = None,
    allow_hosts: Iterable[str] = (),
) -> Starlette:
    """The ASGI app over ``service``; with ``token`` every request must carry it. ``on_stop``
    runs at shutdown, before the server returns (uvicorn then re-raises the signal that
    stopped it, so code after ``run`` may never run).

    A write from a page on another origin is always refused (``origin_guard``). ``check_host``
    (default: when there is no token) refuses a Host header that is not this machine or one
    of ``allow_hosts``: served on loopback without a token, that is what stops a page whose
    name was made to resolve here (DNS rebinding) from reading the store.
    """

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.warm()
        if worker:
            service.start()
        try:
            yield
        finally:
            service.stop()
            if on_stop is not None:
                on_stop()

    if token is not None:
        check_token(token)
    guard = Middleware(OriginGuard, check_host=token is None if check_host is None
                       else check_host, allow_hosts=allow_hosts)
    middleware = [guard, *([Middleware(TokenMiddleware, token=token)] if token else [])]
    app = Starlette(
        routes=[*api.ROUTES, *pages.ROUTES], middleware=middleware, lifespan=lifespan,
        exception_handlers={HTTPException: api.not_found, 500: api.internal_error},
    )
    app.state.service = service
    app.state.openapi = openapi_document(token=bool(token))
    return app
