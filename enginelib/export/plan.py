"""The export as an ordered list of steps, run by pg_load or written out by sql_file.

Both outputs run the same steps in one transaction:

1. guards, extensions, tables (IF NOT EXISTS), functions, archive trigger;
2. the store's rows COPY'd into temporary staging tables;
3. apply: upsert sources; insert the store's archived versions; delete documents the
   store no longer has (their chunks cascade, the trigger archives them); upsert
   documents (the trigger archives the old row when content changed); delete every
   chunk whose id the store no longer has; upsert chunks. Chunk ids are the store's
   labels, which are never reused, so a replaced document's old chunks are exactly the
   ids that disappeared: no zombie survives, and unchanged rows are not rewritten;
4. indexes (built in bulk on a first load, with this session's maintenance_work_mem and
   parallel workers), BM25 statistics, RLS, grants, and a row in ``exports``.

Nothing is visible to other sessions before COMMIT, and a load killed at any point
leaves the previous export as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ._psycopg import sql
from .options import ExportOptions
from .pg_functions import INTERNAL_FUNCTIONS, function_statements, signatures
from .pg_schema import (
    DOCUMENT_COLUMNS,
    EXPORT_COLUMNS,
    SOURCE_COLUMNS,
    VERSION_COLUMNS,
    Column,
    Names,
    SqlText,
    chunk_columns,
    columns_sql,
    extension_statements,
    guard_statements,
    index_statements,
    table_statements,
)
from .pg_security import grant_statements, rls_statements
from .pg_text_stats import qualified_ts_config, text_stats_statements, ts_config_statements
from .rows import CatalogReader, Row

# Bumped when the exported SQL changes, so a re-export of an unchanged store still
# rewrites functions and policies made by an older version.
SCHEMA_FORMAT = 4


@dataclass(frozen=True)
class Statement:
    """One SQL statement; ``name`` marks those whose row count goes into the report."""

    sql: SqlText
    name: str | None = None


@dataclass(frozen=True)
class Copy:
    """COPY rows into ``table`` (a staging table) from the store."""

    table: sql.Composable
    columns: tuple[Column, ...]
    rows: Callable[[], Iterator[Row]]
    what: str  # progress label and report key
    total: int


Step = Statement | Copy

# Session settings for the export transaction only (SET LOCAL ends with it).
PRELUDE = (
    "SET LOCAL client_min_messages = warning",
    # Naive catalog timestamps are written with an explicit +00; this only fixes how
    # trigger-made timestamps print in psql's output.
    "SET LOCAL TimeZone = 'UTC'",
)


def _stage(name: str) -> sql.Identifier:
    # Temporary tables live in pg_temp, which is searched first: no schema, no clash.
    return sql.Identifier(f"enginelib_stage_{name}")


def _stage_table(names: Names, name: str) -> sql.Composed:
    # LIKE copies columns and NOT NULL but not the generated expression (fts stays empty).
    return sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP").format(
        _stage(name), names.table(name)
    )


def _upsert(names: Names, name: str, columns: tuple[Column, ...], key: tuple[str, ...]) -> sql.Composed:
    target = names.table(name)
    cols = columns_sql(columns)
    keys = sql.SQL(", ").join(sql.Identifier(k) for k in key)
    others = [c for c, _, _ in columns if c not in key]
    assignments = sql.SQL(", ").join(
        sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in others
    )
    # A row comparison finds each column's = by name through the search_path, which holds
    # pg_catalog only: vectors (NOT NULL) are compared apart, with pgvector's qualified <>.
    plain = [c for c, _, kind in columns if c not in key and kind != "vector"]
    vectors = [c for c, _, kind in columns if c not in key and kind == "vector"]
    current = sql.SQL(", ").join(sql.SQL("{}.{}").format(target, sql.Identifier(c)) for c in plain)
    incoming = sql.SQL(", ").join(sql.SQL("EXCLUDED.{}").format(sql.Identifier(c)) for c in plain)
    changed: list[sql.Composable] = [sql.SQL("({}) IS DISTINCT FROM ({})").format(current, incoming)]
    changed += [sql.SQL("{}.{} {} EXCLUDED.{}").format(target, sql.Identifier(c), names.op("<>"),
                                                      sql.Identifier(c)) for c in vectors]
    return sql.SQL(
        "INSERT INTO {target} ({cols}) SELECT {cols} FROM {stage} "
        "ON CONFLICT ({keys}) DO UPDATE SET {assignments} "
        # An unchanged row is not rewritten (no dead tuple, no trigger, no index churn).
        "WHERE {changed}"
    ).format(target=target, cols=cols, stage=_stage(name), keys=keys, assignments=assignments,
             changed=sql.SQL(" OR ").join(changed))


def _delete_missing(names: Names, name: str, key: str) -> sql.Composed:
    return sql.SQL(
        "DELETE FROM {target} t WHERE NOT EXISTS (SELECT 1 FROM {stage} s WHERE s.{key} = t.{key})"
    ).format(target=names.table(name), stage=_stage(name), key=sql.Identifier(key))


def settings_key(options: ExportOptions, ext: str) -> str:
    """What besides the store decides the exported SQL: a re-export is a no-op only when
    the store and this are unchanged."""
    fields = dict(sorted(vars(options).items()))
    fields.pop("batch_rows", None)  # how rows travel, not what is exported
    fields.update(format=SCHEMA_FORMAT, extension_schema=ext)
    return ";".join(f"{k}={v}" for k, v in fields.items())


def _with_own_ts_config(names: Names, reader: CatalogReader) -> Iterator[Row]:
    # Chunk rows end with (ts_config, text_length, codes); the config becomes the export's own.
    configs: dict[str, str] = {}
    for row in reader.chunks():
        config = row[-3]
        if config not in configs:
            configs[config] = qualified_ts_config(names, config)
        yield (*row[:-3], configs[config], *row[-2:])


def build_plan(reader: CatalogReader, options: ExportOptions, ext: str | None = None) -> list[Step]:
    """The export's steps; ``ext``: the schema pgvector lives in (default: the option's)."""
    names = Names.of(options, ext)
    meta = reader.meta
    dim = meta.embedding_dim
    chunks = chunk_columns(dim, names.vector.as_string())
    versions, documents = names.table("document_versions"), names.table("documents")
    steps: list[Step] = [Statement(sql.SQL(s)) for s in PRELUDE]
    steps += [
        Statement(sql.SQL("SELECT pg_catalog.set_config('maintenance_work_mem', {}, true)").format(
            sql.Literal(options.maintenance_work_mem))),
        Statement(sql.SQL("SELECT pg_catalog.set_config('max_parallel_maintenance_workers', {}, true)").format(
            sql.Literal(str(options.parallel_workers)))),
    ]
    # pg_catalog alone: the export runs as a powerful role, and a function or operator that
    # whoever may CREATE in the extension schema put there (cardinality(text[]) matches
    # closer than pg_catalog's anyarray one) would otherwise run with its rights. Every
    # pgvector name is qualified; staging tables live in pg_temp, searched first anyway.
    steps.append(Statement(sql.SQL("SELECT pg_catalog.set_config('search_path', 'pg_catalog', true)")))
    steps += [Statement(s) for s in guard_statements(names, dim)]
    steps += [Statement(s) for s in extension_statements(names)]
    steps += [Statement(s) for s in table_statements(names, dim)]
    steps += [Statement(s) for s in ts_config_statements(names)]
    # One exporter at a time per target; readers are not blocked by this lock mode.
    steps.append(Statement(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(documents)))
    steps += [Statement(s) for s in function_statements(names, options, dim)]

    staged = (
        ("sources", SOURCE_COLUMNS, reader.sources, meta.sources),
        ("document_versions", VERSION_COLUMNS, reader.versions, meta.versions),
        ("documents", DOCUMENT_COLUMNS, lambda: reader.documents(options.source_paths),
         meta.documents),
        ("chunks", chunks, lambda: _with_own_ts_config(names, reader), meta.chunks),
    )
    for name, columns, rows, total in staged:
        steps.append(Statement(_stage_table(names, name)))
        steps.append(Copy(_stage(name), columns, rows, name, total))
        steps.append(Statement(sql.SQL("ANALYZE {}").format(_stage(name))))

    steps += [
        Statement(_upsert(names, "sources", SOURCE_COLUMNS, ("source_id",)), "sources_written"),
        # A version keeps what it was; only its tenant, which exports before format 3 did
        # not carry (and RLS now reads), is filled in.
        Statement(sql.SQL(
            "INSERT INTO {versions} ({cols}) SELECT {cols} FROM {stage} "
            "ON CONFLICT (document_id, version) DO UPDATE SET tenant_id = EXCLUDED.tenant_id "
            "WHERE {versions}.tenant_id IS DISTINCT FROM EXCLUDED.tenant_id"
        ).format(versions=versions, cols=columns_sql(VERSION_COLUMNS),
                 stage=_stage("document_versions")), "versions_written"),
        Statement(_delete_missing(names, "documents", "document_id"), "documents_deleted"),
        Statement(_upsert(names, "documents", DOCUMENT_COLUMNS, ("document_id",)), "documents_written"),
        Statement(_delete_missing(names, "chunks", "id"), "chunks_deleted"),
        Statement(_upsert(names, "chunks", chunks, ("id",)), "chunks_written"),
    ]
    steps += [Statement(s) for s in index_statements(names, options, meta.chunks)]
    steps += [Statement(s) for s in text_stats_statements(names)]
    steps += [Statement(s) for s in rls_statements(names, options)]
    steps += [Statement(s) for s in grant_statements(names, options, signatures(names), INTERNAL_FUNCTIONS)]

    from importlib.metadata import PackageNotFoundError, version

    try:
        engine_version = version("enginelib")
    except PackageNotFoundError:  # running from a source tree
        engine_version = None
    export_row: Row = (
        meta.path, meta.embedding_model, dim, meta.generation, meta.index_version,
        meta.documents, meta.chunks, engine_version, settings_key(options, names.ext),
    )
    steps.append(Copy(names.table("exports"), EXPORT_COLUMNS, lambda: iter([export_row]), "exports", 1))
    return steps


def copy_statement(step: Copy) -> sql.Composed:
    return sql.SQL("COPY {} ({}) FROM STDIN").format(step.table, columns_sql(step.columns))
