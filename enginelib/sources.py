"""Sources and their authority (tier, evidence level, score), used by the authority boosts."""

from __future__ import annotations

from typing import Any

from .catalog import Catalog, utcnow
from .catalog_documents import SOURCE_COLUMNS, upsert_source_row
from .errors import InvalidInputError
from .validation import MAX_ID_CHARS, check_bool, check_float, check_text

TIERS = ("gold", "silver", "bronze")
_FIELDS = SOURCE_COLUMNS
_TEXT_FIELDS = ("name", "evidence_level", "institution")


def check_source_fields(fields: dict[str, Any]) -> None:
    """Each field as its column takes it (None: cleared, or the default). A wrong type went on
    to DuckDB (``peer_reviewed=[1]``: a binder error) or to ``float()`` (``"abc"``: a bare
    ValueError), or was stored as something else (``peer_reviewed="yes"`` as true)."""
    unknown = set(fields) - set(_FIELDS)
    if unknown:
        raise InvalidInputError(f"unknown source field(s) {sorted(unknown)}; expected {list(_FIELDS)}")
    for name in _TEXT_FIELDS:
        if fields.get(name) is not None:
            check_text(f"source {name}", fields[name], max_chars=MAX_ID_CHARS)
    tier = fields.get("tier")
    if tier is not None and (not isinstance(tier, str) or tier not in TIERS):
        raise InvalidInputError(f"source tier {tier!r} is not one of {list(TIERS)}")
    if fields.get("authority_score") is not None:
        check_float("source authority_score", fields["authority_score"], minimum=0, maximum=100)
    if fields.get("peer_reviewed") is not None:
        check_bool("source peer_reviewed", fields["peer_reviewed"])


def upsert_source(catalog: Catalog, source_id: str, **fields: Any) -> None:
    """Register a source, or change only the named fields of one already registered."""
    check_source_fields(fields)
    with catalog.transaction():
        upsert_source_row(catalog, source_id, fields, utcnow())
        # A new generation so that cached chunk views pick up the new authority values.
        catalog.bump_generation()
