"""`enginelib export postgres`: a store into Postgres / Supabase, live or as a .sql file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from enginelib.export.options import HNSW_EF_CONSTRUCTION, HNSW_M, INDEX_METHODS, ExportOptions

from .options import emit_json, handle_errors, json_option, open_store, store_option

if TYPE_CHECKING:
    from enginelib.export import ExportReport


@click.group("export")
def export() -> None:
    """Export the store to another system (Postgres / Supabase)."""


@export.command("postgres")
@store_option
@click.option("--dsn", default=None,
              help="Load into this database (postgresql://...), in one transaction.")
@click.option("--sql-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a self-contained .sql file for `psql -f` instead.")
@click.option("--schema", default="public", show_default=True, help="Target schema (created if missing).")
@click.option("--table-prefix", default="", help="Prefix for every table, index and function name.")
@click.option("--with-rls", is_flag=True, help="Tenant isolation policies on tenant_id (app.tenant_id).")
@click.option("--index", "index", type=click.Choice(INDEX_METHODS), default="hnsw", show_default=True,
              help="Vector index method.")
@click.option("--hnsw-m", type=int, default=HNSW_M, show_default=True, help="HNSW graph degree.")
@click.option("--hnsw-ef-construction", type=int, default=HNSW_EF_CONSTRUCTION, show_default=True,
              help="HNSW build-time candidate list size.")
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@json_option
@handle_errors
def postgres(
    store_path: Path, dsn: str | None, sql_file: Path | None, schema: str, table_prefix: str,
    with_rls: bool, index: str, hnsw_m: int, hnsw_ef_construction: int, no_progress: bool,
    as_json: bool,
) -> None:
    """Mirror the store into Postgres + pgvector with hybrid_search() and match_chunks().

    Give exactly one of --dsn or --sql-file. Re-exporting replaces changed documents and
    removes deleted ones; an interrupted load leaves the previous export intact.
    """
    if (dsn is None) == (sql_file is None):
        raise click.UsageError("give exactly one of --dsn or --sql-file")
    options = ExportOptions(
        schema=schema, table_prefix=table_prefix, with_rls=with_rls, index=index,
        hnsw_m=hnsw_m, hnsw_ef_construction=hnsw_ef_construction,
    )
    progress = not no_progress and not as_json
    with open_store(store_path, read_only=True) as store:
        if sql_file is not None:
            from enginelib.export import write_sql  # psycopg and rich load here, not at start

            report = write_sql(store, sql_file, options=options, progress=progress)
        else:
            assert dsn is not None
            from enginelib.export import export_postgres

            report = export_postgres(store, dsn, options=options, progress=progress)
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(_summary(report))


def _summary(report: ExportReport) -> str:
    where = f"schema {report.schema}" + (f", prefix {report.table_prefix}" if report.table_prefix else "")
    counts = (
        f"{report.documents} documents, {report.chunks} chunks, {report.versions} archived "
        f"versions, {report.sources} sources"
    )
    if report.target == "postgres":
        changes = report.changes
        return (
            f"exported {counts} to Postgres ({where}); "
            f"written {changes.get('documents_written', 0)} documents and "
            f"{changes.get('chunks_written', 0)} chunks, deleted "
            f"{changes.get('documents_deleted', 0)} documents and "
            f"{changes.get('chunks_deleted', 0)} chunks"
        )
    return f"wrote {counts} to {report.target} ({where}); load it with: psql -f {report.target} \"$DATABASE_URL\""
