"""Maintenance: check catalog vs indexes, repair (rebuild indexes), reindex (new model/chunking).

None of these needs the store's embedding model except ``reindex``, which needs the new
one: a store opened "for maintenance" gets a stand-in embedder carrying the manifest's
model name and dimension that refuses to embed.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import columns as cols
from . import faults
from . import manifest as mf
from .acronyms import catalog_rows as acronym_rows
from .catalog import Catalog, first
from .chunker import Chunker, ChunkingConfig
from .durable import write_atomic
from .embedders import (
    Embedder,
    cache_key,
    embedder_for_store,
    passage_text,
    resolve_embedder,
    vectors_with_cache,
)
from .errors import (
    EmbeddingError,
    IncompatibleStoreError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from .indexes import TEXT_BACKENDS, VECTOR_BACKENDS
from .keywords import DEFAULT_KEYWORDS, top_keywords
from .progress import IngestProgress
from .schema import create_schema
from .store import CATALOG_NAME, Store, _acquire_writer_lock

StoreLike = Store | str | Path
INDEX_DIR = "indexes"
# Written before a reindex commits its catalog and removed once the manifest says so:
# if a crash falls in between, the next open finishes the manifest (see Store.open).
REINDEX_MARKER = ".reindex.json"
REINDEX_STEPS: tuple[str, ...] = ("reindex_before_catalog_commit", "reindex_after_catalog_commit")
_BATCH = 64
_SAMPLE = 10  # problems list at most this many ids of one kind


class CatalogOnlyEmbedder:
    """Stands in for the store's model during maintenance: same name and dim, never embeds."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError(
            f"this store was opened for maintenance without its model {self.name!r}: open it "
            "with enginelib.open(path, embedder=...) to run vector or hybrid searches"
        )


def open_for_maintenance(path: str | Path, *, lock_timeout: float = 0.0) -> Store:
    """Open a store for writing without loading (or even having) its embedding model."""
    root = Path(path)
    manifest = mf.read_manifest(root)
    if manifest is None:
        raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
    manifest = finish_interrupted_reindex(root, manifest, writable=False)
    embedder = CatalogOnlyEmbedder(manifest.embedding_model, manifest.embedding_dim)
    return Store.open(root, embedder=embedder, create=False, lock_timeout=lock_timeout)


# -- check ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class IntegrityReport:
    """What ``check`` found; ``problems`` is empty for a healthy store."""

    path: str
    problems: tuple[str, ...]
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def check(target: StoreLike, *, snapshots: bool = True, lock_timeout: float = 10.0) -> IntegrityReport:
    """Compare the catalog with the manifest, both indexes (counts, labels, stamps), itself
    (chunks vs documents, offsets) and, optionally, every snapshot's files.

    Takes the writer lock (or uses the open writable Store's) so a commit cannot race it.
    Opening a text index that cannot be read resets it in place, as any open would: it is
    derived data, and ``repair`` rebuilds it.
    """
    if isinstance(target, Store) and not target.read_only:
        return _check(target.path, target.catalog, snapshots)
    root = target.path if isinstance(target, Store) else Path(target)
    if mf.read_manifest(root) is None:
        raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
    lock = _acquire_writer_lock(root, lock_timeout)
    try:
        manifest = mf.read_manifest(root)
        assert manifest is not None
        catalog = Catalog(root / CATALOG_NAME, manifest.embedding_dim, read_only=True)
        try:
            return _check(root, catalog, snapshots)
        finally:
            catalog.close()
    finally:
        lock.release()


