"""Progress bars for long work (rich on stderr), silent unless asked for."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich loads with the first bar shown, not with every search process
    from rich.progress import Progress, TaskID


class IngestProgress:
    """Two counters: documents committed, and chunks embedded (cache misses only)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._progress: Progress | None = None
        self._docs: TaskID | None = None
        self._chunks: TaskID | None = None

    def __enter__(self) -> IngestProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=False,
            )
            self._progress.start()
            self._docs = self._progress.add_task("documents", total=None)
            self._chunks = self._progress.add_task("embedding chunks", total=0)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance_documents(self, count: int) -> None:
        if self._progress is not None and self._docs is not None:
            self._progress.advance(self._docs, count)

    def start_embedding(self, count: int) -> None:
        if self._progress is not None and self._chunks is not None:
            task = self._progress.tasks[self._chunks]
            self._progress.update(self._chunks, total=(task.total or 0) + count)

    def advance_chunks(self, count: int) -> None:
        if self._progress is not None and self._chunks is not None:
            self._progress.advance(self._chunks, count)
