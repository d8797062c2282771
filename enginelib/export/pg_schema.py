"""The Postgres mirror of the catalog: column specs and the DDL built from them.

Every name reaches SQL through ``psycopg.sql.Identifier`` (``Names``); nothing here runs
SQL, the loaders do. Types, constraints and index options are our own constants; the
only caller-derived values in DDL are the validated vector dimension and index options.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..indexes.analyzers import STEMMERS
from ._psycopg import sql
from .options import ExportOptions

# (column, Postgres type and constraints, COPY encoding kind). Order = COPY column order.
Column = tuple[str, str, str]
# What a cursor executes: a plain SQL literal or one composed with identifiers/values.
SqlText = sql.SQL | sql.Composed

SOURCE_COLUMNS: tuple[Column, ...] = (
    ("source_id", "text PRIMARY KEY", "text"),
    ("name", "text", "text"),
    ("tier", "text CHECK (tier IN ('gold', 'silver', 'bronze'))", "text"),
    ("evidence_level", "text", "text"),
    ("authority_score", "double precision CHECK (authority_score BETWEEN 0 AND 100)", "float"),
    ("institution", "text", "text"),
    ("peer_reviewed", "boolean NOT NULL DEFAULT false", "bool"),
    ("created_at", "timestamptz", "ts"),
)

# The catalog's DOCUMENT_COLUMNS, with ``custom`` renamed ``metadata`` (the spec's name).
DOCUMENT_COLUMNS: tuple[Column, ...] = (
    ("document_id", "text PRIMARY KEY", "text"),
    ("title", "text", "text"),
    ("content", "text NOT NULL", "text"),
    ("content_hash", "text NOT NULL", "text"),
    ("fingerprint", "text NOT NULL", "text"),
    ("source_type", "text", "text"),
    ("source_path", "text", "text"),
    ("source_url", "text", "text"),
    ("source_id", "text", "text"),
    ("truth_level", "text NOT NULL CHECK (truth_level IN ('L1', 'L2', 'L3', 'L4'))", "text"),
    ("validated_by", "text", "text"),
    ("validated_at", "timestamptz", "ts"),
    ("version", "text NOT NULL", "text"),
    ("index_version", "text NOT NULL", "text"),
    ("domain", "text", "text"),
    ("entities", "text[]", "text[]"),
    ("keywords", "text[]", "text[]"),
    ("language", "text", "text"),
    ("total_chunks", "integer NOT NULL", "int"),
    ("parent_document_id", "text", "text"),
    ("author", "text", "text"),
    ("created_at", "timestamptz", "ts"),
    ("updated_at", "timestamptz", "ts"),
    ("document_type", "text", "text"),
    ("tags", "text[]", "text[]"),
    ("file_path", "text", "text"),
    ("file_extension", "text", "text"),
    ("tenant_id", "text", "text"),
    ("metadata", "jsonb DEFAULT '{}'::jsonb", "jsonb"),
    ("pages", "jsonb", "jsonb"),
    ("retrieval_count", "bigint NOT NULL DEFAULT 0", "int"),
    ("last_retrieved_at", "timestamptz", "ts"),
    ("ingested_at", "timestamptz NOT NULL", "ts"),
    ("generation", "bigint NOT NULL", "int"),
)

# The catalog's CHUNK_COLUMNS (label -> id), then document fields copied onto each chunk:
# the generated tsvector can only read its own row, and RLS / filters avoid a join.
# ``embedding`` gets its dimension in chunk_columns().
_CHUNK_COLUMNS: tuple[Column, ...] = (
    ("id", "bigint PRIMARY KEY", "int"),
    ("document_id", "text NOT NULL", "text"),
    ("chunk_index", "integer NOT NULL", "int"),
    ("content", "text NOT NULL", "text"),
    ("heading_path", "text", "text"),
    ("start_offset", "integer NOT NULL", "int"),
    ("end_offset", "integer NOT NULL", "int"),
    ("token_count", "integer NOT NULL", "int"),
    ("page_start", "integer", "int"),
    ("page_end", "integer", "int"),
    ("content_hash", "text NOT NULL", "text"),
    ("embedding", "{vector}({dim}) NOT NULL", "vector"),
    ("retrieval_count", "bigint NOT NULL DEFAULT 0", "int"),
    ("last_retrieved_at", "timestamptz", "ts"),
    ("generation", "bigint NOT NULL", "int"),
    ("title", "text", "text"),
    ("truth_level", "text NOT NULL CHECK (truth_level IN ('L1', 'L2', 'L3', 'L4'))", "text"),
    ("language", "text", "text"),
    ("tenant_id", "text", "text"),
    ("ts_config", "regconfig NOT NULL DEFAULT 'simple'::regconfig", "text"),
    # Words in title + headings + content as the engine's BM25 counts them (its field
    # length), so the server's length normalization is the engine's.
    ("text_length", "integer NOT NULL DEFAULT 0", "int"),
    # The engine's exact "code" tokens (part numbers, 4-PBA, 2001), lowercased, repeats
    # kept: its codes field, scored by BM25 beside the words.
    ("codes", "text[] NOT NULL DEFAULT '{{}}'", "text[]"),  # braces doubled: str.format
)

VERSION_COLUMNS: tuple[Column, ...] = (
    ("document_id", "text NOT NULL", "text"),
    ("version", "text NOT NULL", "text"),
    ("index_version", "text NOT NULL", "text"),
    ("title", "text", "text"),
    ("content", "text NOT NULL", "text"),
    ("content_hash", "text NOT NULL", "text"),
    ("truth_level", "text", "text"),
    ("total_chunks", "integer", "int"),
    ("metadata", "jsonb", "jsonb"),
    ("change_summary", "text", "text"),
    ("valid_from", "timestamptz", "ts"),
    ("archived_at", "timestamptz NOT NULL DEFAULT now()", "ts"),
    ("generation", "bigint NOT NULL", "int"),
    # Whose version it was: row level security shows it to that tenant only.
    ("tenant_id", "text", "text"),
)

EXPORT_COLUMNS: tuple[Column, ...] = (
    ("store_path", "text", "text"),
    ("embedding_model", "text NOT NULL", "text"),
    ("embedding_dim", "integer NOT NULL", "int"),
    ("store_generation", "bigint NOT NULL", "int"),
    ("index_version", "text", "text"),
    ("documents", "integer NOT NULL", "int"),
    ("chunks", "integer NOT NULL", "int"),
    ("enginelib_version", "text", "text"),
    # The export options and SQL format (plan.settings_key): a re-export is a no-op only
    # when the store and these are unchanged.
    ("settings", "text", "text"),
)

# The text the generated tsvector indexes: the same three fields the Tantivy index reads.
FTS_EXPRESSION = (
    "to_tsvector(ts_config, coalesce(title, '') || ' ' || coalesce(heading_path, '') "
    "|| ' ' || content)"
)
DEFAULT_TS_CONFIG = "simple"


def ts_config(language: str | None) -> str:
    """The Postgres text-search configuration for a chunk's language ('fr' -> 'french').

    Same language table as the Tantivy stemmers; unknown languages are not stemmed.
    """
    code = (language or "").strip().lower().replace("_", "-").split("-")[0]
    if code in STEMMERS:
        return STEMMERS[code]
    return code if code in STEMMERS.values() else DEFAULT_TS_CONFIG


def chunk_columns(dim: int, vector_type: str = "vector") -> tuple[Column, ...]:
    """Chunk columns; ``vector_type`` is the schema-qualified, quoted pgvector type."""
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= 16000:
        raise ValueError(f"embedding dimension must be an int within 1..16000, got {dim!r}")
    return tuple((n, t.format(dim=dim, vector=vector_type), k) for n, t, k in _CHUNK_COLUMNS)


@dataclass(frozen=True)
class Names:
    """The one quoting helper: every table, index, function and trigger name we emit."""

    schema: str
    prefix: str
    ext: str = "extensions"  # the schema pgvector lives in

    @classmethod
    def of(cls, options: ExportOptions, ext: str | None = None) -> Names:
        return cls(options.schema, options.table_prefix, ext or options.extension_schema)

    @property
    def vector(self) -> sql.Composed:
        """pgvector's type, qualified: functions run with an empty search_path."""
        return sql.SQL("{}.vector").format(sql.Identifier(self.ext))

    def op(self, operator: str) -> sql.Composed:
        """A pgvector operator, qualified (``OPERATOR(ext.<=>)``)."""
        return sql.SQL("OPERATOR({}." + operator + ")").format(sql.Identifier(self.ext))

    def table(self, name: str) -> sql.Identifier:
        """A schema-qualified name: tables and functions."""
        return sql.Identifier(self.schema, self.prefix + name)

    def local(self, name: str) -> sql.Identifier:
        """An unqualified prefixed name: indexes, triggers, policies (they live with their table)."""
        return sql.Identifier(self.prefix + name)

    def regclass(self, name: str) -> sql.Literal:
        """The quoted qualified name as a text literal, for to_regclass() in guard blocks."""
        return sql.Literal(self.table(name).as_string())

    @property
    def schema_ident(self) -> sql.Identifier:
        return sql.Identifier(self.schema)


