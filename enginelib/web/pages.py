"""The HTML pages: ingestion console, evidence inspector, document view (Jinja2, no CDN)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import DocumentNotFoundError, InvalidInputError
from ..types import TRUTH_LEVELS

HERE = Path(__file__).parent
_env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape())


def render(name: str, status: int = 200, **context: object) -> HTMLResponse:
    return HTMLResponse(_env.get_template(name).render(**context), status_code=status)


async def console(request: Request) -> Response:
    return render("console.html", page="console")


async def inspect(request: Request) -> Response:
    presets = await run_in_threadpool(request.app.state.service.presets)
    return render("inspect.html", page="inspect", presets=presets, levels=list(TRUTH_LEVELS))


async def document(request: Request) -> Response:
    document_id = request.path_params["document_id"]
    try:
        data = await run_in_threadpool(request.app.state.service.document, document_id)
    except DocumentNotFoundError as exc:
        return render("document.html", status=404, page="document", error=str(exc),
                      error_title="Not found")
    except InvalidInputError as exc:  # an id no document can have: empty, NUL, too long
        return render("document.html", status=400, page="document", error=str(exc),
                      error_title="Bad request")
    text = data["document"]["content"]
    start = _offset(request.query_params.get("start"), len(text))
    end = _offset(request.query_params.get("end"), len(text))
    if start is None or end is None or end < start:
        start = end = None
    parts = (text, "", "") if start is None else (text[:start], text[start:end], text[end:])
    return render("document.html", page="document", doc=data["document"], before=parts[0],
                  marked=parts[1], after=parts[2], start=start, end=end)


def _offset(value: str | None, length: int) -> int | None:
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses. A number with more
    # digits than the text's length is past its end; int() refuses beyond 4,300 digits.
    if value is None or not (value.isascii() and value.isdigit()):
        return None
    digits = value.lstrip("0") or "0"
    return length if len(digits) > len(str(length)) else min(int(digits), length)


ROUTES = [
    Route("/", console, methods=["GET"]),
    Route("/inspect", inspect, methods=["GET"]),
    Route("/documents/{document_id:path}", document, methods=["GET"]),
    Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
]
