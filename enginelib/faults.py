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
    "before_manifest_rename",
    "after_manifest",
)


def crash_point(step: str) -> None:
    """Kill this process with SIGKILL if ENGINELIB_CRASH_AT names ``step`` (tests only)."""
    wanted = os.environ.get(ENV_VAR)
    if wanted and wanted == step:
        os.kill(os.getpid(), signal.SIGKILL)
