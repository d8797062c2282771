"""One request's walk through the named stages, top to bottom (``answer``).

    filter    truth levels + filters -> the allowed chunks          (search/retrieve.py)
    retrieve  hnswlib / exact scan and Tantivy, per sub-query        (search/retrieve.py)
    fuse      RRF or weighted, merged over sub-queries, min_score    (here, search/fusion.py)
    boost     authority boosts on the scaled fused score             (here, search/post.py)
    rerank    the caller's reranker hook over the top                (here)
    diversify MMR, per-source cap, chunks per document               (here, search/post.py)
    page      candidate depths on a ladder, blocks stitched          (here, search/paging.py)
    gate      answer or NO_RELEVANT_SOURCES                          (search/answerability.py)
    cite      hits with scores and citations, for the page only      (search/hits.py)

Each stage is a function of typed values; ``rank`` runs retrieve..diversify at one depth.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import layout
from ..errors import RerankerError
from ..references import other_words, references, standing
from . import answerability, fusion, fusion_evidence, gate, paging, post, rewrite
from .filters import truth_level_conflict
from .highlights import is_function_word
from .hits import Block, build_hits, context, empty_response
from .request import GATE_TOP_N, SearchRequest
from .results import OK, SearchResponse
from .retrieve import Allowed, Ranking, Retrieved, allowed_chunks, retrieve

if TYPE_CHECKING:
    from ..chunk_view import ChunkView
    from ..store import Store

# Candidates inside a provision the question names ("Article 6", "considérant 26") come
# first (references.py). A module default; benchmarks turn it off to measure it.
PROVISION_REFERENCES = True
# MMR compares every pair of its pool: the pool is the depth's candidates, at most this many.
MMR_POOL_MAX = 1000


def answer(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str, qvec: np.ndarray | None
) -> SearchResponse:
    """One request, uncached: filter, rank, gate, page, cite."""
    allowed = allowed_chunks(view, request)
    if allowed.empty:
        reason = (truth_level_conflict(request.raw_filters, request.truth_levels)
                  or "no chunk matches the truth levels and filters")
        return _no_match(store, request, strategy, reason)
    end = request.offset + request.limit
    paging.check_window(end)
    first = rank(store, view, request, strategy, qvec, allowed, request.candidates)
    similarity = top_similarity(view, request, qvec, first)
    decision = answerability.assess(
        store, view, request, qvec, first.positions[first.order_idx[: gate.TOP_N]],
        first.vector_ranking, first.text_ranking,
    )
    if not decision.answerable:
        # the refusal keeps the similarity it was decided on
        return empty_response(store, request, strategy, decision.message,
                              total=len(first.order_idx), similarity=similarity,
                              decision=decision)
    ranking = page(store, view, request, strategy, qvec, allowed, first)
    total = len(ranking.items)
    items = ranking.items[request.offset : end]
    if not items and total == 0:
        # nothing ranked, with the gate off: said as the gate says it ("offset 0 is past the
        # last result (total 0)" blamed a page nobody asked for)
        decision = gate.no_match(request.answerability_threshold,
                                 empty_store=len(view.labels) == 0,
                                 in_memory=layout.is_memory_store(store.path),
                                 min_score=request.min_score)
        return empty_response(store, request, strategy, decision.message, total=0,
                              similarity=similarity, decision=decision)
    if not items:
        return _no_match(
            store, request, strategy,
            f"offset {request.offset} is past the last result (total {total}"
            f"{' or more' if ranking.total_is_lower_bound else ''})", total=total,
        )
    hits = build_hits(store, view, request, strategy, qvec, items,
                      ranking.items[: request.offset])
    return SearchResponse(
        query=request.queries[0],
        hits=hits,
        status=OK,
        strategy_used=strategy,
        total=total,
        limit=request.limit,
        offset=request.offset,
        execution_time_ms=0.0,
        context=context(store, hits, strategy, similarity),
        total_is_lower_bound=ranking.total_is_lower_bound,
        truth_levels=request.truth_levels,
        timings={"reranked": float(first.reranked)},
        gate=decision,
    )


def _no_match(
    store: Store, request: SearchRequest, strategy: str, reason: str, *, total: int = 0
) -> SearchResponse:
    """A refusal with nothing to show (no chunk passes the filters, or the page lies past
    the last result): NO_MATCH, so that every refusal carries a reason code."""
    decision = gate.no_match(request.answerability_threshold, message=reason)
    return empty_response(store, request, strategy, reason, total=total, decision=decision)


@dataclass(frozen=True)
class Fused:
    """The fuse stage's output: candidates in fused order, resolved to view rows."""

    vector_ranking: Ranking  # per method, merged over sub-queries: the ranks hits show
    text_ranking: Ranking
    labels: np.ndarray
    positions: np.ndarray
    scores: np.ndarray
    # the share of the best sibling provision's fused score included in ``scores``
    # (fusion.sibling_evidence); None where none was added
    sibling: np.ndarray | None = None


