"""Export a store into Postgres / Supabase (canonical schema, pgvector, hybrid_search).

    export_postgres(store, dsn, ...)   load into a live database (one transaction)
    write_sql(store, path, ...)        a self-contained .sql file for ``psql -f``

    verify_postgres(store, dsn, queries)   top-k overlap with the engine, filter mismatches

Options (keywords, or ``options=ExportOptions(...)``): schema (default "enginelib"),
table_prefix, tenant_claim, shared_rows, public_read, extension_schema,
maintenance_work_mem, parallel_workers, index ("hnsw" | "ivfflat"), hnsw_m,
hnsw_ef_construction, ivfflat_lists, batch_rows. Row level security is always on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .options import INDEX_METHODS, ExportOptions

if TYPE_CHECKING:
    from .pg_load import export_postgres
    from .report import ExportReport
    from .sql_file import write_sql
    from .verify import ParityReport, verify_postgres

# psycopg and rich load with the first export, not with every `enginelib` command.
_LAZY = {"export_postgres": ".pg_load", "ExportReport": ".report", "write_sql": ".sql_file",
         "ParityReport": ".verify", "verify_postgres": ".verify"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["INDEX_METHODS", "ExportOptions", "ExportReport", "ParityReport", "export_postgres",
           "verify_postgres", "write_sql"]
