"""What a killed or starved writer leaves behind, cleared by the next writer before it opens.

- ``.<name>.<random>.tmp`` in the store folder and ``indexes/``: a durable write
  (``durable.write_atomic``) that never renamed;
- inside each index folder, whatever its backend says an unfinished save leaves (see
  ``IndexFiles.recover``: hnswlib's unrenamed generation, Tantivy's unpublished segments);
- a file (or a pipe...) where the store keeps one of its folders (``misplaced``): renamed
  aside, never deleted.

Only the writer runs this (it holds the store's lock, so no other process is writing).
Everything removed is derived or unpublished: the catalog is the truth and the indexes
replay from it.
"""

from __future__ import annotations

import shutil
import warnings
from datetime import UTC, datetime
from pathlib import Path

from ..durable import remove_unfinished
from ..indexes import TEXT_FILES, VECTOR_FILES
from ..manifest import Manifest
from . import layout


def recover_files(root: Path, manifest: Manifest) -> list[Path]:
    """Remove a dead writer's leftovers under store ``root``; returns what was removed."""
    indexes = layout.index_root(root)
    _move_aside_what_is_not_a_folder(root)
    removed = remove_unfinished(root) + remove_unfinished(indexes)
    removed += VECTOR_FILES[manifest.vector_backend].recover(layout.vector_folder(indexes))
    removed += TEXT_FILES[manifest.text_backend].recover(layout.text_folder(indexes))
    return removed


def discard_index_files(indexes: Path) -> None:
    """Remove the derived index folders; the next sync rebuilds them from the catalog."""
    for name in layout.INDEX_KINDS:
        shutil.rmtree(indexes / name, ignore_errors=True)


# What the store keeps in each of its folders, for the messages about a file in its place.
INDEX_FILES = "derived index files"
QUERY_LOGS = "the query logs of read-only processes"


def _folders(root: Path) -> list[tuple[Path, str]]:
    indexes = layout.index_root(root)
    return [(indexes, INDEX_FILES), *((indexes / kind, INDEX_FILES) for kind in layout.INDEX_KINDS),
            (root / layout.QUERYLOG_DIR, QUERY_LOGS)]


def misplaced(root: Path) -> list[tuple[Path, str]]:
    """(path, what the store keeps there) for each of the store's folders that is a file (or
    a pipe...) instead: a writer's open moves it aside, `check` reports it. Nothing below a
    misplaced folder is looked at."""
    found: list[tuple[Path, str]] = []
    for path, holds in _folders(root):
        if any(path.is_relative_to(outer) for outer, _ in found):
            continue
        if path.is_symlink() or not path.exists() or path.is_dir():
            continue
        found.append((path, holds))
    return found


def _move_aside_what_is_not_a_folder(root: Path) -> None:
    """A file where the derived index folders belong made every writer's open fail ("Not a
    directory"); one where readers' query logs belong made every reader's search go unlogged.
    It is renamed aside, never deleted; the indexes rebuild from the catalog."""
    for path, holds in misplaced(root):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = path.with_name(f"{path.name}.not-a-folder-{stamp}")
        path.rename(aside)
        after = ("the indexes are rebuilt" if holds == INDEX_FILES
                 else "read-only processes log their searches there again")
        warnings.warn(f"enginelib: {path} was a file where the store keeps a folder of {holds}; "
                      f"it is kept as {aside.name} and {after}", RuntimeWarning, stacklevel=4)