@dataclass(frozen=True)
class Boosted:
    """Final scores after boosts, and the order they give (indices into ``Fused``)."""

    boosts: np.ndarray
    final: np.ndarray
    order_idx: np.ndarray


@dataclass(frozen=True)
class Reranked:
    order_idx: np.ndarray
    scores: dict[int, float]  # index into Fused -> the reranker's score
    count: int


def rank(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str,
    qvec: np.ndarray | None, allowed: Allowed, depth: int,
) -> Block:
    """The ranking of one candidate depth: retrieve, fuse, boost, rerank, diversify."""
    retrieved = retrieve(store, view, request, strategy, qvec, allowed, depth)
    fused = min_score(request, fuse(store, view, request, strategy, retrieved, depth))
    boosted = boost(view, request, fused)
    reranked = rerank(view, request, fused, boosted.order_idx)
    order_idx = diversify(view, request, fused, boosted.final, reranked.order_idx, depth)
    return Block(fused.vector_ranking, fused.text_ranking, fused.labels, fused.positions,
                 fused.scores, boosted.boosts, order_idx, reranked.scores, reranked.count,
                 retrieved.exhausted, fused.sibling)


def fuse(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str, retrieved: Retrieved,
    depth: int,
) -> Fused:
    """Each sub-query fused on its own, each method weighed by its evidence
    (fusion_evidence.py), then every chunk keeps its best fused score."""
    per_query = [
        _fuse_one(request, strategy, v, t,
                  fusion_evidence.weights_for(store, view, q, v, t) if strategy == "hybrid" else None)
        for q, v, t in zip(request.queries, retrieved.vector, retrieved.text, strict=True)
    ]
    fused = rewrite.merge_by_chunk(per_query, comparable=strategy == "hybrid", k=request.rrf_k)
    labels = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    # fusion.order's rule (best first, ties by the smaller label) as one numpy sort
    order = np.lexsort((labels, -scores))
    labels, scores = labels[order], scores[order]
    # Resolve labels to rows; a label the view lacks (replaced meanwhile) is never returned.
    positions = view.positions(labels)
    keep = positions >= 0
    labels, positions, scores = labels[keep], positions[keep], scores[keep]
    sibling = None
    if strategy == "hybrid" and request.fusion == "rrf" and fusion.SIBLING_WEIGHT and len(labels) > 1:
        # a provision whose document answers in another provision too gains from it
        gained = fusion.sibling_evidence(
            scores, view.codes("document_id")[positions],
            fusion_evidence.cut_at_lines(view, positions))
        order = np.lexsort((labels, -gained))
        sibling = (gained - scores)[order]
        labels, positions, scores = labels[order], positions[order], gained[order]
    return Fused(rewrite.per_method(retrieved.vector, depth), rewrite.per_method(retrieved.text, depth),
                 labels, positions, scores, sibling)


def _fuse_one(
    request: SearchRequest, strategy: str, vector: Ranking, text: Ranking,
    evidence: dict[str, float] | None = None,
) -> dict[int, float]:
    if strategy == "hybrid":
        rankings = {"vector": vector, "bm25": text}
        evidence = evidence or {}
        if request.fusion == "rrf":
            return fusion.rrf(rankings, request.rrf_k, evidence)
        weights = {"vector": request.weights[0] * evidence.get("vector", 1.0),
                   "bm25": request.weights[1] * evidence.get("bm25", 1.0)}
        return fusion.weighted(rankings, weights)
    return dict(vector if strategy == "vector" else text)


def min_score(request: SearchRequest, fused: Fused) -> Fused:
    """Candidates whose fused score is below ``min_score`` are dropped."""
    if request.min_score is None:
        return fused
    mask = fused.scores >= request.min_score
    return Fused(fused.vector_ranking, fused.text_ranking, fused.labels[mask],
                 fused.positions[mask], fused.scores[mask],
                 fused.sibling[mask] if fused.sibling is not None else None)


def boost(view: ChunkView, request: SearchRequest, fused: Fused) -> Boosted:
    """Authority boosts added to the scaled fused score; ties ordered by label."""
    final = fused.scores.copy()
    boosts = np.zeros(len(fused.labels))
    if request.boosts and len(fused.labels):
        boosts = np.array([post.authority_boost(*_authority(view, int(p))) for p in fused.positions])
        final = post.scale(fused.scores) + boosts
    if not len(fused.labels):
        return Boosted(boosts, final, np.zeros(0, dtype=np.int64))
    named = references(request.queries[0]) if PROVISION_REFERENCES else frozenset()
    if named:
        # the provisions the question names come first (references.py says why)
        standing = _standing(view, fused.positions, named, request.queries[0])
        # Each step of standing lifts a candidate above every score below it, so the order
        # holds in MMR's relevance too (MMR reads ``final``, not this order).
        final = final + standing * (float(np.ptp(final)) + 1.0)
        return Boosted(boosts, final, np.lexsort((fused.labels, -final)))
    return Boosted(boosts, final, np.lexsort((fused.labels, -final)))


