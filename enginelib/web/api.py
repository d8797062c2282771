"""The JSON API under /api/: thin handlers over the Service, errors as 4xx JSON."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive

from ..errors import (
    BackendError,
    CorruptStoreError,
    DamagedSnapshotError,
    DiskFullError,
    DocumentNotFoundError,
    EmbeddingError,
    EngineError,
    InvalidInputError,
    JobNotFoundError,
    JobStateError,
    LengthRequiredError,
    PayloadTooLargeError,
    QueueFullError,
    RankingChangedError,
    ReadOnlyStoreError,
    StorageError,
    StoreLockedError,
    UnsupportedFormatError,
)
from ..jobs.times import utc_iso
from ..search.request import more_names, shown_names
from ..validation import MAX_ID_CHARS, MAX_TAGS, too_long_number
from .public import Paths
from .security import safe_upload_name
from .service import DuplicateKeyError, Service, check_known, unique_keys

Handler = Callable[[Request], Awaitable[Response]]


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        # Every time the API answers says its offset: the catalog keeps naive UTC, and a bare
        # time was read as local time by whoever parsed it (a document's dates were, while a
        # job's carried +00:00).
        return utc_iso(value)
    if isinstance(value, date):
        return value.isoformat()  # a day has no time of day to put in a zone
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def reply(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, default=_default, ensure_ascii=False)
    return Response(body, status_code=status, media_type="application/json")


def error_reply(exc: Exception, paths: Paths | None = None) -> Response:
    """The error as JSON with its HTTP status; ``paths``: the server's paths in its message
    are replaced by the names a client is shown (``public``)."""
    status = 400
    if isinstance(exc, (DocumentNotFoundError, JobNotFoundError)):
        status = 404
    elif isinstance(exc, PayloadTooLargeError):
        status = 413
    elif isinstance(exc, LengthRequiredError):
        status = 411
    elif isinstance(exc, SlowBodyError):
        status = 408
    elif isinstance(exc, UnsupportedFormatError):
        status = 415
    elif isinstance(exc, QueueFullError):
        status = 429  # Too Many Requests: the same upload is taken later
    elif isinstance(exc, (StoreLockedError, ReadOnlyStoreError, JobStateError,
                          RankingChangedError)):
        status = 409  # Conflict: the store's state, or the job's, refuses it now
    elif isinstance(exc, DiskFullError):
        status = 507  # Insufficient Storage: the server's disk, not the request
    elif isinstance(exc, (StorageError, CorruptStoreError, DamagedSnapshotError, BackendError,
                          EmbeddingError)):
        status = 503  # the server cannot serve this now; the request itself was fine
    elif not isinstance(exc, (InvalidInputError, EngineError)):
        status = 500
    message = str(exc) if paths is None else paths.text(str(exc))
    return JSONResponse({"error": message, "type": type(exc).__name__}, status_code=status)


def client_gone() -> Response:
    """The answer to a client that hung up before its body was complete. Nobody reads it;
    returning it (not raising) keeps a closed laptop or a cancelled upload out of the server
    log's tracebacks. Nothing was done: the body is read before anything is queued."""
    return Response(status_code=400)


def endpoint(action: Callable[[Service, Request], Any], status: int = 200, *,
             query: bool = False, fields: tuple[str, ...] | None = ()) -> Handler:
    """A handler that runs ``action`` in the thread pool (it blocks on the store).

    ``query``: ``action`` reads (and checks) the query string; otherwise it must be empty.
    ``fields``: the JSON body's fields, or None where ``action`` checks them itself.
    """

    async def handle(request: Request) -> Response:
        service: Service = request.app.state.service
        try:
            # Whatever a route does not read is refused, not dropped: ?limit=3 on a POST
            # search, or {"job_id": 7} to retry-dlq, would get an answer that ignored it.
            if not query:
                _takes_none(_query_params(request), request, "query parameters")
            body = (await _body(Request(request.scope, _idle_bounded(request.receive)))
                    if request.method == "POST" else None)
            if body is not None and fields == ():
                _takes_none(body, request, "body fields")
            elif body is not None and fields is not None:
                check_known(body, fields, f"{request.url.path} field")
            request.state.body = body
            data = await run_in_threadpool(action, service, request)
        except (EngineError, ValueError) as exc:
            return error_reply(exc, service.paths)
        except ClientDisconnect:
            return client_gone()
        return reply(service.paths.view(data), status)

    return handle


# A JSON request is a query, filters or an answer to check with its search: far below this.
# Without a cap a client could make the server hold any amount of memory.
MAX_JSON_BYTES = 16 * 1024 * 1024


