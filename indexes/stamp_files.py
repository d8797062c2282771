"""File knowledge both backends share: a ``stamp.json`` beside their data, durable temps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from enginelib.durable import remove_unfinished

STAMP = "stamp.json"
# Temp files of durable writes and of an index save in progress: never part of a copy.
UNFINISHED = (".tmp-*", ".*.tmp")


def read_stamp(folder: Path) -> dict[str, object] | None:
    path = folder / STAMP
    if not path.is_file():
        return None
    stamp = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(stamp, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return stamp


def copy_saved(source: Path, target: Path) -> None:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*UNFINISHED))


def remove_temps(folder: Path) -> list[Path]:
    return remove_unfinished(folder)
