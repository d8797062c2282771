"""Rank fusion as small pure functions: RRF and weighted sums of normalized scores.

RRF (Cormack et al. 2009, as in the canonical spec): ``score(d) = sum_m 1 / (k + rank_m(d))``
with ranks starting at 1 and k = 60. Weighted fusion min-max normalizes each method's
scores over its returned candidates to [0, 1] and sums ``w_m * norm_m(d)``; a method that
did not return ``d`` contributes 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import InvalidInputError

RRF_K = 60

Ranking = Sequence[tuple[int, float]]  # (label, score), best first


def validate_rrf_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidInputError(f"rrf_k must be a positive integer (default {RRF_K}), got {k!r}")
    return k


def rrf(rankings: Mapping[str, Ranking], k: int = RRF_K) -> dict[int, float]:
    validate_rrf_k(k)
    fused: dict[int, float] = {}
    for ranking in rankings.values():
        for rank, (label, _score) in enumerate(ranking, start=1):
            fused[label] = fused.get(label, 0.0) + 1.0 / (k + rank)
    return fused


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