def _standing(
    view: ChunkView, positions: np.ndarray, named: frozenset[tuple[str, str]], question: str
) -> np.ndarray:
    """Per candidate, ``references.standing``: 0 outside the named provisions; inside, more
    for each of the question's content words its title and heading path hold."""
    words = frozenset(w for w in other_words(question) if not is_function_word(w))
    titles = view.column("title")
    paths = view.texts_of(view.labels[positions].tolist())
    return np.fromiter(
        (standing(named, words, path, titles[p] or "")
         for p, (_, path) in zip(positions.tolist(), paths, strict=True)),
        dtype=np.int64, count=len(positions))


def rerank(view: ChunkView, request: SearchRequest, fused: Fused, order_idx: np.ndarray) -> Reranked:
    """The caller's reranker reorders the top ``rerank_top`` candidates."""
    if request.reranker is None or not len(order_idx):
        return Reranked(order_idx, {}, 0)
    top = order_idx[: request.rerank_top]
    passages = [view.record(int(fused.positions[i])).content for i in top]
    relevance = _relevance(request.reranker, request.queries[0], passages)
    scores = {int(i): s for i, s in zip(top, relevance, strict=True)}
    top_sorted = sorted(top, key=lambda i: (-scores[int(i)], fused.labels[i]))
    order_idx = np.concatenate([np.array(top_sorted, dtype=np.int64), order_idx[len(top):]])
    return Reranked(order_idx, scores, len(top))


def _relevance(reranker: Any, query: str, passages: list[str]) -> list[float]:
    """The hook's scores, checked as the rewriter's output is: its failure is named as the
    hook's (not a traceback from inside the search), and a NaN would order nothing."""
    name = getattr(reranker, "__name__", type(reranker).__name__)
    try:
        returned = reranker(query, passages)
        scores = [float(s) for s in returned]
    except Exception as exc:  # noqa: BLE001 - any failure of the caller's code is the hook's
        raise RerankerError(
            f"the reranker {name!r} failed: {type(exc).__name__}: {exc}; it takes (query, "
            "passages) and returns one number per passage; fix the hook or search without "
            "reranker=") from exc
    if len(scores) != len(passages):
        raise RerankerError(
            f"the reranker {name!r} returned {len(scores)} scores for {len(passages)} passages")
    if not all(math.isfinite(s) for s in scores):
        raise RerankerError(f"the reranker {name!r} returned a NaN or infinite score")
    return scores


def diversify(
    view: ChunkView, request: SearchRequest, fused: Fused, final: np.ndarray,
    order_idx: np.ndarray, depth: int,
) -> np.ndarray:
    """MMR over the depth's pool, then the per-source cap, then chunks per document."""
    positions = fused.positions
    if request.mmr and len(order_idx):
        # the pool follows the depth, never the page, so every page sees one ranking
        pool = order_idx[: min(depth, MMR_POOL_MAX)]
        pool_scores = post.scale(final[pool])
        picked = post.mmr(pool_scores, view.vectors[positions[pool]], len(pool), request.mmr_lambda)
        order_idx = np.concatenate([pool[picked], order_idx[len(pool):]])
    cap = _source_cap(request)
    if cap is not None and len(order_idx):
        documents, source_ids = view.column("document_id"), view.column("source_id")
        sources = [source_ids[p] or documents[p] for p in positions[order_idx].tolist()]
        order_idx = order_idx[post.cap_per_source(sources, cap)]
    if request.chunks_per_doc is not None and len(order_idx):
        order_idx = _group_by_document(view, positions, order_idx, request.chunks_per_doc)
    return order_idx


def page(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str,
    qvec: np.ndarray | None, allowed: Allowed, first: Block,
) -> paging.Stitched[tuple[Block, int]]:
    """Ranks 1..offset+limit from the depth ladder: deeper rungs only for a page past what
    is placed; none once all is seen, or once a rung placed nothing new (min_score or
    filters leave no more: do not climb to 10,000)."""
    end = request.offset + request.limit
    # One block placing the page is the ranking (its labels are unique and it follows the
    # caps): what paging.stitch returns for it, without a key call per candidate.
    n = len(first.order_idx) if first.exhausted else min(len(first.order_idx), request.candidates)
    if n >= end or first.exhausted:
        return paging.Stitched([(first, i) for i in first.order_idx[:n].tolist()],
                               not first.exhausted)
    caps = _caps(view, request)
    blocks, depths = [first], [request.candidates]
    placed = -1
    while True:
        ranking = paging.stitch(
            [([(b, int(i)) for i in b.order_idx], b.exhausted) for b in blocks], depths,
            key=lambda item: int(item[0].labels[item[1]]),
            caps=caps if len(blocks) > 1 else (),  # one block already follows them
        )
        depth = paging.deeper(depths[-1], request.candidates)
        if (len(ranking.items) >= end or blocks[-1].exhausted or depth is None
                or len(ranking.items) == placed):
            return _capped(ranking)
        placed = len(ranking.items)
        blocks.append(rank(store, view, request, strategy, qvec, allowed, depth))
        depths.append(depth)


