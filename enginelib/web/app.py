"""The `serve` application: API + pages on Starlette, the worker started with it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from . import api, pages
from .security import TokenMiddleware
from .service import Service


def create_app(
    service: Service, *, token: str | None = None, worker: bool = True,
    on_stop: Callable[[], None] | None = None,
) -> Starlette:
    """The ASGI app over ``service``; with ``token`` every request must carry it. ``on_stop``
    runs at shutdown, before the server returns (uvicorn then re-raises the signal that
    stopped it, so code after ``run`` may never run)."""

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

    middleware = [Middleware(TokenMiddleware, token=token)] if token else []
    app = Starlette(
        routes=[*api.ROUTES, *pages.ROUTES], middleware=middleware, lifespan=lifespan,
        exception_handlers={HTTPException: api.not_found, 500: api.internal_error},
    )
    app.state.service = service
    return app
