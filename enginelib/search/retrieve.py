"""The filter and retrieve stages: which chunks a request may return, and each method's
ranking of them (hnswlib or an exact scan; Tantivy), one ranking per sub-query.

A filter that keeps most of the corpus (the default truth levels over a store with a few
L3/L4 documents) is not handed to the indexes: a 95,000-label allowed set costs more to
pass (a Python set for hnswlib, a term-set query for Tantivy) than the search itself.
Instead each method searches unfiltered a little deeper (``over_fetch``: ``depth / kept
fraction`` and a margin) and the disallowed hits are dropped with one vectorised mask; when
that leaves fewer than ``depth`` while more may lie deeper (the query and the filter are
correlated) it searches twice as deep, and after ``POST_FILTER_TRIES`` with the allowed set.
The result is the same top ``depth`` of allowed chunks either way (for the exact paths,
exactly; for the ANN graph, the same over-fetch the index would do itself). A selective
filter (few chunks kept) goes to the index, which scans the allowed rows exactly when
they are few.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..chunk_view import ChunkView
from ..indexes.exact import exact_topk
from .request import SearchRequest

if TYPE_CHECKING:
    from ..store import Store

Ranking = list[tuple[int, float]]
# One method's search: (allowed labels or None, depth) -> one ranking per sub-query.
Search = Callable[[np.ndarray | None, int], list[Ranking]]

# A filter keeping at least this fraction of the chunks is applied after retrieval (the
# methods over-fetch by about 1 / fraction, so at most ~4x); below it, inside the index.
POST_FILTER_MIN_FRACTION = 0.25
# Unfiltered searches tried (depth doubling each time) before the filter goes to the index.
POST_FILTER_TRIES = 3
# Filtered label sets kept per store (keyed by generation, truth levels and filter).
FILTER_CACHE_SIZE = 256


@dataclass(frozen=True)
class Allowed:
    """The chunks a request may return; ``labels`` None means every chunk."""

    labels: np.ndarray | None
    mask: np.ndarray | None  # over the view's rows, True where allowed (None: all)
    fraction: float  # kept / all chunks

    @property
    def empty(self) -> bool:
        return self.labels is not None and len(self.labels) == 0

    @property
    def post_filter(self) -> bool:
        """Apply the filter to the methods' results rather than inside the indexes."""
        return self.labels is not None and self.fraction >= POST_FILTER_MIN_FRACTION


