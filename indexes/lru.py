"""A small least-recently-used cache for per-query work (query translations, parsed
queries, typo corrections).

Why not ``functools.lru_cache``: the entries depend on the index's vocabulary, so the
owner empties them on every commit (``clear``), and the keys are built by the caller.
Dropping the oldest entry, not the whole cache, keeps a working set of a few hundred
repeated queries warm when a new one arrives. A lock makes each call atomic: searches may
run on several threads, and a look-up must not see an entry evicted half-way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``size`` entries; ``get`` marks an entry as the most recently used. Values
    must not be None (``get`` answers None for a missing key)."""

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError(f"an LRU cache needs a positive size, got {size}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