def columns_sql(columns: tuple[Column, ...]) -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(name) for name, _, _ in columns)


def _create_table(target: sql.Identifier, columns: tuple[Column, ...], extra: list[str]) -> sql.Composed:
    parts: list[SqlText] = [
        sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t)) for n, t, _ in columns
    ]
    parts += [sql.SQL(e) for e in extra]
    return sql.SQL("CREATE TABLE IF NOT EXISTS {} (\n  {}\n)").format(
        target, sql.SQL(",\n  ").join(parts)
    )


# Every table of an export (pg_security.ALL_TABLES lists the same, in its grant order).
TABLES: tuple[str, ...] = ("documents", "chunks", "document_versions", "sources", "exports",
                           "text_stats", "term_stats", "code_stats")


def guard_statements(names: Names, dim: int) -> list[SqlText]:
    """Refuse to touch tables we did not create, a chunks table of another dimension, or a
    pgvector installed in another schema than the one our SQL names.

    Without the first check a re-export would delete the rows of an unrelated table that
    happens to be called ``documents``; and a project's own ``sources`` or ``exports``
    (common names) beside no ``documents`` got our columns added, RLS and the export's
    grants, or failed on a staging table the user never heard of. Any table of ours that
    exists without our ``exports`` table (its columns, not just its name) is refused.
    """
    # Ours: an ``exports`` table with the columns we give it (a project may have its own).
    ours = sql.SQL(
        "(SELECT count(*) FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass({exports}) "
        "AND attname IN ('store_path', 'embedding_model', 'embedding_dim') AND NOT attisdropped) = 3"
    ).format(exports=names.regclass("exports"))
    foreign = sql.SQL(
        "\n".join(["""  IF to_regclass({}) IS NOT NULL AND NOT {ours} THEN
    RAISE EXCEPTION 'table % exists but was not created by enginelib', {}
      USING HINT = 'export into another schema (--schema) or with a --table-prefix';
  END IF;"""] * len(TABLES))
    )
    return [sql.SQL(
        """DO $guard$
BEGIN
{foreign}
  IF to_regclass({chunks}) IS NOT NULL AND (
      SELECT atttypmod FROM pg_catalog.pg_attribute
      WHERE attrelid = to_regclass({chunks}) AND attname = 'embedding') <> {dim} THEN
    RAISE EXCEPTION 'table % holds vectors of another dimension than this store (%)',
      {chunks}, {vector_type}
      USING HINT = 'export into another schema or table prefix, or drop the old tables';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension e
             JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = 'vector' AND n.nspname <> {ext}) THEN
    RAISE EXCEPTION 'pgvector is installed in schema %, not in %',
      (SELECT n.nspname FROM pg_catalog.pg_extension e
       JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'), {ext}
      USING HINT = 'write the file with --extension-schema set to the schema pgvector lives in';
  END IF;
END $guard$"""
    ).format(
        foreign=foreign.format(*[names.regclass(t) for t in TABLES for _ in range(2)], ours=ours),
        chunks=names.regclass("chunks"), dim=sql.Literal(dim), ext=sql.Literal(names.ext),
        vector_type=sql.Literal(f"vector({dim})"),
    )]


