"""The `serve` application: API + pages on Starlette, the worker started with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from . import api, pages
from .security import TokenMiddleware
from .service import Service


def create_app(service: Service, *, token: str | None = None, worker: bool = True) -> Starlette:
    """The ASGI app over ``service``; with ``token`` every request must carry it."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.warm()
        if worker:
            service.start()
        try:
            yield
        finally:
            service.stop()

    middleware = [Middleware(TokenMiddleware, token=token)] if token else []
    app = Starlette(
        routes=[*api.ROUTES, *pages.ROUTES], middleware=middleware, lifespan=lifespan,
        exception_handlers={HTTPException: api.not_found, 500: api.internal_error},
    )
    app.state.service = service
    return app
