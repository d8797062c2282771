"""The writer lock: one writer per store folder at a time, any number of readers."""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import StoreLockedError
from .layout import LOCK_NAME

# The least any writer lock of this process waits (seconds). The command line sets it from
# `enginelib --wait` / $ENGINELIB_WAIT so that every command that writes (ingest, delete,
# snapshot, reindex...) waits alike; the library's own default stays 0 (fail at once).
_minimum_wait = 0.0


def set_minimum_wait(seconds: float) -> None:
    """Make every writer lock this process takes wait at least ``seconds`` for another writer."""
    global _minimum_wait
    _minimum_wait = max(0.0, float(seconds))


def acquire_writer_lock(root: Path, timeout: float) -> FileLock:
    lock = FileLock(str(root / LOCK_NAME))
    timeout = max(timeout, _minimum_wait)
    try:
        lock.acquire(timeout=timeout)
    except Timeout as exc:
        waited = f" (waited {timeout:g} s)" if timeout > 0 else ""
        raise StoreLockedError(
            f"another process is writing to {root}{waited}; wait for it to finish, "
            "or open the store with read_only=True to search it",
            path=root,
        ) from exc
    return lock
