"""Catalog statements of the named search presets (the spec's ``search_config`` table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .catalog import Catalog

_SELECT = (
    "SELECT name, fusion, rrf_k, vector_weight, text_weight, min_score, description "
    "FROM search_config ORDER BY name"
)
_UPSERT = (
    "INSERT INTO search_config (name, fusion, rrf_k, vector_weight, text_weight, min_score, "
    "description) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
    "fusion = excluded.fusion, rrf_k = excluded.rrf_k, vector_weight = excluded.vector_weight, "
    "text_weight = excluded.text_weight, min_score = excluded.min_score, "
    "description = excluded.description"
)


def preset_rows(catalog: Catalog) -> list[tuple[Any, ...]]:
    """(name, fusion, rrf_k, vector_weight, text_weight, min_score, description), by name."""
    return catalog.con.execute(_SELECT).fetchall()


def upsert_preset(catalog: Catalog, values: Sequence[Any]) -> None:
    """Insert or replace one preset (inside the caller's transaction), values in that order."""
    catalog.con.execute(_UPSERT, list(values))
