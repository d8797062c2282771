"""A vector backend's saved generations: one folder each, written aside, renamed into place.

``directory/gen-<g>-<nonce>/`` holds a generation's files; ``save`` writes them into
``.tmp-gen-<g>-<nonce>/``, makes them durable, and renames the folder, so a crash leaves no
folder or a complete one (``recover`` clears an unfinished one). The hnswlib and USearch
backends both save this way; only what they write inside differs.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from enginelib.durable import fsync_dir, fsync_file
from enginelib.errors import InvalidInputError
from enginelib.faults import crash_point

PREFIX = "gen-"
UNFINISHED_PREFIX = ".tmp-gen-"


def check_generation(generation: object) -> int:
    """A generation to stamp a save with: an int >= 0 (not a bool)."""
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise InvalidInputError(f"generation must be a non-negative int, got {generation!r}")
    return generation


def new_generation(directory: Path, generation: int) -> tuple[str, Path]:
    """(the name of generation ``generation``'s folder, the empty temporary folder its files
    are written into before ``publish_generation``)."""
    folder = f"{PREFIX}{generation:08d}-{secrets.token_hex(4)}"
    tmp = directory / f".tmp-{folder}"
    tmp.mkdir()
    return folder, tmp


def publish_generation(directory: Path, tmp: Path, folder: str) -> None:
    """Make every file written into ``tmp`` durable, then rename it to ``folder``."""
    for name in os.listdir(tmp):
        fsync_file(tmp / name)
    fsync_dir(tmp)
    crash_point("mid_vector_save")
    os.replace(tmp, directory / folder)
    fsync_dir(directory)


def is_stale_generation(entry: Path, keep: str) -> bool:
    """Whether ``entry`` is a generation folder other than ``keep`` (an older generation, or
    an unfinished one), to be removed once ``keep`` is stamped."""
    return entry.is_dir() and entry.name != keep and entry.name.startswith(
        (PREFIX, UNFINISHED_PREFIX))
