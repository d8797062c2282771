"""What a killed or starved writer leaves behind, cleared by the next writer before it opens.

- ``.<name>.<random>.tmp`` in the store folder and ``indexes/``: a durable write
  (``durable.write_atomic``) that never renamed;
- inside each index folder, whatever its backend says an unfinished save leaves (see
  ``IndexFiles.recover``: hnswlib's unrenamed generation, Tantivy's unpublished segments).

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
    _move_aside_what_is_not_a_folder(indexes)
    removed = remove_unfinished(root) + remove_unfinished(indexes)
    removed += VECTOR_FILES[manifest.vector_backend].recover(layout.vector_folder(indexes))
    removed += TEXT_FILES[manifest.text_backend].recover(layout.text_folder(indexes))
    return removed


def discard_index_files(indexes: Path) -> None:
    """Remove the derived index folders; the next sync rebuilds them from the catalog."""
    for name in layout.INDEX_KINDS:
        shutil.rmtree(indexes / name, ignore_errors=True)


def _move_aside_what_is_not_a_folder(indexes: Path) -> None:
    """A file where the derived index folders belong made every writer's open fail ("Not a
    directory"): it is renamed aside, never deleted, and the indexes rebuild from the catalog."""
    for path in (indexes, *(indexes / kind for kind in layout.INDEX_KINDS)):
        if path.is_symlink() or not path.exists() or path.is_dir():
            continue
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = path.with_name(f"{path.name}.not-a-folder-{stamp}")
        path.rename(aside)
        warnings.warn(f"enginelib: {path} was a file where the store keeps a folder of derived "
                      f"index files; it is kept as {aside.name} and the indexes are rebuilt",
                      RuntimeWarning, stacklevel=4)
        if path == indexes:
            return
