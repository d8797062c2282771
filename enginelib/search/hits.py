"""The cite stage: the returned page's hits, with their scores and citations, and the
response's RagContext. Only the page is built; each citation's quote is cut on first read."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from ..types import truth_rank
from .cache import GenerationMemo
from .citations import citations_of
from .gate import GateDecision
from .quotes import content_terms
from .request import GATE_TOP_N, SearchRequest
from .results import NO_RELEVANT_SOURCES, Hit, RagContext, Scores, SearchResponse, assemble_rows
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
    # the sibling evidence included in ``fused_scores`` (fusion.sibling_evidence), or None
    sibling: np.ndarray | None = None


def build_hits(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str,
    qvec: np.ndarray | None, items: list[tuple[Block, int]],
    above: Sequence[tuple[Block, int]] = (),
) -> tuple[Hit, ...]:
    """One hit per page item (``(block, index into the block)``), ranked from offset + 1;
    ``above``: the ranking's items before the page (their chunks shape the page's quotes)."""
    # the quote looks for the query's words even in a vector search; highlights stay BM25's
    quote_terms = quote_terms_of(store, view, request.queries[0])
    terms = quote_terms if strategy != "vector" else ()
    positions, fused, boosts, sibling = _page_columns(items)
    # The page's rows column by column and one matrix product for its similarities: no
    # record object and no dot product per hit; each object built from its columns.
    rows = view.fields_at(positions)
    labels = rows["label"]
    texts = view.texts_of(labels)
    contents = [content for content, _ in texts]
    headings = [heading or "" for _, heading in texts]
    count = len(items)
    similarities = ((view.vectors[positions] @ qvec).tolist() if qvec is not None
                    else [None] * count)
    numbers = range(request.offset + 1, request.offset + 1 + count)
    vector_rank, vector_score, bm25_rank, bm25_score, rerank = _method_columns(items, labels)
    scores = assemble_rows(
        Scores,
        vector_rank=vector_rank,
        vector_score=vector_score,
        bm25_rank=bm25_rank,
        bm25_score=bm25_score,
        fused=fused,
        sibling=sibling,
        similarity=similarities,
        boost=boosts,
        rerank_score=rerank,
    )
    return tuple(assemble_rows(
        Hit,
        rank=numbers,
        label=labels,
        document_id=rows["document_id"],
        chunk_index=rows["chunk_index"],
        content=contents,
        start_offset=rows["start_offset"],
        end_offset=rows["end_offset"],
        truth_level=rows["truth_level"],
        scores=scores,
        citation=citations_of(numbers, rows, contents, headings, quote_terms,
                              shown_ranges(view, _positions(above), positions)),
        highlight_terms=[terms] * count,
        title=rows["title"],
        heading_path=headings,
    ))


def shown_ranges(
    view: ChunkView, above: np.ndarray, page: np.ndarray
) -> list[list[tuple[int, int]]]:
    """Per page hit: the ranges (global offsets) of its document that overlapping chunks
    ranked above it hold, on earlier pages or earlier on this one. Chunks overlap, so
    without this two neighbours of one document would often quote one sentence twice."""
    docs_page = view.codes("document_id")[page]
    docs_above = view.codes("document_id")[above]
    above = above[np.isin(docs_above, docs_page)]  # only the page's documents matter
    positions = np.concatenate([above, page])
    docs = view.codes("document_id")[positions]
    starts = view.number_column("start_offset")[positions]
    ends = view.number_column("end_offset")[positions]
    out = []
    for r in range(len(above), len(positions)):
        earlier = np.flatnonzero((docs[:r] == docs[r]) & (starts[:r] < ends[r])
                                 & (ends[:r] > starts[r]))
        out.append([(int(starts[j]), int(ends[j])) for j in earlier])
    return out


def _positions(items: Sequence[tuple[Block, int]]) -> np.ndarray:
    """The view positions of ranking items."""
    return np.fromiter((int(block.positions[i]) for block, i in items), dtype=np.int64,
                       count=len(items))


def _method_columns(items: list[tuple[Block, int]], labels: list[int]) -> tuple[list[Any], ...]:
    """Per hit: its rank and score in each method (None where a method missed it), and
    its reranker score (None unless reranked)."""
    ranks: dict[int, tuple[dict[int, int], dict[int, int]]] = {}
    columns: tuple[list[Any], ...] = ([], [], [], [], [])
    vector_rank, vector_score, bm25_rank, bm25_score, rerank = columns
    for (block, idx), label in zip(items, labels, strict=True):
        block_ranks = ranks.get(id(block))
        if block_ranks is None:  # built once per block the page draws from
            block_ranks = ranks[id(block)] = (_ranks(block.vector_ranking), _ranks(block.text_ranking))
        vr = block_ranks[0].get(label)
        tr = block_ranks[1].get(label)
        vector_rank.append(vr)
        vector_score.append(float(block.vector_ranking[vr - 1][1]) if vr else None)
        bm25_rank.append(tr)
        bm25_score.append(float(block.text_ranking[tr - 1][1]) if tr else None)
        rerank.append(block.rerank_scores.get(idx))
    return columns


def _page_columns(
    items: list[tuple[Block, int]],
) -> tuple[np.ndarray, list[float], list[float], list[float]]:
    """The page's view positions, fused scores, boosts and sibling gains, block by block."""
    idx = np.fromiter((i for _, i in items), dtype=np.int64, count=len(items))
    blocks = list({id(b): b for b, _ in items}.values())
    if len(blocks) == 1:  # the usual page: one depth placed it
        block = blocks[0]
        sibling = (block.sibling[idx].tolist() if block.sibling is not None
                   else [0.0] * len(items))
        return (block.positions[idx], block.fused_scores[idx].tolist(),
                block.boosts[idx].tolist(), sibling)
    owner = np.fromiter((blocks.index(b) for b, _ in items), dtype=np.int64, count=len(items))
    positions = np.empty(len(items), dtype=np.int64)
    fused = np.empty(len(items), dtype=np.float64)
    boosts = np.empty(len(items), dtype=np.float64)
    gains = np.zeros(len(items), dtype=np.float64)
    for k, block in enumerate(blocks):
        mine = owner == k
        positions[mine] = block.positions[idx[mine]]
        fused[mine] = block.fused_scores[idx[mine]]
        boosts[mine] = block.boosts[idx[mine]]
        if block.sibling is not None:
            gains[mine] = block.sibling[idx[mine]]
    return positions, fused.tolist(), boosts.tolist(), gains.tolist()


