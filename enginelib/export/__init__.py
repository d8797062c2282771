"""Export a store into Postgres / Supabase (canonical schema, pgvector, hybrid_search).

    export_postgres(store, dsn, ...)   load into a live database (one transaction)
    write_sql(store, path, ...)        a self-contained .sql file for ``psql -f``

Options (keywords, or ``options=ExportOptions(...)``): schema, table_prefix, with_rls,
index ("hnsw" | "ivfflat"), hnsw_m, hnsw_ef_construction, ivfflat_lists, batch_rows.
"""

from __future__ import annotations

from .options import INDEX_METHODS, ExportOptions
from .pg_load import export_postgres
from .report import ExportReport
from .sql_file import write_sql

__all__ = ["INDEX_METHODS", "ExportOptions", "ExportReport", "export_postgres", "write_sql"]
