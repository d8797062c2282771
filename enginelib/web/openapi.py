"""The API's OpenAPI 3.1 description, written by hand (Starlette does not generate one).

It says what the handlers really take and give: each parameter's JSON type and bounds (read
from search/request.py and validation.py, where the checks live), the fields a body may
have, the shape of each answer, and the token only where the server asks for one. A
schema-driven client or test generator (schemathesis) must find nothing it calls valid
refused for its type, nothing it calls invalid accepted, no answer off its schema.
"""

from __future__ import annotations

import copy
from typing import Any

from ..documents import MAX_LIST_OFFSET, MAX_LISTED
from ..jobs.queue import DEFAULT_LISTED
from ..jobs.table import HISTORY_STATUSES, STATUSES
from ..search.ranked_at import TOKEN_PATTERN
from ..search.request import DEFAULTS, OPTIONS, is_flag, option_spec
from ..types import TRUTH_LEVELS
from ..validation import _FLOAT_OPTIONS, _INT_OPTIONS, MAX_ID_CHARS, MAX_QUERY_CHARS, MAX_TAGS
from .service import MAX_ANSWER_CHARS

_ERROR_CODES = (
    "400 the request is wrong (the message says what to send); 401 no or a wrong token (a "
    "server started with --token); 403 a write from a page on another origin, or a Host that "
    "is not this machine; 404 no such document, job or route; 405 a method the route does "
    "not take (Allow lists those it does); 408 a body that stopped coming before its "
    "Content-Length was sent; 409 the store is locked or read-only, the job "
    "is not in the DLQ, or the store changed since the ranking a search's ranked_at names "
    "(start again from offset 0); 411 an upload "
    "without Content-Length; 413 a body over its limit; 415 a file type no loader reads; 429 "
    "an upload while as many as the server takes wait for its worker (send it again later)")
