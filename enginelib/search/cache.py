"""The response cache: an LRU of search responses keyed by the normalized request.

A key holds every request field that shapes the response (the query and its rewrites,
strategy after ``auto`` is resolved, limit/offset, truth levels, the filter's canonical
JSON, fusion settings, post-processing, the gate) plus a digest of a caller's query
vector. Entries belong to one store generation: the first lookup after any commit (by
this process, or by another one that a reader has followed) empties the cache, so an
answer never outlives the data it came from. Searches with a reranker callable are not
cached (a function's identity says nothing about what it returns).

The bound is in entries and in estimated bytes (the texts a response holds, plus a fixed
overhead per hit); the least recently used entries go first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from .quotes import QUOTE_MAX_CHARS
from .request import SearchRequest
from .results import SearchResponse

if TYPE_CHECKING:
    from ..core.handles import CacheHolder as Store

DEFAULT_MAX_ENTRIES = 1024
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
# Estimated bytes per response and per hit besides their texts: the frozen dataclasses,
# score floats and citation fields (measured with tracemalloc: see benchmarks/cache.py).
RESPONSE_OVERHEAD = 2048
HIT_OVERHEAD = 1536
# Request fields that do not change the response (``log``; ``ranked_at``, checked against
# the generation every entry belongs to) or are keyed another way.
_UNKEYED = {"log", "cache", "raw_filters", "filters", "reranker", "ranked_at"}

CacheKey = tuple[Hashable, ...]


def response_key(
    request: SearchRequest, strategy: str, query_vector: np.ndarray | None
) -> CacheKey | None:
    """The cache key of a request, or None when its response must not be cached."""
    if request.reranker is not None or not request.cache:
        return None
    parts: list[Hashable] = [strategy, request.filters.key]
    for item in dataclasses.fields(request):
        if item.name not in _UNKEYED:
            parts.append(_hashable(getattr(request, item.name)))
    if query_vector is not None:
        vector = np.ascontiguousarray(query_vector, dtype=np.float32)
        parts.append(hashlib.blake2b(vector.tobytes(), digest_size=16).hexdigest())
    return tuple(parts)


def _hashable(value: Any) -> Hashable:
    try:
        hash(value)
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str)
    return value  # type: ignore[no-any-return]


def estimate_bytes(response: SearchResponse) -> int:
    """Roughly what a cached response keeps alive (texts counted once per hit)."""
    size = RESPONSE_OVERHEAD + len(response.query)
    for hit in response.hits:
        size += HIT_OVERHEAD + len(hit.content) + len(hit.title or "") + len(hit.heading_path)
        # the quote is a slice of the content, cut on first read: count its bound rather
        # than cut every cached hit's quote here
        size += min(len(hit.content), QUOTE_MAX_CHARS)
    return size


class ResponseCache:
    """A thread-safe LRU of responses for one store, emptied when its generation moves."""

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[CacheKey, tuple[SearchResponse, int]] = OrderedDict()
        self._generation: tuple[int, str] | None = None
        self.max_entries = 0
        self.max_bytes = 0
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.invalidations = 0
        self.resize(max_entries=max_entries, max_bytes=max_bytes)

    def resize(self, *, max_entries: int | None = None, max_bytes: int | None = None) -> None:
        """Change the bounds (0 entries turns the cache off); evicts what no longer fits."""
        from ..errors import InvalidInputError

        for name, value in (("max_entries", max_entries), ("max_bytes", max_bytes)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InvalidInputError(f"response cache {name} must be an integer >= 0, got {value!r}")
        with self._lock:
            if max_entries is not None:
                self.max_entries = max_entries
            if max_bytes is not None:
                self.max_bytes = max_bytes
            self._evict()

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_bytes > 0

    def get(self, key: CacheKey | None, generation: tuple[int, str]) -> SearchResponse | None:
        if key is None or not self.enabled:
            return None
        with self._lock:
            self._follow(generation)
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: CacheKey | None, generation: tuple[int, str], response: SearchResponse) -> None:
        if key is None or not self.enabled:
            return
        size = estimate_bytes(response)
        if size > self.max_bytes:
            return  # one response bigger than the whole bound is never kept
        with self._lock:
            self._follow(generation)
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (response, size)
            self.bytes += size
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "hits": self.hits, "misses": self.misses, "entries": len(self._entries),
                "bytes": self.bytes, "max_entries": self.max_entries, "max_bytes": self.max_bytes,
                "evictions": self.evictions, "invalidations": self.invalidations,
            }

    def _follow(self, generation: tuple[int, str]) -> None:
        """Call with the lock held: a new store generation makes every entry stale."""
        if generation != self._generation:
            if self._entries:
                self.invalidations += 1
            self._entries.clear()
            self.bytes = 0
            self._generation = generation

    def _evict(self) -> None:
        while self._entries and (len(self._entries) > self.max_entries or self.bytes > self.max_bytes):
            _, (_, size) = self._entries.popitem(last=False)
            self.bytes -= size
            self.evictions += 1


V = TypeVar("V")


class GenerationMemo(Generic[V]):
    """Values derived from a query's text and a store's data (the query plan, the quote
    terms), per store, kept for one generation: the same question asked again (another
    page, another limit, a retry) skips the work. A thread-safe LRU of ``max_entries`` per
    store; the first look-up at another generation empties it, as the response cache does."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._stores: weakref.WeakKeyDictionary[Any, tuple[Hashable, OrderedDict[Hashable, V]]] = (
            weakref.WeakKeyDictionary())

    def get(self, store: Any, generation: Hashable, key: Hashable, compute: Callable[[], V]) -> V:
        with self._lock:
            entry = self._stores.get(store)
            if entry is None or entry[0] != generation:
                entry = self._stores[store] = (generation, OrderedDict())
            values = entry[1]
            if key in values:
                values.move_to_end(key)
                return values[key]
        # computed outside the lock: two threads may both compute it, and get the same value
        value = compute()
        with self._lock:
            values[key] = value
            while len(values) > self.max_entries:
                values.popitem(last=False)
        return value


def cache_stats(store: Store) -> dict[str, int]:
    """Flat counters for ``store.stats()`` and ``enginelib stats`` (this process's caches)."""
    flat = {f"response_cache_{k}": v for k, v in store.response_cache.stats().items()}
    flat.update(
        {f"query_vector_cache_{k}": v for k, v in store.query_embeddings.stats().items()}
    )
    return flat
