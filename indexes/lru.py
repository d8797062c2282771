"""A small least-recently-used cache for per-query work (query translations, parsed
queries, typo corrections).

Why not ``functools.lru_cache``: the entries depend on the index's vocabulary, so the
owner empties them on every commit (``clear``), and the keys are built by the caller.
Dropping the oldest entry, not the whole cache, keeps a working set of a few hundred
repeated queries warm when a new one arrives.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``size`` entries; ``get`` marks an entry as the most recently used."""

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError(f"an LRU cache needs a positive size, got {size}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The value, or None when absent (test ``key in cache`` where None is a value)."""
        try:
            self._entries.move_to_end(key)
        except KeyError:
            return None
        return self._entries[key]

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
