"""The quote of a citation: the sentence(s) of a hit that best answer the query.

A quote is an exact slice of the document, ``document_text[start:end] == quote``, cut on
sentence boundaries where it can be and on word boundaries where a sentence is longer
than the limit (at the limit in text with no space in reach: Chinese, Japanese, a long
URL, backed off to a whole character: an emoji keeps its tone, a flag both its halves);
it is never rewritten (no ellipsis added). Sentences are scored by the
query terms they contain (the highlight terms: query words minus stop words, with their
stems), each term weighted by how rare it is among the chunk's sentences, so "data" in a
GDPR article counts less than "erasure". With no term in the chunk (a hit found by
meaning alone) the quote is the chunk's opening text.

Chunks overlap, so two hits of one document can share sentences. A hit's quote is chosen
among the sentences it adds to what higher-ranked hits of its document already hold
(``shown``) when one of them holds a query word: measured on our regulatory questions,
about one top-10 in two quoted one passage twice before (benchmarks/RESULTS.md). A chunk
whose new sentences hold none (or that lies wholly inside hits above it) keeps its own
best quote: a repeat that answers beats a fresh sentence that does not.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from .highlights import is_function_word as _is_question_word
from .highlights import term_pattern

QUOTE_MAX_CHARS = 500

# A sentence ends at a line break, or after . ! ? ; followed by space and a capital, a
# digit or an opening mark (legal points "(a)", French « quotes »).
_BOUNDARY = re.compile(r"\n+|(?<=[.!?;])[ \t]+(?=[(«\"“‘'0-9A-ZÀ-ÖØ-Þ])")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_LIST_MARKER = re.compile(r"\(?[0-9A-Za-z]{1,4}[.)]\Z")




def content_terms(terms: Sequence[str]) -> tuple[str, ...]:
    """``terms`` without stop words; a hyphenated term goes when all its parts are stop
    words ("doit-il", "est-ce")."""
    return tuple(term for term in terms if not _is_question_word(term))


_QUERY_WORD = re.compile(r"\w+(?:['’-]\w+)*")


def only_function_words(query: str) -> bool:
    """True when every word of ``query`` is a stop or question word ("the of and", "What
    is it?"); an upper-case word is an acronym ("WHO", "IT"), and a query with no word at
    all (a script no analyzer splits) is not one of these."""
    words = _QUERY_WORD.findall(query)
    return bool(words) and all(
        _is_question_word(word) and not any(c.isupper() for c in word[1:] or word)
        for word in words
    )


@dataclass(frozen=True)
class Quote:
    """A quote and where it sits in its document (global character offsets)."""

    text: str
    start_offset: int
    end_offset: int


@functools.lru_cache(maxsize=4096)
def sentence_spans(content: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence of ``content``, surrounding whitespace excluded.

    Cached by text: a chunk that comes back for many queries is split once.
    """
    spans = []
    pos = 0
    for match in _BOUNDARY.finditer(content):
        spans.append((pos, match.start()))
        pos = match.end()
    spans.append((pos, len(content)))
    out: list[tuple[int, int]] = []
    for start, end in spans:
        segment = content[start:end]
        stripped = segment.strip()
        if not stripped:
            continue
        start += len(segment) - len(segment.lstrip())
        end = start + len(stripped)
        if out and _LIST_MARKER.match(content, out[-1][0], out[-1][1]):
            out[-1] = (out[-1][0], end)  # "1." or "(a)" opens the sentence after it
        else:
            out.append((start, end))
    return tuple(out)


class LazyQuote:
    """A quote cut on first read: a search returns every hit's citation, but most callers
    (evaluation, a prompt that takes the chunk text) never read the quote, and cutting one
    costs more than retrieving the hit. Same result as ``best_quote``, computed once."""

    __slots__ = ("_content", "_start_offset", "_terms", "_shown", "_quote")

    def __init__(self, content: str, start_offset: int, terms: Sequence[str],
                 shown: Sequence[tuple[int, int]] = ()) -> None:
        self._content = content
        self._start_offset = start_offset
        self._terms = tuple(terms)
        self._shown = tuple(shown)
        self._quote: Quote | None = None

    def get(self) -> Quote:
        if self._quote is None:  # two threads may both cut it: same value, no lock needed
            self._quote = best_quote(self._content, self._start_offset, self._terms,
                                     shown=self._shown)
        return self._quote


def best_quote(
    content: str, start_offset: int, terms: Sequence[str], limit: int = QUOTE_MAX_CHARS,
    shown: Sequence[tuple[int, int]] = (),
) -> Quote:
    """The passage of ``content`` (a chunk at ``start_offset``) that best matches ``terms``,
    among its sentences outside the ``shown`` ranges (global offsets) where any is."""
    spans = sentence_spans(content)
    if not spans:
        return Quote("", start_offset, start_offset)
    body = [i for i, (s, e) in enumerate(spans) if not _HEADING_LINE.match(content[s:e])]
    candidates = body or list(range(len(spans)))
    if shown:
        new = [i for i in candidates
               if not _meets(start_offset + spans[i][0], start_offset + spans[i][1], shown)]
        candidates = new or candidates
    pattern = term_pattern(tuple(terms))
    found: list[set[str]] = [set() for _ in spans]
    if pattern is not None:  # one pass over the chunk, each match filed under its sentence
        starts = [s for s, _ in spans]
        for m in pattern.finditer(content):
            i = bisect.bisect_right(starts, m.start()) - 1
            if i >= 0 and m.end() <= spans[i][1]:
                found[i].add(m.group(1).lower())
        allowed = set(candidates)
        found = [f if i in allowed else set() for i, f in enumerate(found)]
    counts: dict[str, int] = {}
    for i in candidates:
        for term in found[i]:
            counts[term] = counts.get(term, 0) + 1
    # rarer terms weigh more: log(1 + sentences / sentences holding the term)
    weight = {t: math.log(1.0 + len(candidates) / n) for t, n in counts.items()}
    # fsum: exactly rounded whatever the order a set yields its terms in, so two sentences
    # holding the same terms tie exactly and the earlier one wins in every process (a
    # plain sum over a set's order differed by an ulp with the hash seed: another quote)
    scores = {i: math.fsum(weight[t] for t in found[i]) for i in candidates}
    best = max(candidates, key=lambda i: (scores[i], -i))
    if scores[best] <= 0.0:
        if shown and pattern is not None:  # nothing new holds a query word: its own best
            return best_quote(content, start_offset, terms, limit)
        return _window(content, start_offset, spans, candidates[0], candidates, {}, limit, None)
    # a neighbour is worth adding only for query terms the passage does not hold yet
    have = set(found[best])
    gains: dict[int, float] = {}
    for i in candidates:
        gains[i] = math.fsum(weight[t] for t in found[i] - have)
    return _window(content, start_offset, spans, best, candidates, gains, limit, pattern)


def _meets(start: int, end: int, ranges: Sequence[tuple[int, int]]) -> bool:
    """Whether [start, end) shares a character with one of ``ranges`` (chunks are cut
    inside sentences, so a sentence half in a hit above is half quoted there already)."""
    return any(low < end and start < high for low, high in ranges)


def _window(
    content: str, start_offset: int, spans: Sequence[tuple[int, int]], first: int,
    candidates: list[int], scores: dict[int, float], limit: int, pattern: re.Pattern[str] | None,
) -> Quote:
    """The sentence ``first`` grown by neighbours while within ``limit`` characters.

    With scores (what each sentence would add), a neighbour joins only when it adds a
    query term the passage lacks; without (the opening), the sentences that follow join
    while they fit.
    """
    start, end = spans[first]
    if end - start > limit:
        return _cut_long(content, start_offset, start, end, limit, pattern)
    lo = hi = candidates.index(first)
    while True:
        options = []
        if lo > 0:
            options.append((scores.get(candidates[lo - 1], 0.0), -1))
        if hi + 1 < len(candidates):
            options.append((scores.get(candidates[hi + 1], 0.0), 1))
        options.sort(key=lambda o: (-o[0], -o[1]))  # higher score first, then later side
        grown = False
        for score, side in options:
            if scores and score <= 0.0:
                continue
            if not scores and side < 0:
                continue
            j = candidates[lo - 1] if side < 0 else candidates[hi + 1]
            if abs(j - (candidates[lo] if side < 0 else candidates[hi])) != 1:
                continue  # a quote never runs over a sentence left out (a heading, one shown)
            new_start, new_end = min(start, spans[j][0]), max(end, spans[j][1])
            if new_end - new_start > limit:
                continue
            start, end = new_start, new_end
            lo, hi = (lo - 1, hi) if side < 0 else (lo, hi + 1)
            grown = True
            break
        if not grown:
            break
    return Quote(content[start:end], start_offset + start, start_offset + end)


def _continues_character(text: str, i: int) -> bool:
    """True when ``text[i]`` belongs to the character a reader sees at ``text[i - 1]``: a
    mark (an accent, a Devanagari vowel sign), a joiner or what follows one, a variation
    selector, an emoji's skin tone or tag, a Hangul vowel or final jamo, or the second of
    a pair of regional indicators (a flag). A quote cut there showed another character."""
    ch = text[i]
    code = ord(ch)
    if (unicodedata.category(ch) in ("Mn", "Mc", "Me") or ch in "\u200c\u200d"
            or text[i - 1] == "\u200d" or 0xFE00 <= code <= 0xFE0F
            or 0xE0100 <= code <= 0xE01EF or 0x1F3FB <= code <= 0x1F3FF
            or 0xE0020 <= code <= 0xE007F or 0x1160 <= code <= 0x11FF
            or 0xD7B0 <= code <= 0xD7FF):
        return True
    if _is_regional_indicator(code):
        run = 0  # the indicators before it: an odd count leaves this one the pair's second
        while i - run - 1 >= 0 and _is_regional_indicator(ord(text[i - run - 1])):
            run += 1
        return run % 2 == 1
    return False


def _is_regional_indicator(code: int) -> bool:
    return 0x1F1E6 <= code <= 0x1F1FF


def _cut_long(
    content: str, start_offset: int, start: int, end: int, limit: int,
    pattern: re.Pattern[str] | None,
) -> Quote:
    """A sentence over ``limit``: a word-bounded window from the sentence start, or from
    shortly before its first matching term when that lies beyond the window."""
    left = start
    if pattern is not None:
        match = pattern.search(content, start, end)
        if match is not None and match.end() > start + limit:
            left = max(start, match.start() - limit // 4)
            space = content.find(" ", left, match.start())
            left = space + 1 if space >= 0 else match.start()
    right = min(end, left + limit)
    if right < end:
        space = content.rfind(" ", left + 1, right + 1)
        # A word boundary only where it keeps most of the window: in text that has no
        # spaces (Chinese, Japanese, a long URL) the last one in reach can be the one after
        # the first word, and the quote was that word ("第十七条" of a whole article).
        if space > left + limit // 2:
            right = space
        else:
            while right > left + 1 and _continues_character(content, right):
                right -= 1  # never between a letter and its accent, an emoji and its tone
    cut = right
    while right > left and content[right - 1] in " \t,;:":
        right -= 1
    if right == left:  # nothing but punctuation: the window as it is, never an empty quote
        right = cut
    return Quote(content[left:right], start_offset + left, start_offset + right)
