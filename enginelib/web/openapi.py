"""The API's OpenAPI 3.1 description, written by hand (Starlette does not generate one)."""

from __future__ import annotations

from typing import Any

from ..search.request import DEFAULTS, OPTIONS, is_flag, option_spec

_ERROR = {"description": "bad request: {error, type} says what to fix",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_JSON = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}

_JSON_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string"}


def _json_default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _search_property(name: str) -> dict[str, Any]:
    """One search option's schema, from the request type (search/request.py)."""
    spec = option_spec(name)
    schema: dict[str, Any] = {"description": spec.help, "x-option": name}
    if is_flag(name):  # true sets the option to the flag's value; left out, its default
        schema.update(type="boolean", default=False, description=spec.cli_help or spec.help)
        schema["x-sets"] = spec.flag
        schema["x-option-default"] = _json_default(DEFAULTS[name])
        return schema
    if spec.choices:
        schema["enum"] = list(spec.choices)
    elif name == "filters":
        schema["type"] = ["object", "string"]
        schema["description"] += " An object, or its JSON text."
    elif name in ("truth_levels", "weights"):
        schema["type"] = ["string", "array"]
    else:
        schema["type"] = _JSON_TYPES[spec.kind]
    if DEFAULTS[name] is not None:
        schema["default"] = _json_default(DEFAULTS[name])
    if spec.preset:
        schema["description"] += " Left out: the preset's value."
    return schema


_SEARCH_BODY = {
    "type": "object", "required": ["query"],
    "properties": {
        "query": {"type": "string"},
        **{spec.api: _search_property(name) for name in OPTIONS
           if (spec := option_spec(name)).api is not None},
        "snapshot": {"type": "string", "description": "search this snapshot, read-only"},
    },
}


def _op(summary: str, *, body: dict[str, Any] | None = None, ok: int = 200,
        params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary,
                          "responses": {str(ok): _JSON, "4XX": _ERROR, "5XX": _ERROR}}
    if body is not None:
        op["requestBody"] = {"content": {"application/json": {"schema": body}}}
    if params:
        op["parameters"] = params
    return op


def _query(name: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": kind}}


_DOC_ID = [{"name": "document_id", "in": "path", "required": True, "schema": {"type": "string"}}]

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "enginelib serve", "version": "1", "description": (
        "Any route answers 403 (Forbidden) to a POST or DELETE sent by a page on another "
        "origin, and, on 127.0.0.1, to a Host that is not this machine (serve --allow-host "
        "NAME admits a proxy's name). Clients that send no Origin are unaffected.")},
    "components": {
        "schemas": {"Error": {"type": "object", "properties": {
            "error": {"type": "string"}, "type": {"type": "string"}}}},
        "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
    },
    "security": [{"token": []}],
    "paths": {
        "/api/search": {
            "get": _op("Search (q=..., the other options as query parameters)",
                       params=[_query("q")]),
            "post": _op("Search with every CLI option", body=_SEARCH_BODY),
        },
        "/api/check-answer": {"post": _op(
            "Claim map of an answer against a search's citations",
            body={"type": "object", "required": ["answer", "search"], "properties": {
                "answer": {"type": "string"}, "search": _SEARCH_BODY}})},
        "/api/documents": {"get": _op("List documents", params=[
            _query("truth_levels"), _query("domain"), _query("source_type"), _query("tag"),
            _query("prefix"), _query("limit", "integer"), _query("offset", "integer")])},
        "/api/documents/{document_id}": {
            "get": _op("A document, its versions and chunk offsets", params=_DOC_ID),
            "delete": _op("Delete a document", params=_DOC_ID),
        },
        "/api/upload": {"post": {
            "summary": "Upload one file (multipart 'file'; truth_level, domain, source_type, "
                       "tags) and enqueue its ingestion",
            "responses": {"202": _JSON, "4XX": _ERROR, "5XX": _ERROR}}},
        "/api/jobs": {"get": _op("Job counts by status and the jobs",
                                 params=[_query("status")])},
        "/api/jobs/retry-dlq": {"post": _op("DLQ jobs back to PENDING")},
        "/api/jobs/purge-done": {"post": _op("Move DONE jobs to history; returns the count")},
        "/api/sources": {"get": _op("Sources: documents and jobs not done")},
        "/api/stats": {"get": _op("Store statistics")},
        "/api/presets": {"get": _op("Search preset names")},
        "/api/health": {"get": _op("Liveness")},
    },
}
