"""The chunk view's compact columns saved beside the catalog, so an open maps them back.

Reading every chunk's compact columns from DuckDB and coding its strings costs seconds at
a million chunks (a JOIN, a million Python strings per text column). The writer saves the
coded columns once as plain ``.npy`` files::

    <store>/view/cols-<generation>-<nonce>/   columns.json, label.npy, n-<col>.npy,
                                              c-<col>.npy, v-<col>.npy (distinct values)

and an open loads the newest folder and catches up from the catalog with what changed
after its generation (new chunks, tombstones: the same step a commit takes in-process).
The folder is derived, like the indexes: renamed into place complete (``meta.json``
written first inside it), anything unreadable is ignored and the view is read from the
catalog. Saving again is the writer's choice (``ChunkView`` saves after a full read and
once the catch-up grows past ``STALE_ROWS``), never per commit.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from .core import layout
from .durable import file_crc32, fsync_dir, fsync_file
from .indexes.vector_rows import load_npy
from .input_files import read_regular

FOLDER = layout.VIEW_DIR
_PREFIX = "cols-"
# 2: columns.json records each file's CRC-32; a folder of format 1 is read from the
# catalog again (once) and saved in this format.
_FORMAT = 2
# Past this many rows changed since the saved columns, the writer saves them again: the
# catch-up at open costs ~1 s per 100k changed rows, a save ~1 s per million rows.
STALE_ROWS = 20_000
# Smaller views are read from the catalog at open in well under a second: nothing saved.
MIN_ROWS = 50_000

Columns = tuple[np.ndarray, dict[str, np.ndarray], dict[str, tuple[np.ndarray, list[Any]]]]


def save(folder: Path, generation: int, labels: np.ndarray, numbers: dict[str, np.ndarray],
         codes: dict[str, tuple[np.ndarray, list[Any]]]) -> None:
    """Write the columns of ``generation`` as a new folder, then drop older ones."""
    for _, names in codes.values():
        if any(isinstance(v, str) and v.endswith("\0") for v in names):
            return  # a fixed-width unicode array would drop the trailing NUL: don't save
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{_PREFIX}{generation:012d}-{secrets.token_hex(4)}"
    tmp = folder / f".tmp-{name}"
    tmp.mkdir()
    np.save(tmp / "label.npy", labels)
    for col, values in numbers.items():
        np.save(tmp / f"n-{col}.npy", values)
    nulls: dict[str, int] = {}
    for col, (values, names) in codes.items():
        np.save(tmp / f"c-{col}.npy", values)
        # Distinct values as a fixed-width unicode array (no pickles); a None among them
        # (a NULL a masked fetch left in place) is recorded by its position.
        none_at = next((i for i, v in enumerate(names) if v is None), -1)
        nulls[col] = none_at
        np.save(tmp / f"v-{col}.npy",
                np.array(["" if v is None else str(v) for v in names], dtype=str))
    meta = {"format": _FORMAT, "generation": generation, "rows": int(len(labels)),
            "numbers": list(numbers), "codes": list(codes), "none_at": nulls,
            "crc32": {entry.name: file_crc32(entry) for entry in sorted(tmp.iterdir())}}
    (tmp / "columns.json").write_text(json.dumps(meta))
    for entry in tmp.iterdir():
        fsync_file(entry)
    fsync_dir(tmp)
    os.replace(tmp, folder / name)
    fsync_dir(folder)
    for entry in folder.iterdir():
        if entry.name != name and (entry.name.startswith(_PREFIX) or entry.name.startswith(".tmp-")):
            shutil.rmtree(entry, ignore_errors=True)


def load(folder: Path, max_generation: int) -> tuple[int, Columns] | None:
    """The newest saved columns at or before ``max_generation``; None if none is usable."""
    try:
        saved = sorted(p for p in folder.iterdir() if p.name.startswith(_PREFIX))
    except OSError:
        return None
    for path in reversed(saved):
        try:
            meta = json.loads(read_regular(path / "columns.json").decode("utf-8"))
            generation = int(meta["generation"])
            if meta.get("format") != _FORMAT or generation > max_generation:
                continue
            rows = int(meta["rows"])
            # A flipped byte in a column reads without error: another document's id, or
            # offsets that cite other text. A folder whose files fail is read from the catalog.
            if any(file_crc32(path / name) != crc for name, crc in dict(meta["crc32"]).items()):
                continue
            labels = load_npy(path / "label.npy")
            numbers = {c: load_npy(path / f"n-{c}.npy") for c in meta["numbers"]}
            codes: dict[str, tuple[np.ndarray, list[Any]]] = {}
            for c in meta["codes"]:
                names: list[Any] = load_npy(path / f"v-{c}.npy").tolist()
                if meta["none_at"][c] >= 0:
                    names[meta["none_at"][c]] = None
                codes[c] = (load_npy(path / f"c-{c}.npy"), names)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if len(labels) != rows or any(len(v) != rows for v in numbers.values()) or any(
                len(v) != rows for v, _ in codes.values()):
            continue
        return generation, (labels, numbers, codes)
    return None
