"""The catalog queries behind the chunk view: compact columns at open, text for hits only.

Part of the catalog layer (every statement a named constant, every value a parameter); the
chunk view (``chunk_view.py``) calls these functions and never writes SQL itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .catalog import Catalog
from .columns import matrix

# A batch of texts: labels (int64, ascending), contents, heading paths ('' for none).
TextBatch = tuple[np.ndarray, list[str], list[str]]

# What a search needs of every chunk without reading its text: a few ints, the document's
# short metadata (citations, truth filter, caps, grouping). Text and vectors stay out.
_COMPACT_COLUMNS = """
SELECT c.label, c.document_id, c.chunk_index, c.start_offset, c.end_offset, c.token_count,
       c.page_start, c.page_end,
       d.truth_level, d.title, d.source_path, d.source_type, d.source_url, d.source_id,
       d.language, d.version, d.index_version
FROM chunks c
JOIN documents d USING (document_id)
"""
COMPACT_SQL = _COMPACT_COLUMNS
# Rows that changed after a generation: new chunks, and chunks of documents whose metadata
# changed (``update_document`` bumps the document's generation, not its chunks'). Two
# disjoint halves, not one OR: each half's range test prunes row groups by their min/max
# generation, so the cost follows what changed (an OR scans every row: 0.3 s at 1M).
CHANGED_SQL = (_COMPACT_COLUMNS + "WHERE c.generation > ? UNION ALL " + _COMPACT_COLUMNS
               + "WHERE d.generation > ? AND c.generation <= ?")
SOURCES_SQL = "SELECT source_id, tier, evidence_level, authority_score, peer_reviewed FROM sources"
TEXTS_SINCE_SQL = (
    "SELECT label, content, coalesce(heading_path, '') AS heading_path FROM chunks "
    "WHERE generation > ? ORDER BY label"
)
TEXT_SQL = "SELECT label, content, heading_path FROM chunks WHERE label IN (SELECT unnest(?::BIGINT[]))"
VECTORS_SQL = "SELECT label, embedding FROM chunks WHERE label IN (SELECT unnest(?::BIGINT[]))"
# ``where`` is a predicate compiled by search/filters.py from the caller's filters: its
# values are parameters, its column names come from that module's fixed field map.
_FILTER_SQL = "SELECT c.label FROM chunks c JOIN documents d USING (document_id) WHERE {where} ORDER BY c.label"


@contextmanager
def briefly(catalog: Catalog) -> Iterator[Catalog]:
    """Use the catalog and give the file back if it was closed before: a search reading a
    few texts must not keep other processes out of the file (see ``Catalog.release``)."""
    was_open = catalog.connected
    try:
        yield catalog
    finally:
        if not was_open:
            catalog.release()


def compact_rows(catalog: Catalog, since: int | None = None) -> dict[str, np.ndarray]:
    """Every chunk's compact columns, or those of the rows changed after ``since``, as
    numpy columns (``fetchnumpy``: a column holding NULLs is a masked array)."""
    if since is None:
        return catalog.con.execute(COMPACT_SQL).fetchnumpy()
    return catalog.con.execute(CHANGED_SQL, [since, since, since]).fetchnumpy()


def sources(catalog: Catalog) -> dict[str, tuple[Any, Any, Any, Any]]:
    """source_id -> (tier, evidence_level, authority_score, peer_reviewed); a small table."""
    return {row[0]: (row[1], row[2], row[3], row[4])
            for row in catalog.con.execute(SOURCES_SQL).fetchall()}


def texts_since(catalog: Catalog, generation: int, batch_size: int = 16_384) -> Iterator[TextBatch]:
    """(labels, contents, heading paths) of the chunks committed after ``generation``, by
    label, streamed in batches (bounded memory at any corpus size)."""
    # The caller must not use the catalog's connection until the batches are consumed
    # (another statement would end this result).
    result = catalog.con.execute(TEXTS_SINCE_SQL, [generation])
    while rows := result.fetchmany(batch_size):
        labels, contents, headings = zip(*rows, strict=True)
        yield np.array(labels, dtype=np.int64), list(contents), list(headings)


def chunk_texts(catalog: Catalog, labels: Sequence[int]) -> dict[int, tuple[str, str]]:
    """label -> (content, heading_path) for the labels that exist."""
    if not len(labels):
        return {}
    with briefly(catalog):
        table = catalog.con.execute(TEXT_SQL, [[int(x) for x in labels]]).fetchnumpy()
    return {int(label): (str(content), heading or "")
            for label, content, heading in zip(table["label"], table["content"],
                                               table["heading_path"], strict=True)}


def chunk_vectors(catalog: Catalog, labels: Sequence[int]) -> dict[int, np.ndarray]:
    """label -> stored vector, for a vector index that does not hold a label."""
    if not len(labels):
        return {}
    with briefly(catalog):
        table = catalog.con.execute(VECTORS_SQL, [[int(x) for x in labels]]).fetchnumpy()
    flat = matrix(table["embedding"], catalog.dim)
    return {int(label): flat[i] for i, label in enumerate(table["label"].tolist())}


def filtered_labels(catalog: Catalog, where: str, params: tuple[object, ...]) -> np.ndarray:
    """Labels of the chunks whose document matches a compiled filter (``d.<column>``)."""
    with briefly(catalog):
        rows = catalog.con.execute(_FILTER_SQL.format(where=where), list(params)).fetchnumpy()["label"]
    return np.asarray(rows, dtype=np.int64)
