"""Where a query's terms occur in a hit: whole-word matches as global document offsets."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Highlight:
    term: str
    start_offset: int  # global offsets into the document text
    end_offset: int


@functools.lru_cache(maxsize=256)
def term_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One alternation of ``terms``, longest first, each matching a word's start.

    Compiled once per query: per-term patterns compiled for every hit cost more than the
    retrieval itself. Quotes and highlights share it.
    """
    unique = sorted({t.lower() for t in terms if t}, key=lambda t: (-len(t), t))
    if not unique:
        return None
    return re.compile(rf"(?<!\w)({'|'.join(map(re.escape, unique))})\w*", re.IGNORECASE)


def find_highlights(content: str, start_offset: int, terms: Sequence[str]) -> tuple[Highlight, ...]:
    """Offsets (global to the document) of each whole-word, case-insensitive term match.

    A word that several terms match (``running`` for ``running`` and its stem ``run``) is
    reported once, under the longest term.
    """
    pattern = term_pattern(tuple(terms))
    if pattern is None:
        return ()
    return tuple(
        Highlight(
            term=m.group(1).lower(),
            start_offset=start_offset + m.start(),
            end_offset=start_offset + m.end(),
        )
        for m in pattern.finditer(content)
    )
