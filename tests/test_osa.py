"""The bounded OSA distance behind typo correction, against the textbook recurrence."""

from __future__ import annotations

import random

import pytest

from enginelib.indexes.osa import within


def _osa(a: str, b: str) -> int:
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _typo(word: str, rng: random.Random, letters: str) -> str:
    for _ in range(rng.choice((1, 1, 2, 3))):
        i = rng.randrange(len(word) + 1)
        kind = rng.choice(("insert", "delete", "replace", "swap"))
        if kind == "insert" or len(word) < 2:
            word = word[:i] + rng.choice(letters) + word[i:]
        elif kind == "delete":
            word = word[: i - 1] + word[i:] if i else word[1:]
        elif kind == "replace" and i < len(word):
            word = word[:i] + rng.choice(letters) + word[i + 1 :]
        elif i + 1 < len(word):
            word = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word


@pytest.mark.parametrize("distance", [1, 2])
def test_within_finds_exactly_the_words_the_recurrence_finds(distance: int) -> None:
    rng = random.Random(7)
    letters = "abcdeéfghrst"  # few letters: many near words, accents as typed
    vocabulary = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(2, 10)))
                         for _ in range(700)})
    for _ in range(100):
        typed = _typo(rng.choice(vocabulary), rng, letters)
        expected = {w: _osa(typed, w) for w in vocabulary if _osa(typed, w) <= distance}
        assert dict(within(typed, vocabulary, distance)) == expected, typed


def test_a_transposition_is_one_edit_and_nothing_far_is_found() -> None:
    assert within("gpdr", ["gdpr", "gdprs", "pdgr"], 1) == [("gdpr", 1)]
    assert dict(within("transparancy", ["transparency", "transparent", "tarnsparency"], 2)) == {
        "transparency": 1, "tarnsparency": 2}
    assert within("abc", [], 2) == []
