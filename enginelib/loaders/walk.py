"""Paths to documents: walk folders in a fixed order, pick files by glob, load them lazily.

Ids are stable so that re-ingesting the same tree replaces documents instead of adding
copies: a file found by walking a folder gets its path relative to that folder, with "/"
(``guides/brakes.md``); a file given directly gets its file name (``brakes.md``); a JSONL
line keeps its own ``id``/``_id`` (else ``<file id>#<line number>``). Two folders holding
the same relative path therefore share an id, and the later one wins.

A document's ``source_path`` is absolute: the folder (or file) given, resolved, joined with
the path found under it, as a queued job records it. The path as typed ("docs/a.md") named
a different file from another working directory, and the same file typed two ways
("docs", "./docs", a symlink to it) read as a metadata change on every re-ingest; folder
sync (``ingest --prune``) needs to know which folder a stored document's file was in.

What a batch does with a problem depends on whose problem it is. A path the caller named
that does not exist is a mistake in the whole command: :class:`LoaderError` at once, before
anything is loaded. A file that cannot be loaded (unsupported, empty, binary, not UTF-8,
too big, a scanned PDF) or a bad JSONL line is one bad input among many: a
:class:`SkippedInput` whose reason names the file, and the batch goes on.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import InvalidInputError, LoaderError
from ..input_files import broken_link, special_kind
from ..types import LoadedDocument, SkippedInput
from ..validation import check_globs, check_path
from .base import DEFAULT_MAX_BYTES, LoadItem, fail, missing
from .formats import loader_for

PathLike = str | os.PathLike[str]


def matches(relative: str, patterns: Sequence[str], *, folder: bool = False) -> bool:
    """Whether a glob matches the relative path or the file name ("**/" may match nothing);
    one ending in "/" names a folder and matches everything in it ("drafts/", as a
    .gitignore line reads: at any depth unless the pattern holds another "/"), never a
    file of that name. ``folder``: ``relative`` is a folder's path."""
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        if pattern.endswith("/"):
            if _in_folder(relative if folder else relative.rpartition("/")[0],
                          pattern.rstrip("/")):
                return True
            continue
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern):
            return True
        if pattern.startswith("**/") and fnmatch.fnmatch(relative, pattern[3:]):
            return True
    return False


def _in_folder(relative: str, folder: str) -> bool:
    # "drafts/" matched nothing at all: neither a path nor a file name ends in "/", so
    # --exclude node_modules/ ingested node_modules without a word
    parts = relative.split("/") if relative else []
    if folder.startswith("**/"):
        folder = folder[3:]
    if "/" not in folder:
        return any(fnmatch.fnmatch(part, folder) for part in parts)
    return any(fnmatch.fnmatch("/".join(parts[:n]), folder) for n in range(1, len(parts) + 1))


def walk(root: Path, exclude: Sequence[str] = (), skip: Iterable[PathLike] = ()
         ) -> Iterator[tuple[Path, str] | SkippedInput]:
    """(file, path relative to root) under ``root``, depth first, entries sorted by name.

    Hidden entries (".git", ".DS_Store") are skipped; a folder matching an exclude glob is
    not entered, nor one of the ``skip`` folders met under ``root`` (the store being
    written); symlinked folders are followed once (a link loop ends there). The walk keeps
    its own stack of open folders: a generator recursing per level raised RecursionError
    (and lost the whole ingest) under a tree about a thousand folders deep.
    """
    seen: set[tuple[int, int]] = set()
    skipped = _identities(skip)
    # One entry per folder being read: its remaining entries, and its path under root.
    open_folders: list[tuple[Iterator[os.DirEntry[str]], str]] = []

    def enter(folder: Path, prefix: str) -> SkippedInput | None:
        try:
            info = folder.stat()
            identity = (info.st_dev, info.st_ino)
            if identity in seen or (prefix and identity in skipped):  # root: asked for
                return None
            seen.add(identity)
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            return SkippedInput(str(folder), f"{folder}: cannot list folder: {exc.strerror or exc}")
        open_folders.append((iter(entries), prefix))
        return None

    refused = enter(root, "")
    if refused is not None:
        yield refused
    while open_folders:
        entries, prefix = open_folders[-1]
        entry = next(entries, None)
        if entry is None:  # this folder is done: back to the one that holds it
            open_folders.pop()
            continue
        if entry.name.startswith("."):
            continue
        relative = prefix + entry.name
        try:
            is_folder = entry.is_dir()
        except OSError:
            is_folder = False
        if not is_folder:
            yield Path(entry.path), relative
        elif not matches(relative, exclude, folder=True):
            refused = enter(Path(entry.path), relative + "/")
            if refused is not None:
                yield refused


