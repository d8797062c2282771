"""Maintenance: check catalog vs indexes, repair (rebuild indexes), reindex (new model/chunking).

None of these needs the store's embedding model except ``reindex``, which needs the new
one: a store opened "for maintenance" gets a stand-in embedder carrying the manifest's
model name and dimension that refuses to embed.
"""

from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import catalog_maintenance as cm
from . import columns as cols
from . import faults
from . import manifest as mf
from .acronyms import catalog_rows as acronym_rows
from .catalog import Catalog, require_committed_catalog, utcnow
from .catalog_documents import document_count
from .catalog_mend import (
    PENDING_NAME,
    MendReport,
    fails_on_a_checksum,
    finish_pending,
    mend_torn_blocks,
)
from .catalog_view import chunk_texts
from .chunk_texts import FOLDER as TEXTS_FOLDER
from .chunk_texts import TextSegments
from .chunker import Chunker, ChunkingConfig
from .core import folders, layout
from .core.compat import require_known_schema
from .core.generations import finish_interrupted_reindex, finish_reindex, reindexed_manifest
from .core.layout import REINDEX_MARKER
from .core.lock import WriterLock, acquire_writer_lock
from .core.recovery import discard_index_files, size_of, unfinished_snapshots
from .core.store_core import StoreCore
from .durable import write_atomic
from .embedders import (
    DEFAULT_EMBEDDER,
    Embedder,
    cache_key,
    embedder_for_store,
    passage_text,
    resolve_embedder,
    vectors_with_cache,
)
from .errors import (
    CorruptStoreError,
    EmbeddingError,
    IncompatibleStoreError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from .index_audit import VECTOR_SAMPLE, verify_files, wrong_vectors
from .indexes import TEXT_BACKENDS, TEXT_FILES, VECTOR_BACKENDS, VECTOR_FILES
from .jobs import shape as job_tables
from .keywords import DEFAULT_KEYWORDS, top_keywords
from .own_vectors import is_external
from .progress import IngestProgress
from .snapshot_files import FileProblem, read_info
from .snapshot_integrity import OPTIONAL_TABLES, checksummed, damage, index_damage
from .snapshots import is_snapshot_name, load_catalog, newer_format, settings_problem
from .store_guard import MAX_LOCK_TIMEOUT_S, check_model_options
from .store_target import StoreLike, takes_store
from .text import shell_word
from .validation import check_float

REINDEX_STEPS: tuple[str, ...] = (
    "reindex_batch_staged", "reindex_before_catalog_commit", "reindex_after_catalog_commit")
_BATCH = 64
_SAMPLE = 10  # problems list at most this many ids of one kind


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


@takes_store
def check(target: StoreLike, *, snapshots: bool = True, lock_timeout: float = 10.0) -> IntegrityReport:
    """Compare the catalog with the manifest, both indexes (counts, labels, stamps), itself
    (chunks vs documents, offsets) and, optionally, every snapshot's files.

    Takes the writer lock (or uses the open writable Store's) so a commit cannot race it. On
    a read-only medium (a mounted image, a read-only volume) no lock file can be made and no
    writer can exist either, so it checks without one: ``facts["locked"]`` is False.
    Opening a text index that cannot be read resets it in place, as any open would: it is
    derived data, and ``repair`` rebuilds it.
    """
    check_float("lock_timeout", lock_timeout, minimum=0.0, maximum=MAX_LOCK_TIMEOUT_S)
    if isinstance(target, StoreCore) and not target.read_only:
        return _check(target.path, target._catalog, snapshots, target.manifest)
    root = target.path if isinstance(target, StoreCore) else Path(target)
    written = mf.read_manifest(root)
    if written is None:
        raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
    require_known_schema(root, written)
    lock: WriterLock | None = None
    try:
        lock = acquire_writer_lock(root, lock_timeout)
    except OSError as exc:
        if exc.errno != errno.EROFS:
            raise
    try:
        manifest = mf.read_manifest(root)
        assert manifest is not None
        # a reindex killed after its commit: the catalog holds the new model's vectors
        manifest = finish_interrupted_reindex(root, manifest, writable=False)
        require_committed_catalog(layout.catalog_path(root), manifest.generation)
        catalog = Catalog(layout.catalog_path(root), manifest.embedding_dim, read_only=True)
        try:
            report = _check(root, catalog, snapshots, manifest)
        finally:
            catalog.close()
    finally:
        if lock is not None:
            lock.release()
    report.facts["locked"] = lock is not None
    return report


def _check(root: Path, catalog: Catalog, with_snapshots: bool,
           manifest: mf.Manifest) -> IntegrityReport:
    """``manifest``: the one an open trusts (an interrupted reindex's new model, not the old
    one manifest.json still names)."""
    problems: list[str] = []
    fix = layout.way_out(root, f"run `enginelib repair --store {shell_word(root)}`",
                         "call store.repair()")
    written = mf.read_manifest(root)
    if written is None:
        # removed while this process writes the store (a path-based check finds none and
        # says so first): the Store's own copy is the one its next commit writes back
        problems.append(f"manifest.json is missing, removed while the store was open: {fix} "
                        "to write it again")
        written = manifest
    if (written.embedding_model, written.embedding_dim, written.chunking_hash) != (
            manifest.embedding_model, manifest.embedding_dim, manifest.chunking_hash):
        problems.append(
            f"a reindex to {manifest.embedding_model} ({manifest.embedding_dim} dims) was "
            f"stopped after its commit, before manifest.json named it (it still names "
            f"{written.embedding_model}, {written.embedding_dim} dims): {fix} to finish it")
    generation = catalog.generation
    labels = catalog.all_labels()
    facts: dict[str, Any] = {
        "generation": generation, "manifest_generation": manifest.generation,
        "documents": document_count(catalog),
        "chunks": len(labels), "embedding_model": manifest.embedding_model,
        "embedding_dim": manifest.embedding_dim,
    }
    if manifest.generation != generation:
        problems.append(f"manifest is at generation {manifest.generation}, the catalog at "
                        f"{generation}: {fix}")
    column = cm.embedding_column_type(catalog)
    if column and column != f"FLOAT[{manifest.embedding_dim}]":
        problems.append(f"catalog vectors are {column} but the manifest says "
                        f"{manifest.embedding_dim} dims: "
                        + layout.way_out(root, "run `enginelib reindex --store "
                                         f"{shell_word(root)}`", "call store.reindex()"))
    problems += _catalog_problems(catalog)
    problems += [f"{what}: {fix}" for what in job_tables.problems(catalog.con)]
    if (root / PENDING_NAME).exists():
        problems.append(f"a mend of the catalog was interrupted ({PENDING_NAME}): {fix}")
    options = manifest.index_options
    indexes = layout.index_root(root)
    not_folders = folders.misplaced(root)
    problems += [folders.problem(root, folder) for folder in not_folders]
    blocked = [folder.path for folder in not_folders]
    vector = text = None  # an index whose folder is a file is that problem alone
    if not _under(layout.vector_folder(indexes), blocked):
        vector = VECTOR_BACKENDS[manifest.vector_backend](
            layout.vector_folder(indexes), manifest.embedding_dim, **options.get("vector", {}))
    if not _under(layout.text_folder(indexes), blocked):
        text = TEXT_BACKENDS[manifest.text_backend](layout.text_folder(indexes),
                                                    **options.get("text", {}))
    limit = getattr(text, "max_token", None)  # a tantivy fact, not the index protocol's
    if isinstance(limit, int):
        facts["text_max_token_bytes"] = limit
    readable = set()
    for what, index in (("vector", vector), ("text", text)):
        if index is None:
            facts[f"{what}_generation"], facts[f"{what}_count"] = None, 0
            continue
        stamp = index.generation
        if stamp is None:
            facts[f"{what}_generation"], facts[f"{what}_count"] = stamp, len(index)
            problems.append(f"{what} index is missing or unreadable: {fix}")
            continue
        try:
            facts[f"{what}_generation"], facts[f"{what}_count"] = stamp, len(index)
            indexed = index.labels()
        except BaseException as exc:
            # A damaged segment that opened fails on its first read (tantivy panics): it
            # is a problem to report, not a check that fails.
            if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
                raise
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problems.append(f"{what} index is damaged ({reason}): {fix}")
            continue
        readable.add(what)
        if stamp != generation:
            problems.append(f"{what} index is stamped generation {stamp}, the catalog is at "
                            f"{generation}: {fix}")
        problems += _label_problems(what, labels, indexed, fix)
    if "vector" in readable:
        problems += _vector_problems(catalog, vector, labels, fix)
    if text is not None:
        problems += [f"text index: {what}: {fix}"
                     for what in verify_files(TEXT_FILES[manifest.text_backend],
                                               layout.text_folder(indexes))]
    problems += _text_segment_problems(root, catalog, labels, fix)
    catalog.release()
    if with_snapshots:
        found = _snapshot_problems(root, facts)
        facts["snapshot_problems"] = len(found)
        problems += found
    # Disk a killed snapshot create or delete still holds: not a problem (every command
    # works), and the next writer removes it; said, since no listing shows it.
    leftovers = unfinished_snapshots(root)
    if leftovers:
        facts["unfinished_snapshots"] = [str(path) for path in leftovers]
        facts["unfinished_snapshot_bytes"] = sum(size_of(path) for path in leftovers)
    return IntegrityReport(str(root), tuple(problems), facts)


def _under(path: Path, misplaced_paths: list[Path]) -> bool:
    return any(path.is_relative_to(outer) for outer in misplaced_paths)


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


def _vector_problems(catalog: Catalog, index: Any, labels: np.ndarray, fix: str) -> list[str]:
    """Sampled stored vectors that are not the catalog's (a damaged index file)."""
    bad, compared = wrong_vectors(catalog, index, labels)
    if not len(bad):
        return []
    return [f"vector index: {len(bad)} of {compared} sampled chunks hold other vectors than "
            f"the catalog's (labels {bad[:_SAMPLE].tolist()}), so they rank wrongly: {fix}"]


def _text_segment_problems(root: Path, catalog: Catalog, labels: np.ndarray, fix: str) -> list[str]:
    """Chunk-text segments that fail their checks, or hold other texts than the catalog's
    (sampled): searches read around them, from the catalog, until `repair` writes them."""
    if catalog.in_memory_db:
        return []
    segments = TextSegments(root / TEXTS_FOLDER, writable=False, generation=catalog.generation)
    out = [f"chunk texts: segment {what} fails its checks: {fix}" for what in segments.damaged()]
    spread = np.linspace(0, len(labels) - 1, min(VECTOR_SAMPLE, len(labels))).astype(np.int64)
    sample = np.unique(labels[spread]).tolist() if len(labels) else []
    held = segments.get(sample)
    truth = chunk_texts(catalog, [label for label in sample if label in held])
    wrong = [label for label, text in truth.items() if held[label] != text]
    if wrong:
        out.append(f"chunk texts: {len(wrong)} of {len(truth)} sampled chunks in "
                   f"{root / TEXTS_FOLDER} hold other texts than the catalog's (labels "
                   f"{wrong[:_SAMPLE]}): {fix}")
    return out


def _catalog_problems(catalog: Catalog) -> list[str]:
    out = []
    for check_name, message in (
        ("orphans", "chunks whose document is gone"),
        ("counts", "documents whose chunk count differs from total_chunks"),
        ("offsets", "chunks whose offsets do not cite their document's text"),
    ):
        rows = cm.catalog_sample(catalog, check_name, _SAMPLE)
        if rows:
            out.append(f"catalog: {message}: {rows} (re-ingest or reindex these documents)")
    return out


def _snapshot_problems(root: Path, facts: dict[str, Any]) -> list[str]:
    base = layout.snapshots_root(root)
    live = mf.read_manifest(root)
    if not base.is_dir() or live is None:  # a file there is reported with the store's folders
        return []
    # a retention file that cannot be read fails every snapshot command (list, create, pin)
    problem = settings_problem(root)
    out = [f"snapshots: {problem}"] if problem is not None else []
    out += _not_folders(base)
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")
                         and p.name != layout.SNAPSHOT_SETTINGS_NAME):  # said just above
        try:
            info = read_info(folder)
        except (OSError, ValueError) as exc:
            reason = f"cannot be read ({exc.strerror})" if isinstance(exc, OSError) else str(exc)
            out.append(f"snapshot {folder.name!r} {layout.SNAPSHOT_INFO_NAME} {reason}: delete it")
            continue
        if (newer := newer_format(folder)) is not None:
            # sound, only newer: "delete it" would have thrown a good snapshot away
            out.append(f"snapshot {folder.name!r} was written by a newer enginelib ({newer}): "
                       "it is not damaged, keep it: upgrade enginelib to check, open or "
                       "restore it")
            continue
        untrusted = index_damage(folder)
        out += _snapshot_file_problems(folder, live, untrusted)
        out += _snapshot_stamp_problems(folder, live, info.get("generation"), set(untrusted))
        if not checksummed(folder):
            facts.setdefault("snapshots_not_checksummed", []).append(folder.name)
    return out