# The quote terms of recent query texts, per store and generation (a typo correction
# depends on the vocabulary): the same question asked again skips the analyzers.
_QUOTE_TERMS: GenerationMemo[tuple[str, ...]] = GenerationMemo()


def quote_terms_of(store: Store, view: ChunkView, query: str) -> tuple[str, ...]:
    """The query's content words and their stems, as quotes and highlights look for them."""
    return _QUOTE_TERMS.get(store, (view.generation, store.index_version), query,
                            lambda: content_terms(store._text_index.highlight_terms(query)))


def _ranks(ranking: Ranking) -> dict[int, int]:
    """label -> rank (from 1); built by C-level iterators, not a Python loop."""
    return dict(zip(map(itemgetter(0), ranking), itertools.count(1)))


def context(
    store: Store, hits: tuple[Hit, ...], strategy: str, similarity: np.ndarray | None
) -> RagContext:
    """What a RAG prompt needs beside the hits: their documents and citations, the lowest
    truth level, and a confidence from the top similarities."""
    if similarity is not None and len(similarity):
        # plain min/max: np.clip on a scalar costs more than the mean
        confidence = min(max(float(np.mean(similarity[:GATE_TOP_N])), 0.0), 1.0)
    else:
        confidence = 1.0 if hits else 0.0
    # the distinct levels in hit order: the same first-maximal level, one rank call each
    lowest = max(dict.fromkeys(h.truth_level for h in hits), key=truth_rank, default=None)
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
