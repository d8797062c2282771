"""Rank fusion as small pure functions: RRF and weighted sums of normalized scores.

RRF (Cormack et al. 2009, as in the canonical spec): ``score(d) = sum_m 1 / (k + rank_m(d))``
with ranks starting at 1 and k = 60. Weighted fusion min-max normalizes each method's
scores over its returned candidates to [0, 1] and sums ``w_m * norm_m(d)``; a method that
did not return ``d`` contributes 0.

Per-method weights from evidence (``method_weights``): a method is weighed by what it
showed it saw. Across languages (the query's language is not the passages'), BM25 only
matches names and cognates, so its RRF weight becomes the IDF-weighted share of the query's
content words its best hit contains (``bm25_coverage``); in one language both methods keep
weight 1 (the canonical RRF). Chosen on the train split of our regulatory question sets
(benchmarks/RESULTS.md): English questions over French text put the right article in the
top 3 for 66.7 % of them with this weight, 63.3 % with plain RRF and 60.0 % with vectors
alone; the same weight on same-language questions cost 2 of 54 English ones, so it stays
cross-lingual.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import InvalidInputError

RRF_K = 60
# Weigh each method by its evidence in hybrid fusion (``method_weights``). A module default
# until the search request carries an option for it; benchmarks turn it off to measure
# the landed, unweighted fusion beside it in the same run.
EVIDENCE_WEIGHTING = True

Ranking = Sequence[tuple[int, float]]  # (label, score), best first

# Sibling evidence (``sibling_evidence``): in hybrid fusion a chunk of a document laid out in
# provisions (numbered paragraphs, points: chunks cut at line breaks) gains this share of
# the fused score of the best other candidate chunk of its document: an article that
# answers in two of its paragraphs is more likely the one asked for. One sibling only, so a
# document of many chunks cannot outvote a one-chunk one by its size. Never between pieces
# of prose cut by size (a SciFact abstract's halves are one passage: counting it twice cost
# SciFact 0.7153 -> 0.6964 nDCG@10, p = 0.007). RRF fusion only: on the train split of the
# regulatory question sets (benchmarks/RESULTS.md) it gained 4 of 114 questions there and
# none with weighted fusion (the keyword preset), where it lost one cross-lingual question.
# 0.05, 0.1 and 0.2 gave the same train figures; 0.1 is the middle.
SIBLING_WEIGHT = 0.1


def validate_rrf_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidInputError(f"rrf_k must be a positive integer (default {RRF_K}), got {k!r}")
    return k


def rrf(
    rankings: Mapping[str, Ranking], k: int = RRF_K, weights: Mapping[str, float] | None = None
) -> dict[int, float]:
    """``sum_m w_m / (k + rank_m(d))``; every ``w_m`` is 1 unless ``weights`` says otherwise."""
    validate_rrf_k(k)
    fused: dict[int, float] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, (label, _score) in enumerate(ranking, start=1):
            fused[label] = fused.get(label, 0.0) + weight / (k + rank)
    return fused


def method_weights(
    query_language: str, passage_language: str | None, bm25_coverage: float | None
) -> dict[str, float]:
    """Each method's weight in fusion from its evidence (see the module docstring).

    ``passage_language``: the language of the passages the query meets (the best vector
    hit's); None when unknown, read as the query's. ``bm25_coverage``: the IDF-weighted
    share (0..1) of the query's content words found in BM25's best hit; None when the
    query has no content word to weigh (BM25 then keeps its weight: nothing says it is
    noise).
    """
    weights = {"vector": 1.0, "bm25": 1.0}
    if passage_language is None or same_language(query_language, passage_language):
        return weights
    if bm25_coverage is not None:
        weights["bm25"] = min(1.0, max(0.0, float(bm25_coverage)))
    return weights


def same_language(a: str, b: str) -> bool:
    """Languages compared on their ISO 639-1 prefix ("fr-CA" is "fr")."""
    return a.split("-")[0].lower() == b.split("-")[0].lower()


def min_max(ranking: Ranking) -> dict[int, float]:
    """Scores scaled to [0, 1]; a single candidate (or all equal) maps to 1."""
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    low, high = min(scores), max(scores)
    span = high - low
    if span <= 0:
        return {label: 1.0 for label, _ in ranking}
    return {label: (score - low) / span for label, score in ranking}


def weighted(rankings: Mapping[str, Ranking], weights: Mapping[str, float]) -> dict[int, float]:
    for name, weight in weights.items():
        if weight < 0:
            raise InvalidInputError(f"fusion weight for {name!r} must be >= 0, got {weight}")
    fused: dict[int, float] = {}
    for name, ranking in rankings.items():
        weight = float(weights.get(name, 0.0))
        for label, norm in min_max(ranking).items():
            fused[label] = fused.get(label, 0.0) + weight * norm
    return fused


def order(fused: Mapping[int, float]) -> list[tuple[int, float]]:
    """Best first; ties broken by the smaller label so pages are stable."""
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def best_per_label(rankings: Sequence[Ranking]) -> list[tuple[int, float]]:
    """Merge rankings of several query rewrites: keep each label's best score."""
    best: dict[int, float] = {}
    for ranking in rankings:
        for label, score in ranking:
            if label not in best or score > best[label]:
                best[label] = score
    return order(best)


def sibling_evidence(
    scores: np.ndarray, groups: Sequence[Hashable] | np.ndarray, eligible: np.ndarray,
    weight: float = SIBLING_WEIGHT,
) -> np.ndarray:
    """``scores`` plus ``weight`` times the best score of another ``eligible`` candidate of
    the same group (document), for ``eligible`` candidates only; the others, and a
    candidate alone in its group, keep their score."""
    base = np.asarray(scores, dtype=np.float64)
    out = base.copy()
    members = np.flatnonzero(eligible)
    if weight == 0 or len(members) < 2:
        return out
    keys = np.asarray(groups)
    if keys.dtype.kind not in "iu":  # strings or objects: equal values, equal codes
        keys = np.unique(keys, return_inverse=True)[1].reshape(-1)
    # Members by group, best score first (a stable sort: equal scores keep candidate order),
    # one pass in numpy rather than a dict of lists per search.
    order = members[np.lexsort((-base[members], keys[members]))]
    grouped, ranked = keys[order], base[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    shared = sizes >= 2
    if not shared.any():
        return out
    best = np.repeat(ranked[starts], sizes)
    second = np.repeat(ranked[np.minimum(starts + 1, len(order) - 1)], sizes)
    first = np.zeros(len(order), dtype=bool)
    first[starts] = True
    gain = np.where(first, second, best)  # the best gains from the second, the rest from the best
    mine = np.repeat(shared, sizes)
    out[order[mine]] += weight * gain[mine]
    return out