def _not_folders(base: Path) -> list[str]:
    """Entries of the snapshots folder under a snapshot's name that are no folder (a file, a
    link leading nowhere): every snapshot command names one damaged and says to delete it,
    a create of that name is refused, and the listing leaves it out (settings.json, not a
    snapshot name, is not one of them); `check` said nothing of it."""
    out = []
    for entry in sorted(base.iterdir()):
        if entry.name.startswith(".") or entry.is_dir() or not is_snapshot_name(entry.name):
            continue
        if entry.is_symlink():
            out.append(f"snapshot {entry.name!r} is a link to {os.readlink(entry)}, which is not "
                       "a folder there (a drive not mounted?): mount it, or delete it")
        else:
            out.append(f"snapshot {entry.name!r} is a file, not a snapshot folder: delete it")
    return out


def _snapshot_file_problems(folder: Path, live: mf.Manifest,
                            untrusted: dict[str, FileProblem]) -> list[str]:
    """A snapshot's tables and manifest (it cannot be used without them), then its index
    files (derived: an open rebuilds them from the tables)."""
    name, out = folder.name, []
    # An older snapshot without a table added since still loads and restores: not a problem.
    missing = [t for t in layout.SNAPSHOT_TABLES if t not in OPTIONAL_TABLES
               and not layout.snapshot_table(folder, t).is_file()]
    if missing or not (folder / mf.MANIFEST_NAME).is_file():
        out.append(f"snapshot {name!r} lacks {missing or ['manifest.json']}: delete it")
    elif (problem := _snapshot_manifest_problem(folder)) is not None:
        out.append(f"snapshot {name!r} {problem}: delete it")
    elif (problem := damage(folder)) is not None:
        out.append(f"snapshot {name!r} is damaged: {problem}: delete it")
    out += [f"snapshot {name!r} {problem.index_name}: {problem}: opening the snapshot rebuilds it "
            f"from its tables (answers stay right, opening is slower); delete it to clear this"
            for problem in untrusted.values()]
    if layout.TEXT_DIR not in untrusted:  # Tantivy's own footers, for older snapshots too
        problems = verify_files(TEXT_FILES[live.text_backend],
                                layout.text_folder(layout.index_root(folder)))
        if problems:
            out.append(f"snapshot {name!r} text index: {problems[0]}: delete it")
    if not checksummed(folder) and not out and (problem := _older_vector_problem(folder)):
        out.append(f"snapshot {name!r} vector index: {problem}: opening the snapshot rebuilds "
                   f"it from its tables (answers stay right, opening is slower); delete it to "
                   f"clear this")
    return out


