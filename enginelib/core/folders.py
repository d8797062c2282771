"""The folders a store keeps, and a file (or a pipe...) found where one of them belongs:
`check` names it, it is moved aside (renamed, never deleted), and a write there refuses.

Derived folders (the indexes, chunk texts, the view's saved columns) and the readers' query
logs are moved aside by any writer's open: nothing works right until they are, and what
they hold comes back by itself. The others hold what users made or queued (snapshots,
uploads, jobs queued through the inbox): only ``repair`` moves a file there aside, and a
command that would write there refuses, naming the file and the fix.
"""

from __future__ import annotations

import errno
import os
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import StorageError
from ..input_files import special_kind
from ..text import shell_word
from . import layout

# What the store keeps in each of its folders, for the messages about a file in its place.
INDEX_FILES = "derived index files"
QUERY_LOGS = "the query logs of read-only processes"
CHUNK_TEXTS = "chunk texts derived from the catalog"
VIEW_COLUMNS = "the chunk view's saved columns"
QUEUED_JOBS = "the jobs queued while another process writes the store"
UPLOADS = "the files uploaded to `serve`, kept until their jobs are done"
SNAPSHOTS = "snapshots"


@dataclass(frozen=True)
class Folder:
    path: Path
    holds: str  # one of the constants above
    hurt: str  # what goes wrong while a file sits there
    moved_on_open: bool  # by any writer's open; else by `repair` alone

    @property
    def after(self) -> str:
        """What follows once the file is moved aside."""
        return _AFTER.get(self.holds, "the store makes the folder again when it needs it")


_AFTER = {INDEX_FILES: "the indexes are rebuilt",
          QUERY_LOGS: "read-only processes log their searches there again"}


def folders(root: Path) -> list[Folder]:
    """The store's folders, outer ones first."""
    indexes = layout.index_root(root)
    unreadable = "the indexes cannot be read from there"
    return [
        Folder(indexes, INDEX_FILES, unreadable, True),
        *(Folder(indexes / kind, INDEX_FILES, unreadable, True) for kind in layout.INDEX_KINDS),
        Folder(root / layout.QUERYLOG_DIR, QUERY_LOGS,
               "searches by read-only processes are not logged", True),
        Folder(root / layout.TEXTS_DIR, CHUNK_TEXTS, "the searches of a writer already open fail",
               True),
        Folder(root / layout.VIEW_DIR, VIEW_COLUMNS,
               "they are never saved and every open of a large store reads them from the "
               "catalog again", True),
        Folder(root / layout.INBOX_DIR, QUEUED_JOBS,
               "`ingest --queue` fails while `serve` or a worker holds the store", False),
        Folder(root / layout.UPLOADS_DIR, UPLOADS, "`serve` refuses every upload", False),
        Folder(root / layout.SNAPSHOTS_DIR, SNAPSHOTS,
               "no snapshot can be created, listed or opened", False),
    ]


def _is_misplaced(path: Path) -> bool:
    # A link is the user's choice (a folder kept on another disk): left alone.
    return not path.is_symlink() and os.path.lexists(path) and not path.is_dir()


def misplaced(root: Path) -> list[Folder]:
    """Each of the store's folders that is a file (or a pipe...) instead. Nothing below a
    misplaced folder is looked at."""
    found: list[Folder] = []
    for folder in folders(root):
        if any(folder.path.is_relative_to(outer.path) for outer in found):
            continue
        if _is_misplaced(folder.path):
            found.append(folder)
    return found


def move_aside(root: Path, *, on_open: bool) -> list[Path]:
    """Rename each misplaced folder aside, with a warning that says where it is kept; only
    those a writer's open moves when ``on_open``. The caller holds the writer lock."""
    moved = []
    for folder in misplaced(root):
        if on_open and not folder.moved_on_open:
            continue
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = folder.path.with_name(f"{folder.path.name}.not-a-folder-{stamp}")
        folder.path.rename(aside)
        warnings.warn(f"enginelib: {folder.path} was a file where the store keeps a folder of "
                      f"{folder.holds}; it is kept as {aside.name} and {folder.after}",
                      RuntimeWarning, stacklevel=4)
        moved.append(aside)
    return moved


def problem(root: Path, folder: Folder) -> str:
    """check's line for a misplaced folder."""
    fix = f"run `enginelib repair --store {shell_word(root)}`"
    mover = "a writer's open moves" if folder.moved_on_open else "repair moves"
    return (f"{_what(folder)}, so {folder.hurt}: {fix} ({mover} it aside, keeping it)")


def require_folder(root: Path, name: str) -> Path:
    """``root / name``, one of the store's folders, for a write there; a file in its place
    is refused naming it and the fix (``mkdir`` or a write below it said only "File
    exists" or "Not a directory")."""
    path = root / name
    if _is_misplaced(path):
        [folder] = [f for f in folders(root) if f.path == path]
        raise StorageError(
            f"{_what(folder)}, so {folder.hurt}: run `enginelib repair --store "
            f"{shell_word(root)}` while no process writes the store (it moves the file aside, "
            "keeping it), or move it away yourself", path=path, errno=errno.ENOTDIR)
    return path


def _what(folder: Folder) -> str:
    kind = special_kind(folder.path.lstat().st_mode) or "a file"
    return f"{folder.path} is {kind} where the store keeps a folder of {folder.holds}"
