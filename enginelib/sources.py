"""Sources and their authority (tier, evidence level, score), used by the authority boosts."""

from __future__ import annotations

from typing import Any

from .catalog import Catalog, utcnow
from .catalog_documents import upsert_source_row
from .errors import InvalidInputError

TIERS = ("gold", "silver", "bronze")
_FIELDS = ("name", "tier", "evidence_level", "authority_score", "institution", "peer_reviewed")


def upsert_source(catalog: Catalog, source_id: str, **fields: Any) -> None:
    unknown = set(fields) - set(_FIELDS)
    if unknown:
        raise InvalidInputError(f"unknown source field(s) {sorted(unknown)}; expected {list(_FIELDS)}")
    tier = fields.get("tier")
    if tier is not None and tier not in TIERS:
        raise InvalidInputError(f"source tier {tier!r} is not one of {list(TIERS)}")
    score = fields.get("authority_score")
    if score is not None and not 0 <= float(score) <= 100:
        raise InvalidInputError(f"authority_score {score!r} must be within 0..100")
    values = [source_id] + [fields.get(name) for name in _FIELDS] + [utcnow()]
    with catalog.transaction():
        upsert_source_row(catalog, values)
        # A new generation so that cached chunk views pick up the new authority values.
        catalog.bump_generation()
