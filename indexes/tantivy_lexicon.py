"""What the tantivy index knows of its own vocabulary: typo correction and prefix expansion.

The index keeps, beside the stemmed BM25 fields, a ``words`` field of every word as written
(lowercased, accents folded, not stemmed) whose term dictionary is the corpus vocabulary.
Corrections and prefixes are matched against those surface words, and the word found is
then searched like any typed word, through the stemmed fields, with real BM25 scores.

Why surface words and not the stems: a typo in a suffix defeats the stemmer
("transparancy" stems to ``transparanc``, three edits from ``transpar``), and the stems
read badly in a correction report (``effac``). Why not tantivy's ``FuzzyTermQuery``
(checked, tantivy-py 0.27): it scores every match with a constant 1.0 (``AutomatonScorer``)
next to BM25 scores of 5-20, so near matches would rank alike, and it does not say which
term matched; naming it through ``terms_with_prefix(filter_query=fuzzy)`` reads the terms
of every matching document (90 ms for one word on SciFact's 5k abstracts). The dictionary
answers the same question in a few milliseconds: two prefix scans (typos after the first
letter, or a swapped/dropped first letter), each read once per vocabulary and kept by
length and letter counts (``prefix_words.py``: scanning 120,000 words of one letter again
for every unknown word made a pasted paragraph take 17 s), and, for a wrong or missing first
letter, direct look-ups of the 52 words it could have been.

Rules (decided once here):

- A word is corrected only when none of its stems occurs in any text field: a word the
  index knows (``erasur`` stems like ``erasure``) is never "corrected" into a more
  frequent neighbour.
- Common words of a language are never corrected: a question word, an English or French
  grammar word (``enginelib.common_words``) or a stop word of any language the analyzers
  know (``quand``, ``hors``, Italian ``sono``). A corpus that never
  says "quand" has not misspelled it; correcting it to ``quant`` searches a word the user
  did not mean and reports a correction that reads as a blunder.
- Words with a digit are never corrected (``1K0615301N`` and ``1K0615301M`` are two real
  parts), nor words with a capital inside that are not all capitals (``UreH``, ``iPhone``:
  names and identifiers), nor words shorter than ``MIN_FUZZY_CHARS`` (too many neighbours).
- Edit distance is optimal string alignment (a transposition costs one, as Tantivy's
  ``transposition_cost_one``): ``gpdr`` -> ``gdpr`` is one edit. Words up to
  ``LONG_WORD_CHARS`` letters get one edit, longer ones two.
- Among candidates: the fewest edits, then the most documents, then alphabetical.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import tantivy

from .lru import Lru
from .prefix_words import PrefixWords

# The words field is lowercased and accent-folded: its words start with one of these.
_FIRST_LETTERS = "abcdefghijklmnopqrstuvwxyz"

MIN_FUZZY_CHARS = 4
LONG_WORD_CHARS = 8
# A prefix expands to at most this many words (tantivy's own phrase-prefix default is 50),
# the most frequent first.
MAX_PREFIX_TERMS = 50
# Corrections kept per vocabulary (least recently used dropped): the distinct words of a
# few thousand recent queries.
CORRECTION_CACHE_SIZE = 8_192
# Prefix expansions kept per vocabulary: each one scans every indexed word of the prefix
# (0.1-0.2 s for a prefix of 100,000 words), and a query names its prefix again on each page.
PREFIX_CACHE_SIZE = 1_024
# Words of the typo look-ups' prefix scans kept per vocabulary, in all (least recently used
# scan dropped first): each word costs about 70 bytes (code points, documents, letter
# counts), so at most ~35 MB, a few first letters of a 1M-chunk store. A scan larger than this
# is read for each look-up instead, as every scan was before.
SCAN_CACHE_WORDS = 500_000


@dataclass(frozen=True)
class Correction:
    word: str  # as typed
    replacement: str  # the indexed word searched instead


class TantivyLexicon:
    """Vocabulary questions answered from one searcher (one state of the index)."""

    def __init__(
        self,
        searcher: tantivy.Searcher,
        fields: Mapping[str, tantivy.TextAnalyzer],
        *,
        words_field: str,
        fold: tantivy.TextAnalyzer,
        is_stopword: Callable[[str], bool] | None = None,
        is_common: Callable[[str], bool] | None = None,
    ) -> None:
        self._searcher = searcher
        # a typo is never corrected into a stop word ("pads" -> the French "pas"): it would
        # search nothing and tell the user it searched something
        self._is_stopword = is_stopword or (lambda word: False)
        self._is_common = is_common or (lambda word: False)
        self._fields = fields  # stemmed text field -> the analyzer that field uses
        self._words_field = words_field
        self._fold = fold  # the words field's analyzer: lowercase + accent folding
        self._known: dict[str, bool] = {}
        # word -> its correction (None: none): a query's words are looked up on every
        # search, and the answer holds for this vocabulary (a new one makes a new lexicon).
        # (kept in a 1-tuple: "no correction" is an answer too)
        self._corrections: Lru[str, tuple[Correction | None]] = Lru(CORRECTION_CACHE_SIZE)
        # folded prefix -> its expansion (kept whole: "a*" and "á*" are one scan)
        self._prefixes: Lru[str, tuple[str, ...]] = Lru(PREFIX_CACHE_SIZE)
        # one-letter prefix -> its words, read for the typo look-ups: a query of 64 unknown
        # words starting with "a" scans the words starting with "a" once, not 64 times
        self._scans: Lru[str, PrefixWords] = Lru(SCAN_CACHE_WORDS, weigh=lambda s: s.size)

    def knows(self, word: str) -> bool:
        """True when some text field holds one of the word's stems."""
        cached = self._known.get(word)
        if cached is None:
            cached = any(
                self._searcher.doc_freq(field, stem) > 0
                for field, analyzer in self._fields.items()
                for stem in analyzer.analyze(word)
            )
            self._known[word] = cached
        return cached

    def document_frequency(self, word: str) -> tuple[int, int]:
        """(chunks holding ``word`` as written (folded, not stemmed), indexed chunks); the
        count is 0 for a word of several tokens."""
        folded = self._fold.analyze(word)
        total = int(self._searcher.num_docs)
        if len(folded) != 1:
            return 0, total
        return int(self._searcher.doc_freq(self._words_field, folded[0])), total

    def correct(self, word: str) -> Correction | None:
        """The closest indexed word for a word the index does not know, or None."""
        kept = self._corrections.get(word)
        if kept is None:
            kept = (self._correct(word),)
            self._corrections.put(word, kept)
        return kept[0]

    def _correct(self, word: str) -> Correction | None:
        folded = self._fold.analyze(word)
        if (len(folded) != 1 or len(folded[0]) < MIN_FUZZY_CHARS
                or any(ch.isdigit() for ch in word) or _is_name(word) or self.knows(word)
                or self._is_common(word)):
            return None
        typed = folded[0]
        distance = 1 if len(typed) <= LONG_WORD_CHARS else 2
        found = [item for item in self._near(typed, distance) if not self._is_stopword(item[0])]
        if not found:
            return None
        term, _, _ = min(found, key=lambda item: (item[1], -item[2], item[0]))
        return Correction(word, _same_case(word, term))

    def _near(self, typed: str, distance: int) -> list[tuple[str, int, int]]:
        """Vocabulary words within ``distance`` edits of ``typed``: (word, edits, docs)."""
        # Most typos keep the first letter, or swap/drop it (then the second letter leads):
        # two prefix scans of the dictionary find those cheaply.
        found: list[tuple[str, int, int]] = []
        for prefix in dict.fromkeys((typed[:1], typed[1:2])):
            found.extend(self._words_starting(prefix).near(typed, distance))
        if not found:
            # The first letter is wrong or missing: the word it could have been.
            for letter in _FIRST_LETTERS:
                for guess in (letter + typed[1:], letter + typed):
                    docs = self._searcher.doc_freq(self._words_field, guess)
                    if docs:
                        found.append((guess, 1, int(docs)))
        return found

    def _words_starting(self, prefix: str) -> PrefixWords:
        words = self._scans.get(prefix)
        if words is None:
            words = PrefixWords(self._searcher.terms_with_prefix(self._words_field, prefix))
            self._scans.put(prefix, words)
        return words

    def expand_prefix(self, prefix: str) -> list[str]:
        """Vocabulary words a ``prefix*`` query matches: the most frequent first, one word
        per distinct stem (``protection`` and ``protections`` would score twice)."""
        folded = self._fold.analyze(prefix)
        if len(folded) != 1:
            return []
        kept = self._prefixes.get(folded[0])
        if kept is None:
            kept = tuple(self._expand(folded[0]))
            self._prefixes.put(folded[0], kept)
        return list(kept)

    def _expand(self, folded: str) -> list[str]:
        words = sorted(self._searcher.terms_with_prefix(self._words_field, folded),
                       key=lambda item: (-int(item[1]), item[0]))
        out: list[str] = []
        seen: set[tuple[str, ...]] = set()
        for word, _ in words:
            stems = tuple(s for analyzer in self._fields.values() for s in analyzer.analyze(word))
            if stems in seen:
                continue
            seen.add(stems)
            out.append(word)
            if len(out) == MAX_PREFIX_TERMS:
                break
        return out


def _same_case(typed: str, word: str) -> str:
    """The vocabulary word cased like the typed one ("GPDR" -> "GDPR", "Erasre" ->
    "Erasure"), so the embedding sees what the user meant to type. Accents folded away
    by the words field stay folded ("délégé" -> "delegue")."""
    if typed.isupper():
        return word.upper()
    if typed[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _is_name(word: str) -> bool:
    return any(ch.isupper() for ch in word[1:]) and not word.isupper()
