"""Folder sync (``ingest_path(..., prune=True)``, ``enginelib ingest DOCS/ --prune``): after
the ingest, delete the documents whose file under a folder given is gone.

Which documents: those whose recorded ``source_path`` lies inside one of the folders given,
compared whole component by component (``docs2/`` or a sibling ``docsx/`` never match
``docs/``), both as written and with symlinks resolved (a folder reached through a link, or
given by another relative path, still matches), and whose file ``lstat`` says no longer
exists. Anything else keeps its document: a file still there that failed to load this time,
is in a format no loader reads, or is left out by --include/--exclude; a file that cannot be
checked now (permission denied, an I/O error, or reached through a symbolic link that leads
nowhere now: a linked folder on a drive that is not mounted); a document this very ingest just
read. Files given directly, not inside a folder given, are never pruned against.

A JSONL file's documents record that file as their source, so they go when the file is gone:
all of them, and only the ones whose current version came from it. A record removed from a
JSONL file that is still there is kept: it cannot be told from a line that failed to parse
this time; delete it by id.

Source paths recorded before they were absolute (as typed: ``docs/a.md``) are read from the
current working directory: run the sync from the directory the ingest ran in.

Before anything is deleted, a folder given that is no longer a folder, or one whose walk
finds no file at all while the store has documents from it (an unmounted drive, an emptied
share), refuses the whole prune with :class:`PruneRefusedError`. The deletes go through
:func:`enginelib.deletion.delete_documents`, one transaction: versions archived, a kill
before the commit deletes nothing and the next sync completes it.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .catalog_documents import source_paths
from .deletion import delete_documents
from .errors import EngineError, PruneRefusedError
from .types import IngestReport, SkippedInput

if TYPE_CHECKING:
    from .core.store_core import StoreCore

PRUNED = "deleted: its file is gone (ingest --prune)"
# A source path a caller gave that names no file ("https://...", "s3://..."): read as a
# relative path it would lie under the working directory, and look gone.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Ids named in a refusal; the rest are counted.
SHOWN_IDS = 5


def sync_folders(paths: Iterable[str | Path]) -> list[Path]:
    """The paths given that are folders (taken before the ingest: one that stops being a
    folder meanwhile refuses the prune); files given directly are not pruned against."""
    return [Path(p) for p in paths if Path(p).is_dir()]


def prune_after(store: StoreCore, report: IngestReport, folders: Sequence[Path]) -> IngestReport:
    """``report`` with the ids pruned from ``folders``; a failure carries ``.report`` (the
    ingest before it is committed whatever the prune does)."""
    try:
        pruned = prune_missing(store, folders,
                               keep={*report.added, *report.updated, *report.unchanged})
    except EngineError as exc:
        exc.report = report
        raise
    return replace(report, pruned=pruned)


def prune_missing(store: StoreCore, folders: Sequence[Path], *,
                  keep: Collection[str] = ()) -> tuple[str, ...]:
    """Delete the documents whose file inside ``folders`` is gone; their ids, sorted.

    ``keep``: ids never pruned (the ones the ingest just read). Raises PruneRefusedError
    before deleting anything when a folder is gone or holds no file while documents from it
    would go.
    """
    if not folders:
        return ()
    stale = stale_documents(source_paths(store._catalog), folders, keep=keep)
    store._catalog.release()
    for folder in folders:
        _refuse_unless_listable(folder, stale.get(folder, []), store.path)
    ids = sorted({i for found in stale.values() for i in found})
    delete_documents(store, ids, change_summary=PRUNED)
    return tuple(ids)


def stale_documents(rows: Iterable[tuple[str, str]], folders: Sequence[Path], *,
                    keep: Collection[str] = ()) -> dict[Path, list[str]]:
    """folder -> ids of the documents among ``rows`` (id, source path) whose file lies inside
    it and is gone (a document inside two folders given counts under the first)."""
    forms = [(folder, _forms(str(folder))) for folder in folders]
    # One folder's realpath serves all of its files (a gone file has no link of its own);
    # cached for this call only: links may change between two syncs of a long-lived process.
    real_folder = functools.lru_cache(maxsize=None)(os.path.realpath)
    stale: dict[Path, list[str]] = {}
    for document_id, source in rows:
        if document_id in keep or _URL.match(source):
            continue
        written = os.path.abspath(source)
        parent, name = os.path.split(written)
        real = os.path.join(real_folder(parent), name)
        for folder, folder_forms in forms:
            if _inside(written, folder_forms) or _inside(real, folder_forms):
                if _gone(written):
                    stale.setdefault(folder, []).append(document_id)
                break
    return stale


def _forms(path: str) -> tuple[str, ...]:
    """A folder as written (absolute) and with its symlinks resolved."""
    written = os.path.abspath(path)
    return tuple(dict.fromkeys((written, os.path.realpath(written))))


def _inside(path: str, folders: tuple[str, ...]) -> bool:
    # Whole components only: "/a/docs" is no prefix of "/a/docsx/f.md".
    return any(path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def _gone(path: str) -> bool:
    """Whether the file is certainly gone: only "no such file" says so, never an error that
    could pass (permission denied, an I/O error on a flaky mount)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return not _behind_a_broken_link(path)
    except OSError:
        return False
    return False


def _behind_a_broken_link(path: str) -> bool:
    """Whether the nearest folder above ``path`` that is still there is a symbolic link
    leading nowhere (``docs/usb -> /media/usb/docs`` with the drive not mounted): the
    ingest skips the link as broken, and its files cannot be told gone. A folder removed
    or replaced by a file above it, or a link to a folder that is there, says gone."""
    parent = os.path.dirname(path)
    while parent != os.path.dirname(parent):
        if os.path.lexists(parent):
            return os.path.islink(parent) and not os.path.exists(parent)
        parent = os.path.dirname(parent)
    return False


def _refuse_unless_listable(folder: Path, stale: list[str], store_path: Path) -> None:
    if not folder.is_dir():
        raise PruneRefusedError(
            f"{folder}: no longer a folder, so nothing was pruned (the ingest before it is "
            "committed); give folders that exist to --prune", path=folder,
            reason="not a folder")
    if stale and not _holds_a_file(folder, store_path):
        shown = ", ".join(repr(i) for i in stale[:SHOWN_IDS])
        more = f" and {len(stale) - SHOWN_IDS} more" if len(stale) > SHOWN_IDS else ""
        raise PruneRefusedError(
            f"{folder}: the folder holds no file now, but the store has {len(stale)} "
            f"document(s) from it ({shown}{more}): nothing was pruned, since an unmounted "
            "drive or an emptied share looks just like this (the ingest before it is "
            "committed). Mount it and run again; if it really is empty now, delete those "
            "documents by id (`enginelib delete ID...`)", path=folder, reason="empty folder")


def _holds_a_file(folder: Path, store_path: Path) -> bool:
    """Whether walking ``folder`` finds one file (hidden ones and the store's own folder
    aside, as the ingest walks); a folder that cannot be listed holds none we can see."""
    from .loaders.walk import walk

    return any(not isinstance(found, SkippedInput) for found in walk(folder, skip=(store_path,)))
