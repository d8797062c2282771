"""Query understanding before retrieval, with no server: one question becomes the
sub-queries that run, and their results merge by chunk.

Where sub-queries come from, in order:

1. the question itself (and any rewrites the caller passed as a list);
2. the caller's ``rewriter`` hook (e.g. an LLM): ``rewriter(question) -> 2-3 sub-queries``,
   each searched as its words (quotes, brackets and AND/OR/NOT dropped; one with no word
   left is skipped);
3. typo corrections: a word the full-text index does not know is replaced by its nearest
   indexed word in every sub-query, so BM25 searches "gdpr" when "GPDR" was typed; the
   response lists them (``corrections``). The embedding reads the words as typed: the
   nearest word is a guess from the corpus's vocabulary, often wrong for a word the corpus
   just lacks ("book" -> "took", "Wann" -> "Want"), and the model reads any word;
4. learned acronyms: a sub-query naming an acronym or an expansion the corpus defines
   gets a twin naming both ("DPIA" -> "data protection impact assessment (DPIA)");
5. definition questions: "How is X defined?", "What is meant by X?", "Qu'entend-on par
   X ?" look for a definitions section, whose words they do not share ("defined" stems to
   "defin", "Definitions" to "definit"): a twin adds the word "definitions" in the
   question's language. Laws, standards and contracts define their terms in one place.

Merging: each sub-query is retrieved and fused on its own (RRF or weighted, as asked),
then every chunk keeps its best fused score over the sub-queries (a chunk found by two
sub-queries is not counted twice, so a paraphrase cannot outvote the question). A
single-method search (vector or fulltext) has no fused score to compare: its raw scores
are not comparable across queries (BM25 grows with the number of query words, so a longer
sub-query would win every chunk), so each sub-query's ranking scores ``1 / (k + rank)``
first, which is RRF over that one method; a chunk then keeps its best rank. Measured on
SciFact full text (300 queries): raw BM25 maxima 0.682 nDCG@10, ranks 0.691, the question
alone 0.692 (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..acronyms import AcronymTable
from ..errors import InvalidInputError, RewriterError
from ..indexes.tantivy_query import USER_FIELDS, uses_syntax
from ..language import detect_language, query_language
from ..text import excerpt
from ..validation import check_text
from .cache import GenerationMemo
from .fusion import Ranking, best_per_label, order
from .gate import bm25_idf

if TYPE_CHECKING:
    from ..core.store_core import StoreCore as Store
    from .request import SearchRequest

# A rewriter maps the question to a few sub-queries (the question itself always runs too).
Rewriter = Callable[[str], Sequence[str]]
MAX_REWRITES = 5
MAX_REWRITE_CHARS = 2_000


@dataclass(frozen=True)
class QueryPlan:
    """What runs for one request, and why."""

    sub_queries: tuple[str, ...]  # the (corrected) question first
    corrections: Mapping[str, str] = field(default_factory=dict)  # typed -> searched word
    expansions: Mapping[str, str] = field(default_factory=dict)  # acronym <-> expansion
    # What the vector method embeds for each sub-query (empty: the sub-queries themselves):
    # a corrected sub-query embeds the words as typed (see ``_plan``).
    embed_texts: tuple[str, ...] = ()


def plan(store: Store, request: SearchRequest, generation: int) -> QueryPlan:
    """The sub-queries of ``request`` (see the module docstring for the order).

    Without a rewriter hook the plan depends only on the query text and the store's data:
    it is kept per text for the store's generation (``_PLANS``), so a question asked again
    (the next page, another limit) skips the typo look-ups and the acronym scan."""
    if request.rewriter is not None:
        return _plan(store, request, generation)
    key = (request.queries, request.rewrite, DEFINITION_TWINS)
    return _PLANS.get(store, (generation, store.index_version), key,
                      lambda: _plan(store, request, generation))


# Plans of recent query texts, per store and generation (a corpus change can change them).
_PLANS: GenerationMemo[QueryPlan] = GenerationMemo()


def _plan(store: Store, request: SearchRequest, generation: int) -> QueryPlan:
    queries = list(request.queries)
    if request.rewriter is not None:
        queries.extend(call_rewriter(request.rewriter, request.queries[0]))
    if not request.rewrite:
        return QueryPlan(tuple(dict.fromkeys(queries)))
    corrections: dict[str, str] = {}
    corrected = []
    for query in queries:
        fixes = {} if _foreign(store, query) else typo_corrections(store, query)
        corrections.update(fixes)
        corrected.append(apply_corrections(query, fixes))
    table = acronym_table(store, generation)
    expansions: dict[str, str] = {}
    # (sub-query, what the vector method embeds for it). A correction is the corpus's
    # nearest word to one it does not hold, a guess: BM25 can only match the words the index
    # has, so it searches the guess; the model reads any word, and a wrong guess changed what
    # it read ("an address book of friends" became "address took", "Wann" became "Want").
    planned: list[tuple[str, str]] = []
    for query, fixed in zip(queries, corrected, strict=True):
        planned.append((fixed, query))
        variant, used = table.expand(fixed, grouped=uses_syntax(fixed))
        if variant is not None:
            planned.append((variant, variant))
            expansions.update(used)
    definition = definition_variant(corrected[0]) if DEFINITION_TWINS else None
    if definition is not None:
        planned.append((definition, definition))
    kept = dict(reversed(planned))  # a repeated sub-query keeps its first embedding text
    sub_queries = tuple(dict.fromkeys(text for text, _ in planned))
    embed_texts = tuple(kept[text] for text in sub_queries)
    return QueryPlan(sub_queries, corrections, expansions,
                     () if embed_texts == sub_queries else embed_texts)


# Add the definitions twin (step 5). A module default until the search request carries an
# option for it; benchmarks turn it off to measure the landed rewriting beside it.
DEFINITION_TWINS = True
# Questions that ask what a term means, per language (guessed by ``detect_language``).
# Phrasings only: "mean" alone is a statistic ("the mean rate") as often as a question.
_DEFINITION_QUESTIONS = {
    "en": re.compile(
        r"\bhow (?:is|are)\b.{1,80}?\bdefined\b|\bwhat (?:is|are) meant by\b|"
        r"\bwhat (?:does|do)\b.{1,80}?\bmean\b|\b(?:definition|meaning) of\b|"
        r"\bwithin the meaning of\b", re.IGNORECASE | re.DOTALL),
    "fr": re.compile(
        r"\bdéfini(?:e|es|s)?\b|\bdéfinition d|\bentend(?:-on| on)? par\b|\bsignifie\b|"
        r"\bqu['’]est-ce qu(?:e\b|['’])|\bau sens d", re.IGNORECASE | re.DOTALL),
}
_DEFINITIONS_WORD = {"en": "definitions", "fr": "définitions"}


def definition_variant(question: str) -> str | None:
    """``question`` plus the word "definitions" in its language when it asks what a term
    means (module docstring, step 5); None otherwise."""
    language = detect_language(question, min_words=1)
    pattern = _DEFINITION_QUESTIONS.get(language)
    if pattern is None or not pattern.search(question):
        return None
    return f"{question} {_DEFINITIONS_WORD[language]}"


def call_rewriter(rewriter: Rewriter, question: str) -> list[str]:
    """Run the caller's hook and check what it returned; a failure names the fix."""
    name = getattr(rewriter, "__name__", type(rewriter).__name__)
    try:
        result = rewriter(question)
    except Exception as exc:  # the hook is the caller's code: any failure is theirs
        raise RewriterError(
            f"the rewriter {name!r} failed on {excerpt(question)}: {type(exc).__name__}: {exc}; "
            "fix the hook or search without rewriter="
        ) from exc
    if isinstance(result, (str, bytes)) or not isinstance(result, (list, tuple)):
        raise RewriterError(
            f"the rewriter {name!r} returned {type(result).__name__}; it must return a list "
            f"of up to {MAX_REWRITES} query strings"
        )
    if len(result) > MAX_REWRITES:
        raise RewriterError(
            f"the rewriter {name!r} returned {len(result)} sub-queries; at most "
            f"{MAX_REWRITES} run (2-3 is the useful range)"
        )
    out = []
    for item in result:
        if not isinstance(item, str) or not item.strip():
            raise RewriterError(
                f"the rewriter {name!r} returned {excerpt(item)} among its sub-queries; each "
                "must be a non-empty string"
            )
        if len(item) > MAX_REWRITE_CHARS:
            raise RewriterError(
                f"the rewriter {name!r} returned a sub-query of {len(item)} characters; "
                f"keep each under {MAX_REWRITE_CHARS}"
            )
        try:
            # the query's own rule: a lone surrogate reached the model's tokenizer (a raw
            # TypeError from tokenizers) and a NUL the text index, where the query refuses both
            check_text("a sub-query", item)
        except InvalidInputError as exc:
            raise RewriterError(f"the rewriter {name!r} returned a sub-query a search refuses: "
                                f"{exc}") from exc
        words = as_words(item)
        # "??", "()" or "content:*" searches nothing (a field name is no word to search: the
        # text index refused "content:*" and with it the user's whole search)
        if any(ch.isalnum() for ch in _FIELD_NAME.sub(" ", words)):
            out.append(words)
    return out


