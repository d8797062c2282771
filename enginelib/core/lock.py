"""The writer lock: one writer per store folder at a time, any number of readers."""

from __future__ import annotations

import errno
import json
import os
import time
import weakref
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: the lock file alone
    fcntl = None  # type: ignore[assignment]

from filelock import FileLock, Timeout

from ..durable import write_atomic
from ..edge import os_error
from ..errors import StoreError, StoreLockedError
from ..input_files import read_regular
from .layout import HOLDER_NAME, LOCK_NAME

# The least any writer lock of this process waits (seconds). The command line sets it from
# `enginelib --wait` / $ENGINELIB_WAIT so that every command that writes (ingest, delete,
# snapshot, reindex...) waits alike; the library's own default stays 0 (fail at once).
_minimum_wait = 0.0
# The writer locks this process took, by lock file: a second open of a store this process
# already writes was told "another process is writing", and the user looked for one.
_held: weakref.WeakValueDictionary[str, WriterLock] = weakref.WeakValueDictionary()
# The store folders this process holds locked, by descriptor: a child forked without exec
# closes its copies, so a folder lock ends with the writer that took it.
_folder_fds: set[int] = set()


class WriterLock:
    """The writer lock of one store: its lock file (flock), and the store folder's own flock,
    which a removed lock file does not give up. A writer whose .writer.lock was deleted while
    it wrote (a user clearing a "stale" lock) let a second writer take a new file and commit
    beside it; the folder's lock refuses that second writer."""

    def __init__(self, file_lock: FileLock, folder_fd: int | None) -> None:
        self._file = file_lock
        self._folder_fd = folder_fd

    @property
    def is_locked(self) -> bool:
        return self._file.is_locked

    def release(self) -> None:
        fd, self._folder_fd = self._folder_fd, None
        if fd is not None:
            _folder_fds.discard(fd)
            os.close(fd)  # the folder's flock ends with its last descriptor
        self._file.release()


def _close_folder_fds_in_child() -> None:
    for fd in list(_folder_fds):
        try:
            os.close(fd)
        except OSError:
            pass
    _folder_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_folder_fds_in_child)


def set_minimum_wait(seconds: float) -> None:
    """Make every writer lock this process takes wait at least ``seconds`` for another writer."""
    global _minimum_wait
    _minimum_wait = max(0.0, float(seconds))


def acquire_writer_lock(root: Path, timeout: float) -> WriterLock:
    path = root / LOCK_NAME
    if path.is_dir():  # filelock would fail with a bare "Is a directory"
        raise StoreError(f"{path} is a folder where enginelib keeps its writer lock file: remove "
                         f"it (it holds nothing of the store) and write again", path=path)
    # Not thread-local (filelock's default): a Store opened in one thread and closed in
    # another (a web server's lifespan, a thread pool) released nothing, and the process
    # could never open that store for writing again ("this process already writes to ...").
    lock = FileLock(str(path), thread_local=False)
    timeout = max(timeout, _minimum_wait)
    started = time.monotonic()
    try:
        lock.acquire(timeout=timeout)
    except Timeout as exc:
        waited = f" (waited {timeout:g} s)" if timeout > 0 else ""
        mine = _held.get(str(path.resolve()))
        if mine is not None and mine.is_locked:
            raise StoreLockedError(
                f"this process already writes to {root} (a Store opened earlier and not "
                "closed yet): use that Store, close() it first, or open the store with "
                "read_only=True to search it", path=root) from exc
        holder = _holder(root)
        if holder is not None:
            raise StoreLockedError(
                f"{root} is held by {holder['what']} (pid {holder['pid']}){waited}: "
                f"{holder['instead']}; searches can read it meanwhile", path=root) from exc
        raise StoreLockedError(
            f"another process is writing to {root}{waited}; wait for it to finish, "
            "or open the store with read_only=True to search it",
            path=root,
        ) from exc
    except OSError as exc:
        # An unreadable lock file (another user's, chmod 000) was a bare PermissionError
        # from `check` and `repair`. A read-only medium stays an OSError: `check` then
        # checks without the lock, since no writer can exist there either.
        if exc.errno == errno.EROFS:
            raise
        raise os_error(exc, "taking the writer lock", path) from exc
    try:
        folder_fd = _lock_folder(root, started + timeout)
    except BaseException:
        lock.release()
        raise
    if folder_fd is False:
        lock.release()
        waited = f" (waited {timeout:g} s)" if timeout > 0 else ""
        raise StoreLockedError(
            f"another process is writing to {root}{waited}, though its lock file {path} was "
            f"removed while it wrote (leave {LOCK_NAME} in place: it is how writers take "
            "turns); wait for it to finish, or open the store with read_only=True to search it",
            path=root)
    writer = WriterLock(lock, folder_fd)
    _held[str(path.resolve())] = writer
    return writer


def _lock_folder(root: Path, deadline: float) -> int | None | bool:
    """flock the store folder itself until ``deadline``: its descriptor, None where folders
    cannot be locked (the lock file alone then), False when another writer holds it."""
    if fcntl is None:
        return None
    try:
        fd = os.open(root, os.O_RDONLY)
    except OSError:
        return None
    while True:
        taken = _flock_now(fd, fcntl.LOCK_EX)
        if taken:
            _folder_fds.add(fd)
            return fd
        if taken is None or time.monotonic() >= deadline:
            os.close(fd)
            return None if taken is None else False
        time.sleep(0.05)


def _flock_now(fd: int, mode: int) -> bool | None:
    """Take the flock ``mode`` on ``fd`` without waiting: True when taken, False when
    another holder keeps it, None on a file system without flock on folders."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def writer_holds(root: Path) -> bool:
    """True while a writer holds the store folder ``root`` (its folder flock), whichever
    process it is: one whose pid this process cannot see (another pid namespace: a container
    sharing /dev/shm) too. False where folders cannot be locked."""
    if fcntl is None:
        return False
    try:
        fd = os.open(root, os.O_RDONLY)
    except OSError:
        return False
    try:
        return _flock_now(fd, fcntl.LOCK_SH) is False
    finally:
        os.close(fd)  # and with it the shared lock just taken


def note_holder(root: Path, what: str, instead: str) -> None:
    """Say, while this process holds the writer lock for long, what holds it and what another
    writer can do instead; ``clear_holder`` when done (a dead holder's note is ignored)."""
    payload = {"pid": os.getpid(), "what": what, "instead": instead}
    write_atomic(root / HOLDER_NAME, json.dumps(payload).encode("utf-8"))


def clear_holder(root: Path) -> None:
    holder = _holder(root)
    if holder is not None and holder["pid"] == os.getpid():
        (root / HOLDER_NAME).unlink(missing_ok=True)


def _holder(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_regular(root / HOLDER_NAME).decode("utf-8"))
        pid = int(data["pid"])
        what, instead = str(data["what"]), str(data["instead"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a holder killed without clearing its note
    except PermissionError:
        pass  # alive, another user's
    return {"pid": pid, "what": what, "instead": instead}