def _capped(ranking: paging.Stitched[Item]) -> paging.Stitched[Item]:
    """The stitched ranking with each deeper rung's fused scores capped (``paging.caps``):
    its items point into copies of their blocks whose scores are capped."""
    runs: list[tuple[Block, list[int]]] = []
    for block, i in ranking.items:
        if not runs or runs[-1][0] is not block:
            runs.append((block, []))
        runs[-1][1].append(i)
    if len(runs) < 2:
        return ranking
    caps = paging.caps([block.fused_scores[idx] for block, idx in runs])
    items: list[Item] = []
    for (block, idx), cap in zip(runs, caps, strict=True):
        shown = block if cap is None else _cap_block(block, cap)
        items += [(shown, i) for i in idx]
    return paging.Stitched(items, ranking.total_is_lower_bound)


def _cap_block(block: Block, cap: float) -> Block:
    """``block`` with its fused scores at most ``cap``; the sibling share a fused score
    includes shrinks with it, in proportion."""
    fused = np.minimum(block.fused_scores, cap)
    sibling = block.sibling
    if sibling is not None:
        raw = block.fused_scores
        sibling = np.where(raw > fused, sibling * np.divide(fused, raw, out=np.zeros_like(raw),
                                                           where=raw != 0), sibling)
    return dataclasses.replace(block, fused_scores=fused, sibling=sibling)


def top_similarity(
    view: ChunkView, request: SearchRequest, qvec: np.ndarray | None, first: Block
) -> np.ndarray | None:
    """Cosines of the first hits (the response's confidence), over the page or the gate's top."""
    if qvec is None or not len(first.order_idx):
        return None
    top = first.order_idx[: max(GATE_TOP_N, request.offset + request.limit)]
    return view.vectors[first.positions[top]] @ qvec  # type: ignore[no-any-return]


Item = tuple[Block, int]


def _caps(view: ChunkView, request: SearchRequest) -> list[tuple[Callable[[Item], Hashable], int]]:
    """The grouping rules the stitched ranking must follow across blocks."""

    documents = view.column("document_id")
    sources = view.column("source_id")

    def document(item: Item) -> Hashable:
        return documents[item[0].positions[item[1]]]  # type: ignore[no-any-return]

    def source(item: Item) -> Hashable:
        position = item[0].positions[item[1]]
        return sources[position] or documents[position]  # type: ignore[no-any-return]

    caps: list[tuple[Callable[[Item], Hashable], int]] = []
    if request.chunks_per_doc is not None:
        caps.append((document, request.chunks_per_doc))
    cap = _source_cap(request)
    if cap is not None:
        caps.append((source, cap))
    return caps


def _source_cap(request: SearchRequest) -> int | None:
    return request.per_source_cap or (post.PER_SOURCE_CAP if request.mmr else None)


def _authority(view: ChunkView, position: int) -> tuple[Any, Any, Any, Any]:
    r = view.record(position)
    return r.source_tier, r.evidence_level, r.peer_reviewed, r.authority_score


def _group_by_document(
    view: ChunkView, positions: np.ndarray, order_idx: np.ndarray, per_doc: int
) -> np.ndarray:
    """Documents ranked by their best chunk, then up to ``per_doc`` of their chunks each."""
    # Document codes stand for the documents (equal code, equal id): numpy sorts, no dict.
    documents = view.codes("document_id")[positions[order_idx]]
    if per_doc == 1:  # each document's best chunk, in rank order
        return order_idx[np.sort(np.unique(documents, return_index=True)[1])]
    _, first, group = np.unique(documents, return_index=True, return_inverse=True)
    # a candidate's place among its document's candidates (0 for the best one)
    by_group = np.argsort(group, kind="stable")
    sizes = np.bincount(group)
    starts = np.cumsum(sizes) - sizes
    place = np.empty(len(group), dtype=np.int64)
    place[by_group] = np.arange(len(group)) - np.repeat(starts, sizes)
    # each document at its best chunk's rank, its chunks in rank order
    keep = np.flatnonzero(place < per_doc)
    keep = keep[np.lexsort((keep, first[group[keep]]))]
    return order_idx[keep].astype(np.int64, copy=False)
