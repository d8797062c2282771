"""The answerability gate: answer or refuse a query from what both retrieval methods saw.

Three pieces of evidence, each in 0..1, computed by small pure functions:

- ``semantic``: the best top hit's cosine, calibrated per embedder. Cosines are not
  comparable across models (multilingual-e5 puts unrelated text at ~0.75-0.8, MiniLM at
  ~0.1), so a known embedder's cosine goes through its own measured levels, one pair for
  a query in the hit's language and one across languages (e5's cross-lingual cosines sit
  ~0.04 lower for the same relevance). An unknown embedder is judged by how far its best
  cosine stands above the query's cosines to a fixed sample of the store's passages
  (a z-score: what "unrelated" looks like for this query, model and corpus).
- ``coverage``: the IDF-weighted share of the query's content words (stop words of the
  configured languages removed) found in the top hits. A word the index has never seen
  counts with the highest IDF, so "bouillabaisse recipe" against a law corpus has low
  coverage even when "recipe"-like words are found.
- ``agreement``: the share of the vector method's top hits that BM25 also ranks in its
  top hits (and the reverse), i.e. whether the two methods point at the same passages.

Decision: ``score = max(semantic, coverage_evidence, combined)`` where the combined
term rewards moderate semantic and lexical evidence that the two methods agree on.
A query is answered when ``score >= threshold``, unless it names laws (or other sources)
and no passage mentions any of them (``NAMED_SOURCE_ABSENT``, named_sources.py): "What are
the penalties under the Digital Services Act?" shares every word with the GDPR's penalty
articles, and is still not a question the GDPR answers; one asked in the store's own terms
("Is an AI safety component covered by the Machinery Regulation high-risk?" over the AI Act,
which cites that law by number) asks what the store says of it and is weighed as any other
(``own_terms``). The constants were chosen on the train
split of our regulatory question sets (``benchmarks/questions``, in-domain and off-domain,
EN / FR / EN over FR) with ``benchmarks/regulatory_eval.py``; ``benchmarks/RESULTS.md``
reports the held-out (test split) rates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

Decision = Literal["answer", "refuse"]

# Reason codes: stable strings a program can switch on.
ANSWERED = "ANSWERED"
NO_MATCH = "NO_MATCH"  # no chunk matched at all (the filters, or the page asked, left none)
ONLY_STOP_WORDS = "ONLY_STOP_WORDS"  # nothing left to match once stop words are removed
WEAK_EVIDENCE = "WEAK_EVIDENCE"  # hits exist, but neither method found enough support
BELOW_THRESHOLD = "BELOW_THRESHOLD"  # the caller's explicit threshold was not reached
NAMED_SOURCE_ABSENT = "NAMED_SOURCE_ABSENT"  # the query names a law no passage mentions
GATE_OFF = "GATE_OFF"

DEFAULT_THRESHOLD = 0.5
TOP_N = 5  # hits whose text counts for coverage and whose best cosine counts as semantic
AGREEMENT_N = 10  # depth of each method's list compared for agreement
SAMPLE_SIZE = 512  # passages the query is compared with to see what "unrelated" scores

# Per-embedder cosine levels (semantic evidence 0 at the first, full at the second), chosen on
# the train split of our question sets (benchmarks/RESULTS.md): same language as the hit, and
# across languages, where a multilingual model's cosines sit lower for the same relevance.
# Any other embedder is judged by the z-score of its best cosine against sampled passages.
COSINE_LEVELS: dict[str, dict[str, tuple[float, float]]] = {
    "e5-small": {"same": (0.785, 0.88), "cross": (0.77, 0.81)},
}
COSINE_LEVELS["multilingual-e5-small"] = COSINE_LEVELS["e5-small"]
FALLBACK_Z_LEVELS = (1.5, 4.0)
# Coverage maps to evidence linearly between these shares of IDF mass.
COVERAGE_LEVELS = (0.5, 1.0)
# The combined term: semantic and coverage evidence averaged, scaled by agreement.
COMBINED_WEIGHT = 1.0


@dataclass(frozen=True)
class QueryTerm:
    """A content word of the query, its BM25 IDF in the index, and the index tokens that
    stand for it (its stems per language, or the code as typed)."""

    word: str
    idf: float
    tokens: frozenset[str]


@dataclass(frozen=True)
class GateEvidence:
    similarity: float | None = None  # best cosine among the top hits
    similarity_z: float | None = None  # that cosine as a z-score against sampled passages
    semantic: float | None = None  # 0..1, calibrated for the embedder
    coverage: float | None = None  # IDF-weighted share of content words in the top hits
    agreement: float | None = None  # 0..1 overlap of the two methods' top lists
    cross_lingual: bool = False  # the query's language differs from the best hit's
    content_words: tuple[str, ...] = ()
    missing_words: tuple[str, ...] = ()
    named_sources: tuple[str, ...] = ()  # laws the query names (named_sources.py)
    absent_sources: tuple[str, ...] = ()  # those of them no passage mentions
    # the first of the query's phrases that is one of the store's own terms
    # (named_sources.question_phrases): asked in it, a question on a law the store only
    # cites is still the store's
    own_terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateDecision:
    decision: Decision
    reason_code: str
    score: float
    threshold: float | None
    evidence: GateEvidence = field(default_factory=GateEvidence)
    message: str = ""

    @property
    def answerable(self) -> bool:
        return self.decision == "answer"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = {
            k: (round(v, 4) if isinstance(v, float) else list(v) if isinstance(v, tuple) else v)
            for k, v in data["evidence"].items()
        }
        data["score"] = round(self.score, 4)
        return data


# -- evidence: pure functions ---------------------------------------------------------


def bm25_idf(doc_freq: int, num_docs: int) -> float:
    """BM25's IDF, ``ln(1 + (N - df + 0.5) / (df + 0.5))``; df = 0 gives the maximum."""
    n = max(int(num_docs), 0)
    df = min(max(int(doc_freq), 0), n)
    return math.log1p((n - df + 0.5) / (df + 0.5))


