"""One ranking for every page: candidate depths on a ladder, blocks stitched in order.

A fused ranking depends on how deep each method was asked (RRF over the top 100 of each
list is not the top of RRF over their top 200), so cutting pages out of rankings taken
at different depths repeats some hits and skips others. Instead a query's ranking is
defined once, whatever page is asked:

- depths ``d0 = candidates, 2*d0, 4*d0, ...`` (the last one capped at the result window),
  climbed only while the ranks placed so far do not reach the page's end (grouping by
  document or source can place fewer hits than the depth);
- ranks ``1..d0`` are the ranking at depth ``d0``; ranks ``d0+1..2*d0`` are the ranking
  at depth ``2*d0`` with the hits already placed left out; and so on;
- once a depth returns fewer candidates than it asked for in every method, nothing lies
  deeper: the rest of that ranking follows and the total is exact. Otherwise the total
  counts the hits placed so far and is a lower bound.

A page ending at rank ``offset + limit <= d0`` (the usual case) costs exactly what a
single search at depth ``d0`` costs; deeper pages pay one search per rung.

Fused scores are per rung: RRF over deeper lists adds the terms a shallower depth cut off,
and weighted fusion normalizes each depth's candidates on their own, so the first hit a
deeper rung places often scored higher there than the last hit of the rung above (rank
101 above rank 100). The order is the one ranking; the score a hit shows follows it
(``caps``): a hit placed from a deeper rung shows its score there, capped at the lowest
score placed by the rungs above it, so fused scores never rise along the ranking where
each rung is ordered by them (no MMR, reranker, boosts or grouping reordering a rung).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from ..errors import InvalidInputError
from ..validation import MAX_DEPTH

# Deepest rank a search may reach (offset + limit), like a search engine's result window:
# beyond it each page would re-rank ten thousand candidates per method. One bound for the
# whole package (validation.py): the largest offset plus the largest page.
MAX_RESULT_WINDOW = MAX_DEPTH

T = TypeVar("T")


def check_window(end: int, window: int = MAX_RESULT_WINDOW) -> None:
    """Refuse a page that ends past rank ``window``."""
    if end > window:
        raise InvalidInputError(
            f"offset + limit is {end}; results go no deeper than rank {window}: "
            "narrow the query with filters instead of paging further"
        )


def deeper(depth: int, candidates: int, window: int = MAX_RESULT_WINDOW) -> int | None:
    """The rung after ``depth`` on the ladder ``candidates, 2x, 4x, ...`` capped at
    ``max(window, candidates)``; None at the top."""
    top = max(window, candidates)
    return None if depth >= top else min(depth * 2, top)


def caps(rungs: Sequence[np.ndarray]) -> list[float | None]:
    """The cap on each rung's fused scores, from the scores of the items each rung placed,
    in ranking order: None for the first rung, then the lowest score placed by the rungs
    above (``min(cap_j-1, min(rung j-1))``)."""
    out: list[float | None] = []
    lowest: float | None = None
    for scores in rungs:
        out.append(lowest)
        if len(scores):
            low = float(np.min(scores))
            lowest = low if lowest is None else min(lowest, low)
    return out


@dataclass(frozen=True)
class Stitched(Generic[T]):
    """The ranking's items from rank 1, and whether more may lie beyond them."""

    items: list[T]
    total_is_lower_bound: bool


def stitch(
    blocks: Sequence[tuple[Sequence[T], bool]],
    depths: Sequence[int],
    key: Callable[[T], Hashable],
    caps: Sequence[tuple[Callable[[T], Hashable], int]] = (),
) -> Stitched[T]:
    """Items in rank order from rankings taken at ``depths`` (one per block).

    Each block is ``(ranked items, exhausted)``, ``exhausted`` meaning every method
    returned fewer candidates than the depth asked (the ranking is complete). Block ``j``
    fills ranks up to ``depths[j]`` with its items not already placed. ``caps`` are
    ``(group of an item, most items per group)`` rules (chunks per document, per source)
    that each block already follows on its own and the stitched ranking must follow too.
    """
    placed: list[T] = []
    seen: set[Hashable] = set()
    counts: list[dict[Hashable, int]] = [{} for _ in caps]
    for (items, exhausted), depth in zip(blocks, depths, strict=True):
        for item in items:
            if len(placed) >= depth and not exhausted:
                break
            k = key(item)
            if k in seen:
                continue
            groups = [group(item) for group, _ in caps]
            if any(c.get(g, 0) >= cap for c, g, (_, cap) in zip(counts, groups, caps, strict=True)):
                continue
            seen.add(k)
            placed.append(item)
            for c, g in zip(counts, groups, strict=True):
                c[g] = c.get(g, 0) + 1
        if exhausted:
            return Stitched(placed, False)
    return Stitched(placed, True)
