"""What each retrieval method showed it saw, read from the store for ``fusion.method_weights``:
the query's language, the language of the passages it met, and BM25's coverage."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..language import query_language
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
    passage_language = view.record(position).language if position >= 0 else None
    if gate.same_language(language, passage_language):
        return fusion.method_weights(language, passage_language, None)
    coverage = bm25_coverage(store, view, query, text)
    return fusion.method_weights(language, passage_language, coverage)


def bm25_coverage(store: Store, view: ChunkView, query: str, text: Ranking) -> float | None:
    """The IDF-weighted share of the query's content words in BM25's best hit (gate.coverage)."""
    position = _position(view, text[0][0])
    if position < 0:
        return None
    terms = store.text_index.query_terms(query)
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
    documents, indexes = view.column("document_id"), view.column("chunk_index")
    rows = positions.tolist()
    by_document: dict[str, list[tuple[int, int]]] = {}
    for i, row in enumerate(rows):
        by_document.setdefault(documents[row], []).append((indexes[row], i))
    out = np.zeros(len(rows), dtype=bool)
    for members in by_document.values():
        if len(members) < 2:
            continue
        members.sort()
        if all(view.text_of(int(view.labels[rows[i]]))[0].endswith("\n")
               for _, i in members[:-1]):
            out[[i for _, i in members]] = True
    return out
