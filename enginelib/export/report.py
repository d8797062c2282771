"""What an export did (ExportReport) and its progress bars (rich, on stderr, off by default)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


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
        self._progress: Progress | None = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=Console(file=sys.stderr),
            )
        self._task: object = None

    def __enter__(self) -> ExportProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def start(self, what: str, total: int) -> None:
        if self._progress is not None:
            self._task = self._progress.add_task(f"export {what}", total=total)

    def advance(self, count: int) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, count)  # type: ignore[arg-type]