_WORD_PARTS = re.compile(r"[-'’]")


def one_term_per_word(terms: Sequence[QueryTerm]) -> list[QueryTerm]:
    """``terms`` with each query word weighed once. The text index makes a hyphenated word
    ("African-American", "l'effacement") a code term *and* its parts; counting both weighs
    the word two or three times and demands the hyphenated spelling in the hits, so a
    passage saying "African Americans" missed most of the query. A compound goes when each
    of its parts is another term or a word too short to index; its parts carry it."""
    words = {t.word for t in terms}
    kept = []
    for term in terms:
        parts = [p for p in _WORD_PARTS.split(term.word) if p]
        carried = len(parts) > 1 and any(p in words for p in parts) and all(
            p in words or len(p) == 1 for p in parts)
        if not carried:
            kept.append(term)
    return kept


def coverage(terms: Sequence[QueryTerm], hit_tokens: set[str]) -> tuple[float | None, tuple[str, ...]]:
    """IDF-weighted share of ``terms`` with a token among ``hit_tokens``, and the missing
    words. None when there is no content word to weigh."""
    total = sum(t.idf for t in terms)
    if not terms or total <= 0:
        return None, ()
    found = sum(t.idf for t in terms if t.tokens & hit_tokens)
    missing = tuple(t.word for t in terms if not t.tokens & hit_tokens)
    return found / total, missing


def agreement(vector_labels: Sequence[int], text_labels: Sequence[int], n: int = AGREEMENT_N) -> float | None:
    """Share of the shorter top-``n`` list found in the other; None if a method is absent."""
    a, b = list(vector_labels)[:n], list(text_labels)[:n]
    if not a or not b:
        return None
    return len(set(a) & set(b)) / min(len(a), len(b))


