"""The catalog's DuckDB schema (canonical RagDocument + hybrid-search metadata) and migrations."""

from __future__ import annotations

from collections.abc import Callable

import duckdb

SCHEMA_VERSION = 1

# Fields of the canonical RagDocument plus the general metadata of the hybrid-search spec.
# The Postgres exporter mirrors these columns (enginelib/export/pg_schema.py).
DOCUMENT_COLUMNS: tuple[str, ...] = (
    "document_id", "title", "content", "content_hash", "fingerprint",
    "source_type", "source_path", "source_url", "source_id",
    "truth_level", "validated_by", "validated_at",
    "version", "index_version", "domain", "entities", "keywords", "language",
    "total_chunks", "parent_document_id",
    "author", "created_at", "updated_at", "document_type", "tags",
    "file_path", "file_extension", "tenant_id", "custom", "pages",
    "retrieval_count", "last_retrieved_at", "ingested_at", "generation",
)

CHUNK_COLUMNS: tuple[str, ...] = (
    "label", "document_id", "chunk_index", "content", "heading_path",
    "start_offset", "end_offset", "token_count", "page_start", "page_end",
    "content_hash", "embedding", "retrieval_count", "last_retrieved_at", "generation",
)


# Acronym/expansion pairs learned from each document at ingest (enginelib/acronyms.py).
# Created on every writable open as well, so stores made before it gain it without a
# schema version bump; readers of a store that lacks it see no pairs.
ACRONYMS_DDL = """CREATE TABLE IF NOT EXISTS acronyms (
    document_id VARCHAR NOT NULL,
    acronym VARCHAR NOT NULL,
    expansion VARCHAR NOT NULL)"""