def _identities(folders: Iterable[PathLike]) -> set[tuple[int, int]]:
    """(device, inode) of each folder that exists: the same folder whatever path reaches it."""
    found = set()
    for folder in folders:
        try:
            info = os.stat(folder)
        except OSError:
            continue
        found.add((info.st_dev, info.st_ino))
    return found


def selected(root: Path, include: Sequence[str], exclude: Sequence[str],
             skip: Iterable[PathLike] = ()) -> Iterator[tuple[Path, str] | SkippedInput]:
    """The files of ``walk`` that the include globs (when any) and the exclude globs select,
    and its skips, as a folder ingest and a queued one both read them."""
    for found in walk(root, exclude, skip):
        if not isinstance(found, SkippedInput):
            relative = found[1]
            if (include and not matches(relative, include)) or matches(relative, exclude):
                continue
        yield found


def _load(path: Path, doc_id: str, max_bytes: int, source: Path) -> Iterator[LoadItem]:
    """One file's documents, recorded as coming from ``source`` (its absolute path);
    whatever is wrong with the file comes out as a SkippedInput naming ``path`` as given."""
    try:
        kind = _kind(path)
        if kind is not None:  # never opened: a pipe waits for a writer, a device never ends
            raise fail(path, f"{kind}, not a regular file: left unread")
        loader = loader_for(path)
        for item in loader(path, doc_id, max_bytes):
            if isinstance(item, LoadedDocument) and item.source_path == str(path):
                item = replace(item, source_path=str(source))
            yield item
    except LoaderError as exc:
        yield SkippedInput(str(path), str(exc))


def _items(
    roots: list[Path], include: Sequence[str], exclude: Sequence[str], max_bytes: int,
    skip: Sequence[PathLike],
) -> Iterator[LoadItem]:
    for root in roots:
        if not root.is_dir():
            yield from _load(root, root.name, max_bytes, root.resolve())
            continue
        base = root.resolve()
        for found in selected(root, include, exclude, skip):
            if isinstance(found, SkippedInput):
                yield found
                continue
            path, relative = found
            source = base.joinpath(*relative.split("/"))
            if not _utf8(str(source)):
                # said "document id contains a lone surrogate ... (decode the source as
                # UTF-8)": the id is the file's name, and renaming the file is what helps
                yield SkippedInput(str(path), f"{path}: its path is not valid UTF-8, so it "
                                   "can be no document's id or source: rename it (or leave it "
                                   "out with --exclude)")
                continue
            yield from _load(path, relative, max_bytes, source)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a name's undecodable bytes, kept as lone surrogates
        return False
    return True


