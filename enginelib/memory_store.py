"""In-memory stores: the full Store API in a private RAM-backed folder that vanishes on close.

The store core, both index backends and the query log are built around one folder (the
lock, the manifest, the commit protocol), so an in-memory store is that same folder placed
on a RAM-backed file system (``/dev/shm`` where the machine has one, the system temp folder
otherwise, or ``$ENGINELIB_MEMORY_DIR``) under a private name. Nothing is written to the user's disk on Linux, and the
folder is removed on ``close()``, when the Store object is garbage-collected, and at
interpreter exit, whichever comes first; a process killed by a signal cannot clean up, so
the next in-memory store opened on the machine removes folders whose process is gone.
``save(path)`` copies it to a real folder that then opens normally with
``enginelib.open(path)``.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import faults
from .chunker import ChunkingConfig
from .core.layout import MEMORY_PREFIX, MEMORY_STORE_NAME
from .core.lock import writer_holds
from .core.store_core import require_no_file_above
from .durable import copy_tree, fsync_dir
from .edge import guard
from .embedder import Embedder
from .errors import IngestError, InvalidInputError, StorageError, StoreError
from .store import LOCK_NAME, Store
from .types import LoadedDocument, validate_truth_level
from .validation import check_store_path

MEMORY = ":memory:"
_RAM_FOLDERS = ("/dev/shm",)
_PREFIX = MEMORY_PREFIX
MEMORY_DIR_ENV = "ENGINELIB_MEMORY_DIR"
# Options of enginelib.open() that only make sense for a folder the user named.
_FOLDER_ONLY = {
    "snapshot": "a snapshot is read from a store folder: save() the store, then open the "
                "folder with snapshot=",
    "read_only": "an in-memory store starts empty, so there is nothing to read: open a folder "
                 "read-only instead",
    "create": "an in-memory store is always new: drop create=",
    "lock_timeout": "no other process can see an in-memory store, so there is no lock to wait "
                    "for: drop lock_timeout=",
}


def is_memory_path(path: object) -> bool:
    return isinstance(path, str) and path == MEMORY


def ram_folder() -> str:
    """Where private in-memory stores live: $ENGINELIB_MEMORY_DIR if set, a tmpfs if there is
    one, else the temp folder."""
    chosen = os.environ.get(MEMORY_DIR_ENV)
    if chosen:
        if not (os.path.isdir(chosen) and os.access(chosen, os.W_OK | os.X_OK)):
            raise StorageError(f"${MEMORY_DIR_ENV} is {chosen[:200]!r}, which is not a folder "
                               f"this process can write: point it at one (a tmpfs such as "
                               f"/dev/shm keeps the store in RAM) or unset it", path=chosen)
        # absolute: a relative one made a relative store folder, so after a chdir (pytest's
        # monkeypatch.chdir) the store said its catalog was gone and close() removed nothing
        return os.path.abspath(chosen)
    for candidate in _RAM_FOLDERS:
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return tempfile.gettempdir()


_CLOSED = ("this in-memory store is closed, and its documents went with it: to keep a store "
           "past close(), save(path) it first and open that folder with enginelib.open(path)")


class MemoryStore(Store):
    """A Store whose folder is private, RAM-backed and removed on close, GC or exit."""

    in_memory = True
    _cleanup: weakref.finalize[Any, Any] | None = None

    def close(self) -> None:
        # The store's own advice after a close, "open it again with enginelib.open(path)",
        # named the private folder the close removes: following it made a new, empty store.
        self._catalog.closed_message = _CLOSED
        try:
            super().close()
        finally:
            if self._cleanup is not None:
                self._cleanup()

    def require_open(self) -> None:
        if self._shut:
            raise StoreError(_CLOSED, path=MEMORY)

    def save(self, path: str | Path) -> Path:
        """Copy this store to ``path`` (a new or empty folder); ``enginelib.open(path)`` then
        opens it normally, with the same embedder. The in-memory store stays usable."""
        if is_memory_path(path):
            # open(":memory:") never reads a folder of that name: the copy would be lost
            raise InvalidInputError(
                f"save() writes the store to a folder, and {MEMORY!r} names no folder "
                "(enginelib.open(':memory:') always starts empty): give a folder path")
        given = target = check_store_path(path)
        require_no_file_above(target)  # else "File exists", naming the file and not the path
        try:
            if target.is_symlink():
                # written where the link leads, which it then names: renamed over the link
                # itself, the save failed "Not a directory" (a link to an empty folder) or
                # replaced the link with the store (a link to nothing)
                target = Path(os.path.realpath(target))
            # the private folder around the store folder: close() removes all of it
            inside = target.resolve().is_relative_to(self.path.parent.resolve())
            taken = target.exists() and (not target.is_dir() or any(target.iterdir()))
        except (OSError, RuntimeError) as exc:  # a name too long, a folder it cannot list,
            # a loop of links (RuntimeError from Python 3.11-3.12's resolve(), raw)
            if isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP:
                raise InvalidInputError(f"cannot save the in-memory store to {target}: it goes "
                                        "through a loop of symbolic links; give another "
                                        "path") from exc
            raise InvalidInputError(f"cannot save the in-memory store to the path given "
                                    f"({len(str(target))} characters): {exc.strerror}") from exc
        if inside:
            raise InvalidInputError(
                f"cannot save the in-memory store to {target}: it is inside the store's own "
                f"folder ({self.path.parent}), private and removed on close; choose a path "
                "outside it")
        if taken:
            raise StoreError(
                f"cannot save the in-memory store to {target}: it exists and is not an empty "
                "folder; choose a new path",
                path=target,
            )
        self.persist()  # indexes and manifest stamped with the catalog's generation
        self._catalog.release()
        # Copied beside the target and renamed into place: a kill or a full disk half-way
        # left a folder with a manifest and part of a catalog that no open could use.
        with guard("save the in-memory store", target):
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.parent / f".{target.name}.saving-{uuid.uuid4().hex[:8]}"
            try:
                copy_tree(self.path, partial, ignore=shutil.ignore_patterns(LOCK_NAME))
                fsync_dir(partial)
                faults.crash_point("save_before_rename")
                if target.is_dir():
                    target.rmdir()  # empty (checked above)
                os.rename(partial, target)
                fsync_dir(target.parent)
            finally:
                shutil.rmtree(partial, ignore_errors=True)
        return given

    def stats(self) -> dict[str, Any]:
        data = super().stats()
        data["path"] = MEMORY
        return data


def open_memory(
    *,
    embedder: Embedder | None = None,
    chunking: ChunkingConfig | None = None,
    index_options: dict[str, Any] | None = None,
    records: Iterable[LoadedDocument | Mapping[str, Any]] | None = None,
    truth_level: str | None = None,
    **options: Any,
) -> MemoryStore:
    """A new, empty in-memory store, optionally seeded with ``records``.

    ``records`` are LoadedDocuments or dicts shaped like JSONL lines (``id``, ``text``,
    ``title``, metadata such as ``truth_level`` or ``tags``, and optionally their own
    ``vector``); ``truth_level`` applies to the records that carry none.
    """
    for name, why in _FOLDER_ONLY.items():
        value = options.pop(name, None)
        harmless = value is None or value is (name == "create") or (name == "lock_timeout" and value == 0)
        if not harmless:
            raise InvalidInputError(f"{MEMORY} does not take {name}={value!r}: {why}")
    if options:
        raise InvalidInputError(
            f"unknown option(s) {sorted(options)} for an in-memory store; it takes embedder, "
            "chunking, index_options, records and truth_level"
        )
    if truth_level is not None:  # checked with no record to apply it to, too: a typo shows
        validate_truth_level(truth_level)
    parent = ram_folder()
    sweep_orphans(Path(parent))
    folder = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=parent)
    try:
        store = MemoryStore.open(
            Path(folder) / MEMORY_STORE_NAME, embedder=embedder, chunking=chunking,
            index_options=index_options,
        )
        assert isinstance(store, MemoryStore)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    # Runs once: on close(), when the object is collected, or at interpreter exit.
    store._cleanup = weakref.finalize(store, shutil.rmtree, folder, ignore_errors=True)
    if records is not None:
        try:
            if not isinstance(records, Iterable):
                raise InvalidInputError(
                    f"records must be a list (or iterable) of records, got "
                    f"{type(records).__name__}")
            if isinstance(records, (str, bytes, Mapping, LoadedDocument)):
                # iterating one would give its characters or keys as "records"
                raise InvalidInputError(
                    f"records must be a list (or iterable) of records, got one "
                    f"{type(records).__name__}: wrap it in a list, e.g. memory([record])")
            documents = [as_document(r, i) for i, r in enumerate(records, start=1)]
            _refuse_shared_ids(documents)
            if documents:
                # "is not None": a falsy level ("" or 0) was dropped unseen, for the default L2
                ingest_options: dict[str, Any] = (
                    {} if truth_level is None else {"truth_level": truth_level})
                # a seed is what a test asserts against: every record goes in, or none
                try:
                    store.ingest_documents(documents, strict=True, **ingest_options)
                except IngestError as exc:
                    raise InvalidInputError(
                        f"a seed record cannot be stored ({exc.reason or exc}); an in-memory "
                        "store is seeded with every record or none") from exc
        except BaseException:
            store.close()
            raise
    return store


def _refuse_shared_ids(documents: list[LoadedDocument]) -> None:
    """Two seed records with one id: the ingest reads the second as a new version of the
    first, and the store held one document where the test counted two, without a word."""
    first: dict[object, int] = {}
    for number, document in enumerate(documents, start=1):
        seen = first.setdefault(document.id, number)
        if seen != number:
            raise InvalidInputError(
                f"records {seen} and {number} both have the id {document.id!r}: a seed holds "
                "each document once (the second would replace the first); give each record "
                "its own id")


def sweep_orphans(parent: Path) -> list[Path]:
    """Remove the folders of in-memory stores whose process died without cleaning up
    (killed by a signal: no finalizer runs), so RAM does not fill up across crashes.

    A pid this process cannot see is not a dead one: a process of another pid namespace (a
    container sharing /dev/shm or $ENGINELIB_MEMORY_DIR) had its live store removed under it.
    A store still holding its writer lock is left be, whoever holds it."""
    removed = []
    for folder in parent.glob(f"{_PREFIX}*-*"):
        pid_text = folder.name[len(_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        if writer_holds(folder / MEMORY_STORE_NAME):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def as_document(record: LoadedDocument | Mapping[str, Any], number: int) -> LoadedDocument:
    """A record given in Python: a LoadedDocument as is, a dict read like a JSONL line."""
    if isinstance(record, LoadedDocument):
        return record
    if not isinstance(record, Mapping):
        raise InvalidInputError(
            f"record {number} is a {type(record).__name__}; give dicts with 'id' and 'text' "
            "(like JSONL lines) or LoadedDocument objects"
        )
    from .loaders.jsonl import BadRecord, parse_record

    try:
        return parse_record(dict(record), base_id="record", line_no=number)
    except BadRecord as exc:
        raise InvalidInputError(f"record {number}: {exc}") from exc
