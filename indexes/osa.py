"""Bounded optimal-string-alignment distance from one typed word to many vocabulary words.

The typo correction (``tantivy_lexicon.py``) asks which words of a prefix scan lie within one
or two edits of a typed word, where a transposition of neighbours costs one edit (as Tantivy's
``transposition_cost_one``). Why not rapidfuzz, which did this before: it was 12 MB of the
base install for this one question (benchmarks/RESULTS.md, "Base install"), and the answers
below are the same (tests/test_osa.py checks them against the textbook recurrence).

- One edit: the typed word's neighbours (deletions, transpositions, substitutions and
  insertions of the vocabulary's letters) are looked up in a set: no distance computed.
- Two edits: the recurrence runs over all candidates at once, one numpy row per word, with
  every cell capped at ``distance + 1`` (a cell past the bound can never come back under it).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def within(typed: str, terms: Iterable[str], distance: int) -> list[tuple[str, int]]:
    """(term, edits) for each of ``terms`` at most ``distance`` OSA edits from ``typed``."""
    n = len(typed)
    candidates = [t for t in dict.fromkeys(terms) if abs(len(t) - n) <= distance]
    if not candidates:
        return []
    if distance <= 1:
        return _within_one(typed, candidates, distance)
    return _within_many(typed, candidates, distance)


def _within_one(typed: str, candidates: list[str], distance: int) -> list[tuple[str, int]]:
    known = set(candidates)
    out: dict[str, int] = {typed: 0} if typed in known else {}
    if distance == 0:
        return list(out.items())
    letters = set("".join(candidates))
    n = len(typed)
    near: list[str] = []
    for i in range(n):
        near.append(typed[:i] + typed[i + 1 :])  # a letter deleted
        if i + 1 < n:
            near.append(typed[:i] + typed[i + 1] + typed[i] + typed[i + 2 :])  # two swapped
    for i in range(n + 1):
        for c in letters:
            near.append(typed[:i] + c + typed[i:])  # a letter inserted
            if i < n and c != typed[i]:
                near.append(typed[:i] + c + typed[i + 1 :])  # a letter replaced
    for word in near:
        if word in known and word not in out:
            out[word] = 1
    return list(out.items())


def _within_many(typed: str, candidates: list[str], distance: int) -> list[tuple[str, int]]:
    lengths = np.fromiter(map(len, candidates), dtype=np.int64, count=len(candidates))
    width = max(int(lengths.max()), 1)
    # numpy's fixed-width str is UCS-4 padded with U+0000: the code points, one row per word
    # (a typed word never holds U+0000, so padding never matches it).
    b = np.array(candidates, dtype=f"<U{width}").view(np.int32).reshape(len(candidates), width)
    a = [ord(c) for c in typed]
    # A cheap bound first (most candidates fail it): each letter of a word that the other
    # word lacks entirely costs at least one edit, whichever side it is on.
    real = np.arange(width) < lengths[:, None]
    extra = (real & ~np.isin(b, a)).sum(axis=1)
    missing = np.zeros(len(candidates), dtype=np.int64)
    for code in a:
        missing += ~(b == code).any(axis=1)
    keep = np.flatnonzero((extra <= distance) & (missing <= distance))
    if not len(keep):
        return []
    candidates = [candidates[k] for k in keep]
    b, lengths = b[keep], lengths[keep]
    m = len(candidates)
    cap = distance + 1
    # prev[:, j]: edits from typed[:i] to term[:j], all terms at once, capped.
    prev = np.minimum(np.broadcast_to(np.arange(width + 1), (m, width + 1)), cap).astype(np.int64)
    before: np.ndarray | None = None
    for i in range(1, len(a) + 1):
        best = np.minimum(prev[:, :-1] + (b != a[i - 1]), prev[:, 1:] + 1)  # replace, delete
        if before is not None:  # typed[i-2:i] swapped in the term
            swapped = (b[:, 1:] == a[i - 2]) & (b[:, :-1] == a[i - 1])
            best[:, 1:] = np.minimum(best[:, 1:], np.where(swapped, before[:, :-2] + 1, cap))
        # Insertions chain along the row (cur[j] = min(cur[j], cur[j-1] + 1)); with the cap,
        # a chain longer than ``distance`` never matters, so ``distance`` shifted passes do.
        x = np.concatenate([np.full((m, 1), min(i, cap)), best], axis=1)
        cur = x.copy()
        for k in range(1, distance + 1):
            np.minimum(cur[:, k:], x[:, :-k] + k, out=cur[:, k:])
        np.minimum(cur, cap, out=cur)
        before, prev = prev, cur
    final = prev[np.arange(m), lengths]
    return [(candidates[k], int(final[k])) for k in np.flatnonzero(final <= distance)]
