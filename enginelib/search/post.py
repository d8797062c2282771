"""Post-fusion steps as pure functions: authority boosts, MMR, per-source cap.

Boosts are additive on the fused score scaled to [0, 1] (``fused / max fused`` over the
candidates), so "+0.15 for a gold source" means the same thing under RRF and weighted
fusion: gold +0.15, silver +0.05, evidence level meta-analysis or RCT +0.10, peer reviewed
+0.05, authority score >= 85 +0.05.

MMR (Carbonell & Goldstein 1998): pick ``argmax  lambda * rel(d) - (1 - lambda) * max_s sim(d, s)``
over the candidates not yet selected, with rel the scaled score and sim the cosine.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InvalidInputError

TIER_BOOST = {"gold": 0.15, "silver": 0.05}
EVIDENCE_BOOST = {"meta-analysis": 0.10, "meta_analysis": 0.10, "rct": 0.10}
PEER_REVIEWED_BOOST = 0.05
QUALITY_BOOST = 0.05
QUALITY_THRESHOLD = 85.0
MMR_LAMBDA = 0.7
PER_SOURCE_CAP = 2


def authority_boost(
    tier: str | None, evidence_level: str | None, peer_reviewed: bool | None,
    authority_score: float | None,
) -> float:
    boost = TIER_BOOST.get((tier or "").lower(), 0.0)
    boost += EVIDENCE_BOOST.get((evidence_level or "").lower(), 0.0)
    if peer_reviewed:
        boost += PEER_REVIEWED_BOOST
    if authority_score is not None and authority_score >= QUALITY_THRESHOLD:
        boost += QUALITY_BOOST
    return boost


def scale(scores: np.ndarray) -> np.ndarray:
    """Scores divided by their maximum (all-zero stays zero)."""
    if scores.size == 0:
        return scores
    top = float(scores.max())
    return scores / top if top > 0 else np.zeros_like(scores)


def mmr(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float = MMR_LAMBDA) -> list[int]:
    """Indices into the candidates, in MMR order, at most ``k`` of them."""
    if not 0.0 <= lam <= 1.0:
        raise InvalidInputError(f"MMR lambda must be within 0..1, got {lam}")
    n = len(relevance)
    if n == 0 or k <= 0:
        return []
    similarity = vectors @ vectors.T
    selected: list[int] = []
    remaining = np.ones(n, dtype=bool)
    max_sim = np.full(n, -np.inf)
    for _ in range(min(k, n)):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        objective = lam * relevance - (1.0 - lam) * redundancy
        objective[~remaining] = -np.inf
        pick = int(np.argmax(objective))
        selected.append(pick)
        remaining[pick] = False
        max_sim = np.maximum(max_sim, similarity[pick])
    return selected


def cap_per_source(sources: Sequence[str], cap: int) -> list[int]:
    """Indices kept, in order, with at most ``cap`` per source."""
    if cap <= 0:
        raise InvalidInputError(f"per-source cap must be >= 1, got {cap}")
    seen: dict[str, int] = {}
    kept = []
    for i, source in enumerate(sources):
        if seen.get(source, 0) < cap:
            kept.append(i)
            seen[source] = seen.get(source, 0) + 1
    return kept
