"""Documents as a list (with their sources' authority) and metadata edits without re-embedding.

Kept apart from ingestion: changing a truth level, tags or custom fields touches one
documents row and bumps the generation (so chunk views and filters follow), never the
chunks, their vectors or the text index.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .catalog import Catalog, utcnow
from .errors import InvalidInputError
from .types import validate_truth_level

# Per document with its source's authority; word count from the stored text.
LIST_SQL = """
SELECT d.document_id, d.title, d.truth_level, d.version, d.total_chunks, d.domain,
       d.source_type, d.source_path, d.source_url, d.source_id, d.tags, d.ingested_at,
       d.updated_at, len(regexp_split_to_array(trim(d.content), '\\s+')) AS word_count,
       s.tier, s.evidence_level, s.authority_score, s.institution
FROM documents d LEFT JOIN sources s ON s.source_id = d.source_id
WHERE (?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], d.truth_level))
  AND (? IS NULL OR d.domain = ?)
  AND (? IS NULL OR d.source_type = ?)
  AND (? IS NULL OR list_contains(d.tags, ?))
  AND (? IS NULL OR d.document_id LIKE ? ESCAPE '\\')
ORDER BY d.document_id
LIMIT ? OFFSET ?
"""

UPDATE_SQL = (
    "UPDATE documents SET truth_level = ?, tags = ?, custom = ?, version = ?, updated_at = ?, "
    "generation = ? WHERE document_id = ?"
)

# The truth level stands in for a tier where a document has no registered source.
TIER_OF_LEVEL = {"L1": "gold", "L2": "silver", "L3": "bronze", "L4": "bronze"}


def list_documents(
    catalog: Catalog, *, truth_levels: Sequence[str] | None = None, domain: str | None = None,
    source_type: str | None = None, tag: str | None = None, prefix: str | None = None,
    limit: int = 1000, offset: int = 0,
) -> list[dict[str, Any]]:
    if limit < 1 or offset < 0:
        raise InvalidInputError(f"limit must be >= 1 and offset >= 0, got {limit}, {offset}")
    levels = [validate_truth_level(level) for level in truth_levels] if truth_levels else None
    like = None
    if prefix:
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    cursor = catalog.con.execute(LIST_SQL, [
        levels, levels, domain, domain, source_type, source_type, tag, tag, like, like,
        limit, offset,
    ])
    names = [d[0] for d in cursor.description or ()]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        row["tier"] = row["tier"] or TIER_OF_LEVEL[row["truth_level"]]
    return rows


def update_metadata(
    catalog: Catalog, document_id: str, *, truth_level: str | None = None,
    tags: Sequence[str] | None = None, metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Set a document's truth level, tags and/or custom fields (merged); bumps its patch
    version and the catalog generation. Returns the updated document."""
    if truth_level is None and tags is None and not metadata:
        raise InvalidInputError("nothing to update: give a truth level, tags or metadata")
    doc = catalog.require_document(document_id)
    level = validate_truth_level(truth_level) if truth_level is not None else doc["truth_level"]
    new_tags = list(tags) if tags is not None else list(doc["tags"] or [])
    custom = dict(doc.get("custom") or {})
    custom.update(metadata or {})
    with catalog.transaction():
        generation = catalog.bump_generation()
        catalog.con.execute(UPDATE_SQL, [
            level, new_tags, json.dumps(custom, default=str), _bump_patch(doc["version"]),
            utcnow(), generation, document_id,
        ])
    return catalog.require_document(document_id)


def _bump_patch(version: str) -> str:
    try:
        major, minor, patch = (int(x) for x in version.split("."))
    except ValueError:
        return version
    return f"{major}.{minor}.{patch + 1}"


AUTHORITY_SQL = """
SELECT d.document_id, d.truth_level, d.source_id, s.tier, s.evidence_level, s.authority_score
FROM documents d LEFT JOIN sources s ON s.source_id = d.source_id
WHERE d.document_id IN (SELECT unnest(?::VARCHAR[]))
"""


def authority_of(catalog: Catalog, document_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """document_id -> tier (or the truth level's stand-in), evidence level, authority score."""
    if not document_ids:
        return {}
    rows = catalog.con.execute(AUTHORITY_SQL, [list(dict.fromkeys(document_ids))]).fetchall()
    return {
        doc_id: {"tier": tier or TIER_OF_LEVEL[level], "evidence_level": evidence,
                 "authority_score": score, "source_id": source_id}
        for doc_id, level, source_id, tier, evidence, score in rows
    }