def iter_load(
    paths: PathLike | Iterable[PathLike],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
    skip_folders: Iterable[PathLike] = (),
) -> Iterator[LoadedDocument | SkippedInput]:
    """Documents (and skipped inputs) from files and folders, lazily, in a fixed order.

    ``include``/``exclude`` are globs applied while walking folders, to the path relative
    to the folder and to the file name; a file named directly is always taken.
    ``skip_folders`` are never entered when a walk meets them (a store's own folder inside
    the folder it ingests). Raises LoaderError at once when a named path does not exist.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, Iterable):
        raise InvalidInputError(f"paths must be a path or a list of paths, got "
                                f"{type(paths).__name__}")
    roots = [check_path(p) for p in paths]
    if not roots:
        raise InvalidInputError("no paths given: name files or folders to load")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise InvalidInputError(f"max_bytes must be a positive int, got {max_bytes!r}")
    globs = {"include": check_globs("include", include), "exclude": check_globs("exclude", exclude)}
    for root in roots:
        if not _exists(root):
            raise fail(root, "no such file or folder")
        kind = _kind(root)
        if kind not in (None, "a folder"):  # named by the caller: the whole command is wrong
            raise fail(root, f"{kind}, not a file or folder: name the files or folders to "
                             "ingest (reading it could wait forever or never end)")
    if isinstance(skip_folders, (str, os.PathLike)):
        skip_folders = [skip_folders]
    return _items(roots, globs["include"], globs["exclude"], max_bytes, list(skip_folders))


def _kind(path: Path) -> str | None:
    """What a path found or named is when it is no regular file ("a named pipe (FIFO)", "a
    folder"), or None for a regular file; a path that is gone or a dangling link raises the
    LoaderError that says so."""
    try:
        return special_kind(path.stat().st_mode)
    except OSError as exc:
        link = broken_link(path)
        if link is not None:
            raise fail(path, link) from exc
        if not os.path.lexists(path):  # files are read lazily, after the folder is listed
            raise fail(path, "no longer exists (removed or renamed while the folder was "
                             "read): ingest the folder again to take it as it is now") from exc
        raise fail(path, f"cannot read: {exc.strerror or exc}") from exc


def _exists(path: Path) -> bool:
    try:
        if path.exists():
            return True
    except OSError as exc:  # a name too long
        raise fail(path, exc.strerror or str(exc)) from exc
    link = broken_link(path)  # "no such file" beside a link the user sees in `ls`
    if link is not None:
        raise fail(path, link)
    return False


def load_file(
    path: PathLike, *, doc_id: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[LoadedDocument]:
    """The documents of one file (one, or one per JSONL line), strictly.

    The id is ``doc_id`` or the file name. Any problem raises LoaderError (or
    UnsupportedFormatError), including the first bad JSONL line; use :func:`iter_load` to
    skip bad inputs and go on, :func:`stream_file` to take them one at a time.
    """
    return list(stream_file(path, doc_id=doc_id, max_bytes=max_bytes))


def stream_file(
    path: PathLike, *, doc_id: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[LoadedDocument]:
    """``load_file``'s documents one at a time, as the file is read: a JSONL file of any
    size is never held whole (a queued job streams it into the ingest, batch by batch).

    The path is checked and the first document loaded before this returns, so a file that
    cannot load at all raises here, as ``load_file`` does. A bad JSONL line later in the
    file raises LoaderError (naming its line) when the iteration reaches it, after the
    documents before it were handed on.
    """
    file = check_path(path)
    if not _exists(file):
        raise missing(file)
    kind = _kind(file)
    if kind == "a folder":
        raise fail(file, "is a folder: use iter_load() or Store.ingest_path() for folders")
    if kind is not None:  # a pipe or device: reading it could wait forever (a queued job did)
        raise fail(file, f"{kind}, not a regular file: give a regular file")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise InvalidInputError(f"max_bytes must be a positive int, got {max_bytes!r}")
    documents = _strict(loader_for(file)(file, doc_id or file.name, max_bytes), file)
    first = next(documents, None)  # every format but JSONL: its one document, whole
    return documents if first is None else itertools.chain([first], documents)


def _strict(items: Iterable[LoadItem], file: Path) -> Iterator[LoadedDocument]:
    """The documents of ``items``; the first SkippedInput raised as the LoaderError it is."""
    for item in items:
        if isinstance(item, SkippedInput):
            raise LoaderError(item.reason, path=file)
        yield item