def similarity_z(best: float, sample_cosines: np.ndarray) -> float | None:
    """How far the best cosine sits above the query's cosines to sampled passages."""
    if sample_cosines.size < 2:
        return None
    spread = float(np.std(sample_cosines))
    if spread <= 1e-9:
        return None
    return (best - float(np.mean(sample_cosines))) / spread


def ramp(value: float, low: float, high: float) -> float:
    """0 at ``low``, 1 at ``high``, linear between and clipped."""
    if high <= low:
        return 1.0 if value >= high else 0.0
    return float(min(1.0, max(0.0, (value - low) / (high - low))))


def semantic_evidence(
    similarity: float | None, z: float | None, embedder: str, *, cross_lingual: bool = False
) -> float | None:
    """The best cosine through the embedder's calibrated levels, else its z-score."""
    levels = COSINE_LEVELS.get(embedder)
    if levels is not None and similarity is not None:
        return ramp(similarity, *levels["cross" if cross_lingual else "same"])
    if z is None:
        return None
    return ramp(z, *FALLBACK_Z_LEVELS)


def combine(evidence: GateEvidence) -> float:
    """The gate's score in 0..1 (see the module docstring)."""
    semantic = evidence.semantic
    lexical = None if evidence.coverage is None else ramp(evidence.coverage, *COVERAGE_LEVELS)
    parts = [p for p in (semantic, lexical) if p is not None]
    if not parts:
        return 0.0
    best = max(parts)
    if evidence.agreement is not None and semantic is not None and lexical is not None:
        joint = COMBINED_WEIGHT * (semantic + lexical) / 2.0 * (0.5 + evidence.agreement)
        best = max(best, min(1.0, joint))
    return float(best)


def decide(
    evidence: GateEvidence, threshold: float | None, *, explicit: bool = False,
    function_words_only: bool = False,
) -> GateDecision:
    """Answer or refuse from the evidence; ``explicit`` says the caller set the threshold,
    ``function_words_only`` that every word of the query is a stop or question word: a
    multilingual model finds *something* close to "the of and", and that is no answer."""
    score = combine(evidence)
    if threshold is None:
        return GateDecision("answer", GATE_OFF, score, None, evidence, "the gate is off")
    if not evidence.content_words and (
        function_words_only or (evidence.coverage is None and evidence.semantic is None)
    ):
        return GateDecision(
            "refuse", ONLY_STOP_WORDS, score, threshold, evidence,
            "the query has only stop words: add the words that say what you are looking for",
        )
    named, absent = evidence.named_sources, evidence.absent_sources
    if named and len(absent) == len(named) and not evidence.own_terms:
        # Whatever the words share, a question about a law the store does not hold is not
        # answered by the laws it does hold.
        return GateDecision(
            "refuse", NAMED_SOURCE_ABSENT, score, threshold, evidence,
            f"the query asks about {_listed(absent)}, which no passage of the store "
            f"mentions: ingest {'it' if len(absent) == 1 else 'them'}, or ask without the "
            f"name to search what the store holds",
        )
    if score >= threshold:
        return GateDecision("answer", ANSWERED, score, threshold, evidence)
    code = BELOW_THRESHOLD if explicit else WEAK_EVIDENCE
    return GateDecision(
        "refuse", code, score, threshold, evidence,
        f"the top hits do not support an answer: gate score {score:.2f} is below the "
        f"threshold {threshold:.2f} ({describe(evidence)})",
    )


def _listed(names: tuple[str, ...], most: int = 3) -> str:
    """"'A'", "'A' and 'B'", "'A', 'B' and 'C' (+2 more)", each name cut to be read."""
    shown = [f"'{shown_words((name,), 1)}'" for name in names[:most]]
    text = shown[-1] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    more = len(names) - len(shown)
    return text + (f" (+{more} more)" if more > 0 else "")


