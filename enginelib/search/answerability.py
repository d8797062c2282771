"""The gate stage of a search: gathers the evidence from the view and the indexes, then
lets ``gate.decide`` answer or refuse (the math lives in ``gate``, pure)."""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..chunk_view import ChunkView
from ..core import layout
from ..embedders.base import normalize_rows
from ..embedders.joined import GATE_PART
from ..language import function_words, hit_language, query_language
from . import gate
from .named_sources import (
    SUBJECT_SHARE,
    NamedSource,
    articled_acronyms,
    long_name_initials,
    named_sources,
    proper_name_initials,
    question_phrases,
    spelled_out,
)
from .quotes import content_terms, only_function_words
from .request import ANSWERABILITY_THRESHOLD, SearchRequest
from .rewrite import apply_corrections, typo_corrections

if TYPE_CHECKING:
    from ..chunk_view import ChunkView
    from ..core.store_core import StoreCore as Store

Ranking = list[tuple[int, float]]


def assess(
    store: Store,
    view: ChunkView,
    request: SearchRequest,
    qvec: np.ndarray | None,
    top_positions: np.ndarray,
    vector_ranking: Ranking,
    text_ranking: Ranking,
) -> gate.GateDecision:
    """Decide for one query; ``top_positions`` are the view rows of the first fused hits."""
    threshold = request.answerability_threshold
    if threshold is None:  # the gate is off: gathering evidence nobody weighs costs ms
        return gate.decide(gate.GateEvidence(), None)
    if len(top_positions) == 0:
        return gate.no_match(threshold, empty_store=len(view.labels) == 0,
                             in_memory=layout.is_memory_store(store.path),
                             min_score=request.min_score)
    top = np.asarray(top_positions[: gate.TOP_N], dtype=np.int64)
    top_cosines = sample_cosines = None
    # A joined embedder's gate reads its first model's part alone (``GATE_PART``), so that
    # model's calibrated levels apply as they are.
    dims, model = GATE_PART.get(store.manifest.embedding_model, (0, store.manifest.embedding_model))
    if qvec is not None:
        query = normalize_rows(qvec[None, :dims])[0] if dims else qvec
        top_cosines = _gate_part(view.vectors[top], dims) @ query
        sample_cosines = _sample_matrix(view, dims) @ query
    # Read as typed: a correction ("Wann" -> "Want") is no language. Keywords alone ("DPIA",
    # "GDPR fines") say nothing of their language: nothing says the query crosses languages,
    # so the same-language levels apply, as fusion reads it too. Read as English, a French
    # keyword query met French text with the lenient cross-lingual levels and "AIPD" (in no
    # passage) was answered at cosine 0.81.
    asked = request.embed_text(0)
    language = query_language(asked)
    terms = _terms(store, request.queries, language)
    hit_tokens: set[str] = set()
    first = view.record(int(top[0]))
    passage_language = hit_language(first.language, first.content, language)
    for position in top:
        hit_tokens |= _hit_tokens(store, view, int(position))
    cross_lingual = language is not None and not gate.same_language(language, passage_language)
    # Across languages a law goes by its translated name ("GDPR" over the French "RGPD").
    # The names are the user's own words, not the typo guesses searched for them: "the Chips
    # Act" is no "Ships Act" (a name's typos are corrected where it is looked up, below).
    named = [] if cross_lingual else named_sources(asked, language)
    passages = len(view.labels)
    shouted = asked.isupper()
    absent = [source.name for source in named
              if not _mentioned(store, view, source, passages, shouted=shouted)
              and not (source.is_acronym() and _spelled_by_store(view, top, source.name))]
    own_terms: list[str] = []
    if absent:
        given = {source.name.casefold() for source in named}
        # All in capitals, "THE DIGITAL SERVICES ACT" reads "DIGITAL" as one: there only
        # the initials of a name the store's texts state are ("THE GDPR").
        named += [NamedSource(word, (word,)) for word in articled_acronyms(asked)
                  if word.casefold() not in given and _phrase_count(store, word, 1)
                  and (not shouted or word in _own_initials(view))]
        if len(absent) == len(named):
            # In a store of a few passages 1 % is one passage: a phrase one or two passages
            # write is a passing mention there, not what the store is about.
            needed = max(MIN_TERM_PASSAGES, _subject_count(passages))
            own_terms = _first_own_term(store, question_phrases(asked, absent), needed)
    evidence = gate.gather(
        embedder=model,
        query_terms=terms,
        hit_tokens=hit_tokens,
        top_cosines=top_cosines,
        sample_cosines=sample_cosines,
        vector_labels=[label for label, _ in vector_ranking],
        text_labels=[label for label, _ in text_ranking],
        cross_lingual=cross_lingual,
        named_sources=[source.name for source in named],
        absent_sources=absent,
        own_terms=own_terms,
    )
    explicit = threshold is not None and threshold != ANSWERABILITY_THRESHOLD
    return gate.decide(evidence, threshold, explicit=explicit,
                       function_words_only=not terms and only_function_words(request.queries[0]))


