"""Where everything of a store lives: the one place that names a store folder's paths.

A store is one folder::

    manifest.json         what the store was built with and the generation it is at
    catalog.duckdb        the truth (DuckDB)
    .writer.lock          one writer at a time (filelock)
    .writer.holder.json   who holds it for long (serve, worker --forever) and what to do instead
    .reindex.json         a reindex between its catalog commit and its manifest write
    indexes/vectors/      the vector backend's files (named by the backend alone)
    indexes/text/         the text backend's files (named by the backend alone)
    texts/, view/         chunk texts and the chunk view's columns, derived from the catalog
                          (enginelib/chunk_texts.py, enginelib/view_cache.py)
    querylog/             readers' pending query-log lines
    jobs-inbox/           jobs queued by processes that do not hold the writer lock
    uploads/<id>/<name>   a file uploaded to `serve`, until its job is done
    snapshots/            settings.json, then one folder per snapshot (below)

    snapshots/<name>/manifest.json, snapshot.json, tables/<table>.parquet, indexes/...
    snapshots/.tmp-*, snapshots/.trash-*   a create or a delete that has not finished

A file found where one of these folders belongs is ``core/folders.py``'s to name, move aside
or refuse.

What sits *inside* an index folder (stamps, segments, lock files) is the backend's to know
(``enginelib/indexes``); this module names only the folders the store gives them.
"""

from __future__ import annotations

from pathlib import Path

MANIFEST_NAME = "manifest.json"
CATALOG_NAME = "catalog.duckdb"
LOCK_NAME = ".writer.lock"
# Who holds the writer lock for long (serve, a worker --forever), for the message another
# writer gets: a pid and a line saying what to do instead.
HOLDER_NAME = ".writer.holder.json"
# Written before a reindex commits its catalog and removed once the manifest says so:
# if a crash falls in between, the next open finishes the manifest.
REINDEX_MARKER = ".reindex.json"
INDEX_DIR = "indexes"
VECTOR_DIR = "vectors"
TEXT_DIR = "text"
INDEX_KINDS: tuple[str, ...] = (VECTOR_DIR, TEXT_DIR)
QUERYLOG_DIR = "querylog"
TEXTS_DIR = "texts"
VIEW_DIR = "view"
INBOX_DIR = "jobs-inbox"
UPLOADS_DIR = "uploads"

SNAPSHOTS_DIR = "snapshots"
SNAPSHOT_SETTINGS_NAME = "settings.json"
SNAPSHOT_INFO_NAME = "snapshot.json"
SNAPSHOT_TABLES_DIR = "tables"
SNAPSHOT_TMP_PREFIX = ".tmp-"
SNAPSHOT_TRASH_PREFIX = ".trash-"
# The catalog tables a snapshot holds. The query log, the embedding cache and label
# tombstones are left out: telemetry, a cache, and replay bookkeeping of the live store.
SNAPSHOT_TABLES: tuple[str, ...] = (
    "meta", "sources", "documents", "chunks", "document_versions", "search_config", "acronyms",
)
# Tables added after snapshots first shipped: an older snapshot without them still loads.
SNAPSHOT_OPTIONAL_TABLES: frozenset[str] = frozenset({"acronyms"})


# An in-memory store lives in <RAM folder>/enginelib-mem-<pid>-<random>/store
# (enginelib/memory_store.py).
MEMORY_PREFIX = "enginelib-mem-"
MEMORY_STORE_NAME = "store"


def is_memory_store(root: Path | str) -> bool:
    """True for an in-memory store's private folder: no command can be given it (its path is
    private and gone on close), so a message names the Python call instead."""
    path = Path(root)
    return path.name == MEMORY_STORE_NAME and path.parent.name.startswith(MEMORY_PREFIX)


def way_out(root: Path | str | None, command: str, call: str) -> str:
    """The advice an error gives: ``command`` (what a user types) for a store folder, the
    Python ``call`` for an in-memory store, whose private folder no command can be given."""
    return call if root is not None and is_memory_store(root) else command


def catalog_path(root: Path) -> Path:
    return root / CATALOG_NAME


def index_root(root: Path) -> Path:
    """The folder holding both index folders (a store's, or a snapshot's)."""
    return root / INDEX_DIR


def vector_folder(indexes: Path) -> Path:
    return indexes / VECTOR_DIR


def text_folder(indexes: Path) -> Path:
    return indexes / TEXT_DIR


def snapshots_root(root: Path) -> Path:
    return root / SNAPSHOTS_DIR


def snapshot_tables(folder: Path) -> Path:
    return folder / SNAPSHOT_TABLES_DIR


def snapshot_table(folder: Path, table: str) -> Path:
    return folder / SNAPSHOT_TABLES_DIR / f"{table}.parquet"
