"""What a killed or starved writer leaves behind, cleared by the next writer before it opens.

- ``.<name>.<random>.tmp`` in the store folder and ``indexes/``: a durable write
  (``durable.write_atomic``) that never renamed;
- inside each index folder, whatever its backend says an unfinished save leaves (see
  ``IndexFiles.recover``: hnswlib's unrenamed generation, Tantivy's unpublished segments);
- a file (or a pipe...) where the store keeps one of its derived folders or the readers'
  query logs (``folders.move_aside``): renamed aside, never deleted.

Only the writer runs this (it holds the store's lock, so no other process is writing).
Everything removed is derived or unpublished: the catalog is the truth and the indexes
replay from it.
"""

from __future__ import annotations

import shutil
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
    return removed


def discard_index_files(indexes: Path) -> None:
    """Remove the derived index folders; the next sync rebuilds them from the catalog."""
    for name in layout.INDEX_KINDS:
        shutil.rmtree(indexes / name, ignore_errors=True)
