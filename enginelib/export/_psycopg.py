"""psycopg for the exporter, or a MissingExtraError naming the extra that installs it.

psycopg is not in the base install (only the Postgres export uses it): every export module
imports it from here, so a missing package reads as one actionable error, not a traceback.
"""

from __future__ import annotations

from ..errors import MissingExtraError

try:
    import psycopg
    from psycopg import sql
except ImportError as exc:  # absent, or present without a libpq wrapper (psycopg[binary])
    raise MissingExtraError("the Postgres export", "psycopg", "postgres") from exc

__all__ = ["psycopg", "sql"]