# Query syntax a model writes by accident (an unbalanced quote, a dangling AND, "NOT x"
# alone) failed the whole search with an error about a query the user never typed: a
# hook's sub-query is searched as its words. Prefixes (``term*``) and fields stay.
_SYNTAX = re.compile(r'["()\[\]{}]|(?<!\S)[-+](?=\S)|\b(?:AND|OR|NOT)\b|&&|\|\|')


_FIELD_NAME = re.compile(rf"\b(?:{'|'.join(USER_FIELDS)}):", re.IGNORECASE)


def as_words(sub_query: str) -> str:
    """A rewriter's sub-query without query syntax: quotes, brackets, operators dropped."""
    return " ".join(_SYNTAX.sub(" ", sub_query).split())


def _foreign(store: Store, query: str) -> bool:
    """Whether ``query`` is told to be in a language the text index has no text analysis
    for (a German question over English and French text): its words are no typos of the
    corpus's. Corrected, "Wann" searched "Want", "Daten" "Date", "Kommission" "Omission"."""
    language = query_language(query)
    languages = getattr(store._text_index, "languages", None)
    return language is not None and languages is not None and language not in languages


def typo_corrections(store: Store, query: str) -> dict[str, str]:
    """The words of ``query`` the text index does not know, each with the word it searches."""
    corrections = getattr(store._text_index, "corrections", None)
    return dict(corrections(query)) if corrections is not None else {}


