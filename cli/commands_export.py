"""`enginelib export postgres`: a store into Postgres / Supabase, live or as a .sql file."""

from __future__ import annotations

from pathlib import Path

import click

from enginelib.export import INDEX_METHODS, ExportOptions, ExportReport, export_postgres, write_sql
from enginelib.export.options import HNSW_EF_CONSTRUCTION, HNSW_M

from .options import emit_json, handle_errors, json_option, open_store, store_option


@click.group("export")
def export() -> None:
    """Export the store to another system (Postgres / Supabase)."""


@export.command("postgres")
@store_option
@click.option("--dsn", default=None,
              help="Load into this database (postgresql://...), in one transaction.")
@click.option("--sql-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a self-contained .sql file for `psql -f` instead.")
@click.option("--schema", default="enginelib", show_default=True,
              help="Target schema (created if missing); its own, so nothing clashes with public.")
@click.option("--table-prefix", default="", help="Prefix for every table, index and function name.")
@click.option("--tenant-claim", default="tenant_id", show_default=True,
              help="JWT claim (dotted path for nested claims) holding the caller's tenant.")
@click.option("--shared-rows/--no-shared-rows", default=True, show_default=True,
              help="Rows without a tenant are readable by every tenant (or by none).")
@click.option("--public-read", is_flag=True, help="Let Supabase's anon role read (default: no access).")
@click.option("--extension-schema", default="extensions", show_default=True,
              help="Schema for pgvector/pg_trgm when they are not installed yet.")
@click.option("--maintenance-work-mem", default="1GB", show_default=True,
              help="maintenance_work_mem for this export's index builds only.")
@click.option("--with-rls", is_flag=True, hidden=True,
              help="Kept for old scripts: row level security is always on now.")
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
    tenant_claim: str, shared_rows: bool, public_read: bool, extension_schema: str,
    maintenance_work_mem: str, with_rls: bool, index: str, hnsw_m: int,
    hnsw_ef_construction: int, no_progress: bool, as_json: bool,
) -> None:
    """Mirror the store into Postgres + pgvector with hybrid_search() and match_chunks().

    Give exactly one of --dsn or --sql-file. Re-exporting replaces changed documents and
    removes deleted ones; an interrupted load leaves the previous export intact.
    """
    if (dsn is None) == (sql_file is None):
        raise click.UsageError("give exactly one of --dsn or --sql-file")
    options = ExportOptions(
        schema=schema, table_prefix=table_prefix, tenant_claim=tenant_claim,
        shared_rows=shared_rows, public_read=public_read, extension_schema=extension_schema,
        maintenance_work_mem=maintenance_work_mem, index=index,
        hnsw_m=hnsw_m, hnsw_ef_construction=hnsw_ef_construction,
    )
    progress = not no_progress and not as_json
    with open_store(store_path, read_only=True) as store:
        if sql_file is not None:
            report = write_sql(store, sql_file, options=options, progress=progress)
        else:
            assert dsn is not None
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
        if changes.get("unchanged"):
            return f"{counts} in Postgres ({where}) are already this store's state: nothing written"
        return (
            f"exported {counts} to Postgres ({where}); "
            f"written {changes.get('documents_written', 0)} documents and "
            f"{changes.get('chunks_written', 0)} chunks, deleted "
            f"{changes.get('documents_deleted', 0)} documents and "
            f"{changes.get('chunks_deleted', 0)} chunks"
        )
    return f"wrote {counts} to {report.target} ({where}); load it with: psql -f {report.target} \"$DATABASE_URL\""
