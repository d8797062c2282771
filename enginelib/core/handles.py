"""Narrow views of a store for modules the core itself imports (so they need not name it).

``search/cache.py`` reports the store's cache counters; the core builds its response cache,
so typing that module against ``StoreCore`` would make the two name each other.
"""

from __future__ import annotations

from typing import Protocol


class Counted(Protocol):
    def stats(self) -> dict[str, int]: ...


class CacheHolder(Protocol):
    """A store as ``cache_stats`` sees it: two caches that count their hits."""

    @property
    def response_cache(self) -> Counted: ...

    @property
    def query_embeddings(self) -> Counted: ...
