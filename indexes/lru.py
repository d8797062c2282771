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
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``size`` entries; ``get`` marks an entry as the most recently used. Values
    must not be None (``get`` answers None for a missing key).

    With ``weigh``, ``size`` bounds the entries' total weight instead (a prefix scan weighs
    its words): the oldest are dropped until the rest fit, and a value heavier than ``size``
    on its own is not kept at all."""

    def __init__(self, size: int, weigh: Callable[[V], int] | None = None) -> None:
        if size <= 0:
            raise ValueError(f"an LRU cache needs a positive size, got {size}")
        self.size = size
        self._weigh = weigh or (lambda value: 1)
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            if weight > self.size:
                return
            self._entries[key] = (value, weight)
            self._weight += weight
            while self._weight > self.size:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._weight -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weight = 0

    @property
    def weight(self) -> int:
        """The entries' total weight (their number without ``weigh``)."""
        return self._weight

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