def apply_corrections(query: str, corrections: Mapping[str, str]) -> str:
    """``query`` with each corrected word replaced where it stands as a whole word."""
    for word, replacement in corrections.items():
        query = re.sub(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", replacement, query)
    return query


_TABLES: weakref.WeakKeyDictionary[Store, tuple[int, AcronymTable]] = (
    weakref.WeakKeyDictionary()
)


# An acronym BM25 weighs less than this (its IDF: written in over ~37 % of the chunks) gets
# no twin: it names what the corpus is about ("AI" in 59 % of the AI Act's and GDPR's chunks,
# IDF 0.53), so its expansion adds no evidence, only noise (the twin "artificial
# intelligence (AI)" lifted the AI Act's amending articles over its entry-into-force one).
# Every other acronym learned from the regulatory corpus is in under 1.5 % of its chunks
# (IDF > 4). A few chunks are no statistic (a one-note store writes its acronym in all of
# them): an acronym in fewer than MIN_FREQUENT_CHUNKS chunks always keeps its twin.
MIN_ACRONYM_IDF = 1.0
MIN_FREQUENT_CHUNKS = 50


def acronym_table(store: Store, generation: int) -> AcronymTable:
    """The store's learned pairs, read from the catalog once per generation, less the
    acronyms too frequent to be worth a twin (``MIN_ACRONYM_IDF``)."""
    cached = _TABLES.get(store)
    if cached is None or cached[0] != generation:
        rows = store._catalog.acronym_counts()
        store._catalog.release()
        table = AcronymTable.build(rows)
        frequency = getattr(store._text_index, "document_frequency", None)
        if frequency is not None and table:
            table = table.without([a for a in table.expansion_of if _frequent(*frequency(a))])
        cached = (generation, table)
        _TABLES[store] = cached
    return cached[1]


def _frequent(chunks: int, total: int) -> bool:
    """An acronym written in ``chunks`` of ``total`` is too frequent for a twin."""
    return chunks >= MIN_FREQUENT_CHUNKS and bm25_idf(chunks, total) < MIN_ACRONYM_IDF


def merge_by_chunk(
    fused: Sequence[Mapping[int, float]], *, comparable: bool = True, k: int = 60
) -> dict[int, float]:
    """Every chunk's best fused score over the sub-queries; scores that are not
    ``comparable`` across sub-queries are first turned into ``1 / (k + rank)``."""
    if len(fused) == 1:
        return dict(fused[0])
    if not comparable:
        fused = [{label: 1.0 / (k + rank) for rank, (label, _) in enumerate(order(f), 1)}
                 for f in fused]
    return dict(best_per_label([list(f.items()) for f in fused]))


def per_method(rankings: Sequence[Ranking], depth: int) -> list[tuple[int, float]]:
    """One method's rankings over the sub-queries as one (for per-method ranks shown)."""
    if len(rankings) == 1:
        return list(rankings[0])
    return best_per_label(rankings)[:depth]