def _older_vector_problem(folder: Path) -> str | None:
    """For a snapshot taken before the per-file sums (its rows file has none): sampled vectors
    of its index that are not those of its tables."""
    manifest = mf.read_manifest(folder)
    assert manifest is not None  # the caller found its tables and manifest sound
    index = VECTOR_BACKENDS[manifest.vector_backend](
        layout.vector_folder(layout.index_root(folder)), manifest.embedding_dim)
    if index.generation is None:
        return None  # unreadable: an open rebuilds it, and its stamp is reported
    catalog = load_catalog(folder, manifest.embedding_dim)
    try:
        bad, compared = wrong_vectors(catalog, index, catalog.all_labels())
    finally:
        catalog.close()
    if not len(bad):
        return None
    return (f"{len(bad)} of {compared} sampled chunks hold other vectors than its tables "
            f"(labels {bad[:_SAMPLE].tolist()})")


def _snapshot_stamp_problems(folder: Path, live: mf.Manifest, generation: object,
                             reported: set[str]) -> list[str]:
    """Index stamps that cannot be read, or that name another generation than the snapshot's
    (an open rebuilds such an index from the tables). Kinds in ``reported`` failed their
    checksums: said already."""
    indexes, out = layout.index_root(folder), []
    for kind, files in ((layout.VECTOR_DIR, VECTOR_FILES[live.vector_backend]),
                        (layout.TEXT_DIR, TEXT_FILES[live.text_backend])):
        if kind in reported:
            continue
        try:
            stamp = files.read_stamp(indexes / kind)
        except (OSError, ValueError) as exc:
            out.append(f"snapshot {folder.name!r} {kind} index: its stamp cannot be read "
                       f"({exc}): delete it")
            continue
        if stamp is None:
            out.append(f"snapshot {folder.name!r} {kind} index has no stamp: delete it")
        elif stamp.get("generation") != generation:
            out.append(f"snapshot {folder.name!r} {kind} index is stamped generation "
                       f"{stamp.get('generation')}, the snapshot is generation {generation}: "
                       f"delete it")
    return out


