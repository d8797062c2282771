"""The query path: plan, retrieve (hnswlib + Tantivy), fuse, post-process, cite.

``search`` is ``search_batch([query])[0]``: batch is the real path.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInputError, InvalidVectorError
from ..indexes.exact import exact_topk
from ..types import truth_rank
from . import answerability, fusion, fusion_evidence, gate, paging, post, rewrite
from .cache import response_key
from .citations import make_citation
from .gate import GateDecision
from .presets import apply_preset
from .quotes import content_terms
from .request import GATE_TOP_N, SearchRequest, build_request, choose_strategy
from .results import NO_RELEVANT_SOURCES, OK, Hit, RagContext, Scores, SearchResponse

if TYPE_CHECKING:
    from ..chunk_view import ChunkView
    from ..core.store_core import StoreCore as Store

Ranking = list[tuple[int, float]]

# MMR compares every pair of its pool: the pool is the depth's candidates, at most this many.
MMR_POOL_MAX = 1000


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
    return _run(store, requests, options.get("query_vectors"))


def _with_preset(store: Store, options: dict[str, Any]) -> dict[str, Any]:
    return apply_preset(store.search_presets(), options, store.default_search_preset())


def _run(
    store: Store, requests: list[SearchRequest], query_vectors: np.ndarray | None
) -> list[SearchResponse]:
    started = time.perf_counter()
    view = store.view()
    # Query understanding first: rewriter hook, typo corrections, learned acronyms.
    asked = [r.queries[0] for r in requests]
    plan_started = time.perf_counter()
    plans = [rewrite.plan(store, r, view.generation) for r in requests]
    rewrite_ms = (time.perf_counter() - plan_started) * 1000.0 / len(requests)
    requests = [dataclasses.replace(r, queries=p.sub_queries) for r, p in zip(requests, plans, strict=True)]
    strategies = [
        choose_strategy(r.queries[0]) if r.strategy == "auto" else r.strategy for r in requests
    ]
    generation = (store.generation, store.index_version)
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
            response = _one(store, view, request, strategy, qvec)
            store.response_cache.put(keys[i], generation, response)
        else:
            response = SearchResponse(**{**hit.__dict__, "timings": {**hit.timings, "cached": 1.0}})
        retrieval_ms = (time.perf_counter() - t0) * 1000.0
        share = embed_ms / len(requests) if any(needs_vectors) else 0.0
        response = _with_timing(response, share, retrieval_ms)
        response = dataclasses.replace(
            response, query=asked[i], sub_queries=request.queries,
            timings={**response.timings, "rewrite_ms": rewrite_ms},
            execution_time_ms=response.execution_time_ms + rewrite_ms,
            corrections=dict(plans[i].corrections), expansions=dict(plans[i].expansions),
        )
        responses.append(response)
        if request.log and store.snapshot is None:
            store.query_log.record(
                {
                    "query_text": asked[i],
                    "strategy": response.strategy_used,
                    "filters": request.raw_filters,
                    "latency_ms": response.execution_time_ms,
                    "chunks_retrieved": response.total,
                    "reranked_count": int(response.timings.get("reranked", 0)),
                    "result_count": len(response.hits),
                    "status": response.status,
                },
                [h.label for h in response.hits],
                store.catalog,
            )
    del started
    return responses


def _with_timing(response: SearchResponse, embed_ms: float, retrieval_ms: float) -> SearchResponse:
    timings = {**response.timings, "embed_ms": embed_ms, "retrieval_ms": retrieval_ms}
    return SearchResponse(
        **{**response.__dict__, "timings": timings, "execution_time_ms": embed_ms + retrieval_ms}
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
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        if (norms == 0).any():
            raise InvalidVectorError("a query vector is all zeros: it has no direction to search")
        return (array / norms).astype(np.float32)
    if not any(needs):
        return None
    # Row i of the result is request i's first query, zeros where a request needs none (a
    # full-text one, as when searched alone, or one answered from the response cache). The
    # other sub-queries are embedded in the same batch; _one finds them in the per-process cache.
    todo = [i for i, need in enumerate(needs) if need]
    firsts = [requests[i].queries[0] for i in todo]
    rest = [q for i in todo for q in requests[i].queries[1:]]
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


def _allowed(store: Store, view: ChunkView, request: SearchRequest) -> np.ndarray | None:
    allowed = view.labels_with_truth(request.truth_levels)
    if request.filters.where:
        matched = _filter_labels(store, view, request)
        allowed = matched if allowed is None else np.intersect1d(allowed, matched, assume_unique=True)
    return allowed


def _filter_labels(store: Store, view: ChunkView, request: SearchRequest) -> np.ndarray:
    cache: dict[tuple[int, str], np.ndarray] = store.filter_cache
    key = (view.generation, request.filters.key)
    if key not in cache:
        if len(cache) > 256:
            cache.clear()
        cache[key] = view.filter_labels(request.filters.where, request.filters.params)
    return cache[key]


def _retrieve_vector(
    store: Store, view: ChunkView, request: SearchRequest, qvec: np.ndarray,
    allowed: np.ndarray | None, depth: int | None = None,
) -> list[Ranking]:
    """One ranking per sub-query."""
    depth = request.depth if depth is None else depth
    rankings = []
    for i, text in enumerate(request.queries):
        vec = qvec if i == 0 else store.query_embeddings.embed([text])[0]
        if request.exact:
            if allowed is None:
                matrix, labels = view.vectors, view.labels
            else:
                pos = view.positions(allowed)
                pos = pos[pos >= 0]
                matrix, labels = view.vectors[pos], view.labels[pos]
            rankings.append(exact_topk(matrix, labels, vec.reshape(1, -1), depth)[0])
        else:
            rankings.append(store.vector_index.search(vec.reshape(1, -1), depth, allowed)[0])
    return rankings


def _retrieve_text(
    store: Store, request: SearchRequest, allowed: np.ndarray | None, depth: int | None = None
) -> list[Ranking]:
    """One ranking per sub-query (one batch call)."""
    depth = request.depth if depth is None else depth
    if not request.rewrite:  # words as typed: the index must not correct them either
        return store.text_index.search(list(request.queries), depth, allowed,
                                       correct=False)  # type: ignore[call-arg]
    return store.text_index.search(list(request.queries), depth, allowed)


def _fuse(
    request: SearchRequest, strategy: str, vector: Ranking, text: Ranking,
    evidence: dict[str, float] | None = None,
) -> dict[int, float]:
    if strategy == "hybrid":
        rankings = {"vector": vector, "bm25": text}
        # retrieval: each method weighed by its evidence (fusion.method_weights)
        evidence = evidence or {}
        if request.fusion == "rrf":
            return fusion.rrf(rankings, request.rrf_k, evidence)
        weights = {"vector": request.weights[0] * evidence.get("vector", 1.0),
                   "bm25": request.weights[1] * evidence.get("bm25", 1.0)}
        return fusion.weighted(rankings, weights)
    return dict(vector if strategy == "vector" else text)


@dataclass(frozen=True)
class _Ranked:
    """The ranking of one candidate depth, after fusion and the post steps."""

    vector_ranking: Ranking
    text_ranking: Ranking
    labels: np.ndarray
    positions: np.ndarray
    fused_scores: np.ndarray
    boosts: np.ndarray
    order_idx: np.ndarray
    rerank_scores: dict[int, float]
    reranked: int
    exhausted: bool  # every method returned fewer than the depth: nothing lies deeper


def _ranked(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str,
    qvec: np.ndarray | None, allowed: np.ndarray | None, depth: int,
) -> _Ranked:
    no_rankings: list[Ranking] = [[] for _ in request.queries]
    vector_rankings, text_rankings = no_rankings, no_rankings
    if strategy in ("vector", "hybrid"):
        assert qvec is not None
        vector_rankings = _retrieve_vector(store, view, request, qvec, allowed, depth)
    if strategy in ("fulltext", "hybrid"):
        text_rankings = _retrieve_text(store, request, allowed, depth)
    exhausted = all(
        len(ranking) < depth
        for method, rankings in (("vector", vector_rankings), ("fulltext", text_rankings))
        if strategy in (method, "hybrid")
        for ranking in rankings
    )
    # Each sub-query fused on its own, then every chunk keeps its best fused score.
    fused = rewrite.merge_by_chunk(
        [_fuse(request, strategy, v, t,  # retrieval: evidence weights per sub-query
               fusion_evidence.weights_for(store, view, q, v, t) if strategy == "hybrid" else None)
         for q, v, t in zip(request.queries, vector_rankings, text_rankings, strict=True)],
        comparable=strategy == "hybrid", k=request.rrf_k,
    )
    vector_ranking = rewrite.per_method(vector_rankings, depth)
    text_ranking = rewrite.per_method(text_rankings, depth)
    ordered = fusion.order(fused)

    # Resolve labels to rows; a label the view lacks (replaced meanwhile) is never returned.
    labels = np.array([label for label, _ in ordered], dtype=np.int64)
    positions = view.positions(labels)
    keep = positions >= 0
    labels, positions = labels[keep], positions[keep]
    fused_scores = np.array([score for _, score in ordered], dtype=np.float64)[keep]

    if request.min_score is not None:
        mask = fused_scores >= request.min_score
        labels, positions, fused_scores = labels[mask], positions[mask], fused_scores[mask]

    final = fused_scores.copy()
    boosts = np.zeros(len(labels))
    if request.boosts and len(labels):
        boosts = np.array([
            post.authority_boost(*_authority(view, int(p))) for p in positions
        ])
        final = post.scale(fused_scores) + boosts
    order_idx = np.lexsort((labels, -final)) if len(labels) else np.zeros(0, dtype=np.int64)

    reranked = 0
    rerank_scores: dict[int, float] = {}
    if request.reranker is not None and len(order_idx):
        top = order_idx[: request.rerank_top]
        passages = [view.record(int(positions[i])).content for i in top]
        relevance = list(request.reranker(request.queries[0], passages))
        if len(relevance) != len(top):
            raise InvalidInputError(
                f"reranker returned {len(relevance)} scores for {len(top)} passages"
            )
        rerank_scores = {int(i): float(s) for i, s in zip(top, relevance, strict=True)}
        top_sorted = sorted(top, key=lambda i: (-rerank_scores[int(i)], labels[i]))
        order_idx = np.concatenate([np.array(top_sorted, dtype=np.int64), order_idx[len(top):]])
        reranked = len(top)

    if request.mmr and len(order_idx):
        # the pool follows the depth, never the page, so every page sees one ranking
        pool = order_idx[: min(depth, MMR_POOL_MAX)]
        pool_scores = post.scale(final[pool])
        picked = post.mmr(pool_scores, view.vectors[positions[pool]], len(pool), request.mmr_lambda)
        order_idx = np.concatenate([pool[picked], order_idx[len(pool):]])

    cap = request.per_source_cap or (post.PER_SOURCE_CAP if request.mmr else None)
    if cap is not None and len(order_idx):
        sources = [
            view.record(int(positions[i])).source_id or view.record(int(positions[i])).document_id
            for i in order_idx
        ]
        order_idx = order_idx[post.cap_per_source(sources, cap)]

    if request.chunks_per_doc is not None and len(order_idx):
        order_idx = _group_by_document(view, positions, order_idx, request.chunks_per_doc)
    return _Ranked(vector_ranking, text_ranking, labels, positions, fused_scores, boosts,
                   order_idx, rerank_scores, reranked, exhausted)


def _one(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str, qvec: np.ndarray | None
) -> SearchResponse:
    allowed = _allowed(store, view, request)
    if allowed is not None and len(allowed) == 0:
        return _empty(store, request, strategy, "no chunk matches the truth levels and filters")
    end = request.offset + request.limit
    paging.check_window(end)
    first = _ranked(store, view, request, strategy, qvec, allowed, request.candidates)
    positions, order_idx, reranked = first.positions, first.order_idx, first.reranked

    total = len(order_idx)
    similarity = None
    if qvec is not None and total:
        similarity = view.vectors[positions[order_idx[: max(GATE_TOP_N, request.offset + request.limit)]]] @ qvec

    decision = answerability.assess(
        store, view, request, qvec, positions[order_idx[: gate.TOP_N]],
        first.vector_ranking, first.text_ranking,
    )
    if not decision.answerable:
        # the refusal keeps the similarity it was decided on
        return _empty(store, request, strategy, decision.message, total=total,
                      similarity=similarity, decision=decision)

    def record_of(item: tuple[_Ranked, int]) -> Any:
        return view.record(int(item[0].positions[item[1]]))

    caps: list[tuple[Any, int]] = []
    if request.chunks_per_doc is not None:
        caps.append((lambda item: record_of(item).document_id, request.chunks_per_doc))
    source_cap = request.per_source_cap or (post.PER_SOURCE_CAP if request.mmr else None)
    if source_cap is not None:
        caps.append((lambda item: record_of(item).source_id or record_of(item).document_id,
                     source_cap))
    blocks, depths = [first], [request.candidates]
    placed = -1
    # Deeper rungs only for a page past what is placed; none once all is seen, or once a
    # rung placed nothing new (min_score or filters leave no more: do not climb to 10,000).
    while True:
        ranking = paging.stitch(
            [([(b, int(i)) for i in b.order_idx], b.exhausted) for b in blocks], depths,
            key=lambda item: int(item[0].labels[item[1]]),
            caps=caps if len(blocks) > 1 else (),  # one block already follows them
        )
        depth = paging.deeper(depths[-1], request.candidates)
        if (len(ranking.items) >= end or blocks[-1].exhausted or depth is None
                or len(ranking.items) == placed):
            break
        placed = len(ranking.items)
        blocks.append(_ranked(store, view, request, strategy, qvec, allowed, depth))
        depths.append(depth)
    total = len(ranking.items)
    page = ranking.items[request.offset : request.offset + request.limit]
    if len(page) == 0:
        return _empty(
            store, request, strategy,
            f"offset {request.offset} is past the last result (total {total}"
            f"{' or more' if ranking.total_is_lower_bound else ''})", total=total,
        )
    ranks = {
        id(b): (
            {label: (rank, score) for rank, (label, score) in enumerate(b.vector_ranking, 1)},
            {label: (rank, score) for rank, (label, score) in enumerate(b.text_ranking, 1)},
        )
        for b in blocks
    }
    # the quote looks for the query's words even in a vector search; highlights stay BM25's
    quote_terms = content_terms(store.text_index.highlight_terms(request.queries[0]))
    terms = quote_terms if strategy != "vector" else ()
    hits = []
    for n, (block, idx) in enumerate(page, start=1):
        rank = request.offset + n
        label = int(block.labels[idx])
        position = int(block.positions[idx])
        record = view.record(position)
        vector_ranks, text_ranks = ranks[id(block)]
        vr = vector_ranks.get(label)
        tr = text_ranks.get(label)
        scores = Scores(
            vector_rank=vr[0] if vr else None,
            vector_score=float(vr[1]) if vr else None,
            bm25_rank=tr[0] if tr else None,
            bm25_score=float(tr[1]) if tr else None,
            fused=float(block.fused_scores[idx]),
            similarity=float(view.vectors[position] @ qvec) if qvec is not None else None,
            boost=float(block.boosts[idx]),
            rerank_score=block.rerank_scores.get(idx),
        )
        hits.append(
            Hit(
                rank=rank,
                label=label,
                document_id=record.document_id,
                chunk_index=record.chunk_index,
                content=record.content,
                start_offset=record.start_offset,
                end_offset=record.end_offset,
                truth_level=record.truth_level,
                scores=scores,
                citation=make_citation(rank, record, quote_terms),
                highlight_terms=terms,
                title=record.title,
                heading_path=record.heading_path or "",
            )
        )
    context = _context(store, hits, strategy, similarity)
    return SearchResponse(
        query=request.queries[0],
        hits=tuple(hits),
        status=OK,
        strategy_used=strategy,
        total=total,
        limit=request.limit,
        offset=request.offset,
        execution_time_ms=0.0,
        context=context,
        total_is_lower_bound=ranking.total_is_lower_bound,
        truth_levels=request.truth_levels,
        timings={"reranked": float(reranked)},
        gate=decision,
    )


def _authority(view: ChunkView, position: int) -> tuple[Any, Any, Any, Any]:
    r = view.record(position)
    return r.source_tier, r.evidence_level, r.peer_reviewed, r.authority_score


def _group_by_document(
    view: ChunkView, positions: np.ndarray, order_idx: np.ndarray, per_doc: int
) -> np.ndarray:
    """Documents ranked by their best chunk, then up to ``per_doc`` of their chunks each."""
    groups: dict[str, list[int]] = {}
    for i in order_idx:
        doc = view.record(int(positions[i])).document_id
        bucket = groups.setdefault(doc, [])
        if len(bucket) < per_doc:
            bucket.append(int(i))
    return np.array([i for bucket in groups.values() for i in bucket], dtype=np.int64)


def _context(
    store: Store, hits: list[Hit], strategy: str, similarity: np.ndarray | None
) -> RagContext:
    if similarity is not None and len(similarity):
        confidence = float(np.clip(np.mean(similarity[:GATE_TOP_N]), 0.0, 1.0))
    else:
        confidence = 1.0 if hits else 0.0
    lowest = max((h.truth_level for h in hits), key=truth_rank, default=None)
    return RagContext(
        document_ids=tuple(dict.fromkeys(h.document_id for h in hits)),
        citations=tuple(h.citation for h in hits),
        lowest_truth_level=lowest,
        confidence=round(confidence, 4),
        search_method=strategy,
        index_version=store.index_version,
    )


def _empty(
    store: Store, request: SearchRequest, strategy: str, reason: str, *, total: int = 0,
    similarity: np.ndarray | None = None, decision: GateDecision | None = None,
) -> SearchResponse:
    return SearchResponse(
        query=request.queries[0],
        hits=(),
        status=NO_RELEVANT_SOURCES,
        strategy_used=strategy,
        total=total,
        limit=request.limit,
        offset=request.offset,
        execution_time_ms=0.0,
        context=_context(store, [], strategy, similarity),
        reason=reason,
        truth_levels=request.truth_levels,
        gate=decision,
    )