def _mentioned(store: Store, view: ChunkView, source: NamedSource, passages: int, *,
               shouted: bool = False) -> bool:
    """Whether the store holds the law ``source`` names: a passage mentions one of its
    spellings, or its core is the store's subject (named_sources.py). In a question all in
    capitals every word looks like an acronym: a one-word core is one only where the store's
    texts state a name it is the initials of ("THE GDPR REGULATION"), never a word they use
    ("THE DIGITAL SERVICES ACT": the GDPR writes "services")."""
    if any(_phrase_count(store, spelling, 1) for spelling in source.spellings):
        return True
    needed = _subject_count(passages)
    for tail in source.core_tails():
        acronym = tail.core_is_acronym() and (not shouted or tail.name in _own_initials(view))
        if acronym and _phrase_count(store, tail.name, 1) > 0:
            return True
        if tail.core_is_phrase() and _phrase_count(store, tail.name, needed) >= needed:
            return True
    return False


MIN_TERM_PASSAGES = 3
# A question's phrases looked up, the first ones (each is one phrase query): a question has
# a handful (17 at most in our question sets), a pasted page naming a law the store lacks
# thousands (1,828 queries for one search of 19,000 characters, a second on 31,000 chunks).
MAX_PHRASES = 64


def _first_own_term(store: Store, phrases: list[str], needed: int) -> list[str]:
    """The first of the question's phrases that ``needed`` passages write, or none. One is
    enough to weigh the question: at 1M chunks a common phrase takes about 10 ms to count,
    and all of a question's up to 180 ms (benchmarks/phrase_count.py)."""
    for phrase in phrases[:MAX_PHRASES]:
        # As typed: a typo guess ("minimum wage" read "minimum age") is the engine's word,
        # and must not make a question look like the store's.
        if _phrase_count(store, phrase, needed, corrected=False) >= needed:
            return [phrase]
    return []


def _subject_count(passages: int) -> int:
    """How many passages must write a phrase for it to be what the store is about."""
    return max(1, math.ceil(SUBJECT_SHARE * passages))


# The initials of the names the store's texts write out, per view: the law names its
# documents state in their titles and openings (named_sources.long_name_initials: "selon le
# RGPD" over an official French text that only writes "règlement général sur la protection
# des données") and the multi-word proper names of a sample of its chunks ("the EDPB").
_OWN_INITIALS: weakref.WeakKeyDictionary[ChunkView, frozenset[str]] = (
    weakref.WeakKeyDictionary())
# Titles, openings and sampled chunks read for it, each at most this many (a store of a
# million short documents would otherwise read them all on a near miss).
OPENINGS_READ = 5_000