def _snapshot_manifest_problem(folder: Path) -> str | None:
    """Why a snapshot's manifest.json cannot be read (it cannot be opened then), or None."""
    try:
        mf.read_manifest(folder)
    except StoreError:
        path = folder / mf.MANIFEST_NAME
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            return f"manifest.json cannot be read ({exc.strerror})"
        except ValueError:
            return "manifest.json is not JSON (cut short or overwritten)"
        return "manifest.json is not a manifest"
    return None


# -- repair --------------------------------------------------------------------------------


@takes_store
def repair(target: StoreLike) -> IntegrityReport:
    """Rebuild both indexes (and the manifest's generation) from the catalog, then re-check."""
    if isinstance(target, StoreCore):
        target.require_writable()
        folders.move_aside(target.path, on_open=False)
        mended_jobs = _mend_job_tables(target)
        target.rebuild_indexes()
        if mf.read_manifest(target.path) is None:  # removed while the store was open
            mf.write_manifest(target.path, target.manifest)
        report = check(target, snapshots=False)
        report.facts["job_tables_mended"] = mended_jobs
        return report
    root = Path(target)
    mended = _mend_catalog(root)
    try:
        store = StoreCore.open_for_maintenance(target)
    except (StoreLockedError, StoreNotFoundError, IncompatibleStoreError, CorruptStoreError):
        raise
    except StoreError:
        # Opening replays the derived indexes; if even that fails, they are what is
        # broken: throw them away (under the writer lock) and open on the catalog alone.
        lock = acquire_writer_lock(root, 0.0)
        try:
            discard_index_files(layout.index_root(root))
        finally:
            lock.release()
        store = StoreCore.open_for_maintenance(target)
    try:
        # A writer's open moved a file in place of a derived folder aside; repair moves one in
        # place of the folders of what users made or queued too (snapshots, uploads, inbox).
        folders.move_aside(root, on_open=False)
        mended_jobs = _mend_job_tables(store)
        store.rebuild_indexes()
        report = check(store, snapshots=False)
    finally:
        store.close()
    report.facts["job_tables_mended"] = mended_jobs
    if mended is not None and mended.record is not None:
        report.facts["mended_blocks"] = [p.location for p in mended.patches]
        report.facts["mend_record"] = str(mended.record)
    return report


