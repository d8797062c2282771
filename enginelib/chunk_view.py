"""An in-memory columnar view of the chunks a search needs, so a query never waits on SQL."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from .catalog import Catalog

_VIEW_SQL = """
SELECT c.label, c.document_id, c.chunk_index, c.content, c.heading_path,
       c.start_offset, c.end_offset, c.token_count, c.page_start, c.page_end,
       c.embedding,
       d.truth_level, d.title, d.source_path, d.source_type, d.source_url, d.source_id,
       d.language, d.version, d.index_version,
       d.domain, d.document_type, d.author, d.tenant_id, d.tags, d.custom,
       d.created_at, d.updated_at, d.validated_at,
       s.tier AS source_tier, s.evidence_level, s.authority_score, s.peer_reviewed
FROM chunks c
JOIN documents d USING (document_id)
LEFT JOIN sources s ON s.source_id = d.source_id
ORDER BY c.label
"""


@dataclass(frozen=True)
class ChunkRecord:
    label: int
    document_id: str
    chunk_index: int
    content: str
    heading_path: str
    start_offset: int
    end_offset: int
    token_count: int
    page_start: int | None
    page_end: int | None
    truth_level: str
    title: str | None
    source_path: str | None
    source_type: str | None
    source_url: str | None
    source_id: str | None
    language: str | None
    version: str
    index_version: str
    source_tier: str | None
    evidence_level: str | None
    authority_score: float | None
    peer_reviewed: bool | None


# Columns only filters use; they stay in the Arrow table, out of ChunkRecord.
_FILTER_ONLY = ("domain", "document_type", "author", "tenant_id", "tags", "custom",
                "created_at", "updated_at", "validated_at")


class ChunkView:
    """Chunk rows and vectors at one catalog generation, addressed by label.

    Searches read only this view and the indexes, never the catalog file, so a reader
    process needs the DuckDB file just while loading and a writer can commit meanwhile.
    Filters run as SQL over the view's Arrow table in a private in-memory DuckDB.
    """

    def __init__(self, table: pa.Table, dim: int, generation: int) -> None:
        self.generation = generation
        self._table = table.drop_columns(["embedding", "content"])
        self._filter_con: duckdb.DuckDBPyConnection | None = None
        self.labels = np.asarray(table.column("label").to_numpy(), dtype=np.int64)
        embedding = table.column("embedding").combine_chunks()
        if len(self.labels):
            flat = np.asarray(embedding.values.to_numpy(zero_copy_only=False), dtype=np.float32)
            self.vectors = flat.reshape(len(self.labels), dim)
        else:
            self.vectors = np.zeros((0, dim), dtype=np.float32)
        self._columns = {
            name: table.column(name).to_pylist()
            for name in table.column_names
            if name not in ("label", "embedding") and name not in _FILTER_ONLY
        }
        self._ordered = [self._columns[f.name] for f in fields(ChunkRecord)[1:]]
        levels = np.array(self._columns["truth_level"], dtype=object)
        self.truth_levels = levels.astype("U2") if len(levels) else np.zeros(0, dtype="U2")

    @classmethod
    def load(cls, catalog: Catalog) -> ChunkView:
        table = catalog.con.sql(_VIEW_SQL).to_arrow_table()
        return cls(table, catalog.dim, catalog.generation)

    def __len__(self) -> int:
        return len(self.labels)

    def positions(self, labels: np.ndarray) -> np.ndarray:
        """Row positions of ``labels``; -1 where a label is not in this view."""
        labels = np.asarray(labels, dtype=np.int64)
        if len(self.labels) == 0:
            return np.full(len(labels), -1, dtype=np.int64)
        pos = np.searchsorted(self.labels, labels)
        pos = np.clip(pos, 0, len(self.labels) - 1)
        found = self.labels[pos] == labels
        return np.where(found, pos, -1)

    def record(self, position: int) -> ChunkRecord:
        # positional, in ChunkRecord's field order: a search builds one per returned hit
        return ChunkRecord(int(self.labels[position]), *[col[position] for col in self._ordered])

    def column(self, name: str) -> list[Any]:
        """One ``ChunkRecord`` field (not ``label``) for every row, in row order, without
        building records: grouping reads hundreds of candidates per search. Read-only."""
        return self._columns[name]

    def filter_labels(self, where: str, params: tuple[object, ...]) -> np.ndarray:
        """Labels of the rows matching a compiled filter (``d.<column>`` references)."""
        if self._filter_con is None:
            self._filter_con = duckdb.connect(":memory:")
            self._filter_con.register("chunk_view", self._table)
        rows = self._filter_con.execute(
            f"SELECT d.label FROM chunk_view d WHERE {where} ORDER BY d.label", list(params)
        ).fetchnumpy()["label"]
        return np.asarray(rows, dtype=np.int64)

    def close(self) -> None:
        if self._filter_con is not None:
            self._filter_con.close()
            self._filter_con = None

    def labels_with_truth(self, levels: tuple[str, ...]) -> np.ndarray | None:
        """Labels whose document has one of ``levels``; None when that is every chunk."""
        mask = np.isin(self.truth_levels, np.array(levels, dtype="U2"))
        if mask.all():
            return None
        return self.labels[mask]