EVERYTHING = Allowed(None, None, 1.0)
_ALLOWED_CACHE: weakref.WeakKeyDictionary[ChunkView, dict[tuple[object, ...], Allowed]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class Retrieved:
    """Each method's rankings, one per sub-query (empty lists for a method not run)."""

    vector: list[Ranking]
    text: list[Ranking]
    exhausted: bool  # every method returned fewer than the depth: nothing lies deeper


def allowed_chunks(view: ChunkView, request: SearchRequest) -> Allowed:
    """The filter stage: truth levels and filters -> the allowed chunks (cached with the
    view, so a repeated filter costs a dict look-up and a new generation starts afresh)."""
    cache = _ALLOWED_CACHE.get(view)
    if cache is None:
        cache = _ALLOWED_CACHE.setdefault(view, {})
    key = (request.truth_levels, request.filters.key)
    found = cache.get(key)
    if found is None:
        found = _compute_allowed(view, request)
        if len(cache) >= FILTER_CACHE_SIZE:
            cache.clear()
        cache[key] = found
    return found


def _compute_allowed(view: ChunkView, request: SearchRequest) -> Allowed:
    labels = view.labels_with_truth(request.truth_levels)
    if request.filters.where:
        matched = view.filter_labels(request.filters.where, request.filters.params)
        labels = matched if labels is None else np.intersect1d(labels, matched, assume_unique=True)
    if labels is None:
        return EVERYTHING
    mask = np.zeros(len(view.labels), dtype=bool)
    positions = view.positions(labels)
    mask[positions[positions >= 0]] = True
    return Allowed(labels, mask, len(labels) / max(len(view.labels), 1))


def retrieve(
    store: Store, view: ChunkView, request: SearchRequest, strategy: str,
    qvec: np.ndarray | None, allowed: Allowed, depth: int,
) -> Retrieved:
    """The retrieve stage: each method's top ``depth`` allowed chunks per sub-query."""
    none: list[Ranking] = [[] for _ in request.queries]
    vector, text = none, none
    if strategy in ("vector", "hybrid"):
        assert qvec is not None
        vector = _filtered(
            lambda labels, k: _vector_rankings(store, view, request, qvec, labels, k),
            view, allowed, depth,
        )
    if strategy in ("fulltext", "hybrid"):
        text = _filtered(
            lambda labels, k: _text_rankings(store, request, labels, k), view, allowed, depth
        )
    exhausted = all(
        len(ranking) < depth
        for method, rankings in (("vector", vector), ("fulltext", text))
        if strategy in (method, "hybrid")
        for ranking in rankings
    )
    return Retrieved(vector, text, exhausted)


def _filtered(search: Search, view: ChunkView, allowed: Allowed, depth: int) -> list[Ranking]:
    """``search(labels, k)`` with the filter inside the index or applied after it."""
    if not allowed.post_filter:
        return search(allowed.labels, depth)
    assert allowed.mask is not None
    size = max(len(view.labels), 1)
    fetch = over_fetch(depth, allowed.fraction)
    for _ in range(POST_FILTER_TRIES):
        fetch = min(fetch, size)
        rankings = search(None, fetch)
        kept = [_keep(ranking, view, allowed.mask) for ranking in rankings]
        # complete when depth are kept, or when the method had no more to give
        if all(len(k) >= depth or len(r) < fetch or fetch >= size
               for k, r in zip(kept, rankings, strict=True)):
            return [k[:depth] for k in kept]
        fetch *= 2  # the filter and the query are correlated: look deeper
    return search(allowed.labels, depth)


def over_fetch(depth: int, fraction: float) -> int:
    """How deep to search unfiltered so that ``depth`` allowed chunks remain: ``depth /
    fraction`` plus three standard deviations of the binomial count of disallowed ones
    (at 95 % kept and depth 100: 114, and a retry about once in 5,000 searches)."""
    spread = 3.0 * math.sqrt(depth * (1.0 - fraction)) / fraction
    return math.ceil(depth / fraction + spread) + 1


def _keep(ranking: Ranking, view: ChunkView, mask: np.ndarray) -> Ranking:
    if not ranking:
        return ranking
    positions = view.positions(np.fromiter((label for label, _ in ranking), dtype=np.int64,
                                           count=len(ranking)))
    # a label the view lacks (replaced meanwhile) is not allowed, as inside the index
    ok = (positions >= 0) & mask[np.maximum(positions, 0)]
    return [item for item, keep in zip(ranking, ok.tolist(), strict=True) if keep]


def _vector_rankings(
    store: Store, view: ChunkView, request: SearchRequest, qvec: np.ndarray,
    allowed: np.ndarray | None, depth: int,
) -> list[Ranking]:
    """One ranking per sub-query (the first query's vector is given, the rest embedded)."""
    rankings = []
    for i in range(len(request.queries)):
        vec = qvec if i == 0 else store.query_embeddings.embed([request.embed_text(i)])[0]
        if request.exact:
            if allowed is None:
                matrix, labels = view.vectors, view.labels
            else:
                pos = view.positions(allowed)
                pos = pos[pos >= 0]
                matrix, labels = view.vectors[pos], view.labels[pos]
            rankings.append(exact_topk(matrix, labels, vec.reshape(1, -1), depth)[0])
        else:
            rankings.append(store._vector_index.search(vec.reshape(1, -1), depth, allowed)[0])
    return rankings


def _text_rankings(
    store: Store, request: SearchRequest, allowed: np.ndarray | None, depth: int
) -> list[Ranking]:
    """One ranking per sub-query (one batch call)."""
    # Only a True overrides: False keeps the index's own setting (index_options lenient).
    options: dict[str, bool] = {"lenient": True} if request.lenient else {}
    if not request.rewrite:  # words as typed: the index must not correct them either
        options["correct"] = False
    return store._text_index.search(list(request.queries), depth, allowed,
                                   **options)  # type: ignore[call-arg]
