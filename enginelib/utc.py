"""The catalog's one convention for times: naive UTC (DuckDB ``TIMESTAMP``, no zone)."""

from __future__ import annotations

from datetime import UTC, datetime


def naive_utc(moment: datetime) -> datetime:
    """``moment`` as the catalog keeps times: one with an offset converted to UTC, then made
    naive; a naive one is already UTC and stays as it is.

    An aware value handed to DuckDB as it is becomes a ``TIMESTAMPTZ``, and comparing or
    storing it against a ``TIMESTAMP`` goes through the session's zone (the process's
    ``TZ``): hours off on any server not set to UTC. A moment whose UTC falls past the ends
    of ``datetime`` (``9999-12-31T23:00-05:00``) becomes the nearest end, which orders the
    same against every time the catalog can hold.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        return moment.replace(tzinfo=None)
    try:
        return moment.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:
        return datetime.max if moment.year > 1 else datetime.min