def _mend_job_tables(store: StoreCore) -> list[str]:
    """Job tables of another layout set aside and made anew with the rows they still hold:
    the queue refuses to run on them, saying to run `repair`."""
    store.require_writable()
    with store._catalog.transaction() as con:
        return job_tables.mend(con, utcnow())


def _mend_catalog(root: Path) -> MendReport | None:
    """Finish a mend a kill interrupted, then mend a block a killed checkpoint tore (a
    writer's open would too; here the report says so). None when there is nothing to mend."""
    if not layout.catalog_path(root).is_file() or mf.read_manifest(root) is None:
        return None  # the open says what is missing
    if not (root / PENDING_NAME).exists() and not fails_on_a_checksum(layout.catalog_path(root)):
        return None  # nothing torn: the usual repair, with the usual lock wait
    lock = acquire_writer_lock(root, 0.0)
    try:
        finish_pending(root)
        mended = mend_torn_blocks(root)
    finally:
        lock.release()
    return mended if mended.mended else None


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


@takes_store
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
    check_model_options(embedder, chunking)
    if isinstance(target, StoreCore):
        return _reindex_store(target, _reindex_embedder(target, embedder), chunking, progress)
    store = StoreCore.open_for_maintenance(target)
    try:
        return _reindex_store(store, _reindex_embedder(store, embedder), chunking, progress)
    finally:
        store.close()


