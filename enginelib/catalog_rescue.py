"""Start a store again from a snapshot when its catalog file is damaged.

DuckDB checksums every block. A catalog whose checkpoint a kill tore is mended by the
writer's open before a restore gets here (``catalog_mend``; the restore is then a plain
one); one that fails otherwise (its live metadata gone) opens to ``CorruptStoreError`` and
no write can mend it. Snapshots do not
depend on that file, so the way back is a restore:
the damaged file is kept under another name (never deleted: documents committed after the
snapshot are only in it), the store's derived files go (indexes, chunk texts, view
columns: all rebuilt from the catalog), and a fresh catalog takes the snapshot.

Crash-safe in this order: derived files are removed first; the fresh catalog is written
under a temporary name (a kill leaves a temp file the next writer removes); the damaged
file gets a second name (a hard link, a copy where links are refused) and its WAL moves
with it; then one atomic rename puts the fresh catalog in its place. Until that rename
the damaged catalog is still the store's, so a kill anywhere means running the restore
again; the store never lacks a catalog file. The fresh catalog starts past every
generation the store used, so nothing keyed by generation mistakes new data for old.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from . import faults
from . import manifest as mf
from .catalog import Catalog
from .chunk_texts import FOLDER as TEXTS_FOLDER
from .core import layout
from .core.lock import acquire_writer_lock
from .core.recovery import discard_index_files
from .durable import fsync_dir
from .errors import CorruptStoreError, StoreNotFoundError
from .indexes import TEXT_FILES, VECTOR_FILES
from .view_cache import FOLDER as VIEW_FOLDER

DAMAGED_PREFIX = "catalog.damaged-"


@dataclass(frozen=True)
class Rescued:
    """What ``replace_damaged_catalog`` did: where the damaged file is kept, or None when
    there was no file to keep (a missing catalog)."""

    kept: Path | None


def catalog_is_damaged(root: Path, dim: int) -> bool:
    """Whether the store's catalog file fails to open with DuckDB's corruption error, or is
    missing from a store that has committed."""
    path = layout.catalog_path(root)
    if not path.exists():
        manifest = mf.read_manifest(root)
        return manifest is not None and manifest.generation > 0
    try:
        catalog = Catalog(path, dim, read_only=True)
        catalog.close()
    except CorruptStoreError:
        return True
    return False


def replace_damaged_catalog(root: Path, snapshot_generation: int) -> Rescued | None:
    """Keep a damaged catalog under another name and put a fresh one in its place, under
    the writer lock.

    Returns what it did, or None when the catalog is not damaged (then nothing is touched).
    The caller restores a snapshot into the fresh catalog.
    """
    manifest = mf.read_manifest(root)
    if manifest is None:
        raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
    lock = acquire_writer_lock(root, 0.0)
    try:
        if not catalog_is_damaged(root, manifest.embedding_dim):
            return None
        generation = max(manifest.generation, snapshot_generation, _derived_generation(root)) + 1
        for folder in (TEXTS_FOLDER, VIEW_FOLDER):
            shutil.rmtree(root / folder, ignore_errors=True)
        discard_index_files(layout.index_root(root))
        faults.crash_point("rescue_after_derived_removed")
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        for stale in root.glob(f".{layout.CATALOG_NAME}.*.tmp*"):  # an earlier rescue's, killed
            stale.unlink(missing_ok=True)
        # named like a durable write's temp file: a writer's open clears it if we die here
        fresh = root / f".{layout.CATALOG_NAME}.{stamp}.tmp"
        catalog = Catalog(fresh, manifest.embedding_dim)
        with catalog.transaction():
            catalog.set_meta("generation", str(generation))
        catalog.close()
        damaged = layout.catalog_path(root)
        kept = root / f"{DAMAGED_PREFIX}{stamp}.duckdb"
        if not damaged.exists():  # a missing catalog: nothing to keep, only a place to fill
            os.replace(fresh, damaged)
            fsync_dir(root)
            return Rescued(kept=None)
        _keep(damaged, kept)
        wal = damaged.with_name(damaged.name + ".wal")
        if wal.exists():  # DuckDB replays <file>.wal: it goes with the damaged file, not the fresh one
            os.replace(wal, kept.with_name(kept.name + ".wal"))
        fsync_dir(root)
        faults.crash_point("rescue_after_damaged_kept")
        os.replace(fresh, damaged)  # atomic: the store never lacks a catalog file
        fsync_dir(root)
        return Rescued(kept=kept)
    finally:
        lock.release()


def _derived_generation(root: Path) -> int:
    """The newest generation the store's derived files name (index stamps, text segments):
    the damaged catalog may have committed past its manifest."""
    found = 0
    manifest = mf.read_manifest(root)
    if manifest is not None:
        indexes = layout.index_root(root)
        for files, folder in ((VECTOR_FILES[manifest.vector_backend], layout.vector_folder(indexes)),
                              (TEXT_FILES[manifest.text_backend], layout.text_folder(indexes))):
            try:
                stamp = files.read_stamp(folder) or {}
                found = max(found, int(stamp.get("generation", 0)))  # type: ignore[call-overload]
            except (OSError, ValueError, TypeError):
                continue
    for segment in (root / TEXTS_FOLDER).glob("seg-*"):
        part = segment.name.split("-")[1]
        if part.isdigit():
            found = max(found, int(part))
    return found


def _keep(damaged: Path, kept: Path) -> None:
    """A second name for the damaged file (a hard link; a copy where links are refused)."""
    try:
        os.link(damaged, kept)
    except OSError:
        shutil.copyfile(damaged, kept)
