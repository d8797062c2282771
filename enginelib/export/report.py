"""What an export did (ExportReport) and its progress bars (tqdm, on stderr, off by default)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm


@dataclass(frozen=True)
class ExportReport:
    """Counts of one export. ``*_written`` / ``*_deleted`` are rows changed on the server
    (a re-export of an unchanged store writes none); they are None for a .sql file, whose
    effect depends on the database it is loaded into."""

    target: str  # "postgres" or the .sql file path
    schema: str
    table_prefix: str
    documents: int
    chunks: int
    versions: int
    sources: int
    embedding_dim: int
    store_generation: int
    seconds: float
    changes: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "target": self.target, "schema": self.schema, "table_prefix": self.table_prefix,
            "documents": self.documents, "chunks": self.chunks, "versions": self.versions,
            "sources": self.sources, "embedding_dim": self.embedding_dim,
            "store_generation": self.store_generation, "seconds": round(self.seconds, 3),
            **self.changes,
        }


class ExportProgress:
    """One bar per table being copied."""

    def __init__(self, *, enabled: bool) -> None:
        self._enabled = enabled
        self._bar: tqdm[None] | None = None

    def __enter__(self) -> ExportProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._close()

    def start(self, what: str, total: int) -> None:
        if self._enabled:
            from tqdm import tqdm

            self._close()
            self._bar = tqdm(desc=f"export {what}", total=total, unit=" rows", file=sys.stderr)

    def advance(self, count: int) -> None:
        if self._bar is not None:
            self._bar.update(count)

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
