"""Named crash points in the commit protocol, so tests can SIGKILL a writer at each step."""

from __future__ import annotations

import os
import signal

ENV_VAR = "ENGINELIB_CRASH_AT"

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
    """SIGKILL this process when $ENGINELIB_CRASH_AT is ``step`` or ``step:N`` (N-th time).

    A no-op unless the variable is set: only the fault-injection tests set it.
    """
    wanted = os.environ.get(ENV_VAR)
    if not wanted:
        return
    name, _, nth = wanted.partition(":")
    if name != step:
        return
    _hits[step] = _hits.get(step, 0) + 1
    if _hits[step] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
