"""Export a store into Postgres / Supabase (canonical schema, pgvector, hybrid_search).

    export_postgres(store, dsn, ...)   load into a live database (one transaction)
    write_sql(store, path, ...)        a self-contained .sql file for ``psql -f``

Options (keywords, or ``options=ExportOptions(...)``): schema, table_prefix, with_rls,
index ("hnsw" | "ivfflat"), hnsw_m, hnsw_ef_construction, ivfflat_lists, batch_rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .options import INDEX_METHODS, ExportOptions

if TYPE_CHECKING:
    from .pg_load import export_postgres
    from .report import ExportReport
    from .sql_file import write_sql

# psycopg and rich load with the first export, not with every `enginelib` command.
_LAZY = {"export_postgres": ".pg_load", "ExportReport": ".report", "write_sql": ".sql_file"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["INDEX_METHODS", "ExportOptions", "ExportReport", "export_postgres", "write_sql"]
