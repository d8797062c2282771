"""What both framework retrievers share: option checking, the search call, hit metadata."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError, InvalidQueryError, NoRelevantSourcesError
from ..search import Hit, SearchResponse
from ..search.request import build_request
from ..store import Store

# What a retriever does when the answerability gate refuses: "empty" returns no document
# (what LangChain and LlamaIndex users get from any retriever with nothing relevant; their
# chains and query engines handle it), "raise" raises NoRelevantSourcesError with the reason.
ON_REFUSAL = ("empty", "raise")
# Search options a retriever cannot pass: the retriever is called with a query string (a
# LlamaIndex QueryBundle's embedding is used as the query vector instead), and the batch
# form belongs to search_batch.
_NOT_FOR_RETRIEVERS = {
    "query_vector": "a retriever searches with the framework's query",
    "query_vectors": "a retriever searches one query at a time",
}
# How each framework asks about several queries, for a caller who passed a list as one.
_SEVERAL = {
    "LangChain": "search several with retriever.batch([...]), a list of documents each",
    "LlamaIndex": "call retrieve() once per query",
}
# What each retriever can search by instead of words: the engine's own advice for an empty
# query names query_vector=, which both retrievers refuse.
_NO_WORDS = {
    "LangChain": "ask with some words",
    "LlamaIndex": "ask with some words, or search by a QueryBundle's embedding alone with "
                  "strategy='vector'",
}


def search_options(
    options: Mapping[str, Any], *, limit_alias: str, framework: str
) -> dict[str, Any]:
    """Check a retriever's search options once, at construction (and per call)."""
    if not isinstance(options, Mapping):  # dict() of a list was a bare TypeError
        raise InvalidInputError(
            f"{framework} retriever: search options must be a dict such as "
            f"{{'{limit_alias}': 5, 'filters': {{'tags': ['brakes']}}}}, got "
            f"{type(options).__name__}")
    checked = dict(options)
    for name in checked:
        if not isinstance(name, str):  # the ** call below failed: "keywords must be strings"
            raise InvalidInputError(
                f"{framework} retriever: search option names are strings, got {name!r} "
                f"({type(name).__name__})")
    if limit_alias in checked:
        if "limit" in checked:
            raise InvalidInputError(
                f"give either {limit_alias}= or limit= to the {framework} retriever, not both"
            )
        checked["limit"] = checked.pop(limit_alias)
    for name, why in _NOT_FOR_RETRIEVERS.items():
        if name in checked:
            raise InvalidInputError(f"the {framework} retriever does not take {name}=: {why}")
    try:
        build_request("probe", **{k: v for k, v in checked.items() if k != "preset"})
    except InvalidInputError as exc:
        raise type(exc)(f"{framework} retriever: {exc}") from exc
    return checked


def check_refusal(on_refusal: str) -> str:
    if on_refusal not in ON_REFUSAL:
        raise InvalidInputError(
            f"on_refusal={on_refusal!r} is not one of {', '.join(ON_REFUSAL)}"
        )
    return on_refusal


def check_store(store: Any, framework: str) -> Store:
    """The store a retriever searches: an open ``Store``, checked at construction and per
    call (pydantic's ``model_copy(update=...)`` and plain assignment skip the constructor)."""
    if not isinstance(store, Store):
        # a path was kept and failed at the first search, far from the mistake
        hint = (f"; open it first: enginelib.open({os.fspath(store)!r})"
                if isinstance(store, (str, os.PathLike)) else "")
        raise InvalidInputError(
            f"{framework} retriever: store= takes an open enginelib Store, such as "
            f"enginelib.open('mystore'), got {type(store).__name__}{hint}")
    return store


def run_search(
    store: Store, query: str, options: Mapping[str, Any], on_refusal: str, *, framework: str,
    **extra: Any,
) -> SearchResponse:
    if not isinstance(query, str):
        # Store.search reads a list as one question and its rewrites, fused into one ranking:
        # a list meant as several queries came back as one list of results, without a word
        raise InvalidQueryError(
            f"the {framework} retriever takes one query string, got {type(query).__name__}: "
            f"{_SEVERAL[framework]}")
    if not query.strip() and not (extra.get("query_vector") is not None
                                  and options.get("strategy") == "vector"):
        raise InvalidQueryError(
            f"the {framework} retriever was given an empty query: {_NO_WORDS[framework]}")
    # checked again here: assignment and model_copy(update=...) skip the constructor, and a
    # typo there read as "empty" where the caller counted on the exception
    check_refusal(on_refusal)
    response = check_store(store, framework).search(query, **options, **extra)
    if not response.ok and on_refusal == "raise":
        code = response.gate.reason_code if response.gate is not None else None
        raise NoRelevantSourcesError(query, response.reason, reason_code=code, response=response)
    return response


def result_id(hit: Hit) -> str:
    """A stable id for a chunk: its document and chunk index."""
    return f"{hit.document_id}#{hit.chunk_index}"


def citation_metadata(hit: Hit, response: SearchResponse) -> dict[str, Any]:
    """A hit's citation and scores as flat JSON-friendly metadata (None where absent)."""
    c, s = hit.citation, hit.scores
    return {
        "document_id": hit.document_id,
        "chunk_index": hit.chunk_index,
        "start_offset": hit.start_offset,
        "end_offset": hit.end_offset,
        "quote": c.quote,
        # where the quote sits: document_text[quote_start:quote_end] == quote
        "quote_start": c.quote_start,
        "quote_end": c.quote_end,
        "truth_level": hit.truth_level,
        "rank": hit.rank,
        "citation_number": c.number,
        "display_text": c.display_text,
        "title": hit.title,
        "heading_path": hit.heading_path,
        "source_path": c.source_path,
        "source_url": c.source_url,
        "source_type": c.source_type,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "document_version": c.document_version,
        "index_version": c.index_version,
        "strategy": response.strategy_used,
        "fused_score": s.fused,
        "vector_rank": s.vector_rank,
        "vector_score": s.vector_score,
        "bm25_rank": s.bm25_rank,
        "bm25_score": s.bm25_score,
        "similarity": s.similarity,
        "boost": s.boost,
        "rerank_score": s.rerank_score,
    }
