"""What each retrieval method showed it saw, read from the store for ``fusion.method_weights``:
the query's language, the language of the passages it met, and BM25's coverage."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..language import hit_language, query_language
from . import fusion, gate
from .answerability import _hit_tokens
from .quotes import content_terms

if TYPE_CHECKING:
    from ..chunk_view import ChunkView
    from ..store import Store

Ranking = list[tuple[int, float]]


def weights_for(
    store: Store, view: ChunkView, query: str, vector: Ranking, text: Ranking
) -> dict[str, float]:
    """Per-method fusion weights for one (sub-)query and its two rankings.

    Cheap in one language (a language guess and one record): BM25's coverage is only read
    when the query's language differs from the best vector hit's. A query of keywords only
    (no function word of any language) has no language to compare: plain weights.
    """
    if not fusion.EVIDENCE_WEIGHTING or not vector or not text:
        return {"vector": 1.0, "bm25": 1.0}
    language = query_language(query)
    if language is None:  # keywords only: no evidence that the languages differ
        return {"vector": 1.0, "bm25": 1.0}
    position = _position(view, vector[0][0])
    passage_language = None
    if position >= 0:
        record = view.record(position)
        passage_language = hit_language(record.language, record.content, language)
    if gate.same_language(language, passage_language):
        return fusion.method_weights(language, passage_language, None)
    coverage = bm25_coverage(store, view, query, text)
    return fusion.method_weights(language, passage_language, coverage)


def bm25_coverage(store: Store, view: ChunkView, query: str, text: Ranking) -> float | None:
    """The IDF-weighted share of the query's content words in BM25's best hit (gate.coverage)."""
    position = _position(view, text[0][0])
    if position < 0:
        return None
    terms = store._text_index.query_terms(query)
    kept = set(content_terms([t.word for t in terms]))
    share, _missing = gate.coverage([t for t in terms if t.word in kept],
                                    set(_hit_tokens(store, view, position)))
    return share


def _position(view: ChunkView, label: int) -> int:
    """The view row of ``label``; -1 when the view lacks it (replaced meanwhile)."""
    return int(view.positions(np.array([label], dtype=np.int64))[0])


def cut_at_lines(view: ChunkView, positions: np.ndarray) -> np.ndarray:
    """Per candidate (view row), whether it may share sibling evidence (fusion.py): its
    document has another candidate and every candidate of that document but the last one
    (by chunk index) ends on a line break, i.e. the chunker cut it between provisions
    (numbered paragraphs, points, sections), not inside prose by size.

    Read from what the view holds: document ids and chunk indexes for every candidate,
    and the text of only the candidates that share a document with another one (a chunk
    cut at a line break ends with it: chunker ``_cut_at_line``). Prose cut by size never
    ends on a line break, so a SciFact abstract's two halves stay apart.
    """
    out = np.zeros(len(positions), dtype=bool)
    if len(positions) < 2:
        return out
    documents = view.codes("document_id")[positions]
    indexes = view.number_column("chunk_index")[positions]
    order = np.lexsort((indexes, documents))  # by document, then chunk index
    grouped = documents[order]
    has_next = grouped[1:] == grouped[:-1]  # a later chunk of the same document follows
    if not has_next.any():
        return out
    group = np.r_[0, np.cumsum(~has_next)]  # group number of each sorted candidate
    # Every member but a document's last must end on a line break: read only those texts.
    inner = order[:-1][has_next]
    labels = view.labels[positions[inner]].tolist()
    ends = np.fromiter((view.text_of(label)[0].endswith("\n") for label in labels),
                       dtype=bool, count=len(labels))
    broken = np.zeros(group[-1] + 1, dtype=bool)
    broken[group[:-1][has_next][~ends]] = True
    sizes = np.bincount(group)
    out[order] = (sizes[group] >= 2) & ~broken[group]
    return out