def _check(root: Path, catalog: Catalog, with_snapshots: bool) -> IntegrityReport:
    problems: list[str] = []
    fix = f"run `enginelib repair --store {root}`"
    manifest = mf.read_manifest(root)
    assert manifest is not None
    generation = catalog.generation
    labels = catalog.all_labels()
    facts: dict[str, Any] = {
        "generation": generation, "manifest_generation": manifest.generation,
        "documents": first(catalog.con.execute("SELECT count(*) FROM documents").fetchall())[0],
        "chunks": len(labels), "embedding_model": manifest.embedding_model,
        "embedding_dim": manifest.embedding_dim,
    }
    if manifest.generation != generation:
        problems.append(f"manifest is at generation {manifest.generation}, the catalog at "
                        f"{generation}: {fix}")
    column = first(catalog.con.execute(
        "SELECT data_type FROM information_schema.columns "
        "WHERE table_name = 'chunks' AND column_name = 'embedding'").fetchall())
    if column and column[0] != f"FLOAT[{manifest.embedding_dim}]":
        problems.append(f"catalog vectors are {column[0]} but the manifest says "
                        f"{manifest.embedding_dim} dims: run `enginelib reindex --store {root}`")
    problems += _catalog_problems(catalog)
    options = manifest.index_options
    vector = VECTOR_BACKENDS[manifest.vector_backend](
        root / INDEX_DIR / "vectors", manifest.embedding_dim, **options.get("vector", {}))
    text = TEXT_BACKENDS[manifest.text_backend](root / INDEX_DIR / "text", **options.get("text", {}))
    for what, index in (("vector", vector), ("text", text)):
        stamp = index.generation
        facts[f"{what}_generation"], facts[f"{what}_count"] = stamp, len(index)
        if stamp is None:
            problems.append(f"{what} index is missing or unreadable: {fix}")
            continue
        if stamp != generation:
            problems.append(f"{what} index is stamped generation {stamp}, the catalog is at "
                            f"{generation}: {fix}")
        problems += _label_problems(what, labels, index.labels(), fix)
    catalog.release()
    if with_snapshots:
        problems += _snapshot_problems(root)
    return IntegrityReport(str(root), tuple(problems), facts)


def _label_problems(what: str, catalog: np.ndarray, indexed: np.ndarray, fix: str) -> list[str]:
    missing = np.setdiff1d(catalog, indexed)
    extra = np.setdiff1d(indexed, catalog)
    out = []
    if len(missing):
        out.append(f"{what} index lacks {len(missing)} catalog chunk(s) (labels "
                   f"{missing[:_SAMPLE].tolist()}): {fix}")
    if len(extra):
        out.append(f"{what} index holds {len(extra)} chunk(s) the catalog does not (labels "
                   f"{extra[:_SAMPLE].tolist()}), searchable zombies: {fix}")
    return out


_ORPHANS_SQL = """
SELECT DISTINCT c.document_id FROM chunks c
LEFT JOIN documents d ON d.document_id = c.document_id WHERE d.document_id IS NULL LIMIT ?
"""
_COUNTS_SQL = """
SELECT d.document_id FROM documents d
LEFT JOIN (SELECT document_id, count(*) AS n FROM chunks GROUP BY 1) c USING (document_id)
WHERE coalesce(c.n, 0) <> d.total_chunks ORDER BY 1 LIMIT ?
"""
# DuckDB's substring counts code points from 1, like Python's str slicing from 0.
_OFFSETS_SQL = """
SELECT c.document_id || '#' || c.chunk_index FROM chunks c JOIN documents d USING (document_id)
WHERE substring(d.content, c.start_offset + 1, c.end_offset - c.start_offset) <> c.content
ORDER BY 1 LIMIT ?
"""


def _catalog_problems(catalog: Catalog) -> list[str]:
    con = catalog.con
    out = []
    for sql, message in (
        (_ORPHANS_SQL, "chunks whose document is gone"),
        (_COUNTS_SQL, "documents whose chunk count differs from total_chunks"),
        (_OFFSETS_SQL, "chunks whose offsets do not cite their document's text"),
    ):
        rows = [r[0] for r in con.execute(sql, [_SAMPLE]).fetchall()]
        if rows:
            out.append(f"catalog: {message}: {rows} (re-ingest or reindex these documents)")
    return out


def _snapshot_problems(root: Path) -> list[str]:
    from .snapshots import INFO_NAME, SNAPSHOTS_DIR, TABLES, TABLES_DIR

    base = root / SNAPSHOTS_DIR
    if not base.exists():
        return []
    out = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            info = json.loads((folder / INFO_NAME).read_text(encoding="utf-8"))
            stamps = {p.parent.name: json.loads(p.read_text(encoding="utf-8")).get("generation")
                      for p in (folder / INDEX_DIR).glob("*/stamp.json")}
        except (OSError, ValueError) as exc:
            out.append(f"snapshot {folder.name!r} is unreadable ({exc}): delete it")
            continue
        missing = [t for t in TABLES if not (folder / TABLES_DIR / f"{t}.parquet").is_file()]
        if missing or not (folder / mf.MANIFEST_NAME).is_file():
            out.append(f"snapshot {folder.name!r} lacks {missing or ['manifest.json']}: delete it")
        if set(stamps) != {"vectors", "text"} or set(stamps.values()) != {info.get("generation")}:
            out.append(f"snapshot {folder.name!r} index stamps {stamps} do not match its "
                       f"generation {info.get('generation')}: delete it")
    return out


