"""What a killed or starved writer leaves behind, cleared by the next writer before it opens.

- ``.<name>.<random>.tmp`` in the store folder and ``indexes/``: a durable write
  (``durable.write_atomic``) that never renamed;
- inside each index folder, whatever its backend says an unfinished save leaves (see
  ``IndexFiles.recover``: hnswlib's unrenamed generation, Tantivy's unpublished segments);
- a file (or a pipe...) where the store keeps one of its derived folders or the readers'
  query logs (``folders.move_aside``): renamed aside, never deleted;
- ``snapshots/.tmp-<name>-<8 hex>`` and ``snapshots/.trash-<name>-<8 hex>``: a snapshot
  create killed before its rename into place, a delete killed between its rename to trash
  and the removal (``snapshots.py``). Each is a whole copy of the store's tables and
  indexes that no command lists: left, it held that disk space for good.

Only the writer runs this (it holds the store's lock, so no other process is writing).
Everything removed is derived or unpublished: the catalog is the truth and the indexes
replay from it, and a snapshot folder is only ever published by its rename to its name.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..durable import remove_unfinished
from ..indexes import TEXT_FILES, VECTOR_FILES
from ..manifest import Manifest
from . import layout
from .folders import move_aside


def recover_files(root: Path, manifest: Manifest) -> list[Path]:
    """Remove a dead writer's leftovers under store ``root``; returns what was removed."""
    indexes = layout.index_root(root)
    # A file where the derived index folders belong made every writer's open fail ("Not a
    # directory"); one where readers' query logs belong made every reader's search go unlogged.
    move_aside(root, on_open=True)
    removed = remove_unfinished(root) + remove_unfinished(indexes)
    removed += VECTOR_FILES[manifest.vector_backend].recover(layout.vector_folder(indexes))
    removed += TEXT_FILES[manifest.text_backend].recover(layout.text_folder(indexes))
    removed += remove_unfinished_snapshots(root)
    return removed


# The names snapshots.py gives a create's folder and a deleted snapshot's, and no other:
# a prefix, the snapshot's name, '-', 8 hex digits (secrets.token_hex(4)).
_UNFINISHED_SNAPSHOT = re.compile(
    f"(?:{re.escape(layout.SNAPSHOT_TMP_PREFIX)}|{re.escape(layout.SNAPSHOT_TRASH_PREFIX)})"
    r".+-[0-9a-f]{8}", re.DOTALL)
# The names of such folders this process is writing or removing now. Across processes the
# writer lock keeps two apart (every writer or remover of one holds it); within a process, a
# sweep in one thread must not take the folder another thread's create or delete works in.
_IN_HAND: set[str] = set()
_IN_HAND_GUARD = threading.Lock()


@contextmanager
def snapshot_folder_in_hand(name: str) -> Iterator[None]:
    """Keep the sweeps of this process off ``snapshots/<name>`` (a create's ``.tmp-*``, a
    delete's ``.trash-*``) until the block ends."""
    with _IN_HAND_GUARD:
        _IN_HAND.add(name)
    try:
        yield
    finally:
        with _IN_HAND_GUARD:
            _IN_HAND.discard(name)


def unfinished_snapshots(root: Path) -> list[Path]:
    """The folders (or links, or files) in store ``root``'s snapshots folder that a killed
    snapshot create or delete left: named as snapshots.py names them, and in no process's
    hands here. Read-only: ``check`` lists them."""
    base = layout.snapshots_root(root)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        # none, a file, or a folder this user cannot read (another user's, a link loop):
        # nothing to list, and a writer's open or `check` must not fail on it
        return []
    with _IN_HAND_GUARD:
        in_hand = set(_IN_HAND)
    return [base / name for name in names
            if _UNFINISHED_SNAPSHOT.fullmatch(name) and name not in in_hand]


def remove_unfinished_snapshots(root: Path) -> list[Path]:
    """Remove ``unfinished_snapshots(root)``; returns what was removed. Only the writer
    lock's holder calls this: a create or a delete runs under that lock, so no other live
    process is writing or removing one of them now. Never follows a link: one named so is
    unlinked itself, and ``shutil.rmtree`` removes the links inside a folder, not what they
    point to. What cannot be removed (permissions) stays, and ``check`` names it."""
    removed: list[Path] = []
    for entry in unfinished_snapshots(root):
        # as much as it can: what it cannot (permissions) stays for check to name, and a
        # writer's open must not fail on it
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:  # a deleted snapshot "folder" that was a file or a link: the link goes
                entry.unlink()
        except OSError:
            continue
        if not os.path.lexists(entry):
            removed.append(entry)
    return removed


def size_of(folder: Path) -> int:
    """Bytes of the files under ``folder``, links not followed (a link counts itself)."""
    total = 0
    try:
        if not folder.is_dir() or folder.is_symlink():
            return folder.lstat().st_size
        for where, _folders, files in os.walk(folder):
            for name in files:
                try:
                    total += os.lstat(os.path.join(where, name)).st_size
                except OSError:
                    continue
    except OSError:
        return total
    return total


def discard_index_files(indexes: Path) -> None:
    """Remove the derived index folders; the next sync rebuilds them from the catalog."""
    for name in layout.INDEX_KINDS:
        shutil.rmtree(indexes / name, ignore_errors=True)