def extension_statements(names: Names) -> list[SqlText]:
    """pgvector (and pg_trgm where available) in their own schema, never ``public``."""
    ext = sql.Identifier(names.ext)
    return [
        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ext),
        sql.SQL("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA {}").format(ext),
        # pg_trgm is optional: the trigram index is created only where it exists.
        sql.SQL(
            """DO $ext$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'pg_trgm') THEN
    CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA {};
  END IF;
END $ext$"""
        ).format(ext),
    ]


# The comment a schema gets when the export creates it: only such a schema is the export's
# to take privileges away on (pg_security.grant_statements); one that was there before holds
# the project's own objects, which its roles may still need to reach.
SCHEMA_COMMENT = "created by enginelib export: its privileges are managed by the export"


def table_statements(names: Names, dim: int) -> list[SqlText]:
    return [
        sql.SQL(
            """DO $schema$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = {name}) THEN
    CREATE SCHEMA {schema};
    COMMENT ON SCHEMA {schema} IS {comment};
  END IF;
END $schema$"""
        ).format(name=sql.Literal(names.schema), schema=names.schema_ident,
                 comment=sql.Literal(SCHEMA_COMMENT)),
        _create_table(names.table("exports"), EXPORT_COLUMNS, [
            "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
            "exported_at timestamptz NOT NULL DEFAULT now()",
        ]),
        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS settings text").format(names.table("exports")),
        _create_table(names.table("sources"), SOURCE_COLUMNS, []),
        _create_table(names.table("documents"), DOCUMENT_COLUMNS, []),
        sql.SQL("CREATE TABLE IF NOT EXISTS {} (\n  {},\n  {},\n  {},\n  {}\n)").format(
            names.table("chunks"),
            sql.SQL(",\n  ").join(
                sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t))
                for n, t, _ in chunk_columns(dim, names.vector.as_string())
            ),
            # Generated from the chunk's own regconfig column: to_tsvector(regconfig, text)
            # is immutable, which a generated column requires (the text-typed form is not).
            sql.SQL("fts tsvector GENERATED ALWAYS AS (" + FTS_EXPRESSION + ") STORED"),
            sql.SQL("FOREIGN KEY (document_id) REFERENCES {} (document_id) ON DELETE CASCADE").format(
                names.table("documents")
            ),
            sql.SQL("UNIQUE (document_id, chunk_index)"),
        ),
        # Exports made before the column existed get it (0 until the rows are rewritten).
        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS text_length integer NOT NULL DEFAULT 0").format(
            names.table("chunks")
        ),
        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS codes text[] NOT NULL DEFAULT '{{}}'").format(
            names.table("chunks")
        ),
        # Versions outlive their document, so no foreign key.
        _create_table(names.table("document_versions"), VERSION_COLUMNS, [
            "PRIMARY KEY (document_id, version)",
        ]),
        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS tenant_id text").format(
            names.table("document_versions")),
        # BM25 statistics of the exported text (pg_text_stats.py fills them).
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (ts_config regconfig PRIMARY KEY, "
            "chunks bigint NOT NULL, avg_length double precision NOT NULL, "
            "avg_code_length double precision NOT NULL DEFAULT 0)"
        ).format(names.table("text_stats")),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (code text PRIMARY KEY, df integer NOT NULL)"
        ).format(names.table("code_stats")),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (ts_config regconfig NOT NULL, lexeme text NOT NULL, "
            "df integer NOT NULL, PRIMARY KEY (ts_config, lexeme))"
        ).format(names.table("term_stats")),
    ]


