"""A tiny language guesser (English / French) for picking stemmers and text-search configs."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-zàâçéèêëîïôûùüÿœæ']+", re.IGNORECASE)
_FRENCH = frozenset(
    "le la les des du de un une et est sont dans pour sur avec par au aux ce cette qui que "
    "pas plus être été ou leur leurs nous vous il elle ils elles ne se sa son ses".split()
)
_ENGLISH = frozenset(
    "the of and to in is are was were for on with by as that this be at from or an which "
    "not have has it its their been".split()
)
DEFAULT_LANGUAGE = "en"


def detect_language(text: str, sample_chars: int = 20_000, min_words: int = 3) -> str:
    """"fr" when French function words clearly outnumber English ones, else "en".

    A user who knows better passes ``language=`` at ingest; this only picks a stemmer.
    ``min_words``: French function words needed at least (a short query has one or two).
    """
    words = [w.lower() for w in _WORD.findall(text[:sample_chars])]
    french = sum(w in _FRENCH for w in words)
    english = sum(w in _ENGLISH for w in words)
    if french > english * 1.2 and french >= min_words:
        return "fr"
    return DEFAULT_LANGUAGE


def query_language(text: str) -> str | None:
    """The language of a short query, or None when it has no function word of either
    language ("plaquettes frein 1K0615301M", "GDPR fines"): keywords say nothing of it."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not any(w in _FRENCH or w in _ENGLISH for w in words):
        return None
    return detect_language(text, min_words=1)
