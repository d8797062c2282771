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
from .catalog_documents import authority_rows, document_rows, update_document_row
from .errors import InvalidInputError
from .ingest import LIFTED_KEYS, latest_version
from .types import validate_truth_level
from .validation import (
    MAX_ID_CHARS,
    MAX_LIST_OFFSET,
    MAX_LISTED,
    as_str_tuple,
    check_int,
    check_metadata,
    check_text,
)

# What a document list can be narrowed by: list_documents' arguments, `enginelib list`'s
# options and serve's /api/documents parameters.
LIST_FILTERS = ("truth_levels", "domain", "source_type", "tag", "prefix", "limit", "offset")
# The truth level stands in for a tier where a document has no registered source.
TIER_OF_LEVEL = {"L1": "gold", "L2": "silver", "L3": "bronze", "L4": "bronze"}


def list_documents(
    catalog: Catalog, *, truth_levels: Sequence[str] | None = None, domain: str | None = None,
    source_type: str | None = None, tag: str | None = None, prefix: str | None = None,
    limit: int = 1000, offset: int = 0,
) -> list[dict[str, Any]]:
    limit = check_int("limit", limit, minimum=1, maximum=MAX_LISTED)
    offset = check_int("offset", offset, minimum=0, maximum=MAX_LIST_OFFSET)
    if isinstance(truth_levels, str):  # "L1,L2" as the CLI and a query string write it
        truth_levels = [level for level in truth_levels.split(",") if level.strip()]
    levels = [validate_truth_level(level) for level in truth_levels] if truth_levels else None
    for name, value in (("domain", domain), ("source_type", source_type), ("tag", tag),
                        ("prefix", prefix)):
        if value is not None:
            check_text(name, value, max_chars=MAX_ID_CHARS)
    like = None
    if prefix:
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = document_rows(catalog, [
        levels, levels, domain, domain, source_type, source_type, tag, tag, like, like,
        limit, offset,
    ])
    for row in rows:
        row["tier"] = row["tier"] or TIER_OF_LEVEL[row["truth_level"]]
    return rows


def update_metadata(
    catalog: Catalog, document_id: str, *, truth_level: str | None = None,
    tags: Sequence[str] | None = None, metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Set a document's truth level, tags and/or custom fields (merged); bumps its patch
    version and the catalog generation when something changes (an update to the values the
    document has is a no-op). Returns the document."""
    fields = check_metadata(metadata) if metadata is not None else {}
    # as at ingest, a metadata key that names a column sets the column; the two this call
    # changes are taken from it, the others are fixed at ingest (never a custom field that
    # shadows the column and changes nothing)
    for key, value in (("truth_level", truth_level), ("tags", tags)):
        if key in fields:
            if value is not None:
                raise InvalidInputError(f"{key} given twice (as {key}= and in metadata)")
            if key == "truth_level":
                truth_level = fields.pop(key)
            else:
                tags = fields.pop(key)
    fixed = sorted(set(fields) & set(LIFTED_KEYS))
    if fixed:
        raise InvalidInputError(
            f"metadata {fixed} set document columns at ingest: ingest the document again to "
            "change them; an update changes the truth level, tags and custom fields")
    if truth_level is None and tags is None and not fields:
        raise InvalidInputError("nothing to update: give a truth level, tags or metadata")
    doc = catalog.require_document(document_id)
    level = validate_truth_level(truth_level) if truth_level is not None else doc["truth_level"]
    old_tags = list(doc["tags"] or [])
    new_tags = list(as_str_tuple(tags, "tags")) if tags is not None else old_tags
    custom = dict(doc.get("custom") or {})
    moved = sorted(key for key, value in fields.items() if key not in custom or custom[key] != value)
    custom.update(fields)
    changed = [f"truth level {doc['truth_level']} -> {level}"] if level != doc["truth_level"] else []
    changed += ["tags"] if new_tags != old_tags else []
    changed += [f"metadata {', '.join(moved)}"] if moved else []
    if not changed:  # as an unchanged re-ingest: no new version, nothing committed
        return doc
    with catalog.transaction():
        generation = catalog.bump_generation()
        # the version a citation taken before this update names stays readable (history,
        # version_text), as it does across a content change
        catalog.archive_document(
            document_id, "updated: " + ("; ".join(changed) or "nothing changed"), generation)
        update_document_row(catalog, [
            level, new_tags, json.dumps(custom, default=str), _bump_patch(latest_version(
                [doc["version"], *catalog.archived_versions([document_id]).get(document_id, [])])),
            utcnow(), generation, document_id,
        ])
    return catalog.require_document(document_id)


def _bump_patch(version: str) -> str:
    try:
        major, minor, patch = (int(x) for x in version.split("."))
    except ValueError:
        return version
    return f"{major}.{minor}.{patch + 1}"


def authority_of(catalog: Catalog, document_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """document_id -> tier (or the truth level's stand-in), evidence level, authority score."""
    if not document_ids:
        return {}
    rows = authority_rows(catalog, list(dict.fromkeys(document_ids)))
    return {
        doc_id: {"tier": tier or TIER_OF_LEVEL[level], "evidence_level": evidence,
                 "authority_score": score, "source_id": source_id}
        for doc_id, level, source_id, tier, evidence, score in rows
    }