_ERROR = {"description": _ERROR_CODES,
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_SERVER_ERROR = {
    "description": "500 a bug in enginelib (the server log has the traceback); 503 the store "
                   "cannot serve now (storage, embedding model); 507 the server's disk is full",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}

_JSON_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string"}
_STRING = {"type": "string"}
_NULLABLE_STRING = {"type": ["string", "null"]}
_INT = {"type": "integer"}
# A query: what the search refuses by its form (empty, too long). Not every text that fits
# is answered: one with no searchable word ("!!!") or unbalanced syntax is a 400 that says so.
# Some text besides whitespace, and no NUL (refused: DuckDB stores it, Postgres cannot). \S
# would not do: Python's strip() also drops \x1c-\x1f, so text of those alone is empty.
_NOT_BLANK = r"^[^\x00]*[^\s\x00\x1c-\x1f][^\x00]*$"
_QUERY_TEXT = {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
               "pattern": _NOT_BLANK}
_SWITCH_WORDS = ("^\\s*(|1|0|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Yy][Ee][Ss]|[Nn][Oo]|[Oo][Nn]"
                 "|[Oo][Ff][Ff])\\s*$")
_LEVEL = r"\s*[Ll][1-4]\s*"  # "3" alone is not a level; the JSON number 3 is
_LEVELS_TEXT = {"type": "string", "pattern": rf"^({_LEVEL}(,{_LEVEL})*)?$"}


def _json_default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _bounds(name: str, schema: dict[str, Any]) -> None:
    bounds = _INT_OPTIONS.get(name) or _FLOAT_OPTIONS.get(name)
    if bounds is not None:
        schema["minimum"], schema["maximum"] = bounds


def _search_property(name: str, *, text: bool = False) -> dict[str, Any]:
    """One search option's schema, from the request type (search/request.py): as a JSON
    body's value, or (``text``) as a query-string parameter."""
    spec = option_spec(name)
    schema: dict[str, Any] = {"description": spec.help, "x-option": name}
    if is_flag(name):  # true sets the option to the flag's value; left out, its default
        schema.update(type="boolean", default=False, description=spec.cli_help or spec.help)
        schema["x-sets"] = spec.flag
        schema["x-option-default"] = _json_default(DEFAULTS[name])
    elif spec.choices:
        schema.update(type="string", enum=list(spec.choices))
    elif name == "filters":
        schema["description"] += " An object, or its JSON text."
        if not text:
            schema["type"] = ["object", "string"]
        else:
            schema["description"] += (" A date bound's '+' offset is best sent as %2B; one "
                                      "that arrived as a space after the time is read as '+'.")
    elif name == "ranked_at":  # only a token's form is taken; "" is left out
        schema.update(type="string", pattern=TOKEN_PATTERN)
    elif name == "truth_levels":
        schema["description"] += " A list, or comma-separated text (L1,L2)."
        schema.update(_LEVELS_TEXT)
        if not text:
            schema["type"] = ["string", "array"]
            schema["items"] = {"anyOf": [{"type": "string", "pattern": f"^{_LEVEL}$"},
                                         {"type": "integer", "minimum": 1, "maximum": 4}]}
    elif name == "weights":
        schema["description"] += (" JSON: [VECTOR, BM25], or {\"vector\": .., \"bm25\": ..} "
                                  "(a key left out weighs 0); not both 0.")
        if not text:
            number = {"type": "number", "minimum": 0, "maximum": 1e6}
            schema["type"] = ["string", "array", "object"]
            schema.update(items=number, minItems=2, maxItems=2, minProperties=1,
                          properties={"vector": number, "bm25": number, "fulltext": number},
                          additionalProperties=False,
                          # bm25 and fulltext name one method: both is refused
                          **{"not": {"type": "object", "required": ["bm25", "fulltext"]}})
    else:
        schema["type"] = _JSON_TYPES[spec.kind]
        _bounds(name, schema)
    if text:
        # A query string's empty value is a form's empty field: left out. A switch also
        # takes its on/off words.
        kind = schema.pop("type", "string")
        bounds = {k: schema.pop(k) for k in ("minimum", "maximum", "enum") if k in schema}
        if kind == "string" and not bounds:
            schema["type"] = "string"
        else:
            empty = {"type": "string", "pattern": _SWITCH_WORDS if is_flag(name) else "^$"}
            schema["anyOf"] = [{"type": kind, **bounds}, empty]
    elif "type" in schema:  # null, like leaving it out, gives the default
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        schema["type"] = [*kinds, "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    if not is_flag(name) and DEFAULTS[name] is not None:
        schema["default"] = _json_default(DEFAULTS[name])
    if spec.preset:
        schema["description"] += " Left out: the preset's value."
    return schema


_SNAPSHOT = {"type": "string", "pattern": "^([A-Za-z0-9_][A-Za-z0-9._-]{0,99})?$",
             "description": "search this snapshot, read-only (empty: the live store)"}
_SEARCH_BODY: dict[str, Any] = {
    "type": "object", "required": ["query"], "additionalProperties": False,
    "properties": {
        "query": _QUERY_TEXT,
        **{spec.api: _search_property(name) for name in OPTIONS
           if (spec := option_spec(name)).api is not None},
        "snapshot": {**_SNAPSHOT, "type": ["string", "null"]},
    },
}


def _search_query_parameters() -> list[dict[str, Any]]:
    params = [{"name": "q", "in": "query", "required": True, "schema": _QUERY_TEXT,
               "description": "the words to search for (or give them as query=)"}]
    for name in OPTIONS:
        spec = option_spec(name)
        if spec.api is None:
            continue
        schema = _search_property(name, text=True)
        description = schema.pop("description")
        if is_flag(name):
            description += " Also yes/no, on/off, 1/0."
        params.append({"name": spec.api, "in": "query", "schema": schema,
                       "description": description})
    params.append({"name": "snapshot", "in": "query", "schema": _STRING,
                   "description": _SNAPSHOT["description"]})
    return params


# -- answers -------------------------------------------------------------------------------

_OBJECT = {"type": "object"}
_HIT = {"type": "object", "required": [
    "rank", "document_id", "chunk_index", "content", "start_offset", "end_offset", "truth_level",
    "scores", "citation", "authority", "document_url"], "properties": {
    "rank": _INT, "document_id": _STRING, "chunk_index": _INT, "content": _STRING,
    "start_offset": _INT, "end_offset": _INT, "truth_level": {"enum": list(TRUTH_LEVELS)},
    "scores": _OBJECT, "citation": _OBJECT, "authority": _OBJECT, "document_url": _STRING}}
_SEARCH_ANSWER = {"type": "object", "required": [
    "query", "status", "total", "limit", "offset", "ranked_at", "truth_levels", "hits", "gate",
    "snapshot"],
    "properties": {
        "query": _STRING, "status": _STRING, "reason": _NULLABLE_STRING, "total": _INT,
        "total_is_lower_bound": {"type": "boolean"}, "limit": _INT, "offset": _INT,
        "ranked_at": {"type": "string", "pattern": TOKEN_PATTERN,
                      "description": "the store state this page was ranked on: send it back as "
                                     "ranked_at with the next page to stay on this ranking"},
        "truth_levels": {"type": "array", "items": _STRING},
        "hits": {"type": "array", "items": _HIT},
        "gate": {"type": "object", "required": ["decision", "status"]},
        "snapshot": _NULLABLE_STRING}}
_STRINGS = {"type": "array", "items": _STRING}
_CHECK_ANSWER = {"type": "object", "required": [
    "ok", "cited", "supported", "fabricated", "unsupported_sentences", "claims"], "properties": {
    "ok": {"type": "boolean"}, "cited": _STRINGS, "supported": _STRINGS, "fabricated": _STRINGS,
    "unsupported_sentences": _STRINGS,
    "claims": {"type": "array", "items": {"type": "object", "required": [
        "claim", "verdict", "references"], "properties": {
        "claim": _STRING, "verdict": {"enum": ["supported", "fabricated", "unsupported"]},
        "references": {"type": "array", "items": _OBJECT}}}}}}
_DOCUMENT_ROW = {"type": "object", "required": ["document_id", "truth_level", "version"],
                 "properties": {"document_id": _STRING, "truth_level": _STRING,
                                "version": _STRING}}
_DOCUMENT = {"type": "object", "required": ["document", "versions", "chunks"], "properties": {
    "document": {"type": "object", "required": ["document_id", "text"]},
    "versions": {"type": "array", "items": _OBJECT},
    "chunks": {"type": "array", "items": {"type": "object", "required": [
        "chunk_index", "start_offset", "end_offset"]}}}}
_JOBS = {"type": "object", "required": ["counts", "history", "active", "worker_error", "total",
                                        "limit", "offset", "after", "next_after", "jobs"],
         "properties": {
             "counts": {"type": "object", "properties": {s: _INT for s in STATUSES}},
             "history": _INT, "active": {"type": "boolean"}, "worker_error": _NULLABLE_STRING,
             "total": {"type": "integer", "minimum": 0,
                       "description": "jobs in the status asked for (all: every status); "
                                      "jobs holds those from offset, at most limit"},
             "limit": _INT, "offset": _INT,
             "after": {"type": ["integer", "null"], "description": "the after asked for"},
             "next_after": {"type": ["integer", "null"], "description": (
                 "the after of the next page (the last job id listed); null: none left")},
             "jobs": {"type": "array", "items": {"type": "object", "required": [
                 "job_id", "status", "document_id"], "properties": {
                 "job_id": _INT, "status": {"enum": list(STATUSES)}}}}}}
_HISTORY = {"type": "object", "required": ["counts", "total", "limit", "offset", "after",
                                           "next_after", "jobs"],
            "properties": {
                "counts": {"type": "object", "properties": {
                    s: _INT for s in HISTORY_STATUSES}},
                "total": {"type": "integer", "minimum": 0,
                          "description": "history rows in the status asked for (all: every "
                                         "status); jobs holds those from offset, at most limit"},
                "limit": _INT, "offset": _INT,
                "after": {"type": ["integer", "null"], "description": "the after asked for"},
                "next_after": {"type": ["integer", "null"], "description": (
                    "the after of the next page (the last job id listed); null: none left")},
                "jobs": {"type": "array", "items": {"type": "object", "required": [
                    "job_id", "status", "document_id", "purged_at"], "properties": {
                    "job_id": _INT, "status": _STRING,
                    "purged_at": {"type": "string",
                                  "description": "when it left the queue (UTC)"}}}}}}
_SOURCES = {"type": "array", "items": {"type": "object", "required": [
    "source", "document_id", "status"], "properties": {
    "source": _STRING, "document_id": _STRING,
    "job_id": {"type": "integer", "description": "a job's row only: its id"},
    "status": {"enum": ["INDEXED", *STATUSES]}}}}


def _answer(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_JOB_ID = {"name": "job_id", "in": "path", "required": True,
           "schema": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
           "description": "the job's id (job_id in GET /api/jobs)"}


def _count(name: str) -> dict[str, Any]:
    return {"type": "object", "required": [name], "additionalProperties": False,
            "properties": {name: {"type": "integer", "minimum": 0}}}


def _op(summary: str, answer: dict[str, Any], *, body: dict[str, Any] | None = None,
        ok: int = 200, params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {
        str(ok): _answer(answer), "4XX": _ERROR, "5XX": _SERVER_ERROR}}
    if body is not None:
        op["requestBody"] = {"required": True,
                             "content": {"application/json": {"schema": body}}}
    if params:
        op["parameters"] = params
    return op


def _query(name: str, schema: dict[str, Any] | None = None, description: str | None = None
           ) -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "in": "query", "schema": schema or _STRING}
    if description:
        param["description"] = description
    return param


def _number_text(minimum: int, maximum: int, default: int) -> dict[str, Any]:
    """A whole number in a query string; empty (a form's empty field) is the default."""
    return {"anyOf": [{"type": "integer", "minimum": minimum, "maximum": maximum},
                      {"type": "string", "pattern": "^$"}], "default": default}


_DOC_ID = [{"name": "document_id", "in": "path", "required": True,
            "schema": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS,
                       "pattern": _NOT_BLANK},
            "description": "the document's id (it may contain '/')"}]

_UPLOAD = {"type": "object", "required": ["file"], "additionalProperties": False,
           "properties": {
               "file": {"type": "string", "format": "binary",
                        "contentMediaType": "application/octet-stream",
                        "description": "the file, with its name (letters, digits, '.', '-', "
                                       "'_', spaces); its extension picks the loader"},
               "truth_level": {"type": "string", "description": "L1..L4 (default L2)"},
               "domain": _STRING, "source_type": _STRING,
               "tags": {"type": "string", "description": (
                   f"comma-separated: at most {MAX_TAGS} tags of at most {MAX_ID_CHARS} "
                   "characters each (more: 400; a field too big to parse: 413)")}}}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "enginelib serve", "version": "1", "description": (
        "Any route answers 403 (Forbidden) to a POST or DELETE sent by a page on another "
        "origin, and, on 127.0.0.1, to a Host that is not this machine (serve --allow-host "
        "NAME admits a proxy's name). Clients that send no Origin are unaffected. A "
        "parameter or body field a route does not list is refused (400), as is a JSON value "
        "of another type than the one listed (\"limit\": \"10\"). A server started with "
        "--token lists it under security and refuses a request without it (401). Every "
        "time an answer holds is ISO 8601 in UTC with its offset said "
        "(2026-03-29T01:30:05.250000+00:00). No answer names a path of the server: a file "
        "inside the store is named relative to it, any other by its document's id.")},
    "components": {
        "schemas": {"Error": {"type": "object", "required": ["error", "type"], "properties": {
            "error": {"type": "string", "description": "what went wrong and what to do"},
            "type": {"type": "string", "description": "the error's class, e.g. "
                                                      "InvalidInputError"}}}},
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "header": {"type": "apiKey", "in": "header", "name": "X-Enginelib-Token"},
            "query": {"type": "apiKey", "in": "query", "name": "token"},
            "cookie": {"type": "apiKey", "in": "cookie", "name": "enginelib_token"},
        },
    },
    "paths": {
        "/api/search": {
            "get": _op("Search (q=..., the other options as query parameters)",
                       _SEARCH_ANSWER, params=_search_query_parameters()),
            "post": _op("Search with every CLI option", _SEARCH_ANSWER, body=_SEARCH_BODY),
        },
        "/api/check-answer": {"post": _op(
            "Claim map of an answer against a search's citations", _CHECK_ANSWER,
            body={"type": "object", "required": ["answer", "search"],
                  "additionalProperties": False, "properties": {
                      "answer": {"type": "string", "minLength": 1,
                                 "maxLength": MAX_ANSWER_CHARS, "pattern": _NOT_BLANK},
                      "search": _SEARCH_BODY}})},
        "/api/documents": {"get": _op("List documents", {"type": "array", "items": _DOCUMENT_ROW},
                                      params=[
            _query("truth_levels", _LEVELS_TEXT, "comma-separated (L1,L2)"), _query("domain"),
            _query("source_type"), _query("tag"), _query("prefix"),
            _query("limit", _number_text(1, MAX_LISTED, 1000)),
            _query("offset", _number_text(0, MAX_LIST_OFFSET, 0))])},
        "/api/documents/{document_id}": {
            "get": _op("A document, its versions and chunk offsets", _DOCUMENT, params=_DOC_ID),
            "delete": _op("Delete a document", {
                "type": "object", "required": ["deleted"], "properties": {"deleted": _STRING}},
                params=_DOC_ID),
        },
        "/api/upload": {"post": {
            "summary": "Upload one file (multipart 'file'; truth_level, domain, source_type, "
                       "tags) and enqueue its ingestion",
            "requestBody": {"required": True, "content": {"multipart/form-data": {
                "schema": _UPLOAD}}},
            "responses": {"202": _answer({
                "type": "object", "required": ["job_id", "document_id", "bytes"], "properties": {
                    "job_id": _INT, "document_id": _STRING, "bytes": _INT}}, "Queued"),
                "4XX": _ERROR, "5XX": _SERVER_ERROR}}},
        "/api/jobs": {"get": _op("Job counts by status and the jobs", _JOBS, params=[
            _query("status", {"type": "string", "enum": ["", *STATUSES]},
                   "only the jobs in this status (empty: all)"),
            _query("limit", _number_text(1, MAX_LISTED, DEFAULT_LISTED),
                   "at most this many jobs, oldest first (total says how many there are)"),
            _query("offset", _number_text(0, MAX_LIST_OFFSET, 0),
                   "skip this many first (a purge between two pages shifts them: use after)"),
            _query("after", {"anyOf": [
                {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
                {"type": "string", "pattern": "^$"}]},
                   "only jobs with a larger id: the next_after of the page before (keyset "
                   "paging, which a purge or a new job between pages does not shift)")])},
        "/api/jobs/history": {"get": _op(
            "The jobs history: jobs DONE and moved there by purge-done, and jobs cancelled; "
            "counts by status and a page of them, paged as GET /api/jobs pages the queue",
            _HISTORY, params=[
                _query("status", {"type": "string", "enum": ["", *HISTORY_STATUSES]},
                       "only the jobs in this status (empty: all)"),
                _query("limit", _number_text(1, MAX_LISTED, DEFAULT_LISTED),
                       "at most this many jobs, by job id (total says how many there are)"),
                _query("offset", _number_text(0, MAX_LIST_OFFSET, 0),
                       "skip this many first (a prune between two pages shifts them: use "
                       "after)"),
                _query("after", {"anyOf": [
                    {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
                    {"type": "string", "pattern": "^$"}]},
                       "only jobs with a larger id: the next_after of the page before (a "
                       "job purged or cancelled between two pages with an id below it is on "
                       "none of the next pages, though total counts it)")])},
        "/api/jobs/retry-dlq": {"post": _op("DLQ jobs back to PENDING", _count("retried"))},
        "/api/jobs/purge-done": {"post": _op("Move DONE jobs to history; returns the count",
                                             _count("purged"))},
        "/api/jobs/drop-dlq": {"post": _op(
            "Delete every DLQ job and its attempts for good (an uploaded file too); returns "
            "the count. One transaction: interrupted, it dropped none", _count("dropped"))},
        "/api/jobs/{job_id}": {"delete": _op(
            "Delete one DLQ job and its attempts for good (an uploaded file too): 404 for an "
            "id the queue has not, 409 for a job not in the DLQ (retry-dlq runs them again "
            "instead)", {"type": "object", "required": ["dropped", "job_id"],
                         "additionalProperties": False, "properties": {
                             "dropped": {"const": 1}, "job_id": _INT}},
            params=[_JOB_ID])},
        "/api/jobs/{job_id}/cancel": {"post": _op(
            "Cancel one job before it runs (PENDING, or FAILED until its retry): it goes to "
            "the history as CANCELLED, its attempts kept (an uploaded file is deleted). 404 for "
            "an id the queue has not, 409 for a job running, DONE, in the DLQ (delete it "
            "instead) or cancelled already. One transaction: interrupted, it cancelled nothing",
            {"type": "object", "required": ["cancelled", "job_id"],
             "additionalProperties": False, "properties": {
                 "cancelled": {"const": 1}, "job_id": _INT}},
            params=[_JOB_ID])},
        "/api/sources": {"get": _op("Sources: documents and jobs not done", _SOURCES)},
        "/api/stats": {"get": _op("Store statistics", {
            "type": "object", "required": ["documents", "chunks"],
            "properties": {"documents": _INT, "chunks": _INT}})},
        "/api/presets": {"get": _op("Search preset names", _STRINGS)},
        "/api/health": {"get": _op("Liveness", {
            "type": "object", "required": ["ok"], "properties": {"ok": {"const": True}}})},
        "/api/openapi.json": {"get": _op("This description", _OBJECT)},
    },
}


def openapi_document(*, token: bool) -> dict[str, Any]:
    """The description a server gives: with ``token``, every operation needs it (any of the
    four ways), and a request without it is a 401."""
    document = copy.deepcopy(OPENAPI)
    if token:
        document["security"] = [{"bearer": []}, {"header": []}, {"query": []}, {"cookie": []}]
    return document
