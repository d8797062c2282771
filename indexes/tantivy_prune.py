"""Exact BM25 top k of a plain query without scoring every matching posting.

Why: tantivy-py's ``Searcher.search`` always wraps ``TopDocs`` in a ``MultiCollector``
(to offer ``count``), and tantivy only prunes (block-max WAND) for a bare top-score
collector, so every posting of every query term is scored: a query of four common words
over a million chunks reads millions of postings (7 ms at 1M, ``benchmarks/RESULTS.md``).

How (MaxScore, done with tantivy's own queries): a plain query is a flat disjunction of
term clauses. Each clause ``t`` can add at most ``ub(t) = boost * (1 + K1) * idf(t)`` to a
document (BM25's term frequency part is below 1). Split the clauses by document frequency
into the rare "essential" ones E and the rest: a document that contains no E term scores
at most ``sum(ub(t) for t not in E)``. So search only the documents that contain an E term,
each scored by every clause (clauses outside E are intersected with those documents); if
the k-th best score there, the whole tie at it included, beats that bound, no document
outside can enter the top k and the answer is exact. Otherwise E grows; when E would read
about as many postings as the full query, the caller runs the full query.

Scores are tantivy's own (same term weights, computed from the whole searcher's statistics);
only the order in which a document's clause scores are added may differ, as it already does
between tantivy's own scorers (float rounding, far below any real score gap).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

K1 = 1.2  # tantivy's BM25 constant (tantivy/src/query/bm25.rs)
# The bound is computed in float64 while tantivy scores in float32 (and sums a document's
# clause scores in an order that varies): a margin far above that rounding keeps it an
# upper bound.
_MARGIN = 1e-4
# Below this many postings the full query is already cheap (about 1 ms per 250k postings):
# pruning would only add its second search.
MIN_POSTINGS = 200_000
# Give up pruning (run the full query) once the essential clauses hold this share of the
# query's postings: the intersections would then cost about what the full scan costs.
MAX_ESSENTIAL_SHARE = 0.35
# Candidates fetched by the essential clauses beyond k: room for documents that a common
# word lifts past one that only has the rare ones.
CANDIDATE_MARGIN = 100

_CLAUSE = re.compile(
    r'\(Should, (?:Boost\(query=)?TermQuery\(Term\(field=(\d+), type=Str, "((?:[^"\\]|\\.)*)"\)\)'
    r"(?:, boost=([0-9.eE+-]+)\))?\)"
)
_PLAIN = re.compile(r"^Query\(BooleanQuery \{ subqueries: \[(.*)\], minimum_number_should_match: 1 \}\)$",
                    re.DOTALL)


@dataclass(frozen=True)
class Clause:
    field: str
    token: str
    boost: float


def plain_clauses(query: tantivy.Query, field_names: Sequence[str]) -> list[Clause] | None:
    """The term clauses of a flat ``should`` disjunction of term queries (what a plain
    words query parses to), or None for anything else (phrases, required or excluded
    terms, ranges...), which the caller searches as it is.

    Read from the query's debug form: the python binding exposes no other view of a parsed
    query. Anything that does not match exactly returns None, never a wrong clause list.
    """
    match = _PLAIN.match(repr(query))
    if match is None:
        return None
    body = match.group(1)
    clauses: list[Clause] = []
    end = 0
    for found in _CLAUSE.finditer(body):
        gap = body[end:found.start()]
        if gap.strip(", "):
            return None  # something between two term clauses: not a flat disjunction
        end = found.end()
        field_id, token, boost = int(found.group(1)), found.group(2), found.group(3)
        if field_id >= len(field_names) or "\\" in token:
            return None  # escaped characters: leave such rare tokens to the full query
        clauses.append(Clause(field_names[field_id], token, float(boost) if boost else 1.0))
    if body[end:].strip(", ") or not clauses:
        return None
    return clauses


def total_docs(index_dir: Path) -> int | None:
    """tantivy's BM25 ``N``: every document slot of every segment, deleted ones included
    (``max_doc``), from ``meta.json``. Read before the searcher reloads, it can only be
    at least the searcher's own (merges in between only purge deleted slots)."""
    try:
        meta = json.loads((index_dir / "meta.json").read_text("utf-8"))
        return sum(int(segment["max_doc"]) for segment in meta["segments"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _upper_bound(df: int, boost: float, num_docs: int) -> float:
    idf = math.log(1.0 + (num_docs - df + 0.5) / (df + 0.5))
    return boost * (1.0 + K1) * idf


Hits = list[tuple[float, tantivy.DocAddress]]


def top_k(
    searcher: tantivy.Searcher,
    schema: tantivy.Schema,
    query: tantivy.Query,
    clauses: Sequence[Clause],
    k: int,
    num_docs: int,
    label_field: str,
) -> Hits | None:
    """Hits holding the exact top ``k`` of ``query`` (whose clauses are ``clauses``) and
    every document tied with the k-th score, or None when pruning cannot prove it cheaply
    (run the full query then)."""
    weighted = []
    for clause in clauses:
        df = int(searcher.doc_freq(clause.field, clause.token))
        if df > 0:  # a term no document holds adds nothing to any score
            weighted.append((df, _upper_bound(df, clause.boost, num_docs), clause))
    postings = sum(df for df, _, _ in weighted)
    if postings < MIN_POSTINGS or len(weighted) < 2:
        return None
    weighted.sort(key=lambda item: item[0])
    limit = max(2 * k, k + CANDIDATE_MARGIN)
    essential_postings = 0
    for split in range(1, len(weighted)):
        essential_postings += weighted[split - 1][0]
        if essential_postings > MAX_ESSENTIAL_SHARE * postings:
            return None
        if essential_postings < k:
            continue  # fewer candidates than k: documents outside are needed
        outside = sum(ub for _, ub, _ in weighted[split:])
        essential = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, _term(schema, clause)) for _, _, clause in weighted[:split]])
        first = searcher.search(essential, limit=limit, count=False).hits
        # A document not fetched scores at most what the other clauses could add, plus,
        # when the fetch stopped at its limit, the last essential score fetched.
        bound = outside + (first[-1][0] if len(first) == limit else 0.0)
        bound = bound * (1.0 + _MARGIN) + _MARGIN
        labels = [int(label) for label in  # type: ignore[arg-type]
                  searcher.fast_field_values(label_field, [address for _, address in first])]
        hits = _rescore(searcher, schema, query, labels, label_field)
        if len(hits) >= k and hits[k - 1][0] > bound:
            return hits
    return None


def _term(schema: tantivy.Schema, clause: Clause) -> tantivy.Query:
    query = tantivy.Query.term_query(schema, clause.field, clause.token, index_option="freq")
    return query if clause.boost == 1.0 else tantivy.Query.boost_query(query, clause.boost)


def _rescore(searcher: tantivy.Searcher, schema: tantivy.Schema, query: tantivy.Query,
             labels: Sequence[int], label_field: str) -> Hits:
    """The full query's own scores of the documents with these labels, best first."""
    only = tantivy.Query.const_score_query(
        tantivy.Query.term_set_query(schema, label_field, list(labels)), 0.0)
    restricted = tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, query), (tantivy.Occur.Must, only)])
    return searcher.search(restricted, limit=len(labels), count=False).hits