_FORM_HINT = (" (uploads go to /api/upload): e.g. curl -H 'Content-Type: application/json' "
              "-d '{\"query\": \"brake pads\"}'")


async def _body(request: Request) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "").lower()
    if "multipart/form-data" in content_type:
        # Was taken for an empty body, unread: `curl -F query=brakes` was told "no query
        # given", a form's fields posted to check-answer or retry-dlq were dropped unseen.
        raise InvalidInputError(f"{request.method} {request.url.path} takes a JSON object, not "
                                f"a multipart form{_FORM_HINT}")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_JSON_BYTES:
        raise PayloadTooLargeError(_json_too_large(int(declared)))
    chunks, size = [], 0
    async for chunk in request.stream():  # a chunked body has no length to check first
        size += len(chunk)
        if size > MAX_JSON_BYTES:
            raise PayloadTooLargeError(_json_too_large(size))
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw, object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:
        raise InvalidInputError(f"request body: {exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        # `curl -d` sends a form's type: its JSON is read as JSON, its name=value pairs are not
        hint = _FORM_HINT if "x-www-form-urlencoded" in content_type else ""
        raise InvalidInputError(f"request body is not valid JSON: {exc}{hint}") from exc
    except ValueError as exc:  # it said "use sys.set_int_max_str_digits()", the server's call
        raise InvalidInputError(too_long_number("request body")) from exc
    except RecursionError as exc:  # json's parser recurses once per level of nesting
        raise InvalidInputError("request body is nested too deeply to parse: a search or an "
                                "answer to check is an object a few levels deep") from exc
    if not isinstance(data, dict):
        raise InvalidInputError("request body must be a JSON object")
    return data


async def upload(request: Request) -> Response:
    service: Service = request.app.state.service
    limit = service.max_upload_bytes
    try:
        # The size is known before anything is parsed or spooled; a body of unknown length
        # (chunked) could be any size, so it is refused.
        if not request.headers.get("content-length", "").isdigit():
            raise LengthRequiredError("upload needs a Content-Length header (no chunked bodies)")
        declared = int(request.headers["content-length"])
        if declared > limit + 64 * 1024:  # multipart framing on top of the file itself
            raise PayloadTooLargeError(_too_large(declared, limit))
        if "multipart/form-data" not in request.headers.get("content-type", ""):
            raise InvalidInputError("upload with multipart/form-data: a 'file' field "
                                    "(and optional truth_level, domain, source_type, tags)")
        # The length said is the most read: a body sent chunked as well (Transfer-Encoding
        # beside Content-Length: the server reads the chunks) was spooled to disk whole,
        # whatever its size, before the file in it was found too large.
        request = Request(request.scope,
                          _idle_bounded(_at_most(request.receive, declared)))
        async with request.form(max_files=1, max_fields=20,
                                max_part_size=MAX_UPLOAD_FIELD_BYTES) as form:
            item = form.get("file")
            if item is None or isinstance(item, str):
                raise InvalidInputError("the form has no 'file' field with a file in it")
            # A misspelt field (truthlevel=L1) left out would file the document at L2.
            check_known(dict(form), UPLOAD_FIELDS, "upload field")
            # A field given twice kept its last value: `-F tags=a -F tags=b` filed tag b alone.
            counts = Counter(key for key, _ in form.multi_items())
            repeated = sorted(key for key, count in counts.items() if count > 1)
            if repeated:
                raise InvalidInputError(
                    f"upload field(s) {repeated} given more than once: send each once (several "
                    "tags as one comma-separated field: tags=gdpr,erasure)")
            name = safe_upload_name(item.filename or "")
            data = await item.read(limit + 1)
            if len(data) > limit:
                raise PayloadTooLargeError(_too_large(len(data), limit))
            options: dict[str, Any] = {"truth_level": str(form.get("truth_level") or "L2")}
            for key in ("domain", "source_type"):
                if form.get(key):
                    options[key] = str(form.get(key))
            if form.get("tags"):
                options["tags"] = [t.strip() for t in str(form.get("tags")).split(",") if t.strip()]
        result = await run_in_threadpool(service.upload, name, data, options)
    except (EngineError, ValueError) as exc:
        return error_reply(exc, service.paths)
    except HTTPException as exc:  # what Starlette raises for a body its form parser refuses
        return error_reply(_form_error(exc))
    except ClientDisconnect:
        return client_gone()
    return reply(result, 202)


# How long a request's body may stop coming before the request is answered 408: a client that
# sent fewer bytes than its Content-Length said held its connection, and the handler waiting
# for the rest, for ever (uvicorn bounds the head and idle keep-alive, not a body).
BODY_IDLE_S = 30.0


class SlowBodyError(InvalidInputError):
    """No part of the request's body came for BODY_IDLE_S (408 Request Timeout)."""


def _idle_bounded(receive: Receive) -> Receive:
    """``receive``, giving up with SlowBodyError when nothing comes for BODY_IDLE_S."""

    async def bounded() -> Message:
        try:
            with anyio.fail_after(BODY_IDLE_S):
                return await receive()
        except TimeoutError:
            raise SlowBodyError(
                f"no part of the request's body came for {BODY_IDLE_S:g} s: send the whole body "
                "its Content-Length announces, without pauses") from None

    return bounded


def _at_most(receive: Receive, declared: int) -> Receive:
    """``receive``, refusing a body longer than the ``declared`` Content-Length."""
    received = 0

    async def bounded() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > declared:
                raise InvalidInputError(
                    f"the upload's body is longer than its Content-Length ({declared:,} bytes): "
                    "send the length of the body, and no Transfer-Encoding beside it")
        return message

    return bounded


UPLOAD_FIELDS = ("file", "truth_level", "domain", "source_type", "tags")
# The largest form field beside the file: the tags, MAX_TAGS of MAX_ID_CHARS characters of up
# to 4 UTF-8 bytes, and their commas. Starlette's own 1 MiB took a field of 20,000 tags.
MAX_UPLOAD_FIELD_BYTES = MAX_TAGS * (MAX_ID_CHARS * 4 + 1)


def _form_error(exc: HTTPException) -> InvalidInputError:
    """The multipart parser's words are about its limits and the wire format: add what to send."""
    if str(exc.detail).startswith("Too many files"):
        return InvalidInputError("upload one file per request, in the 'file' field")
    if str(exc.detail).startswith(("Part exceeded", "Field exceeded")):
        return PayloadTooLargeError(
            f"a form field beside the file is over {MAX_UPLOAD_FIELD_BYTES:,} bytes: tags take at "
            f"most {MAX_TAGS} of at most {MAX_ID_CHARS:,} characters each, comma-separated")
    return InvalidInputError(
        f"the upload is not a valid multipart/form-data body ({exc.detail}): send the file in "
        "a 'file' field, as `curl -F file=@notes.md http://HOST:PORT/api/upload` does")


def _json_too_large(size: int) -> str:
    return (f"request body of {size:,}+ bytes exceeds the limit of {MAX_JSON_BYTES:,} bytes for "
            "a JSON request; send the query, not the documents (upload files with /api/upload)")


def _too_large(size: int, limit: int) -> str:
    return (f"upload of {size} bytes exceeds the limit of {limit} bytes; split the file or "
            "restart serve with a larger --max-upload-mb")


def _search(service: Service, request: Request) -> Any:
    if request.method == "POST":
        # A POST's options are in its body: ?limit=3 beside it would be dropped unseen.
        _takes_none(_query_params(request), request, "query parameters (send every option "
                    "in the JSON body)")
        return service.search(request.state.body)
    params = _query_params(request)
    if "q" in params:
        if "query" in params:
            raise InvalidInputError("give the query as q or as query, not both")
        params["query"] = params.pop("q")
    return service.search(params, text=True)


def _takes_none(given: dict[str, Any], request: Request, what: str) -> None:
    if given:
        raise InvalidInputError(f"{request.method} {request.url.path} takes no {what}; got "
                                f"{shown_names(given)}{more_names(given)}")


def _document(service: Service, request: Request) -> Any:
    data = service.document(request.path_params["document_id"])
    doc = dict(data["document"])
    doc["text"] = doc.pop("content")
    chunks = [{k: c[k] for k in ("chunk_index", "start_offset", "end_offset", "token_count",
                                   "heading_path", "page_start", "page_end", "label")}
              for c in data["chunks"]]
    return {"document": doc, "versions": data["versions"], "chunks": chunks}


def _delete(service: Service, request: Request) -> Any:
    service.delete(request.path_params["document_id"])
    return {"deleted": request.path_params["document_id"]}


def _document_or_delete(service: Service, request: Request) -> Any:
    # One route for both methods: with a route per method, a 405 there (and its Allow
    # header) named only the first route's GET, HEAD, never DELETE.
    return (_delete if request.method == "DELETE" else _document)(service, request)


def _query_params(request: Request) -> dict[str, str]:
    """The query string as parameters, less the token (checked by the middleware)."""
    # A parameter given twice would keep only its last value, the other dropped unseen.
    counts = Counter(name for name, _ in request.query_params.multi_items())
    repeated = [name for name, count in counts.items() if count > 1]
    if repeated:
        raise InvalidInputError(f"query parameter(s) {shown_names(repeated)}{more_names(repeated)} "
                                "given more than once: send each "
                                "once (several truth levels as one list: truth_levels=L1,L2)")
    params = dict(request.query_params)
    params.pop("token", None)
    return params


def _documents(service: Service, request: Request) -> Any:
    return service.documents(_query_params(request))


def _jobs(service: Service, request: Request) -> Any:
    return service.jobs_page(_query_params(request))


def _job_history(service: Service, request: Request) -> Any:
    return service.job_history(_query_params(request))


def _drop_job(service: Service, request: Request) -> Any:
    job_id = request.path_params["job_id"]
    return {"dropped": service.drop_job(job_id), "job_id": job_id}


def _cancel_job(service: Service, request: Request) -> Any:
    job_id = request.path_params["job_id"]
    return {"cancelled": service.cancel_job(job_id), "job_id": job_id}


async def not_found(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    # A 405 must say which methods the route takes (RFC 9110): Starlette's Allow header.
    headers = exc.headers
    path = request.url.path
    if not path.startswith("/api/"):
        # every error the server answers has the same two fields, pages' too
        kind = "NotFound" if exc.status_code == 404 else "HTTPError"
        return JSONResponse({"error": str(exc.detail), "type": kind},
                            status_code=exc.status_code, headers=headers)
    message, kind = str(exc.detail), "NotFound"
    if exc.status_code == 404:
        message = f"no API route {request.method} {path}; see /api/openapi.json"
    elif exc.status_code == 405:
        allowed = (headers or {}).get("Allow", "other methods")
        message = (f"{request.method} is not allowed on {path}: it takes {allowed}; "
                   "see /api/openapi.json")
        kind = "MethodNotAllowed"
    return JSONResponse({"error": message, "type": kind}, status_code=exc.status_code,
                        headers=headers)


async def internal_error(request: Request, exc: Exception) -> Response:
    """What a client gets for a bug: JSON it can parse, saying it is ours (the traceback goes
    to the server's log, where Starlette re-raises it), instead of a plain-text 500."""
    return JSONResponse(
        {"error": f"internal error ({type(exc).__name__}): this is a bug in enginelib; the "
                  "server log has the traceback to report", "type": "InternalError"},
        status_code=500,
    )


ROUTES = [
    Route("/api/health", endpoint(lambda s, r: {"ok": True}), methods=["GET"]),
    Route("/api/openapi.json", endpoint(lambda s, r: r.app.state.openapi), methods=["GET"]),
    Route("/api/search", endpoint(_search, query=True, fields=None), methods=["GET", "POST"]),
    Route("/api/check-answer", endpoint(lambda s, r: s.check_answer(r.state.body),
                                        fields=("answer", "search")), methods=["POST"]),
    Route("/api/documents", endpoint(_documents, query=True), methods=["GET"]),
    Route("/api/documents/{document_id:path}", endpoint(_document_or_delete),
          methods=["GET", "DELETE"]),
    Route("/api/upload", upload, methods=["POST"]),
    Route("/api/jobs", endpoint(_jobs, query=True), methods=["GET"]),
    Route("/api/jobs/history", endpoint(_job_history, query=True), methods=["GET"]),
    Route("/api/jobs/retry-dlq",
          endpoint(lambda s, r: {"retried": s.retry_dlq()}), methods=["POST"]),
    Route("/api/jobs/purge-done",
          endpoint(lambda s, r: {"purged": s.purge_done()}), methods=["POST"]),
    Route("/api/jobs/drop-dlq",
          endpoint(lambda s, r: {"dropped": s.drop_dlq()}), methods=["POST"]),
    # digits only: another word after /api/jobs/ is no job, and answers 404 (405 for the
    # POST-only routes above) rather than "not a whole number"
    Route("/api/jobs/{job_id:int}", endpoint(_drop_job), methods=["DELETE"]),
    Route("/api/jobs/{job_id:int}/cancel", endpoint(_cancel_job), methods=["POST"]),
    Route("/api/sources", endpoint(lambda s, r: s.sources()), methods=["GET"]),
    Route("/api/stats", endpoint(lambda s, r: s.stats()), methods=["GET"]),
    Route("/api/presets", endpoint(lambda s, r: s.presets()), methods=["GET"]),
]