def _reindex_embedder(store: StoreCore, embedder: Embedder | str | None) -> Embedder:
    """The embedder a reindex writes with: the one asked for, else the store's own (a
    reindex never switches models unless told to)."""
    chosen = (embedder_for_store(store.manifest.embedding_model, store.manifest.embedding_dim)
              if embedder is None else resolve_embedder(embedder))
    if is_external(chosen.name):
        # It failed at the first batch with the ingest's advice ("give records a 'vector'
        # field when ingesting, and search with query_vector="), which says nothing of this.
        raise EmbeddingError(
            f"a reindex embeds every chunk again, and this store has no model ({chosen.name}):"
            " its vectors are the ones you brought. To give it a model, name one (`enginelib "
            f"reindex --embedder {DEFAULT_EMBEDDER}`); to change its vectors, ingest your "
            "records again with new ones")
    return chosen


def _reindex_store(
    store: StoreCore, embedder: Embedder, chunking: ChunkingConfig | None, progress: bool
) -> ReindexReport:
    from .ingest import chunk_rows

    store.require_writable()
    started = time.monotonic()
    # A reindex re-chunks with the current chunker: a store built by the flat one moves to
    # section structure, one built before paragraph-sized chunks gets them (its sizes
    # kept); pass ``chunking`` to choose otherwise.
    recorded = ChunkingConfig.from_dict(store.manifest.chunking)
    config = chunking or replace(
        recorded, structure="sections",
        paragraph_tokens=recorded.paragraph_tokens or ChunkingConfig.paragraph_tokens,
    )
    config.validate()
    chunker, dim = Chunker(config), int(embedder.dim)
    catalog = store._catalog
    reuse_cache = dim == store.manifest.embedding_dim
    cm.create_staging(catalog, dim)
    ids = cm.document_ids(catalog)
    chunks_before, embedded = catalog.chunk_count(), 0
    acronyms: list[tuple[str, str, str]] = []  # relearned: a store may predate them
    with IngestProgress(enabled=progress) as bar:
        for start in range(0, len(ids), _BATCH):
            rows = cm.documents_to_rechunk(catalog, ids[start:start + _BATCH])
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
        count = cm.swap_in_staged(catalog, dim, generation, index_version, reuse_cache, acronyms)
        catalog.set_meta("reindexed_generation", str(generation))
        faults.crash_point("reindex_before_catalog_commit")
    try:
        faults.crash_point("reindex_after_catalog_commit")
        manifest = finish_reindex(root, store.manifest, marker, index_version)
    except BaseException:
        # The catalog holds the new model's vectors, and the marker left on disk has the next
        # writer's open finish the manifest. This object goes on with the new model: with the
        # old one its vector searches found nothing and its ingests failed in DuckDB
        # ("Cannot cast list with length 64 to array with length 32").
        store._adopt_model(reindexed_manifest(store.manifest, marker, index_version), embedder,
                           rebuild=False)
        raise
    store._adopt_model(manifest, embedder)
    return ReindexReport(
        documents=len(ids), chunks_before=chunks_before, chunks_after=count,
        chunks_embedded=embedded, generation=generation, index_version=index_version,
        embedding_model=embedder.name, embedding_dim=dim, chunking_hash=config.config_hash(),
        seconds=round(time.monotonic() - started, 3),
    )


def _stage_batch(
    store: StoreCore, embedder: Embedder, staged: list[tuple[str, list[Any], list[str]]],
    docs: list[tuple[str, int, list[str]]], reuse_cache: bool, bar: IngestProgress,
) -> int:
    """Embed one batch (cache hits skipped when the dimension is unchanged) into staging."""
    catalog = store._catalog
    texts = [t for _, _, row_texts in staged for t in row_texts]

    def lookup(keys: list[str]) -> dict[str, np.ndarray]:
        found = catalog.cached_embeddings(keys) if reuse_cache else {}
        rest = [k for k in keys if k not in found]
        return {**found, **cm.salvaged_embeddings(catalog, rest)}

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
    cm.stage(catalog, table, documents)
    catalog.release()
    faults.crash_point("reindex_batch_staged")
    return len(missing)