# -- repair --------------------------------------------------------------------------------


def discard_index_files(index_root: Path) -> None:
    """Remove the derived index folders; the next sync rebuilds them from the catalog."""
    for name in ("vectors", "text"):
        shutil.rmtree(index_root / name, ignore_errors=True)


def repair(target: StoreLike) -> IntegrityReport:
    """Rebuild both indexes (and the manifest's generation) from the catalog, then re-check."""
    if isinstance(target, Store):
        target.rebuild_indexes()
        return check(target, snapshots=False)
    try:
        store = open_for_maintenance(target)
    except (StoreLockedError, StoreNotFoundError, IncompatibleStoreError):
        raise
    except StoreError:
        # Opening replays the derived indexes; if even that fails, they are what is
        # broken: throw them away (under the writer lock) and open on the catalog alone.
        root = Path(target.path if isinstance(target, Store) else target)
        lock = _acquire_writer_lock(root, 0.0)
        try:
            discard_index_files(root / "indexes")
        finally:
            lock.release()
        store = open_for_maintenance(target)
    try:
        store.rebuild_indexes()
        return check(store, snapshots=False)
    finally:
        store.close()


# -- reindex -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReindexReport:
    documents: int
    chunks_before: int
    chunks_after: int
    chunks_embedded: int
    generation: int
    index_version: str
    embedding_model: str
    embedding_dim: int
    chunking_hash: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reindex(
    target: StoreLike,
    *,
    embedder: Embedder | str | None = None,
    chunking: ChunkingConfig | None = None,
    progress: bool = False,
) -> ReindexReport:
    """Re-chunk and re-embed every document into a new generation; documents, their versions
    and history stay. The manifest then records the new model, dimension and chunking.

    ``embedder`` (an object or a built-in name) switches the store's model; None keeps the
    store's own. The old model is never needed. ``chunking`` None keeps the store's chunking.
    """
    if isinstance(target, Store):
        return _reindex_store(target, _reindex_embedder(target, embedder), chunking, progress)
    store = open_for_maintenance(target)
    try:
        return _reindex_store(store, _reindex_embedder(store, embedder), chunking, progress)
    finally:
        store.close()


def _reindex_embedder(store: Store, embedder: Embedder | str | None) -> Embedder:
    """The embedder a reindex writes with: the one asked for, else the store's own (a
    reindex never switches models unless told to)."""
    if embedder is None:
        return embedder_for_store(store.manifest.embedding_model, store.manifest.embedding_dim)
    return resolve_embedder(embedder)


def _staging_ddl(dim: int) -> list[str]:
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise ValueError(f"embedding dimension must be a positive int, got {dim!r}")
    # dim is a validated int: the only value that cannot be a parameter in DDL.
    return [
        "DROP TABLE IF EXISTS reindex_chunks",
        "DROP TABLE IF EXISTS reindex_documents",
        f"""CREATE TABLE reindex_chunks (
            document_id VARCHAR, chunk_index INTEGER, content VARCHAR, heading_path VARCHAR,
            start_offset INTEGER, end_offset INTEGER, token_count INTEGER, page_start INTEGER,
            page_end INTEGER, content_hash VARCHAR, cache_key VARCHAR, embedding FLOAT[{dim}])""",
        "CREATE TABLE reindex_documents (document_id VARCHAR, total_chunks INTEGER, keywords VARCHAR[])",
    ]


_SWAP_CHUNKS_SQL = """
INSERT INTO chunks (label, document_id, chunk_index, content, heading_path, start_offset,
    end_offset, token_count, page_start, page_end, content_hash, embedding, retrieval_count,
    generation)
SELECT ? + row_number() OVER (ORDER BY document_id, chunk_index) - 1, document_id, chunk_index,
       content, heading_path, start_offset, end_offset, token_count, page_start, page_end,
       content_hash, embedding, 0, ?
FROM reindex_chunks
"""
_UPDATE_DOCUMENTS_SQL = """
UPDATE documents SET total_chunks = r.total_chunks, keywords = r.keywords, generation = ?,
    index_version = ?
FROM reindex_documents r WHERE documents.document_id = r.document_id
"""


