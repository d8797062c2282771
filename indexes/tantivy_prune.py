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

Scores are tantivy's own, bit for bit: the same term weights (from the whole searcher's
statistics), added in the same order (see ``_candidates_top_k``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import tantivy

K1 = 1.2  # tantivy's BM25 constant (tantivy/src/query/bm25.rs)
# The bound is computed in float64 while tantivy scores in float32 (and sums a document's
# clause scores in an order that varies): a margin far above that rounding keeps it an
# upper bound.
_MARGIN = 1e-4
# Below this many postings the full query is already cheap (about 1 ms per 250k postings):
# pruning would only add its second search.
MIN_POSTINGS = 200_000
# Cost model, in postings scanned by the full query: an essential document costs a seek
# into every other term's postings, each about SEEK_COST scanned postings (measured at 1M:
# ~25 ns a seek, ~5 ns a scanned posting). Pruning is tried while its attempts together are
# predicted below MAX_PRUNE_COST of the full scan: a failed attempt is paid on top of it.
SEEK_COST = 5.0
MAX_PRUNE_COST = 0.5
# Where documents have about the same length, many share a score, and a tie often crosses
# the k-th place: fetch this many times k at once (see with_ties).
TIE_ROOM = 4

_CLAUSE = re.compile(
    r'\(Should, (?:Boost\(query=)?TermQuery\(Term\(field=(\d+), type=Str, "((?:[^"\\]|\\.)*)"\)\)'
    r"(?:, boost=([0-9.eE+-]+)\))?\)"
)
_DOCS_IN_EXPLANATION = re.compile(
    r'"value": ([0-9.eE+-]+),\s*"description": "N, total number of docs"')
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


def _upper_bound(df: int, boost: float, num_docs: int) -> float:
    idf = math.log(1.0 + (num_docs - df + 0.5) / (df + 0.5))
    return boost * (1.0 + K1) * idf


Hits = list[tuple[float, tantivy.DocAddress]]


def top_k(
    searcher: tantivy.Searcher,
    schema: tantivy.Schema,
    clauses: Sequence[Clause],
    k: int,
) -> Hits | None:
    """Hits holding the exact top ``k`` of the disjunction of ``clauses`` and every
    document tied with the k-th score, or None when pruning cannot prove it cheaply (run
    the full query then)."""
    kept = _kept(searcher, clauses)
    postings = sum(df for _, df in kept)
    if postings < MIN_POSTINGS or len(kept) < 2:
        return None
    terms = [_term(schema, clause) for clause, _ in kept]
    rarest_first = sorted(range(len(kept)), key=lambda i: kept[i][1])
    essential: list[int] = []
    essential_postings = 0
    spent = 0.0
    for i in rarest_first[:-1]:
        essential.append(i)
        essential_postings += kept[i][1]
        if essential_postings < k:
            continue  # fewer candidates than k: documents outside are needed
        spent += essential_postings * (1.0 + SEEK_COST * (len(kept) - len(essential)))
        if spent > MAX_PRUNE_COST * postings:
            return None
        query, hits = _candidates_top_k(searcher, terms, set(essential), k)
        if len(hits) < k:
            continue
        num_docs = _bm25_docs(searcher, query, hits[0][1])
        if num_docs is None:
            return None
        outside = sum(_upper_bound(df, clause.boost, num_docs)
                      for j, (clause, df) in enumerate(kept) if j not in essential)
        if hits[k - 1][0] > outside * (1.0 + _MARGIN) + _MARGIN:
            return hits
    return None


def postings(searcher: tantivy.Searcher, clauses: Sequence[Clause]) -> int:
    """The postings ``top_k`` weighs against ``MIN_POSTINGS`` (0 when fewer than two of the
    terms are held: it never prunes those). A caller that keeps a parsed query for this
    searcher's vocabulary keeps this with it and skips ``top_k`` (and its doc_freq calls)
    below ``MIN_POSTINGS``."""
    kept = _kept(searcher, clauses)
    return sum(df for _, df in kept) if len(kept) >= 2 else 0


def _kept(searcher: tantivy.Searcher, clauses: Sequence[Clause]) -> list[tuple[Clause, int]]:
    """The clauses with their document frequency; a term no document holds adds nothing
    to any score: left out."""
    found = [(clause, int(searcher.doc_freq(clause.field, clause.token))) for clause in clauses]
    return [(clause, df) for clause, df in found if df > 0]


def _bm25_docs(searcher: tantivy.Searcher, query: tantivy.Query,
               address: tantivy.DocAddress) -> int | None:
    """tantivy's BM25 ``N`` in this searcher (every document slot of every segment,
    deleted ones included), read from the explanation of one hit: the binding exposes it
    nowhere else, and it is then exactly the searcher's own, whatever reloads happened."""
    found = _DOCS_IN_EXPLANATION.findall(query.explain(searcher, address).to_json())
    if not found:
        return None
    # Written as a float32: exact below 2**24, within a few units above.
    return int(max(float(value) for value in found) * (1.0 + 1e-6)) + 1


def _term(schema: tantivy.Schema, clause: Clause) -> tantivy.Query:
    query = tantivy.Query.term_query(schema, clause.field, clause.token, index_option="freq")
    return query if clause.boost == 1.0 else tantivy.Query.boost_query(query, clause.boost)


def _candidates_top_k(searcher: tantivy.Searcher, terms: Sequence[tantivy.Query],
                      essential: set[int], k: int) -> tuple[tantivy.Query, Hits]:
    """Top k, and the whole tie at the k-th score, of the documents holding an essential
    term, each scored by every term.

    The clauses stay in the query's order (an essential term as it is, any other one
    intersected with the essential documents, adding 0 for them): tantivy then adds a
    document's clause scores in the same order as for the full query, and the scores are
    bit for bit the full query's (checked on 1M chunks, ``benchmarks/RESULTS.md``).
    """
    should, must = tantivy.Occur.Should, tantivy.Occur.Must
    holds_one = tantivy.Query.const_score_query(
        tantivy.Query.boolean_query([(should, terms[i]) for i in sorted(essential)]), 0.0)
    query = tantivy.Query.boolean_query([
        (should, term) if i in essential
        else (should, tantivy.Query.boolean_query([(must, term), (must, holds_one)]))
        for i, term in enumerate(terms)
    ])
    return query, with_ties(searcher, query, k)


def with_ties(searcher: tantivy.Searcher, query: tantivy.Query, k: int) -> Hits:
    """The top ``k`` hits and every hit tied with the k-th score (tantivy breaks ties on
    the document address, the contract on the label: the caller sorts the tie).

    Fetches until the k-th score is strictly beaten. The first fetch already goes past k
    (``TIE_ROOM``): a wider top costs little beside the scan, a second search costs the
    scan again.
    """
    limit = TIE_ROOM * k + 1
    while True:
        hits = searcher.search(query, limit=limit, count=False).hits
        if len(hits) < limit or hits[-1][0] < hits[k - 1][0]:
            cut = hits[k - 1][0] if len(hits) >= k else -math.inf
            return [hit for hit in hits if hit[0] >= cut]
        limit *= 4