def index_statements(names: Names, options: ExportOptions, chunk_count: int) -> list[SqlText]:
    """Indexes, created after the data so a first load builds them in bulk."""
    chunks, documents = names.table("chunks"), names.table("documents")
    vector = VECTOR_INDEXES[options.index](names, options, chunk_count)
    other = next(m for m in VECTOR_INDEXES if m != options.index)
    return [
        # Switching --index replaces the other method's index rather than keeping both.
        sql.SQL("DROP INDEX IF EXISTS {}.{}").format(
            names.schema_ident, names.local(f"chunks_embedding_{other}")
        ),
        vector,
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (fts)").format(
            names.local("chunks_fts_gin"), chunks
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (codes)").format(
            names.local("chunks_codes_gin"), chunks
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (metadata jsonb_path_ops)").format(
            names.local("documents_metadata_gin"), documents
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (tenant_id, truth_level)").format(
            names.local("chunks_tenant_truth"), chunks
        ),
        # pg_trgm may live in any schema (an existing install is kept where it is).
        sql.SQL(
            """DO $trgm$
DECLARE trgm_schema name;
BEGIN
  SELECT n.nspname INTO trgm_schema FROM pg_catalog.pg_extension e
    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
  IF trgm_schema IS NOT NULL THEN
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin (content %I.gin_trgm_ops)',
                   {index}, {chunks}, trgm_schema);
  END IF;
END $trgm$"""
        ).format(index=sql.Literal(names.prefix + "chunks_content_trgm"), chunks=names.regclass("chunks")),
    ]


def _hnsw(names: Names, options: ExportOptions, chunk_count: int) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding {}.vector_cosine_ops) "
        "WITH (m = {}, ef_construction = {})"
    ).format(
        names.local("chunks_embedding_hnsw"), names.table("chunks"), sql.Identifier(names.ext),
        sql.Literal(options.hnsw_m), sql.Literal(options.hnsw_ef_construction),
    )


def _ivfflat(names: Names, options: ExportOptions, chunk_count: int) -> sql.Composed:
    # pgvector's advice: rows / 1000 lists up to 1M rows. Built after the load, so the
    # centroids are trained on the data.
    lists = options.ivfflat_lists or max(1, chunk_count // 1000)
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON {} USING ivfflat (embedding {}.vector_cosine_ops) "
        "WITH (lists = {})"
    ).format(names.local("chunks_embedding_ivfflat"), names.table("chunks"),
             sql.Identifier(names.ext), sql.Literal(lists))


VECTOR_INDEXES = {"hnsw": _hnsw, "ivfflat": _ivfflat}
