"""The writer lock: one writer per store folder at a time, any number of readers."""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import StoreLockedError
from .layout import LOCK_NAME


def acquire_writer_lock(root: Path, timeout: float) -> FileLock:
    lock = FileLock(str(root / LOCK_NAME))
    try:
        lock.acquire(timeout=timeout)
    except Timeout as exc:
        raise StoreLockedError(
            f"another process is writing to {root}; wait for it to finish, "
            "or open the store with read_only=True to search it",
            path=root,
        ) from exc
    return lock
