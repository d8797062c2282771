"""The search entry points: a batch of requests planned, answered from the response cache
or walked through the stages (``stages.answer``), timed and logged.

``search`` is ``search_batch([query])[0]``: batch is the real path.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInputError, InvalidVectorError
from . import rewrite
from .cache import response_key
from .presets import apply_preset
from .ranked_at import require_state, state_token
from .request import SearchRequest, build_request, choose_strategy
from .results import SearchResponse
from .stages import answer

if TYPE_CHECKING:
    from ..store import Store


def search(store: Store, query: str | Sequence[str], **options: Any) -> SearchResponse:
    options = _with_preset(store, options)
    vectors = options.pop("query_vector", None)
    if vectors is not None:
        options["query_vectors"] = np.asarray(vectors, dtype=np.float32).reshape(1, -1)
    return _run(store, [build_request(query, **options)], options.get("query_vectors"))[0]


def search_batch(store: Store, queries: Sequence[str], **options: Any) -> list[SearchResponse]:
    if isinstance(queries, str):
        raise InvalidInputError("search_batch takes a list of queries; use search() for one")
    options = _with_preset(store, options)
    requests = [build_request(q, **options) for q in queries]
    if not requests:  # nothing to search (and nothing to divide the planning time by)
        build_request("options check", **options)  # bad options are an error all the same
        return []
    return _run(store, requests, options.get("query_vectors"))


def _with_preset(store: Store, options: dict[str, Any]) -> dict[str, Any]:
    return apply_preset(store.search_presets(), options, store.default_search_preset())


def _run(
    store: Store, requests: list[SearchRequest], query_vectors: np.ndarray | None
) -> list[SearchResponse]:
    view = store.view()
    # Read once the view is current: the state every response of the batch is ranked on.
    generation = (store.generation, store.index_version)
    ranked_at = state_token(*generation)
    for request in requests:  # before any work: a moved store answers nothing
        require_state(request.ranked_at, ranked_at, snapshot=store.snapshot, path=store.path)
    # Query understanding first: rewriter hook, typo corrections, learned acronyms.
    asked = [r.queries[0] for r in requests]
    plan_started = time.perf_counter()
    plans = [rewrite.plan(store, r, view.generation) for r in requests]
    rewrite_ms = (time.perf_counter() - plan_started) * 1000.0 / len(requests)
    # a new request only where the plan changed the queries (a frozen copy costs ~30 fields)
    requests = [r if p.sub_queries == r.queries and not p.embed_texts
                else dataclasses.replace(r, queries=p.sub_queries, embed_texts=p.embed_texts)
                for r, p in zip(requests, plans, strict=True)]
    strategies = [
        choose_strategy(r.queries[0]) if r.strategy == "auto" else r.strategy for r in requests
    ]
    keys = [
        response_key(r, s, _given_row(query_vectors, i))
        for i, (r, s) in enumerate(zip(requests, strategies, strict=True))
    ]
    cached = [store.response_cache.get(key, generation) for key in keys]
    # A request answered from the cache needs no query vector: skip the model for it.
    needs_vectors = [
        s in ("vector", "hybrid") and c is None for s, c in zip(strategies, cached, strict=True)
    ]
    embed_started = time.perf_counter()
    vectors = _query_vectors(store, requests, needs_vectors, query_vectors)
    embed_ms = (time.perf_counter() - embed_started) * 1000.0
    responses = []
    for i, (request, strategy) in enumerate(zip(requests, strategies, strict=True)):
        t0 = time.perf_counter()
        hit = cached[i]
        if hit is None:
            given = query_vectors is not None
            qvec = vectors[i] if vectors is not None and (needs_vectors[i] or given) else None
            response = answer(store, view, request, strategy, qvec)
            store.response_cache.put(keys[i], generation, response)
        else:
            response = SearchResponse(**{**hit.__dict__, "timings": {**hit.timings, "cached": 1.0}})
        retrieval_ms = (time.perf_counter() - t0) * 1000.0
        share = embed_ms / len(requests) if any(needs_vectors) else 0.0
        response = dataclasses.replace(  # one copy: timings, query understanding
            response, query=asked[i], sub_queries=request.queries, ranked_at=ranked_at,
            timings={**response.timings, "embed_ms": share, "retrieval_ms": retrieval_ms,
                     "rewrite_ms": rewrite_ms},
            execution_time_ms=share + retrieval_ms + rewrite_ms,
            corrections=dict(plans[i].corrections), expansions=dict(plans[i].expansions),
        )
        responses.append(response)
        if request.log and store.snapshot is None:
            log(store, asked[i], request, response)
    return responses


def log(store: Store, asked: str, request: SearchRequest, response: SearchResponse) -> None:
    """The log stage: one row per search (a writer's catalog, a reader's side file)."""
    store.query_log.record(
        {
            "query_text": asked,
            "strategy": response.strategy_used,
            "filters": request.raw_filters,
            "latency_ms": response.execution_time_ms,
            "chunks_retrieved": response.total,
            "reranked_count": int(response.timings.get("reranked", 0)),
            "result_count": len(response.hits),
            "status": response.status,
        },
        [h.label for h in response.hits],
        store._catalog,
    )


def _query_vectors(
    store: Store,
    requests: list[SearchRequest],
    needs: list[bool],
    given: np.ndarray | None,
) -> np.ndarray | None:
    dim = store.manifest.embedding_dim
    if given is not None:
        array = np.asarray(given, dtype=np.float32)
        if array.ndim == 1:
            array = array.reshape(1, -1)
        if array.shape != (len(requests), dim):
            raise InvalidVectorError(
                f"query vectors have shape {array.shape}; this store needs "
                f"({len(requests)}, {dim}) ({store.manifest.embedding_model})"
            )
        if not np.isfinite(array).all():
            raise InvalidVectorError("query vectors contain NaN or infinite values")
        # The norm in float64: in float32 the sum of squares overflowed for components past
        # ~2e18 (inf, so the vector became zeros, refused as all-zero with numpy's overflow
        # warning) and underflowed to 0 for components under ~1e-23 (refused as all zeros).
        # Any finite float32 vector's squares fit float64; cosine ignores the scale.
        wide = array.astype(np.float64)
        norms = np.linalg.norm(wide, axis=1, keepdims=True)
        if (norms == 0).any():
            raise InvalidVectorError("a query vector is all zeros: it has no direction to search")
        return (wide / norms).astype(np.float32)
    if not any(needs):
        return None
    # Row i of the result is request i's first query, zeros where a request needs none (a
    # full-text one, as when searched alone, or one answered from the response cache). The
    # other sub-queries are embedded in the same batch; retrieval finds them in the per-process cache.
    todo = [i for i, need in enumerate(needs) if need]
    firsts = [requests[i].embed_text(0) for i in todo]
    rest = [requests[i].embed_text(j) for i in todo for j in range(1, len(requests[i].queries))]
    embedded = store.query_embeddings.embed(firsts + rest)[: len(firsts)]
    if len(todo) == len(requests):
        return embedded
    out = np.zeros((len(requests), dim), dtype=np.float32)
    out[todo] = embedded
    return out


def _given_row(query_vectors: np.ndarray | None, i: int) -> np.ndarray | None:
    if query_vectors is None:
        return None
    array = np.asarray(query_vectors, dtype=np.float32)
    return array.reshape(-1) if array.ndim == 1 else array[i] if i < len(array) else None
