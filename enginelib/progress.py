"""Progress bars for long work (tqdm on stderr), silent unless asked for."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tqdm loads with the first bar shown, not with every search process
    from tqdm import tqdm


class IngestProgress:
    """Two counters: documents committed, and chunks embedded (cache misses only)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._docs: tqdm[None] | None = None
        self._chunks: tqdm[None] | None = None

    def __enter__(self) -> IngestProgress:
        if self.enabled:
            # tqdm rather than rich: a bar is all we draw, and rich brings pygments and
            # markdown-it (12 MB) into the base install.
            from tqdm import tqdm

            self._docs = tqdm(desc="documents", unit=" docs", file=sys.stderr, position=0)
            self._chunks = tqdm(desc="embedding chunks", total=0, unit=" chunks",
                                file=sys.stderr, position=1)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for bar in (self._chunks, self._docs):
            if bar is not None:
                bar.close()

    def advance_documents(self, count: int) -> None:
        if self._docs is not None:
            self._docs.update(count)

    def start_embedding(self, count: int) -> None:
        if self._chunks is not None:
            self._chunks.total = (self._chunks.total or 0) + count
            self._chunks.refresh()

    def advance_chunks(self, count: int) -> None:
        if self._chunks is not None:
            self._chunks.update(count)
