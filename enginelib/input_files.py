"""Files a user names as input, opened only when they are regular files.

A named pipe (FIFO) opened for reading waits until some other process writes to it, a
character device such as ``/dev/zero`` or ``/dev/urandom`` never ends, and a folder fails
with an error about something else: ``--vector-file``, ``eval --queries``, a file given to
``ingest`` hung the command for good, or read until memory ran out. So the kind of a path is
checked before it is opened; it is opened without blocking and checked again on the open
file (the path may have been replaced in between), and only then read.

A refusal is a :class:`NotRegularFileError`, an ``OSError`` whose ``strerror`` names the
kind of file: the readers already turn an ``OSError`` into their own typed error ("cannot
read: ..."), so each keeps its error type and its message says what the path is.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFileError(OSError):
    """A path that names a folder, a pipe, a device or a socket where a file is read;
    ``kind`` says which ("a named pipe (FIFO)")."""

    kind = "not a regular file"


def special_kind(mode: int) -> str | None:
    """"a named pipe (FIFO)", "a character device", ... for a ``st_mode``; None for a
    regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def broken_link(path: str | Path) -> str | None:
    """What a symbolic link that leads nowhere is ("a symbolic link to 'x', which does not
    exist", "a loop of symbolic links"); None for anything else. Python's ``exists()`` is
    False for both, which read as "no such file" beside a link the user can see."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links"
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)!r}, which does not exist"
    return None


def file_above(path: str | Path) -> Path | None:
    """The first folder of ``path`` that is in fact a file (``a`` for ``a/b/c`` when ``a``
    is a file), or None. ``stat`` and ``mkdir`` below it fail "Not a directory" naming the
    whole path, which does not say which part is in the way."""
    for parent in reversed(Path(path).parents):
        try:
            if not stat.S_ISDIR(os.stat(parent).st_mode):
                return parent
        except OSError:
            return None  # missing or unreadable: nothing above it can be a file
    return None


def not_regular(path: str | Path, kind: str) -> NotRegularFileError:
    """The refusal of ``path``, which is ``kind`` (see ``special_kind``)."""
    code = errno.EISDIR if kind == "a folder" else errno.EINVAL
    why = (f"{kind}, not a regular file" if kind != "not a regular file" else kind)
    if kind != "a folder":
        why += " (reading it could wait forever or never end)"
    error = NotRegularFileError(code, why, str(path))
    error.kind = kind
    return error


def check_regular(path: str | Path) -> None:
    """Raise NotRegularFileError unless ``path`` (links followed) is a regular file; an
    OSError for a path that cannot be looked at (missing, denied, a loop of links)."""
    kind = special_kind(os.stat(path).st_mode)
    if kind is not None:
        raise not_regular(path, kind)


def read_regular(path: str | Path) -> bytes:
    """The bytes of ``path`` if it is a regular file (``open_regular``), whole: for the
    small files a store keeps (stamps, index metadata)."""
    with open_regular(path) as handle:
        return handle.read()


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file.

    The path is looked at first, so a pipe or device is never opened; the file is then
    opened with ``O_NONBLOCK`` (a pipe swapped in since does not wait for a writer) and
    looked at again through its descriptor, so what is read is the file that was checked.
    """
    check_regular(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise not_regular(path, kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