def _ddl_v1(dim: int) -> list[str]:
    # Times are naive UTC. Every write gives its time from Python (``catalog.utcnow``); the
    # two defaults below are UTC for whatever else inserts. Stores made before kept
    # ``current_timestamp`` there (the session's local time): unused, so left as they are.
    if not isinstance(dim, int) or dim <= 0:
        raise ValueError(f"embedding dimension must be a positive int, got {dim!r}")
    # dim is a validated int, the only value that cannot be a parameter in DDL.
    return [
        """CREATE TABLE IF NOT EXISTS meta (
            key VARCHAR PRIMARY KEY,
            value VARCHAR NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS sources (
            source_id VARCHAR PRIMARY KEY,
            name VARCHAR,
            tier VARCHAR,                 -- gold | silver | bronze
            evidence_level VARCHAR,       -- meta-analysis | rct | cohort | expert-opinion ...
            authority_score DOUBLE,       -- 0..100
            institution VARCHAR,
            peer_reviewed BOOLEAN DEFAULT FALSE,
            created_at TIMESTAMP DEFAULT (current_timestamp AT TIME ZONE 'UTC'))""",
        """CREATE TABLE IF NOT EXISTS documents (
            document_id VARCHAR PRIMARY KEY,
            title VARCHAR,
            content VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL,
            fingerprint VARCHAR NOT NULL,  -- content + metadata: unchanged input is a no-op
            source_type VARCHAR,
            source_path VARCHAR,
            source_url VARCHAR,
            source_id VARCHAR,
            truth_level VARCHAR NOT NULL CHECK (truth_level IN ('L1','L2','L3','L4')),
            validated_by VARCHAR,
            validated_at TIMESTAMP,
            version VARCHAR NOT NULL,
            index_version VARCHAR NOT NULL,
            domain VARCHAR,
            entities VARCHAR[],
            keywords VARCHAR[],
            language VARCHAR,
            total_chunks INTEGER NOT NULL,
            parent_document_id VARCHAR,
            author VARCHAR,
            created_at TIMESTAMP,
            updated_at TIMESTAMP,
            document_type VARCHAR,
            tags VARCHAR[],
            file_path VARCHAR,
            file_extension VARCHAR,
            tenant_id VARCHAR,
            custom JSON,
            pages JSON,
            retrieval_count BIGINT DEFAULT 0,
            last_retrieved_at TIMESTAMP,
            ingested_at TIMESTAMP NOT NULL,
            generation BIGINT NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS chunks (
            label BIGINT PRIMARY KEY,
            document_id VARCHAR NOT NULL,
            chunk_index INTEGER NOT NULL,
            content VARCHAR NOT NULL,
            heading_path VARCHAR,
            start_offset INTEGER NOT NULL,
            end_offset INTEGER NOT NULL,
            token_count INTEGER NOT NULL,
            page_start INTEGER,
            page_end INTEGER,
            content_hash VARCHAR NOT NULL,
            embedding FLOAT[{dim}] NOT NULL,
            retrieval_count BIGINT DEFAULT 0,
            last_retrieved_at TIMESTAMP,
            generation BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS chunks_document ON chunks(document_id)",
        """CREATE TABLE IF NOT EXISTS document_versions (
            document_id VARCHAR NOT NULL,
            version VARCHAR NOT NULL,
            index_version VARCHAR NOT NULL,
            title VARCHAR,
            content VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL,
            truth_level VARCHAR,
            total_chunks INTEGER,
            custom JSON,
            change_summary VARCHAR,
            valid_from TIMESTAMP,
            archived_at TIMESTAMP NOT NULL,
            generation BIGINT NOT NULL,
            tenant_id VARCHAR,
            PRIMARY KEY (document_id, version))""",
        # Labels removed from the catalog, so an index that lags can replay deletions.
        """CREATE TABLE IF NOT EXISTS label_tombstones (
            label BIGINT NOT NULL,
            generation BIGINT NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS embedding_cache (
            cache_key VARCHAR PRIMARY KEY,
            embedding FLOAT[{dim}] NOT NULL)""",
        """CREATE SEQUENCE IF NOT EXISTS query_log_seq""",
        """CREATE TABLE IF NOT EXISTS query_log (
            id BIGINT PRIMARY KEY DEFAULT nextval('query_log_seq'),
            query_text VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            filters JSON,
            latency_ms DOUBLE NOT NULL,
            chunks_retrieved INTEGER NOT NULL,
            reranked_count INTEGER NOT NULL,
            result_count INTEGER NOT NULL,
            status VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT (current_timestamp AT TIME ZONE 'UTC'))""",
        """CREATE TABLE IF NOT EXISTS search_config (
            name VARCHAR PRIMARY KEY,
            fusion VARCHAR NOT NULL,
            rrf_k INTEGER NOT NULL,
            vector_weight DOUBLE NOT NULL,
            text_weight DOUBLE NOT NULL,
            min_score DOUBLE,
            description VARCHAR)""",
        ACRONYMS_DDL,
    ]


def add_version_tenants(con: duckdb.DuckDBPyConnection) -> None:
    """Give an older catalog's archived versions the tenant they belonged to.

    A version is the tenant's whose document it was; the Postgres export shows it to that
    tenant only. Catalogs made before the column existed get it here, filled with the tenant
    their document has now (all an older catalog can tell). Additive, like the acronyms
    table: readers of an older catalog keep working, and the export reads either shape.
    """
    present = con.execute(
        "SELECT count(*) FROM information_schema.columns "
        "WHERE table_name = 'document_versions' AND column_name = 'tenant_id'").fetchone()
    if present and present[0]:
        return
    con.execute("ALTER TABLE document_versions ADD COLUMN tenant_id VARCHAR")
    con.execute("UPDATE document_versions v SET tenant_id = d.tenant_id FROM documents d "
                "WHERE d.document_id = v.document_id")


# Named presets like the spec's search_config table; callers may add their own.
DEFAULT_SEARCH_CONFIGS: tuple[tuple[str, str, int, float, float, float | None, str], ...] = (
    ("default", "rrf", 60, 0.5, 0.5, None, "Reciprocal Rank Fusion, k=60"),
    ("balanced", "weighted", 60, 0.5, 0.5, None, "equal weights on normalized scores"),
    ("semantic", "weighted", 60, 0.7, 0.3, None, "favour meaning over exact words"),
    ("keyword", "weighted", 60, 0.3, 0.7, None, "favour exact words, codes, part numbers"),
)

# version -> migration from the previous version; run in order inside one transaction.
MIGRATIONS: dict[int, Callable[[duckdb.DuckDBPyConnection, int], None]] = {}


def create_schema(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    for statement in _ddl_v1(dim):
        con.execute(statement)
    con.execute(
        "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING", [str(SCHEMA_VERSION)]
    )
    con.execute("INSERT INTO meta VALUES ('generation', '0') ON CONFLICT DO NOTHING")
    con.execute("INSERT INTO meta VALUES ('next_label', '0') ON CONFLICT DO NOTHING")
    con.executemany(
        "INSERT INTO search_config VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [list(row) for row in DEFAULT_SEARCH_CONFIGS],
    )


def migrate(con: duckdb.DuckDBPyConnection, from_version: int, dim: int) -> int:
    """Bring a catalog from ``from_version`` to SCHEMA_VERSION; returns the new version."""
    version = from_version
    while version < SCHEMA_VERSION:
        MIGRATIONS[version + 1](con, dim)
        version += 1
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    return version
