"""Where a query's terms occur in a hit: whole-word matches as global document offsets."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..keywords import STOPWORDS as _STOP

# Words a question is made of rather than what it asks about, in English and French, on
# top of the corpus function words (``keywords.STOPWORDS``) and what the text index already
# drops: highlighting "when" or "doit" marks half a passage and points at nothing. The gate
# must not count them missing from the passage asked about, nor correct them as typos.
#
# What makes a word a question word: in a question, in any corpus, it only says *that*
# something is asked, never *what*. That is interrogatives, auxiliaries and modals, and the
# conversational frame users wrap a question in ("Can you tell me ...", "J'aimerais
# savoir ...", benchmarks/question_frames.py):
# - verbs whose object is the question itself, asking what a text says or what the asker
#   wants to know: say, tell, know, explain, understand, wonder; dire, savoir, expliquer,
#   (je me) demandais;
# - the asker's politeness forms of can / would like: pouvez, pourriez, voudrais, aimerais;
# - greetings and "please": hello, hey, please; bonjour, salut, merci, svp, (s'il vous) plaît;
# - the noun "question", and "according to" / "selon" / "d'après" (a preposition).
# Not a word a corpus can be about, even where it frames a question: "help" and "aide"
# (state aid), "hi" ("Ly6C hi monocytes"), "comprendre" and "préciser" (a law's "include"
# and "specify"), "demander" (a data subject's request), "need", "like", "find".
_QUESTION_WORDS = frozenset(
    """about after again against before below between both did do does doing done during
    each few get gets got here how i'm it's just me my myself nor now off once out over own
    same say said says too under until up very whom whose why yes
    according explain hello hey know please question tell understand wonder wondering
    aimerais après avait avaient avez avoir bonjour comment combien demandais dire dis
    disent dit dites doit doivent dois devrait devraient énonce explique expliquer
    expliquez faut lorsque lui même mêmes merci moi mon ma mes notre nos on ont peut
    peuvent peux plaît pourquoi pourrait pourraient pourrais pourriez pouvez prévoit
    prévoient quand quel quelle quels quelles quoi salut sais savez savoir selon sera
    seront si soit sont suis svp tout tous toute toutes très un une voudrais votre vos y
    ça""".split()
)


_WORD_PARTS = re.compile(r"[-'’]")


@functools.lru_cache(maxsize=65536)
def is_function_word(term: str) -> bool:
    """A stop or question word (all parts of a hyphenated one), or a single letter."""
    # cached per word: the same words come back query after query, and both the gate and
    # the quotes ask
    parts = [p for p in _WORD_PARTS.split(term.lower()) if p]
    return bool(parts) and all(
        p in _STOP or p in _QUESTION_WORDS or (len(p) == 1 and not p.isdigit()) for p in parts
    )


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
    reported once, under the longest term. A stop word is never one: terms match as word
    prefixes, and "wh*" marked every "which" of the passage.
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
        if not is_function_word(m.group(0))
    )
