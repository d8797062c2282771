"""The words of one dictionary prefix scan, kept compact for repeated typo look-ups.

Typo correction (``tantivy_lexicon.py``) asks, for each word the index does not know, which
indexed words starting with its first or second letter lie within one or two edits. Scanning
the dictionary for that letter on every word cost 0.13 s for 120,000 words, and checking them
all as much again. A ``PrefixWords`` is one such scan, read once: its words grouped by length
(a word more than ``distance`` letters longer or shorter is never near) with the count of each
letter, so that a look-up only compares counts and runs the edit distance on the few words
that pass (``benchmarks/correction_speed.py``).

Why the letter counts are a safe filter: an edit changes the counts by at most 2 in all
(a substitution takes one letter and adds another, an insertion or deletion changes one, a
transposition none), so a word within ``distance`` edits differs from the typed one by at
most ``2 * distance`` in the sum of the count differences. Letters outside a-z share one
count, which can only make the sum smaller: the filter drops no word the edit distance
would keep, and the words it keeps are checked by ``osa.within`` exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .osa import within

# Letter counts: one column per letter a-z, one more for every other character.
_OTHER = 26


class PrefixWords:
    """(word, documents) pairs of one prefix scan, grouped by length, with letter counts."""

    def __init__(self, scan: Sequence[tuple[str, int]]) -> None:
        words = np.array([word for word, _ in scan], dtype=object)
        docs = np.fromiter((int(count) for _, count in scan), dtype=np.int64, count=len(scan))
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        self._groups: dict[int, _Group] = {}
        for length in np.unique(lengths).tolist():
            chosen = np.flatnonzero(lengths == length)
            self._groups[length] = _Group(length, words[chosen], docs[chosen])
        self.size = len(scan)

    def near(self, typed: str, distance: int) -> list[tuple[str, int, int]]:
        """(word, edits, documents) for each word within ``distance`` OSA edits of ``typed``."""
        counts: dict[int, int] = {}
        for column in _columns(typed):
            counts[column] = counts.get(column, 0) + 1
        found: list[tuple[str, int, int]] = []
        for length in range(len(typed) - distance, len(typed) + distance + 1):
            group = self._groups.get(length)
            if group is not None:
                found.extend(group.near(typed, counts, distance))
        return found


class _Group:
    """The words of one length: their code points and each letter's count, column by column."""

    def __init__(self, length: int, words: np.ndarray, docs: np.ndarray) -> None:
        self.length = length
        self.words = words.astype(f"<U{max(length, 1)}")
        self.docs = docs
        codes = self.words.view(np.int32).reshape(len(words), -1)[:, :length]
        columns = np.where((codes >= ord("a")) & (codes <= ord("z")), codes - ord("a"), _OTHER)
        # counts[c, w]: how many times letter column c occurs in word w (at most ``length``,
        # so the smallest unsigned type that holds the length holds every count)
        self.counts = np.zeros((_OTHER + 1, len(words)), dtype=np.min_scalar_type(length))
        rows = np.arange(len(words))
        for position in range(length):
            self.counts[columns[:, position], rows] += 1  # one (column, row) per word: no repeats

    def near(self, typed: str, typed_counts: dict[int, int],
             distance: int) -> list[tuple[str, int, int]]:
        # sum over all columns of |count - typed count|: the columns the typed word lacks add
        # their whole count, which is the length less the counts of its own columns
        shared = np.zeros(len(self.words), dtype=np.int64)
        differ = np.zeros(len(self.words), dtype=np.int64)
        for column, count in typed_counts.items():
            here = self.counts[column].astype(np.int64)
            shared += here
            differ += np.abs(here - count)
        keep = np.flatnonzero(self.length - shared + differ <= 2 * distance)
        if not len(keep):
            return []
        docs = {str(self.words[k]): int(self.docs[k]) for k in keep}
        return [(word, edits, docs[word]) for word, edits in within(typed, docs, distance)]


def _columns(word: str) -> list[int]:
    return [ord(ch) - ord("a") if "a" <= ch <= "z" else _OTHER for ch in word]