def describe(evidence: GateEvidence) -> str:
    parts = []
    if evidence.similarity is not None:
        z = "" if evidence.similarity_z is None else f", z {evidence.similarity_z:.1f}"
        parts.append(f"best similarity {evidence.similarity:.3f}{z}")
    if evidence.coverage is not None:
        parts.append(f"{evidence.coverage:.0%} of the query's weighted words found")
    if evidence.missing_words:
        parts.append("missing: " + shown_words(evidence.missing_words, 5))
    if evidence.agreement is not None:
        parts.append(f"methods agree on {evidence.agreement:.0%}")
    return "; ".join(parts) or "no evidence"


def shown_words(words: tuple[str, ...] | list[str], most: int) -> str:
    """Words for a message: at most ``most`` of them, each cut to a readable length (a
    hostile query's 3,000-character "word" would otherwise fill the terminal)."""
    shown = [w if len(w) <= _WORD_SHOWN else w[: _WORD_SHOWN - 1] + "…" for w in words[:most]]
    more = len(words) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")


_WORD_SHOWN = 40


def no_match(threshold: float | None, *, empty_store: bool = False, in_memory: bool = False,
             message: str | None = None, min_score: float | None = None) -> GateDecision:
    """A refusal because nothing matched; ``message`` says what (the default: the query,
    and the ``min_score`` every candidate had to reach, where one was asked).
    ``in_memory``: the store is an in-memory one, which no command can ingest into."""
    if message is None and empty_store:
        how = ("store.ingest_documents(...) or store.ingest_path(PATH)" if in_memory
               else "`enginelib ingest PATH`")
        message = f"the store holds no documents yet: ingest some first ({how})"
    elif message is None and min_score is not None:
        # "no chunk matched the query" sent the user to reword a query whose chunks matched
        # and fell below their own cut
        message = (f"no chunk matched the query with a fused score of at least min_score "
                   f"{min_score:g} (asked, or set by the preset): lower it, or search without it")
    elif message is None:
        message = "no chunk matched the query"
    return GateDecision("refuse", NO_MATCH, 0.0, threshold, GateEvidence(), message)


# -- gathering the evidence for one query ---------------------------------------------


def sample_rows(count: int, size: int = SAMPLE_SIZE) -> np.ndarray:
    """Evenly spaced row positions: deterministic, so a query always sees the same sample."""
    if count <= size:
        return np.arange(count)
    return np.linspace(0, count - 1, size).astype(np.int64)


def gather(
    *,
    embedder: str,
    query_terms: Sequence[QueryTerm],
    hit_tokens: set[str],
    top_cosines: np.ndarray | None,
    sample_cosines: np.ndarray | None,
    vector_labels: Sequence[int],
    text_labels: Sequence[int],
    cross_lingual: bool = False,
    named_sources: Sequence[str] = (),
    absent_sources: Sequence[str] = (),
    own_terms: Sequence[str] = (),
) -> GateEvidence:
    best = z = semantic = None
    if top_cosines is not None and top_cosines.size:
        best = float(np.max(top_cosines))
        if sample_cosines is not None:
            z = similarity_z(best, sample_cosines)
        semantic = semantic_evidence(best, z, embedder, cross_lingual=cross_lingual)
    cov, missing = coverage(query_terms, hit_tokens)
    return GateEvidence(
        similarity=best,
        similarity_z=z,
        semantic=semantic,
        coverage=cov,
        agreement=agreement(vector_labels, text_labels),
        cross_lingual=cross_lingual,
        content_words=tuple(t.word for t in query_terms),
        missing_words=missing,
        named_sources=tuple(named_sources),
        absent_sources=tuple(absent_sources),
        own_terms=tuple(own_terms),
    )


def same_language(query_language: str, hit_language: str | None) -> bool:
    """Languages compared on their ISO 639-1 prefix; an unknown hit language counts as same."""
    if not hit_language:
        return True
    return query_language.split("-")[0].lower() == hit_language.split("-")[0].lower()
