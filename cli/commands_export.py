"""`enginelib export postgres`: a store into Postgres / Supabase, live or as a .sql file."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from enginelib.export.options import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    INDEX_METHODS,
    SOURCE_PATH_MODES,
    ExportOptions,
)
from enginelib.export.queries import parse_filter, read_queries, sample_queries

from .options import (
    GivenPath,
    Integer,
    emit_json,
    handle_errors,
    json_option,
    open_store,
    store_option,
)

if TYPE_CHECKING:
    from enginelib.export import ExportReport


@click.group("export")
def export() -> None:
    """Export the store to another system (Postgres / Supabase)."""


@export.command("postgres")
@store_option
@click.option("--dsn", default=None,
              help="Load into this database (postgresql://...), in one transaction.")
@click.option("--sql-file", type=GivenPath(dir_okay=False, path_type=Path), default=None,
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
@click.option("--hnsw-m", type=Integer(), default=HNSW_M, show_default=True, help="HNSW graph degree.")
@click.option("--hnsw-ef-construction", type=Integer(), default=HNSW_EF_CONSTRUCTION, show_default=True,
              help="HNSW build-time candidate list size.")
@click.option("--source-paths", type=click.Choice(SOURCE_PATH_MODES), default="relative",
              show_default=True,
              help="documents.source_path/file_path as every reader sees them: relative to the "
                   "folder holding all the files, absolute (shows this machine's folders), "
                   "or none.")
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@json_option
@handle_errors
def postgres(
    store_path: Path, dsn: str | None, sql_file: Path | None, schema: str, table_prefix: str,
    tenant_claim: str, shared_rows: bool, public_read: bool, extension_schema: str,
    maintenance_work_mem: str, with_rls: bool, index: str, hnsw_m: int,
    hnsw_ef_construction: int, source_paths: str, no_progress: bool, as_json: bool,
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
        hnsw_m=hnsw_m, hnsw_ef_construction=hnsw_ef_construction, source_paths=source_paths,
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
        if changes.get("unchanged"):
            return f"{counts} in Postgres ({where}) are already this store's state: nothing written"
        return (
            f"exported {counts} to Postgres ({where}); "
            f"written {changes.get('documents_written', 0)} documents and "
            f"{changes.get('chunks_written', 0)} chunks, deleted "
            f"{changes.get('documents_deleted', 0)} documents and "
            f"{changes.get('chunks_deleted', 0)} chunks"
        )
    # quoted for a shell, so the hint can be pasted whatever the file is called
    command = f"psql -f {shlex.quote(str(report.target))} \"$DATABASE_URL\""
    return f"wrote {counts} to {report.target} ({where}); load it with: {command}"


@export.command("verify")
@store_option
@click.option("--dsn", required=True, help="The database the store was exported into.")
@click.option("--schema", default="enginelib", show_default=True, help="Schema of the export.")
@click.option("--table-prefix", default="", help="Table prefix of the export.")
@click.option("--queries", "queries_path", type=GivenPath(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Queries: one per line, or BEIR queries.jsonl (its \"text\" field).")
@click.option("--sample", type=Integer(1, 100_000), default=50, show_default=True,
              help="How many queries to run (from --queries, else chunk openings of the store).")
@click.option("--filter", "extra_filters", multiple=True,
              help="A filter (JSON object) to add to the matrix built from the store's values.")
@json_option
@handle_errors
def verify(
    store_path: Path, dsn: str, schema: str, table_prefix: str, queries_path: Path | None,
    sample: int, extra_filters: tuple[str, ...], as_json: bool,
) -> None:
    """Run the same queries on the store and on its export: top-10 overlap per strategy
    (vector, fulltext, hybrid) and the chunks each filter of a matrix lets through."""
    options = ExportOptions(schema=schema, table_prefix=table_prefix)
    with open_store(store_path, read_only=True) as store:
        queries = read_queries(queries_path, sample) if queries_path else sample_queries(store, sample)
        from enginelib.export.verify import filter_matrix, verify_postgres  # psycopg loads here

        matrix = filter_matrix(store) + [parse_filter(text) for text in extra_filters]
        report = verify_postgres(store, dsn, queries, options=options, filters=matrix)
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"{report.queries} queries, top-{report.k} overlap with the engine (exact vector search):")
    for strategy, value in report.overlap.items():
        click.echo(f"  {strategy:<9} mean {value:.3f}  min {report.minimum[strategy]:.2f}  "
                   f"identical {report.identical[strategy]}/{report.queries}")
    click.echo(f"filters: {report.filters_checked} checked, {len(report.filter_mismatches)} mismatches")
    for mismatch in report.filter_mismatches:
        click.echo(f"  {json.dumps(mismatch, ensure_ascii=False)}")