def _reindex_store(
    store: Store, embedder: Embedder, chunking: ChunkingConfig | None, progress: bool
) -> ReindexReport:
    from .ingest import chunk_rows

    store._require_writable()
    started = time.monotonic()
    # A reindex re-chunks with the current chunker: a store built by the flat one moves to
    # section structure (its sizes kept); pass ``chunking`` to choose otherwise.
    config = chunking or replace(
        ChunkingConfig.from_dict(store.manifest.chunking), structure="sections"
    )
    config.validate()
    chunker, dim = Chunker(config), int(embedder.dim)
    catalog = store.catalog
    reuse_cache = dim == store.manifest.embedding_dim
    for statement in _staging_ddl(dim):
        catalog.con.execute(statement)
    ids = [r[0] for r in catalog.con.execute("SELECT document_id FROM documents ORDER BY 1").fetchall()]
    chunks_before, embedded = catalog.chunk_count(), 0
    acronyms: list[tuple[str, str, str]] = []  # relearned: a store may predate them
    with IngestProgress(enabled=progress) as bar:
        for start in range(0, len(ids), _BATCH):
            rows = catalog.con.execute(
                "SELECT document_id, coalesce(title, ''), content, pages FROM documents "
                "WHERE document_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY 1",
                [ids[start:start + _BATCH]],
            ).fetchall()
            catalog.release()  # chunking and embedding are slow: let readers in meanwhile
            staged, docs = [], []
            for doc_id, title, content, pages in rows:
                spans = chunker.chunk(content)
                acronyms.extend(acronym_rows(doc_id, content))
                pages_t = tuple(tuple(p) for p in json.loads(pages)) if pages else ()
                texts = [passage_text(title, s.heading_path, s.content) for s in spans]
                staged.append((doc_id, chunk_rows(spans, pages_t), texts))  # type: ignore[arg-type]
                docs.append((doc_id, len(spans), top_keywords([s.content for s in spans],
                                                              DEFAULT_KEYWORDS)))
            embedded += _stage_batch(store, embedder, staged, docs, reuse_cache, bar)
            bar.advance_documents(len(rows))
    root = store.path
    generation = catalog.generation + 1  # we hold the writer lock: nobody else commits
    marker = {"generation": generation, "embedding_model": embedder.name, "embedding_dim": dim,
              "chunking": config.to_dict(), "chunking_hash": config.config_hash()}
    write_atomic(root / REINDEX_MARKER, json.dumps(marker, indent=2).encode("utf-8"))
    with catalog.transaction():
        if catalog.bump_generation() != generation:
            raise StoreError(f"catalog of {root} changed during the reindex", path=root)
        index_version = mf.next_index_version(catalog.get_meta("index_version"))
        catalog.set_meta("index_version", index_version)
        catalog.con.execute("INSERT INTO label_tombstones SELECT label, ? FROM chunks", [generation])
        catalog.con.execute("DROP TABLE chunks")
        if not reuse_cache:
            catalog.con.execute("DROP TABLE embedding_cache")
        create_schema(catalog.con, dim)  # recreates the dropped tables, with the new dimension
        next_label = int(catalog.get_meta("next_label") or 0)
        catalog.con.execute(_SWAP_CHUNKS_SQL, [next_label, generation])
        count = catalog.chunk_count()
        catalog.set_meta("next_label", str(next_label + count))
        catalog.con.execute("INSERT INTO embedding_cache SELECT DISTINCT ON (cache_key) cache_key, "
                    "embedding FROM reindex_chunks ON CONFLICT DO NOTHING")
        catalog.con.execute(_UPDATE_DOCUMENTS_SQL, [generation, index_version])
        catalog.con.execute("DELETE FROM acronyms")
        catalog.insert_acronyms(acronyms)
        catalog.con.execute("DROP TABLE reindex_chunks")
        catalog.con.execute("DROP TABLE reindex_documents")
        catalog.set_meta("reindexed_generation", str(generation))
        faults.crash_point("reindex_before_catalog_commit")
    faults.crash_point("reindex_after_catalog_commit")
    manifest = _finish(root, store.manifest, marker, index_version)
    store._adopt_model(manifest, embedder)
    return ReindexReport(
        documents=len(ids), chunks_before=chunks_before, chunks_after=count,
        chunks_embedded=embedded, generation=generation, index_version=index_version,
        embedding_model=embedder.name, embedding_dim=dim, chunking_hash=config.config_hash(),
        seconds=round(time.monotonic() - started, 3),
    )


