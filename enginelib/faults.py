"""Named crash points in the commit protocol, so tests can SIGKILL a writer at each step."""

from __future__ import annotations

import errno
import os
import signal

ENV_VAR = "ENGINELIB_CRASH_AT"
# Same syntax: raise OSError(ENOSPC) at that step instead of dying (a disk that fills up
# exactly there), for machines where the tests cannot mount a tiny file system.
ENOSPC_VAR = "ENGINELIB_ENOSPC_AT"

# The steps of a commit, in order; tests kill the writer at each of them.
COMMIT_STEPS: tuple[str, ...] = (
    "before_catalog_commit",
    "after_catalog_commit",
    "mid_vector_save",
    "after_vector_save",
    "mid_text_save",
    "after_text_save",
    "before_manifest_rename",
    "after_manifest",
)


_hits: dict[str, int] = {}


def crash_point(step: str) -> None:
    """SIGKILL this process when $ENGINELIB_CRASH_AT is ``step`` or ``step:N`` (N-th time);
    raise OSError(ENOSPC) when $ENGINELIB_ENOSPC_AT is (a disk that fills up there).

    A no-op unless a variable is set: only the fault-injection tests set them.
    """
    full = os.environ.get(ENOSPC_VAR)
    if full and _due(full, f"enospc:{step}", step):
        raise OSError(errno.ENOSPC, "No space left on device (injected)", step)
    wanted = os.environ.get(ENV_VAR)
    if wanted and _due(wanted, step, step):
        os.kill(os.getpid(), signal.SIGKILL)


def _due(wanted: str, key: str, step: str) -> bool:
    name, _, nth = wanted.partition(":")
    if name != step:
        return False
    _hits[key] = _hits.get(key, 0) + 1
    return _hits[key] >= int(nth or 1)
