"""The hnswlib backend's files, for the store core (see ``IndexFiles`` in base.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from enginelib.indexes import stamp_files
from enginelib.indexes.generation_folders import UNFINISHED_PREFIX


class HnswFiles:
    def read_stamp(self, folder: Path) -> dict[str, object] | None:
        return stamp_files.read_stamp(folder)

    def recover(self, folder: Path) -> list[Path]:
        removed: list[Path] = []
        if folder.is_dir():
            for entry in folder.iterdir():
                if entry.name.startswith(UNFINISHED_PREFIX):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed.append(entry)
        return removed + stamp_files.remove_temps(folder)

    def copy(self, source: Path, target: Path) -> None:
        stamp_files.copy_saved(source, target)
