"""The API's OpenAPI 3.1 description, written by hand (Starlette does not generate one)."""

from __future__ import annotations

from typing import Any

_ERROR = {"description": "bad request: {error, type} says what to fix",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_JSON = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}

_SEARCH_BODY = {
    "type": "object", "required": ["query"],
    "properties": {
        "query": {"type": "string"},
        "strategy": {"enum": ["vector", "fulltext", "hybrid", "auto"], "default": "hybrid"},
        "limit": {"type": "integer", "default": 10}, "offset": {"type": "integer", "default": 0},
        "filters": {"type": ["object", "string"], "description": "object, or its JSON text"},
        "truth_levels": {"type": ["string", "array"], "default": "L1,L2"},
        "fusion": {"enum": ["rrf", "weighted"]}, "preset": {"type": "string"},
        "min_score": {"type": "number"}, "diversify": {"type": "boolean"},
        "boost": {"type": "boolean"}, "no_gate": {"type": "boolean"},
        "snapshot": {"type": "string", "description": "search this snapshot, read-only"},
    },
}


def _op(summary: str, *, body: dict[str, Any] | None = None, ok: int = 200,
        params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {str(ok): _JSON, "4XX": _ERROR}}
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
    "info": {"title": "enginelib serve", "version": "1"},
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
            "responses": {"202": _JSON, "4XX": _ERROR}}},
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
