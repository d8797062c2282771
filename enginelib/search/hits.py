"""The cite stage: the returned page's hits, with their scores and citations, and the
response's RagContext. Only the page is built; each citation's quote is cut on first read."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from ..types import truth_rank
from .citations import make_citation
from .gate import GateDecision
from .quotes import content_terms
from .request import GATE_TOP_N, SearchRequest
from .results import NO_RELEVANT_SOURCES, Hit, RagContext, Scores, SearchResponse, assemble
from .retrieve import Ranking

if TYPE_CHECKING:
    from ..chunk_view import ChunkView
    from ..store import Store


@dataclass(frozen=True)
class Block:
    """The ranking of one candidate depth (``stages.rank``): what the page and the cite
    stages read. ``order_idx`` indexes ``labels``/``positions``/scores in final order."""

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
    sibling: np.ndarray | None = None  # sibling evidence within fused_scores (stages.fuse)


def build_hits(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str,
    qvec: np.ndarray | None, items: list[tuple[Block, int]],
) -> tuple[Hit, ...]:
    """One hit per page item (``(block, index into the block)``), ranked from offset + 1."""
    # the quote looks for the query's words even in a vector search; highlights stay BM25's
    quote_terms = content_terms(store.text_index.highlight_terms(request.queries[0]))
    terms = quote_terms if strategy != "vector" else ()
    positions = np.fromiter((int(b.positions[i]) for b, i in items), dtype=np.int64,
                            count=len(items))
    # one matrix product for the page, not one dot product per hit
    similarities = (view.vectors[positions] @ qvec).tolist() if qvec is not None else None
    ranks: dict[int, tuple[dict[int, int], dict[int, int]]] = {}
    hits = []
    for n, (block, idx) in enumerate(items):
        rank = request.offset + n + 1
        label = int(block.labels[idx])
        position = int(positions[n])
        record = view.record(position)
        block_ranks = ranks.get(id(block))
        if block_ranks is None:  # built once per block the page draws from
            block_ranks = ranks[id(block)] = (_ranks(block.vector_ranking), _ranks(block.text_ranking))
        vr = block_ranks[0].get(label)
        tr = block_ranks[1].get(label)
        scores = assemble(
            Scores,
            vector_rank=vr,
            vector_score=float(block.vector_ranking[vr - 1][1]) if vr else None,
            bm25_rank=tr,
            bm25_score=float(block.text_ranking[tr - 1][1]) if tr else None,
            fused=float(block.fused_scores[idx]),
            sibling=float(block.sibling[idx]) if block.sibling is not None else 0.0,
            similarity=similarities[n] if similarities is not None else None,
            boost=float(block.boosts[idx]),
            rerank_score=block.rerank_scores.get(idx),
        )
        hits.append(
            assemble(
                Hit,
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
    return tuple(hits)


def _ranks(ranking: Ranking) -> dict[int, int]:
    """label -> rank (from 1); built by C-level iterators, not a Python loop."""
    return dict(zip(map(itemgetter(0), ranking), itertools.count(1)))


def context(
    store: Store, hits: tuple[Hit, ...], strategy: str, similarity: np.ndarray | None
) -> RagContext:
    """What a RAG prompt needs beside the hits: their documents and citations, the lowest
    truth level, and a confidence from the top similarities."""
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


def empty_response(
    store: Store, request: SearchRequest, strategy: str, reason: str, *, total: int = 0,
    similarity: np.ndarray | None = None, decision: GateDecision | None = None,
) -> SearchResponse:
    """A response with no hits and the reason (NO_RELEVANT_SOURCES)."""
    return SearchResponse(
        query=request.queries[0],
        hits=(),
        status=NO_RELEVANT_SOURCES,
        strategy_used=strategy,
        total=total,
        limit=request.limit,
        offset=request.offset,
        execution_time_ms=0.0,
        context=context(store, (), strategy, similarity),
        reason=reason,
        truth_levels=request.truth_levels,
        gate=decision,
    )
