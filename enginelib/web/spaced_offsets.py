"""A date filter bound whose '+' offset a query string turned into a space, read back as '+'."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ..search.filters import DATE_FILTER_FIELDS

# A date and time, then a space, then what can only have been an offset's hours (and
# minutes): in a query string an unencoded '+' is a space (application/x-www-form-urlencoded),
# so ?filters={"created_at":{"gte":"2024-03-01T10:00:00+02:00"}} arrives as "...00 02:00".
_SPACED_OFFSET = re.compile(
    r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?) (\d{2}(?::?\d{2})?)"
)


def plus_for_space(filters: Any) -> Any:
    """``filters`` (decoded from a query string) with each date bound that is no ISO datetime
    as it came, but is one with its space read as '+', so read. A bound that parses already
    is left as it is, as is every other filter: only there can the space have been a '+'."""
    if not isinstance(filters, dict):
        return filters
    out = dict(filters)
    for field in DATE_FILTER_FIELDS:
        bounds = out.get(field)
        if isinstance(bounds, dict):
            out[field] = {op: _bound(raw) for op, raw in bounds.items()}
    return out


def _bound(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        datetime.fromisoformat(raw)
        return raw
    except ValueError:
        pass
    match = _SPACED_OFFSET.fullmatch(raw)
    return f"{match.group(1)}+{match.group(2)}" if match else raw
