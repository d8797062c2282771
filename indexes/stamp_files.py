"""File knowledge both backends share: a ``stamp.json`` beside their data, durable temps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from enginelib.durable import copy_tree, remove_unfinished
from enginelib.input_files import read_regular

STAMP = "stamp.json"
# Temp files of durable writes and of an index save in progress: never part of a copy.
UNFINISHED = (".tmp-*", ".*.tmp")


def read_stamp(folder: Path) -> dict[str, object] | None:
    path = folder / STAMP
    if not path.is_file():
        return None
    stamp = json.loads(read_regular(path).decode("utf-8"))
    if not isinstance(stamp, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return stamp


def copy_saved(source: Path, target: Path) -> None:
    copy_tree(source, target, ignore=shutil.ignore_patterns(*UNFINISHED))


def remove_temps(folder: Path) -> list[Path]:
    """A dead writer's temps, and a folder where the stamp belongs: every save of the index
    failed on it ("Is a directory", naming a temp file); without it the index reads as
    unstamped and is rebuilt from the catalog."""
    removed = remove_unfinished(folder)
    stamp = folder / STAMP
    if stamp.is_dir() and not stamp.is_symlink():
        shutil.rmtree(stamp)
        removed.append(stamp)
    return removed