def _stage_batch(
    store: Store, embedder: Embedder, staged: list[tuple[str, list[Any], list[str]]],
    docs: list[tuple[str, int, list[str]]], reuse_cache: bool, bar: IngestProgress,
) -> int:
    """Embed one batch (cache hits skipped when the dimension is unchanged) into staging."""
    catalog = store.catalog
    texts = [t for _, _, row_texts in staged for t in row_texts]
    lookup = catalog.cached_embeddings if reuse_cache else (lambda _keys: {})
    flat_vectors, fresh = vectors_with_cache(
        embedder, texts, lookup, before_embedding=bar.start_embedding, progress=bar.advance_chunks)
    catalog.release()
    # Same cache key as ingestion, so later ingests of unchanged text hit this cache.
    flat_keys = iter([cache_key(embedder.name, t) for t in texts])
    keys = [[next(flat_keys) for _ in row_texts] for _, _, row_texts in staged]
    cached = dict(zip((k for row in keys for k in row), flat_vectors, strict=True))
    missing = fresh
    columns: dict[str, list[Any]] = {name: [] for name in (
        "document_id", "chunk_index", "content", "heading_path", "start_offset", "end_offset",
        "token_count", "page_start", "page_end", "content_hash", "cache_key")}
    vectors_out = []
    for (doc_id, rows, _), row_keys in zip(staged, keys, strict=True):
        for row, key in zip(rows, row_keys, strict=True):
            for name in columns:
                columns[name].append(doc_id if name == "document_id" else
                                     key if name == "cache_key" else getattr(row, name))
            vectors_out.append(cached[key])
    dim = int(embedder.dim)
    flat = np.asarray(np.vstack(vectors_out) if vectors_out else np.zeros((0, dim)), np.float32)
    table = {**{name: cols.objects(values) for name, values in columns.items()},
             "embedding": cols.vectors(flat.reshape(-1, dim))}
    documents = {"document_id": cols.objects(d[0] for d in docs),
                 "total_chunks": cols.ints(d[1] for d in docs),
                 "keywords": cols.objects(d[2] for d in docs)}
    con = catalog.con
    for name, data in (("reindex_chunks", table), ("reindex_documents", documents)):
        with cols.registered(con, "_staged", data):
            con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM _staged")
    catalog.release()
    return len(missing)


def _finish(root: Path, manifest: mf.Manifest, marker: dict[str, Any], index_version: str) -> mf.Manifest:
    """Record the new model and chunking in the manifest, then drop the marker."""
    new = replace(
        manifest, embedding_model=marker["embedding_model"], embedding_dim=marker["embedding_dim"],
        chunking=marker["chunking"], chunking_hash=marker["chunking_hash"],
        generation=marker["generation"], index_version=index_version,
    )
    mf.write_manifest(root, new)
    (root / REINDEX_MARKER).unlink(missing_ok=True)
    return new


def finish_interrupted_reindex(root: Path, manifest: mf.Manifest, *, writable: bool) -> mf.Manifest:
    """The manifest to trust when a reindex was killed between its catalog commit and its
    manifest write (the catalog then holds the new vectors). Writers also fix the files."""
    path = root / REINDEX_MARKER
    if not path.exists():
        return manifest
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        marker = None
    catalog = Catalog(root / CATALOG_NAME, manifest.embedding_dim, read_only=True)
    try:
        done = marker is not None and catalog.get_meta("reindexed_generation") == str(marker["generation"])
        index_version = catalog.get_meta("index_version") or ""
    finally:
        catalog.close()
    if not done:  # the reindex never committed: the old manifest is right
        if writable:
            path.unlink(missing_ok=True)
        return manifest
    assert marker is not None
    if writable:
        return _finish(root, manifest, marker, index_version)
    return replace(manifest, embedding_model=marker["embedding_model"],
                   embedding_dim=marker["embedding_dim"], chunking=marker["chunking"],
                   chunking_hash=marker["chunking_hash"])
