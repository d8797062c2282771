"""Dependency errors mapped to enginelib errors at the edge of each public operation.

DuckDB, Tantivy (a Rust ``PanicException`` that derives from BaseException), hnswlib
(RuntimeError) and the file system (OSError) each fail in their own words. A public
operation runs inside ``guard``, which re-raises them as the error tree of
``enginelib.errors`` with what to do next; enginelib's own errors pass through untouched.
"""

from __future__ import annotations

import errno as errno_codes
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from .core.layout import way_out
from .errors import BackendError, DiskFullError, EngineError, StorageError

_FULL = {errno_codes.ENOSPC, errno_codes.EDQUOT, errno_codes.EFBIG}
_DENIED = {errno_codes.EROFS, errno_codes.EACCES, errno_codes.EPERM}
# DuckDB says a full disk in the C library's words (strerror of ENOSPC, EDQUOT, EFBIG: a
# file past the file system's or the process's size limit) or its own
_FULL_WORDS = ("No space left", "disk is full", "Disk full", "Disk quota exceeded",
               "File too large")


# A KeyboardInterrupt raised in a Python callback DuckDB made: its text is "KeyboardInterrupt:
# ..." or the callback's whole traceback, ending in that line.
_PYTHON_INTERRUPT = re.compile(r"^KeyboardInterrupt\b", re.MULTILINE)


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C: a KeyboardInterrupt, or DuckDB's words for one. DuckDB
    takes the SIGINT that reaches a running query and raises RuntimeError('Query
    interrupted') (2.x; InterruptException before), and one raised in a Python callback it
    makes (``register``) comes out as a duckdb.Error 'KeyboardInterrupt: ...' (or its
    traceback); the KeyboardInterrupt itself is gone. Taken as errors, a Ctrl-C read
    "unexpected RuntimeError ... a bug in enginelib", or "failed in the catalog: run check
    and repair"."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    interrupt = getattr(duckdb, "InterruptException", None)
    if interrupt is not None and isinstance(exc, interrupt):
        return True
    if type(exc) is RuntimeError and str(exc) == "Query interrupted":
        return True
    return isinstance(exc, duckdb.Error) and _PYTHON_INTERRUPT.search(str(exc)) is not None


def as_interrupt(exc: BaseException) -> KeyboardInterrupt:
    """``exc``, a Ctrl-C (see ``interrupted``), as the KeyboardInterrupt it stands for."""
    if isinstance(exc, KeyboardInterrupt):
        return exc
    stop = KeyboardInterrupt()
    stop.__cause__ = exc
    return stop


def map_error(exc: BaseException, operation: str, path: str | Path | None) -> EngineError | None:
    """The enginelib error for a dependency's exception, or None to let it through (a
    Ctrl-C in DuckDB's words too: ``interrupted``)."""
    if isinstance(exc, EngineError) or interrupted(exc):
        return None
    where = f" ({path})" if path is not None else ""
    if isinstance(exc, OSError) and exc.errno is not None:
        return os_error(exc, operation, path)
    if isinstance(exc, duckdb.Error):
        text = str(exc)
        if any(word in text for word in _FULL_WORDS):
            return _disk_full(operation, path)
        if "Read-only file system" in text or "Permission denied" in text:
            return StorageError(
                f"{operation} failed: the store cannot be written{where}: {text.splitlines()[0]}; "
                "open it with read_only=True or move it to a writable place", path=path,
            )
        fix = way_out(path, "run `enginelib check` and `enginelib repair`",
                      "call store.check() and store.repair()")
        return BackendError(
            f"{operation} failed in the catalog (DuckDB){where}: "
            f"{text.splitlines()[0] if text else exc!r}; {fix} if it happens again", path=path,
        )
    if type(exc).__name__ == "PanicException" or (
        isinstance(exc, (ValueError, RuntimeError)) and _from_module(exc, ("tantivy", "hnswlib"))
    ):
        if any(word in str(exc) for word in _FULL_WORDS):  # Tantivy's "(os error 28)"
            return _disk_full(operation, path)
        fix = way_out(path, "run `enginelib repair`", "call store.repair()")
        return BackendError(
            f"{operation} failed inside the search index{where}: {exc}; "
            f"{fix} to rebuild the indexes from the catalog", path=path,
        )
    if isinstance(exc, MemoryError):
        return BackendError(
            f"{operation} ran out of memory{where}: ask for fewer results (limit, offset, "
            "candidates) or smaller batches", path=path,
        )
    return None


def _disk_full(operation: str, path: str | Path | None) -> DiskFullError:
    where = f" ({path})" if path is not None else ""
    return DiskFullError(
        f"{operation} failed: the disk is full{where}; nothing past the last complete "
        "commit was written: free some space and retry", path=path, errno=errno_codes.ENOSPC,
    )


def os_error(exc: OSError, operation: str, path: str | Path | None) -> EngineError:
    """ENOSPC, EROFS, EACCES and the rest, as errors that say what to do."""
    target = exc.filename or path
    where = f" ({target})" if target is not None else ""
    reason = exc.strerror or str(exc)
    if exc.errno in _FULL:
        return DiskFullError(
            f"{operation} failed: no space left on the device{where}; nothing past the last "
            "complete commit was kept: free some space and retry", path=target, errno=exc.errno,
        )
    if exc.errno in _DENIED:
        return StorageError(
            f"{operation} failed: {reason}{where}; the file system is read-only or not yours: "
            "open the store with read_only=True (CLI: read commands) or fix the permissions",
            path=target, errno=exc.errno,
        )
    return StorageError(f"{operation} failed: {reason}{where}", path=target, errno=exc.errno)


def _from_module(exc: BaseException, prefixes: tuple[str, ...]) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module.startswith(prefixes) or module.startswith("enginelib.indexes"):
            return True
        tb = tb.tb_next
    return False


@contextmanager
def guard(operation: str, path: str | Path | None = None) -> Iterator[None]:
    """Run a public operation; dependency errors come out as enginelib errors."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        if interrupted(exc):  # DuckDB's Ctrl-C: the caller's KeyboardInterrupt again
            raise as_interrupt(exc) from exc
        mapped = map_error(exc, operation, path)
        if mapped is None:
            raise
        raise mapped from exc
