"""Snapshots: immutable, portable copies of a store (Parquet tables + index files + manifest).

On disk, inside the store folder (only relative paths, so a copied folder still works)::

    snapshots/settings.json            {"keep": 3, "pinned": [...]}  retention and pins
    snapshots/<name>/manifest.json     the store's manifest at the snapshot's generation
    snapshots/<name>/snapshot.json     name, creation time, generation, counts, a sum of
                                       every other file (snapshot_files.py)
    snapshots/<name>/tables/*.parquet  the catalog tables a search or a restore needs
    snapshots/<name>/indexes/          copy of indexes/, stamped with the same generation

A snapshot is written into ``snapshots/.tmp-*`` and renamed into place, so a crash
leaves either no snapshot or a complete one; deletes rename to ``.trash-*`` first. What a
killed create or delete leaves of either, the next writer removes (core/recovery.py).
Functions that change snapshots take a writable Store, or a path (then they open the
store for maintenance themselves, without needing its embedding model). Whether a
snapshot's files are still the ones it wrote is judged by snapshot_integrity.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from . import catalog_snapshots as cs
from . import faults
from . import manifest as mf
from . import snapshot_files as sf
from .catalog import Catalog, require_committed_catalog
from .catalog_rescue import replace_damaged_catalog
from .core import layout
from .core.folders import require_folder
from .core.layout import SNAPSHOT_INFO_NAME as INFO_NAME
from .core.layout import SNAPSHOT_SETTINGS_NAME as SETTINGS_NAME
from .core.layout import SNAPSHOT_TABLES as TABLES
from .core.layout import SNAPSHOT_TABLES_DIR as TABLES_DIR
from .core.layout import SNAPSHOTS_DIR
from .core.lock import acquire_writer_lock
from .core.recovery import remove_unfinished_snapshots, snapshot_folder_in_hand
from .core.store_core import StoreCore
from .durable import file_crc32, fsync_dir, fsync_file, remove_unfinished, write_atomic
from .errors import (
    CorruptStoreError,
    DamagedSnapshotError,
    IncompatibleStoreError,
    InvalidInputError,
    SnapshotError,
    StoreError,
    StoreNotFoundError,
)
from .indexes import TEXT_FILES, VECTOR_FILES
from .input_files import read_regular

# The integrity checks moved to snapshot_integrity.py; their names stay importable here.
from .snapshot_integrity import (
    OPTIONAL_TABLES,
    check_sealable,
    checksummed,
    damage,
    index_damage,
    untrusted_indexes,
    wrong_older_vectors,
)
from .snapshot_restore import RestoreReport, unrestorable
from .store_target import StoreLike, takes_store
from .text import excerpt, shell_word
from .utc import stamp_instant, utc_stamp
from .validation import MAX_KEEP, check_bool

LIVE = "live"  # the name that means "the live store" in diffs
DEFAULT_KEEP = 3
FORMAT_VERSION = 1
# Steps of snapshot create/restore where the fault-injection tests kill the process.
SNAPSHOT_STEPS: tuple[str, ...] = (
    "snapshot_before_rename",
    "restore_before_catalog_commit",
    "restore_after_catalog_commit",
)
# A delete's step between its rename to ``.trash-*`` and the removal (the tests kill there).
DELETE_STEP = "snapshot_delete_after_rename"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_AUTO_NAME = re.compile(r"^(\d{4}\.\d{2})\.(\d+)$")



@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    created_at: str
    generation: int
    index_version: str
    documents: int
    chunks: int
    embedding_model: str
    embedding_dim: int
    chunking_hash: str
    pinned: bool = False
    size_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DocumentChange:
    document_id: str
    change: str  # added | removed | changed
    version_a: str | None
    version_b: str | None
    chunks_a: int | None
    chunks_b: int | None
    content_changed: bool


@dataclass(frozen=True)
class SnapshotDiff:
    a: str
    b: str
    added: tuple[DocumentChange, ...]
    removed: tuple[DocumentChange, ...]
    changed: tuple[DocumentChange, ...]
    unchanged: int
    documents_a: int
    documents_b: int
    chunks_a: int
    chunks_b: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- names, folders, settings --------------------------------------------------------------


def _root(target: StoreLike) -> Path:
    return target.path if isinstance(target, StoreCore) else Path(target)


def snapshots_dir(target: StoreLike) -> Path:
    return _base(_root(target))


def _base(root: Path) -> Path:
    """The snapshots folder; a file in its place is refused naming it and the fix (a create
    said "File exists", a list "cannot read .../settings.json: Not a directory")."""
    return require_folder(root, SNAPSHOTS_DIR)


def validate_name(name: str) -> str:
    # Names become folder names: no separators, no dot-prefixed (temporary) names, and not
    # the retention file beside them (a snapshot folder there wedged every later command).
    if not isinstance(name, str) or not is_snapshot_name(name):
        raise InvalidInputError(
            f"snapshot name {excerpt(name)} is not allowed: use letters, digits, '.', '_' or '-' "
            f"(up to 100, not starting with '.' or '-', and not {LIVE!r} or {SETTINGS_NAME!r})"
        )
    return name


def is_snapshot_name(name: str) -> bool:
    """Whether ``name`` is one a snapshot may have (``validate_name`` takes it)."""
    return bool(_NAME.fullmatch(name)) and name not in (LIVE, SETTINGS_NAME)


def _way(root: Path, command: str, call: str) -> str:
    return layout.way_out(root, f"`{command}`", call)


def _delete_way(root: Path, name: str) -> str:
    return _way(root, f"enginelib snapshot delete {name} --store {shell_word(root)}",
                f"store.delete_snapshot({name!r})")


def _list_way(root: Path) -> str:
    return _way(root, f"enginelib snapshot list --store {shell_word(root)}",
                "store.list_snapshots()")


def _folder(root: Path, name: str) -> Path:
    folder = _base(root) / validate_name(name)
    if _leftover(root, name) is not None:
        raise DamagedSnapshotError(
            f"snapshot {name!r} is damaged: {INFO_NAME} is missing or not a file: delete it "
            f"({_delete_way(root, name)})", path=folder)
    if not (folder / INFO_NAME).is_file():
        where = "this in-memory store" if layout.is_memory_store(root) else root
        raise SnapshotError(f"no snapshot {name!r} in {where}: {_list_way(root)} shows them",
                            path=folder)
    return folder


def _leftover(root: Path, name: str) -> Path | None:
    """The folder of ``name`` when it is there without a readable snapshot.json (a copy cut
    short, a snapshot.json lost): no command could use it, and it held its name for good."""
    folder = _base(root) / validate_name(name)
    identity = _identity(folder)
    if not os.path.lexists(folder) or (folder / INFO_NAME).is_file():
        return None
    if identity is not None and _identity(folder) != identity:
        return None  # deleted (or replaced) by another process meanwhile: not a leftover
    return folder


def _name_taken(root: Path, name: str) -> SnapshotError:
    folder = _base(root) / name
    if _leftover(root, name) is None:
        return SnapshotError(f"snapshot {name!r} already exists in {root}", path=folder)
    return SnapshotError(
        f"{folder} is in the way: it is not a usable snapshot (no readable {INFO_NAME}); "
        f"{_delete_way(root, name)} removes it", path=folder)


def newer_snapshot(name: str, why: str, folder: Path) -> IncompatibleStoreError:
    """A snapshot a newer enginelib wrote: sound, only not readable by this one (it was named
    damaged, with the advice to delete it)."""
    return IncompatibleStoreError(
        f"snapshot {name!r} was written by a newer enginelib ({why}): it is not damaged, "
        f"keep it: upgrade enginelib to open or restore it", path=folder)


def newer_format(folder: Path) -> str | None:
    """Why snapshot ``folder`` is of a newer format than this enginelib reads, or None."""
    try:
        found = sf.read_info(folder).get("format")
    except (OSError, ValueError):
        return None  # damage, judged and named by the integrity checks
    if isinstance(found, int) and not isinstance(found, bool) and found > FORMAT_VERSION:
        return (f"{INFO_NAME} has format {found}, newer than the {FORMAT_VERSION} this "
                "enginelib reads")
    try:
        mf.read_manifest(folder)
    except IncompatibleStoreError as exc:
        return str(exc)
    except StoreError:
        return None
    return None


def _sound(root: Path, name: str) -> Path:
    """The folder of snapshot ``name``, once its tables read; a damaged one is named with the
    way out, not as a failure of the live catalog that `check` and `repair` cannot mend."""
    folder = _folder(root, name)
    newer = newer_format(folder)
    if newer is not None:
        raise newer_snapshot(name, newer, folder)
    identity = _identity(folder)
    problem = damage(folder)
    if problem is not None and (identity is None or _identity(folder) != identity):
        raise _gone_meanwhile(root, name, folder)
    if problem is not None:
        raise DamagedSnapshotError(
            f"snapshot {name!r} is damaged: {problem}: delete it ({_delete_way(root, name)}) "
            "and use another snapshot", path=folder)
    return folder


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(folder)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _gone_meanwhile(root: Path, name: str, folder: Path) -> SnapshotError:
    """Another process deleted (or replaced) the snapshot while this one read it: its files
    vanishing under the read were called damage, with the advice to delete the snapshot,
    which by then could be a new one of the same name."""
    return SnapshotError(
        f"snapshot {name!r} was deleted or replaced by another process while it was being "
        f"read: {_list_way(root)} shows the snapshots now",
        path=folder)


def _read_settings(root: Path) -> dict[str, Any]:
    path = _base(root) / SETTINGS_NAME
    try:
        data = json.loads(read_regular(path).decode("utf-8"))  # a pipe: refused, not waited on
    except FileNotFoundError:
        return {"keep": DEFAULT_KEEP, "pinned": []}
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise SnapshotError(f"cannot read {path}: {why}: fix it, or delete it to return to the "
                            "default retention", path=path) from exc
    keep = data.get("keep", DEFAULT_KEEP) if isinstance(data, dict) else None
    pinned = data.get("pinned", []) if isinstance(data, dict) else None
    if (isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= MAX_KEEP
            or not isinstance(pinned, list) or not all(isinstance(p, str) for p in pinned)):
        raise SnapshotError(
            f"{path} is not a retention setting ({{\"keep\": 1..{MAX_KEEP}, \"pinned\": [names]}}): "
            "fix it, or delete it to return to the default", path=path)
    return {"keep": keep, "pinned": pinned}


def settings_problem(root: Path) -> str | None:
    """Why the retention file cannot be read (every snapshot command fails on it), or None."""
    try:
        _read_settings(root)
    except SnapshotError as exc:
        return str(exc)
    return None


def _write_settings(root: Path, settings: dict[str, Any]) -> None:
    payload = json.dumps(settings, indent=2, sort_keys=True).encode("utf-8")
    write_atomic(_base(root) / SETTINGS_NAME, payload)


def _check_keep(keep: int) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= MAX_KEEP:
        raise InvalidInputError(
            f"snapshot retention keep must be an int within 1..{MAX_KEEP:,}, got {keep!r}")
    return keep


@takes_store
def next_name(target: StoreLike, today: date | None = None) -> str:
    """The next free YYYY.MM.patch name: the month in UTC, as ``created_at`` is (patch counts
    this month's auto-named snapshots). Names taken in the server's local month before stay
    valid and are counted with the month they say."""
    root = _root(target)
    folder = _base(root)
    names = [p.name for p in folder.iterdir()] if folder.exists() else []
    prefix = mf.next_index_version(None, today).rsplit(".", 1)[0]
    patches = [int(m.group(2)) for n in names if (m := _AUTO_NAME.match(n)) and m.group(1) == prefix]
    previous = f"{prefix}.{max(patches)}" if patches else None
    name = mf.next_index_version(previous, today)
    if not _NAME.fullmatch(name):
        # A snapshot named by hand with a huge patch (2026.11.999...) made the next one's
        # name too long for any command to name: created, then unreachable (show, delete,
        # restore and open refused it as "not allowed").
        raise SnapshotError(
            f"the next automatic snapshot name after {excerpt(previous)} would be "
            f"{len(name)} characters, more than the 100 a snapshot name may have: give this "
            f"snapshot a name (`enginelib snapshot create NAME`, "
            f"store.create_snapshot(NAME))", path=folder)
    return name


@contextmanager
def _writer(target: StoreLike) -> Iterator[Path]:
    """Hold the store's writer lock (already held when ``target`` is a writable Store)."""
    if isinstance(target, StoreCore):
        target.require_writable()
        yield target.path
        return
    root = Path(target)
    if mf.read_manifest(root) is None:
        raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
    lock = acquire_writer_lock(root, 0.0)
    try:
        _remove_leftovers(root)  # only a path's: a Store's open removed them
        yield root
    finally:
        lock.release()


@contextmanager
def _writable_store(target: StoreLike) -> Iterator[StoreCore]:
    if isinstance(target, StoreCore):
        target.require_writable()
        yield target
        return
    store = StoreCore.open_for_maintenance(target)
    try:
        yield store
    finally:
        store.close()


# -- reading -------------------------------------------------------------------------------


def _info(folder: Path, pinned: set[str]) -> SnapshotInfo:
    data = sf.read_info(folder)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    known = set(SnapshotInfo.__dataclass_fields__) - {"pinned", "size_bytes"}
    return SnapshotInfo(**{k: data[k] for k in known}, pinned=folder.name in pinned, size_bytes=size)


@takes_store
def list_snapshots(target: StoreLike) -> list[SnapshotInfo]:
    """Snapshots oldest first; unreadable folders are skipped here and reported by check."""
    root = _root(target)
    folder = _base(root)
    if not root.exists():  # a mistyped --store said "no snapshots"
        raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
    if not folder.exists():
        return []
    pinned = set(_read_settings(root)["pinned"])
    found = []
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.name.startswith(".") and (entry / INFO_NAME).is_file():
            try:
                found.append(_info(entry, pinned))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    # by instant, not text: a stamp written before they were UTC is local time, and the text of
    # one written after it in a zone east of UTC could sort first (and be pruned first)
    return sorted(found, key=lambda s: (stamp_instant(s.created_at), s.created_at, s.name))


@takes_store
def get_snapshot(target: StoreLike, name: str) -> SnapshotInfo:
    root = _root(target)
    folder = _folder(root, name)
    try:
        return _info(folder, set(_read_settings(root)["pinned"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedSnapshotError(f"snapshot {name!r} is unreadable: {exc}", path=folder) from exc


@takes_store
def retention(target: StoreLike) -> int:
    return int(_read_settings(_root(target))["keep"])


# -- create --------------------------------------------------------------------------------


@takes_store
def create_snapshot(
    target: StoreLike, name: str | None = None, *, keep: int | None = None, pin: bool = False
) -> SnapshotInfo:
    """Snapshot the live store at its current generation, then apply retention.

    ``keep`` (>= 1) also becomes the store's retention setting; pinned snapshots never count
    against it and are never removed by it.
    """
    return create_and_prune(target, name, keep=keep, pin=pin)[0]


@takes_store
def create_and_prune(
    target: StoreLike, name: str | None = None, *, keep: int | None = None, pin: bool = False
) -> tuple[SnapshotInfo, list[str]]:
    """``create_snapshot``, and the names its retention removed (read under the writer lock:
    comparing listings before and after counted what other processes deleted meanwhile)."""
    if keep is not None:
        _check_keep(keep)
    with _writable_store(target) as store:
        root = store.path
        store.persist()  # indexes and manifest stamped with the catalog's generation
        check_sealable(store)
        base = _base(root)
        base.mkdir(exist_ok=True)
        _remove_leftovers(root)
        name = validate_name(name) if name is not None else next_name(root)
        if (base / name).exists():
            raise _name_taken(root, name)
        settings = _read_settings(root)  # a damaged setting stops us before anything is written
        tmp = base / f"{layout.SNAPSHOT_TMP_PREFIX}{name}-{secrets.token_hex(4)}"
        with snapshot_folder_in_hand(tmp.name):
            try:
                info = _write_snapshot(store, tmp, name)
                faults.crash_point("snapshot_before_rename")
                os.rename(tmp, base / name)
                fsync_dir(base)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        if keep is not None:
            settings["keep"] = keep
        # a pin left for a folder that is gone (removed by hand, or a delete killed before
        # settings.json was written) is not this new snapshot's
        settings["pinned"] = [n for n in settings["pinned"] if n != name] + ([name] if pin else [])
        _write_settings(root, settings)
        removed = _prune(root, settings["keep"])
        return replace(info, pinned=pin, size_bytes=get_snapshot(root, name).size_bytes), removed


def _write_snapshot(store: StoreCore, tmp: Path, name: str) -> SnapshotInfo:
    tables = tmp / TABLES_DIR
    tables.mkdir(parents=True)
    documents, chunks = cs.export_tables(store._catalog, TABLES, tables)
    store._catalog.release()
    # Each backend copies its saved files (leaving out those of an unfinished save).
    manifest = store.manifest
    live, copy = layout.index_root(store.path), layout.index_root(tmp)
    copy.mkdir()
    for kind, files in ((layout.VECTOR_DIR, VECTOR_FILES[manifest.vector_backend]),
                        (layout.TEXT_DIR, TEXT_FILES[manifest.text_backend])):
        if (live / kind).is_dir():
            files.copy(live / kind, copy / kind)
        stamp = files.read_stamp(copy / kind)
        if stamp is not None and stamp.get("generation") != store.generation:
            raise SnapshotError(f"index {kind} is not at generation "
                                f"{store.generation}: run "
                                f"{_way(store.path, 'enginelib repair', 'store.repair()')} first",
                                path=copy / kind)
    mf.write_manifest(tmp, manifest)
    info = SnapshotInfo(
        name=name, created_at=utc_stamp("microseconds"),
        generation=store.generation, index_version=store.index_version,
        documents=int(documents), chunks=int(chunks), embedding_model=manifest.embedding_model,
        embedding_dim=manifest.embedding_dim, chunking_hash=manifest.chunking_hash,
    )
    data = {k: v for k, v in info.to_dict().items() if k not in ("pinned", "size_bytes")}
    # table_crc32 for releases that predate file_sum64 (a snapshot folder copied to one)
    data.update(format=FORMAT_VERSION, tables=list(TABLES),
                table_crc32={p.name: file_crc32(p) for p in sorted(tables.iterdir()) if p.is_file()},
                file_sum64=sf.record(tmp))
    (tmp / INFO_NAME).write_text(json.dumps(sf.seal(data), indent=2, sort_keys=True),
                                 encoding="utf-8")
    for path in tmp.rglob("*"):
        if path.is_file():
            fsync_file(path)
    for path in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
        fsync_dir(path)
    return info


def _remove_leftovers(root: Path) -> None:
    """What a create, a delete or a retention write left when a crash interrupted it (the
    writer lock is held; a writer's open removes them too: core/recovery.py)."""
    remove_unfinished_snapshots(root)
    remove_unfinished(layout.snapshots_root(root))  # settings.json's temp file, not renamed


# -- delete, pin, retention ----------------------------------------------------------------


@takes_store
def delete_snapshot(target: StoreLike, name: str) -> None:
    """Delete a snapshot; a pinned one must be unpinned first, unless it lost its
    snapshot.json (no command can open, restore or unpin it: the delete takes its pin too)."""
    with _writer(target) as root:
        leftover = _leftover(root, name)
        folder = leftover or _folder(root, name)
        settings = _read_settings(root)
        if name in settings["pinned"]:
            if leftover is None:
                unpin = _way(root, f"enginelib snapshot pin {name} --unpin",
                             f"store.pin_snapshot({name!r}, pinned=False)")
                raise SnapshotError(
                    f"snapshot {name!r} is pinned: unpin it first ({unpin})", path=folder,
                )
            _remove(folder)
            settings["pinned"] = [n for n in settings["pinned"] if n != name]
            _write_settings(root, settings)
            return
        _remove(folder)


def _remove(folder: Path) -> None:
    # Rename first: a crash mid-delete must not leave a half snapshot that looks complete.
    # Killed before the removal, the trash is the next writer's to remove (core/recovery.py).
    trash = folder.with_name(
        f"{layout.SNAPSHOT_TRASH_PREFIX}{folder.name}-{secrets.token_hex(4)}")
    with snapshot_folder_in_hand(trash.name):
        os.rename(folder, trash)
        fsync_dir(folder.parent)
        faults.crash_point(DELETE_STEP)
        if trash.is_dir() and not trash.is_symlink():
            shutil.rmtree(trash, ignore_errors=True)
        else:
            trash.unlink()


@takes_store
def pin_snapshot(target: StoreLike, name: str, pinned: bool = True) -> SnapshotInfo:
    # A truthy "no" pinned the snapshot: the Store method checked its argument, this did not.
    check_bool("pinned", pinned)
    with _writer(target) as root:
        _folder(root, name)
        settings = _read_settings(root)
        names = [n for n in settings["pinned"] if n != name]
        settings["pinned"] = names + [name] if pinned else names
        _write_settings(root, settings)
        return get_snapshot(root, name)


@takes_store
def set_retention(target: StoreLike, keep: int) -> list[str]:
    """Keep the ``keep`` newest unpinned snapshots from now on; returns the names removed."""
    _check_keep(keep)
    with _writer(target) as root:
        settings = _read_settings(root)
        settings["keep"] = keep
        _write_settings(root, settings)
        return _prune(root, keep)


@takes_store
def apply_retention(target: StoreLike, keep: int | None = None) -> list[str]:
    """Delete the oldest unpinned snapshots beyond the newest ``keep``; returns their names."""
    with _writer(target) as root:
        return _prune(root, _check_keep(keep if keep is not None else retention(root)))


def _prune(root: Path, keep: int) -> list[str]:
    unpinned = [s for s in list_snapshots(root) if not s.pinned]
    doomed = unpinned[: max(0, len(unpinned) - keep)]
    for snapshot in doomed:
        _remove(_base(root) / snapshot.name)
    return [s.name for s in doomed]


# -- open read-only (the facade's ``open_snapshot`` builds the Store) -----------------


def snapshot_folder(root: Path, name: str) -> Path:
    """The folder of snapshot ``name``; SnapshotError when there is none or it is damaged."""
    return _sound(root, name)


def load_catalog(folder: Path, dim: int) -> Catalog:
    """An in-memory catalog holding the tables of ``folder``, as ``snapshot_folder`` returned
    it (its files checked: they are read once per open, not twice)."""
    catalog = Catalog.in_memory(dim)
    identity = _identity(folder)
    try:
        with catalog.transaction():
            for table in TABLES:
                path = folder / TABLES_DIR / f"{table}.parquet"
                if table in OPTIONAL_TABLES and not path.exists():
                    continue
                cs.replace_table(catalog, table, path)
    except Exception as exc:
        catalog.close()
        if identity is None or _identity(folder) != identity:
            raise _gone_meanwhile(folder.parent.parent, folder.name, folder) from exc
        raise DamagedSnapshotError(f"snapshot {folder.name!r} cannot be loaded: {exc}",
                                   path=folder) from exc
    return catalog


# -- diff ----------------------------------------------------------------------------------

def _documents(target: StoreLike, side: str) -> dict[str, tuple[str, tuple[Any, ...], str, int]]:
    """document_id -> (content_hash, metadata, version, total_chunks) for one side."""
    root = _root(target)
    if side != LIVE:
        folder = _sound(root, side)
        catalog = Catalog.in_memory(1)
        try:
            rows = cs.diff_rows_of_file(catalog, folder / TABLES_DIR / "documents.parquet")
        finally:
            catalog.close()
    elif isinstance(target, StoreCore) and target.snapshot is None:
        rows = cs.diff_rows(target._catalog)
        target._catalog.release()
    else:
        manifest = mf.read_manifest(root)
        if manifest is None:
            raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
        require_committed_catalog(layout.catalog_path(root), manifest.generation)
        catalog = Catalog(layout.catalog_path(root), manifest.embedding_dim, read_only=True)
        try:
            rows = cs.diff_rows(catalog)
        finally:
            catalog.close()
    return {r[0]: (r[1], tuple(r[4:]), r[2], int(r[3])) for r in rows}


@takes_store
def diff_snapshots(target: StoreLike, a: str, b: str = LIVE) -> SnapshotDiff:
    """Documents added, removed and changed from ``a`` to ``b`` (snapshot names or "live")."""
    left, right = _documents(target, a), _documents(target, b)
    added, removed, changed = [], [], []
    for doc_id in sorted(set(left) | set(right)):
        old, new = left.get(doc_id), right.get(doc_id)
        if old is None and new is not None:
            added.append(DocumentChange(doc_id, "added", None, new[2], None, new[3], True))
        elif new is None and old is not None:
            removed.append(DocumentChange(doc_id, "removed", old[2], None, old[3], None, True))
        elif old is not None and new is not None and (old[1] != new[1] or old[3] != new[3]):
            changed.append(DocumentChange(doc_id, "changed", old[2], new[2], old[3], new[3],
                                          old[0] != new[0]))
    return SnapshotDiff(
        a=a, b=b, added=tuple(added), removed=tuple(removed), changed=tuple(changed),
        unchanged=len(set(left) & set(right)) - len(changed),
        documents_a=len(left), documents_b=len(right),
        chunks_a=sum(v[3] for v in left.values()), chunks_b=sum(v[3] for v in right.values()),
    )


# -- restore -------------------------------------------------------------------------------


@takes_store
def restore_snapshot(target: StoreLike, name: str) -> RestoreReport:
    """Make the live store equal to snapshot ``name``, as a new generation.

    Crash-safe like any commit: one catalog transaction first (live documents it replaces
    or removes are archived in their history), then the indexes are rebuilt from the
    catalog; a crash in between is finished by the next open's index sync. Restored
    documents keep the snapshot's text, chunks and offsets; a document whose live version
    moved on gets a new version number, so later edits never reuse an archived one.

    A store whose catalog file is damaged (``CorruptStoreError``) can be restored by path:
    the damaged file is kept under another name (``RestoreReport.damaged_catalog``), and a
    fresh catalog takes the snapshot (``catalog_rescue``); so can one whose catalog file is
    missing (``RestoreReport.catalog_was_missing``).
    """
    from .snapshot_restore import restore_into

    def restore() -> RestoreReport:
        with _writable_store(target) as store:
            folder = _sound(store.path, name)
            _check_restorable(folder, name, store.manifest)
            return restore_into(store, folder, name)

    try:
        return restore()
    except CorruptStoreError:
        if isinstance(target, StoreCore):  # an open store object: its owner decides
            raise
        root = Path(target)
        live = mf.read_manifest(root)
        if live is None:
            raise
        _check_restorable(_sound(root, name), name, live)  # before the catalog is moved
        rescued = replace_damaged_catalog(root, get_snapshot(root, name).generation)
        if rescued is None:  # the file opens: the damage lies in a block the restore read
            raise
    if rescued.kept is None:
        return replace(restore(), catalog_was_missing=True)
    return replace(restore(), damaged_catalog=str(rescued.kept))


def snapshot_manifest(folder: Path) -> mf.Manifest:
    """The manifest of the snapshot in ``folder``; DamagedSnapshotError with the way out when
    it is missing or unreadable (the live manifest's own advice, to put it back from a copy,
    does not apply: another snapshot is used)."""
    name, root = folder.name, folder.parent.parent
    way_out = f"delete it ({_delete_way(root, name)})"
    try:
        manifest = mf.read_manifest(folder)
    except IncompatibleStoreError as exc:
        raise newer_snapshot(name, str(exc), folder) from exc
    except StoreError as exc:
        raise DamagedSnapshotError(
            f"snapshot {name!r} is damaged: its {mf.MANIFEST_NAME} is damaged or unreadable "
            f"({exc.__cause__ or exc}): {way_out} and use another one", path=folder) from exc
    if manifest is None:
        raise DamagedSnapshotError(
            f"snapshot {name!r} is damaged: it has no {mf.MANIFEST_NAME}: {way_out}", path=folder)
    return manifest


def _check_restorable(folder: Path, name: str, live: mf.Manifest) -> None:
    """Raise unless snapshot ``name`` was built with the live store's model and chunking."""
    reason = unrestorable(folder.parent.parent, name, snapshot_manifest(folder), live)
    if reason is not None:
        raise SnapshotError(reason, path=folder)


__all__ = [
    "DEFAULT_KEEP", "LIVE", "SNAPSHOT_STEPS", "DocumentChange", "RestoreReport", "SnapshotDiff",
    "SnapshotInfo", "apply_retention", "create_and_prune", "create_snapshot", "delete_snapshot",
    "diff_snapshots",
    "OPTIONAL_TABLES", "checksummed", "damage", "index_damage",
    "get_snapshot", "is_snapshot_name", "list_snapshots", "load_catalog", "next_name", "pin_snapshot",
    "restore_snapshot", "retention", "set_retention", "settings_problem", "snapshot_folder",
    "snapshot_manifest",
    "untrusted_indexes",
    "wrong_older_vectors",
]
