"""Acronyms learned from the corpus: "data protection impact assessment (DPIA)" teaches that
DPIA and its expansion name the same thing, so a query with either finds both.

Learning (at ingest, per document): a parenthesised acronym after its expansion, or an
expansion in parentheses after its acronym, in any language:

    data protection impact assessment (DPIA)
    DPIA (data protection impact assessment)
    analyse d'impact relative à la protection des données (AIPD)

The acronym's letters must be the initials of the expansion's words, in order; words of
the stop-word list and one other word may be skipped between them ("relative" above), the
expansion must start on the first letter's word and end on the last letter's word. This is
the word-initial form of Schwartz & Hearst's rule (PSB 2003), stricter than their
character matching so that "Regulation (EU)" never pairs; acronyms whose letters are not
initials ("deoxyribonucleic acid (DNA)") are missed rather than guessed.

Use (at query time): a query that names an acronym or an expansion the corpus taught gets
a sub-query with both ("DPIA" and "data protection impact assessment" each become
"data protection impact assessment (DPIA)"), run beside the original and merged by chunk.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Acronym letters are 2..10 characters, at least two capitals ("DPIA", "GDPR", "AIPD",
# "TFEU"); a plural "s" is allowed ("DPIAs") and not part of the acronym.
_ACRONYM = r"[A-Z][A-Za-z0-9&]{1,9}"
_ACRONYM_RE = re.compile(rf"^(?P<acr>{_ACRONYM}?)s?$")
_PAREN_AFTER = re.compile(rf"\((?P<acr>{_ACRONYM})\)")  # expansion (ACR)
_PAREN_BEFORE = re.compile(rf"\b(?P<acr>{_ACRONYM})\s+\((?P<exp>[^()]{{3,150}})\)")  # ACR (expansion)
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
# A whole query token: "CD3", "TCR/CD3" or "NF2" never read as the acronyms CD or NF.
_QUERY_TOKEN = re.compile(r"(?<![\w])[^\W\d_]+(?![\w])")
# An acronym is expanded only when this share of the documents defining it agree on one
# expansion ("CD" is Crohn's disease, a cluster of differentiation, compact disc...).
MIN_AGREEMENT = 0.6
_CLAUSE_BREAK = re.compile(r"[.;:!?()\[\]\n]")
MAX_SKIPPED_WORDS = 1
# Words that may sit between the initials without a letter of their own (EN, FR, DE).
STOP_WORDS = frozenset("""
a an and as at by for from in into of on or the to with
à a au aux d de des du en et l la le les par pour sur un une
der die das des dem den für und von zu zur zum im
""".split())


@dataclass(frozen=True)
class AcronymPair:
    acronym: str  # as written, plural "s" removed: "DPIA"
    expansion: str  # as written, whitespace collapsed: "data protection impact assessment"


def find_pairs(text: str) -> list[AcronymPair]:
    """Acronym/expansion pairs defined in ``text``, each once, in order of appearance."""
    found: dict[tuple[str, str], AcronymPair] = {}
    for match in _PAREN_AFTER.finditer(text):
        acronym = _clean_acronym(match.group("acr"))
        if acronym is None:
            continue
        start = match.start()
        # The expansion lies in the same clause, within a few words before the parenthesis.
        breaks = list(_CLAUSE_BREAK.finditer(text, max(0, start - 300), start))
        window_start = breaks[-1].end() if breaks else max(0, start - 300)
        expansion = _match_backward(acronym, text[window_start:start])
        if expansion:
            pair = AcronymPair(acronym, expansion)
            found.setdefault((acronym, expansion.lower()), pair)
    for match in _PAREN_BEFORE.finditer(text):
        acronym = _clean_acronym(match.group("acr"))
        if acronym is None:
            continue
        expansion = _match_backward(acronym, match.group("exp"), whole=True)
        if expansion:
            pair = AcronymPair(acronym, expansion)
            found.setdefault((acronym, expansion.lower()), pair)
    return list(found.values())


def _clean_acronym(token: str) -> str | None:
    match = _ACRONYM_RE.match(token)
    if match is None:
        return None
    acronym = match.group("acr")
    if sum(ch.isupper() for ch in acronym) < 2:
        return None
    return acronym


def _initial(word: str) -> str:
    # "d'impact" reaches here as "impact" (the regex splits on the apostrophe); accents are
    # folded so that "É" in an expansion matches an "E" in its acronym.
    return fold(word[0])


def _match_backward(acronym: str, text: str, *, whole: bool = False) -> str | None:
    """The expansion ending ``text`` whose word initials spell ``acronym``, or None.

    ``whole``: the expansion must be all of ``text`` (the parenthesised form "ACR (...)").
    Stop words never carry a letter ("Treaty on the Functioning..." is not "the F...").
    """
    spans = list(_WORD.finditer(text))
    words: Sequence[str] = [m.group() for m in spans]
    letters = [fold(ch) for ch in acronym if ch.isalpha()]
    if len(letters) < 2 or len(words) < len(letters):
        return None
    i = len(words) - 1
    if fold(words[i][0]) != letters[-1]:
        return None  # the expansion ends right before the parenthesis
    first = i
    skipped = 0
    for letter in reversed(letters):
        while i >= 0 and (_initial(words[i]) != letter or words[i].lower() in STOP_WORDS):
            if words[i].lower() not in STOP_WORDS:
                skipped += 1
                if skipped > MAX_SKIPPED_WORDS:
                    return None
            i -= 1
        if i < 0:
            return None
        first = i
        i -= 1
    if whole and first != 0:
        return None
    if len(words) - first < 2:
        return None
    # As written ("analyse d'impact ..."), whitespace collapsed.
    return " ".join(text[spans[first].start():spans[-1].end()].split())


def fold(text: str) -> str:
    """Lowercase without accents, one character per character (offsets stay valid)."""
    if text.isascii():  # no ASCII character decomposes: the common case, without the loop
        return text.lower()
    # lowered per character: "İ".lower() is "i" and a combining dot, two characters
    return "".join(unicodedata.normalize("NFKD", ch.lower())[0] for ch in text)


@dataclass(frozen=True)
class AcronymTable:
    """The pairs a store learned, ready to rewrite queries."""

    expansion_of: dict[str, str]  # folded acronym -> expansion (the most documented one)
    acronym_of: dict[tuple[str, ...], str]  # folded expansion words -> acronym

    @functools.cached_property
    def _by_first_word(self) -> dict[str, list[tuple[tuple[str, ...], str]]]:
        # A corpus defines thousands of acronyms: look up only the expansions that start
        # with a word of the query.
        index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for words, acronym in self.acronym_of.items():
            index.setdefault(words[0], []).append((words, acronym))
        return index

    @classmethod
    def build(cls, rows: Iterable[tuple[str, str, int]]) -> AcronymTable:
        """``rows``: (acronym, expansion, documents defining it). Ambiguous acronyms (no
        expansion defined by ``MIN_AGREEMENT`` of their documents) are left out."""
        per_acronym: dict[str, dict[tuple[str, ...], tuple[int, str, str]]] = {}
        for acronym, expansion, documents in rows:
            words = tuple(fold(w) for w in _WORD.findall(expansion))
            options = per_acronym.setdefault(fold(acronym), {})
            count, _, _ = options.get(words, (0, "", ""))
            # Case variants of one expansion ("Data Protection..." / "data protection...")
            # are one expansion.
            options[words] = (count + int(documents), expansion.lower(), acronym)
        expansion_of: dict[str, str] = {}
        acronym_of: dict[tuple[str, ...], str] = {}
        for key, options in per_acronym.items():
            words, (count, expansion, acronym) = min(
                options.items(), key=lambda item: (-item[1][0], item[1][1])
            )
            if count < MIN_AGREEMENT * sum(c for c, _, _ in options.values()):
                continue
            expansion_of[key] = expansion
            acronym_of.setdefault(words, acronym)
        return cls(expansion_of, acronym_of)

    def __bool__(self) -> bool:
        return bool(self.expansion_of)

    def without(self, acronyms: Iterable[str]) -> AcronymTable:
        """This table less the pairs of ``acronyms`` (folded), both directions."""
        drop = set(acronyms)
        if not drop:
            return self
        return AcronymTable(
            {k: e for k, e in self.expansion_of.items() if k not in drop},
            {w: a for w, a in self.acronym_of.items() if fold(a) not in drop},
        )

    def expand(self, query: str, *, grouped: bool = False) -> tuple[str | None, dict[str, str]]:
        """A sub-query naming both forms of every acronym the query uses in either form,
        and what was expanded (``{"DPIA": "data protection impact assessment"}``); None
        when the query names none.

        ``grouped``: the query is written in the query language (a phrase, an operator,
        ``+``/``-``, a field): both forms become one group, ``("data protection impact
        assessment" DPIA)``, so that what applies to the form typed applies to the twin
        (``brake -DPIA`` excluded only "data" and searched the rest, ``title:DPIA`` put only
        "data" in the title). A quoted phrase is searched as typed: ``-"DPIA review"`` made
        ``-"data protection impact assessment (DPIA) review"``, which excludes less.
        """
        phrases = _phrase_spans(query) if grouped else []
        edits: list[tuple[int, int, str]] = []
        used: dict[str, str] = {}
        folded = fold(query)
        for match in _QUERY_TOKEN.finditer(query):
            token = match.group()
            if (not _typed_as_acronym(token) or _is_operator(query, match.start(), match.end())
                    or _inside(match.start(), phrases)):
                continue
            key = fold(token)
            expansion = self.expansion_of.get(key) or self.expansion_of.get(key.removesuffix("s"))
            if expansion is None:
                continue
            edits.append((match.start(), match.end(), _twin(expansion, token, grouped)))
            used[token] = expansion
        spans = [(m.start(), m.end(), fold(m.group())) for m in _WORD.finditer(folded)]
        for k, (_, _, first_word) in enumerate(spans):
            for words, acronym in self._by_first_word.get(first_word, ()):
                if acronym in _OPERATOR_WORDS:
                    continue
                size = len(words)
                if tuple(s[2] for s in spans[k:k + size]) != words:
                    continue
                start, end = spans[k][0], spans[k + size - 1][1]
                if any(s < end and start < e for s, e, _ in edits):
                    continue
                typed = query[start:end]
                if grouped and (_SYNTAX_INSIDE.search(typed) or _inside(start, phrases)):
                    continue  # "data -protection ...": the operator is the user's, leave it
                edits.append((start, end, _twin(typed, acronym, grouped)))
                used[typed] = acronym
        if not edits:
            return None, {}
        out = query
        for start, end, text in sorted(edits, reverse=True):
            out = out[:start] + text + out[end:]
        return out, used


# The query language's operators (indexes/tantivy_query.py): "AND", "OR" or "NOT" alone
# between spaces, parentheses or quotes. "OR" is also an acronym a medical corpus defines
# ("operating room (OR)"): its twin turned the operator into words around a group "(OR)",
# a query the parser refuses. "the OR?" is a word, and keeps its twin.
_QUERY_OPERATOR = re.compile(r'(?<![^\s()"])(?:AND|OR|NOT)(?![^\s()"])')
# Nor is such an acronym written into a twin: "the operating room" became "the operating
# room (OR)", a group holding the operator, and a plain question failed.
_OPERATOR_WORDS = frozenset({"AND", "OR", "NOT"})


# Query syntax between the words of an expansion as typed: a quote, a group, a field, an
# operator on a word. Such a span is the user's query, not a name to pair with its acronym.
_SYNTAX_INSIDE = re.compile(r'["():]|(?<!\S)[-+]|\b(?:AND|OR|NOT)\b')


def _phrase_spans(query: str) -> list[tuple[int, int]]:
    """(opening quote, closing quote) of each phrase, paired as the query language pairs
    them: each double quote closes the one before it."""
    quotes = [i for i, ch in enumerate(query) if ch == '"']
    return list(zip(quotes[::2], quotes[1::2], strict=False))


def _inside(position: int, phrases: Sequence[tuple[int, int]]) -> bool:
    return any(opening < position < closing for opening, closing in phrases)


def _twin(long_form: str, short_form: str, grouped: bool) -> str:
    """The text that names both forms: "expansion (ACR)" as words, or one group."""
    if not grouped:
        return f"{long_form} ({short_form})"
    # a quote inside the expansion as the corpus wrote it would end the phrase early
    phrase = " ".join(long_form.replace('"', " ").split())
    return f'("{phrase}" {short_form})'


def _is_operator(query: str, start: int, end: int) -> bool:
    found = _QUERY_OPERATOR.match(query, start)  # (the lookbehind sees the text before start)
    return found is not None and found.end() == end


def _typed_as_acronym(token: str) -> bool:
    # Capitals as typed ("DPIA", "AI"), or a lowercase word of 4+ letters ("dpia", "gdpr"):
    # a short lowercase word is too often an ordinary one ("ai" is French for "have").
    if len(token) < 2 or not token.isalpha():
        return False
    return sum(ch.isupper() for ch in token) >= 2 or (token.islower() and len(token) >= 4)


def catalog_rows(document_id: str, text: str) -> list[tuple[str, str, str]]:
    """The (document_id, acronym, expansion) rows the catalog keeps for one document."""
    return [(document_id, pair.acronym, pair.expansion) for pair in find_pairs(text)]
