"""The catalog's one convention for times: naive UTC (DuckDB ``TIMESTAMP``, no zone); the
files' one: ISO 8601 in UTC with the offset written (``+00:00``); and the names': the UTC
month."""

from __future__ import annotations

from datetime import UTC, date, datetime


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


def utc_stamp(timespec: str = "seconds") -> str:
    """Now as the manifest and snapshot files record it: UTC, its offset said. Before, they
    wrote ``datetime.now()``, the server's local clock with no zone: which instant an old
    stamp names depends on where it was written."""
    return datetime.now(UTC).isoformat(timespec=timespec)


def utc_today() -> date:
    """Today in UTC: the month ``YYYY.MM.patch`` names (index versions, snapshot names) say.
    It was ``date.today()``, the server's local date: for the hours around a month's end on a
    server in New York or Kiritimati, a snapshot was named for another month than its
    ``created_at`` (UTC) says."""
    return datetime.now(UTC).date()


def stamp_instant(stamp: str) -> datetime:
    """The instant a file's stamp names, aware, for ordering stamps old and new together: one
    with an offset as it says; a naive one, as files written before ``utc_stamp`` have, was
    this machine's local time. One that does not parse is older than every other (it sorts
    first, as its text would be compared meaningless anyway)."""
    try:
        moment = datetime.fromisoformat(stamp)
        return moment.astimezone(UTC)  # naive: read in the local zone, as it was written
    except (ValueError, TypeError, OverflowError):
        return datetime.min.replace(tzinfo=UTC)
