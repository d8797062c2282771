"""Job times as JSON text: ISO 8601 with the UTC offset said (the catalog keeps naive UTC)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def utc_iso(moment: datetime) -> str:
    """``2026-11-26T23:50:00.123456+00:00``: a bare time was read as local time by whoever
    parsed it (JavaScript's Date, Python's fromisoformat), hours off."""
    aware = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return aware.isoformat()


def with_utc_times(row: Mapping[str, Any]) -> dict[str, Any]:
    """A job (or sources) row for JSON, its times as ``utc_iso`` text; the rest as it is."""
    return {key: utc_iso(value) if isinstance(value, datetime) else value
            for key, value in row.items()}
