"""The typo look-up's cached prefix scan: the same near words as ``osa.within`` over the
whole scan, whatever the letters (accents, other scripts, digits) and lengths."""

from __future__ import annotations

import random

import pytest

from enginelib.indexes.osa import within
from enginelib.indexes.prefix_words import PrefixWords
from tests.test_osa import _typo


@pytest.mark.parametrize("distance", [1, 2])
def test_near_finds_exactly_what_within_finds_over_the_whole_scan(distance: int) -> None:
    rng = random.Random(11)
    # few letters (many near words), letters outside a-z sharing one count, digits
    letters = "abcdeéfghrsαβ7ж"
    scan = {"a" + "".join(rng.choice(letters) for _ in range(rng.randint(0, 12))):
            rng.randint(1, 50) for _ in range(3_000)}
    words = PrefixWords(list(scan.items()))
    assert words.size == len(scan)
    for _ in range(300):
        typed = _typo(rng.choice(list(scan)), rng, letters)
        expected = {(word, edits, scan[word]) for word, edits in within(typed, scan, distance)}
        assert set(words.near(typed, distance)) == expected, typed


def test_a_letter_repeated_past_any_small_count_is_still_found() -> None:
    # counts are kept in the smallest type that holds the word's length: 300 times one letter
    long = "a" * 300
    words = PrefixWords([(long, 3), ("a" * 298 + "b", 1), ("ab", 2)])
    assert set(words.near("a" * 299, 1)) == {("a" * 298 + "b", 1, 1), (long, 1, 3)}
    assert set(words.near("a" * 299 + "c", 2)) == {("a" * 298 + "b", 2, 1), (long, 1, 3)}
    assert words.near("", 1) == [] and PrefixWords([]).near("abc", 2) == []