def _own_initials(view: ChunkView) -> frozenset[str]:
    initials = _OWN_INITIALS.get(view)
    if initials is None:
        found: set[str] = set()
        codes, titles = view.codes("title"), view.column("title")
        _, at = np.unique(codes, return_index=True)  # one row per distinct title
        for position in at[:OPENINGS_READ]:
            found |= long_name_initials(titles[int(position)] or "")
        first = np.flatnonzero(view.number_column("chunk_index") == 0)[:OPENINGS_READ]
        for content, heading in view.read_texts(view.labels[first].tolist()).values():
            found |= long_name_initials(f"{heading}\n{content}")
        # Bodies the texts name by their full names ("the European Data Protection Board"),
        # read in an even sample of the chunks: a name a corpus uses comes back often.
        sample = gate.sample_rows(len(view.labels), OPENINGS_READ)
        for content, heading in view.read_texts(view.labels[sample].tolist()).values():
            found |= proper_name_initials(f"{heading}\n{content}")
        initials = _OWN_INITIALS[view] = frozenset(found)
    return initials


def _spelled_by_store(view: ChunkView, top: np.ndarray, acronym: str) -> bool:
    """An acronym the store writes out rather than as letters: the initials of a law name
    its documents state, or of words in the top hits ("under the DPO's supervision" over
    passages on the "data protection officer"). A wrong refusal costs more than a near
    miss answered: a hit's words spelling another law's acronym only lets a near miss by."""
    if acronym.upper() in _own_initials(view):
        return True
    labels = view.labels[top].tolist()
    return any(spelled_out(acronym, f"{heading}\n{content}")
               for content, heading in view.texts_of(labels))


def _phrase_count(store: Store, phrase: str, most: int, *, corrected: bool = True) -> int:
    """Passages holding ``phrase`` as written (at most ``most`` counted), its typos
    corrected as the search corrects them ("GPDR" is the GDPR) unless ``corrected`` is
    False."""
    words = apply_corrections(phrase, typo_corrections(store, phrase)) if corrected else phrase
    # Inside quotes a phrase is searched as written: no typo fallback.
    return min(most, store._text_index.count('"' + words.replace('"', " ") + '"'))


def _gate_part(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The rows the gate compares the query with: whole, or a joined vector's first part."""
    return normalize_rows(vectors[:, :dims]) if dims else vectors


# The sampled passages' vectors, gathered once per view: a fresh gather copies 512 rows
# (0.8 MB at 384 dims) on every query.
_SAMPLES: weakref.WeakKeyDictionary[ChunkView, np.ndarray] = weakref.WeakKeyDictionary()


def _sample_matrix(view: ChunkView, dims: int = 0) -> np.ndarray:
    matrix = _SAMPLES.get(view)
    if matrix is None:
        sample = view.vectors[gate.sample_rows(len(view.vectors))]
        matrix = _SAMPLES[view] = np.ascontiguousarray(_gate_part(sample, dims))
    return matrix


# Chunks whose analyzed words are kept per store (a top hit comes back for many queries).
HIT_TOKEN_CACHE_SIZE = 4096


def _hit_tokens(store: Store, view: ChunkView, position: int) -> frozenset[str]:
    """Every token the text index makes of one chunk (title, heading path, content)."""
    record = view.record(position)
    label = int(view.labels[position])
    cache = store.hit_token_cache
    tokens = cache.get(label)
    if tokens is None:
        text = " ".join(part for part in (record.title, record.heading_path, record.content) if part)
        tokens = frozenset(store._text_index.text_tokens(text))
        if len(cache) >= HIT_TOKEN_CACHE_SIZE:
            cache.pop(next(iter(cache)))  # oldest first: dicts keep insertion order
        cache[label] = tokens
    return tokens


def _terms(store: Store, queries: Sequence[str], language: str | None) -> list[gate.QueryTerm]:
    """Content words of the user's own query (its rewrites are the engine's words, not the
    user's: they must not make a query look covered)."""
    terms = store._text_index.query_terms(queries[0])
    # Question words ("when", "must", "doit") are not what a question asks about: the same
    # list the quotes and highlights skip, beyond the index's own stop words. A question in a
    # language the index has no stop words for loses its function words too: "wie", "muss",
    # "ich", in no English passage, counted as the rarest words the question asked for.
    other = function_words(language)
    kept = set(content_terms([t.word for t in terms if t.word not in other]))
    return gate.one_term_per_word([t for t in terms if t.word in kept])
