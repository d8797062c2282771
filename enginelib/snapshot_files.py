"""Whether each file of a snapshot is still the one it wrote: one 64-bit sum per file.

``snapshot.json`` records ``file_sum64`` (path relative to the snapshot folder -> the
``durable.file_sum64`` of its bytes) for every file the snapshot holds but itself, and
``info_crc32``, the CRC-32 of its own other keys, so that a damaged ``snapshot.json`` cannot
pass for a sound one by naming other sums. Snapshots written before either key load as before:
their tables are checked against ``table_crc32`` (``snapshot_integrity.damage``) and their index files
are "not checksummed".

The sum runs at memory speed (a 1.5 GB vector file costs about 0.06 s), so a snapshot's
files are verified at every open, not only by ``check``.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .core.layout import INDEX_DIR, SNAPSHOT_INFO_NAME
from .durable import file_sum64
from .input_files import read_regular

SUMS_KEY = "file_sum64"
INFO_CRC_KEY = "info_crc32"


@dataclass(frozen=True)
class FileProblem:
    """A file of a snapshot that is not the one it wrote."""

    path: str  # relative to the snapshot folder, with "/"
    reason: str

    @property
    def index_kind(self) -> str | None:
        return index_kind(self.path)

    @property
    def index_name(self) -> str:
        return index_name(self.index_kind or "")

    def __str__(self) -> str:
        return f"{self.path} {self.reason}"


def index_kind(path: str) -> str | None:
    """The index folder a snapshot file belongs to ("vectors", "text"), None for the others."""
    parts = PurePosixPath(path).parts
    return parts[1] if len(parts) > 2 and parts[0] == INDEX_DIR else None


def index_name(kind: str) -> str:
    """"vector index", "text index": an index folder's name in messages."""
    return f"{kind.removesuffix('s')} index"


def record(folder: Path) -> dict[str, int]:
    """The sums to write into ``snapshot.json`` for every file under ``folder``."""
    return {path.relative_to(folder).as_posix(): file_sum64(path)
            for path in sorted(folder.rglob("*"))
            if path.is_file() and path.relative_to(folder).as_posix() != SNAPSHOT_INFO_NAME}


def seal(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with its own CRC-32 added (``info_crc32``)."""
    return {**info, INFO_CRC_KEY: _info_crc({k: v for k, v in info.items() if k != INFO_CRC_KEY})}


def read_info(folder: Path) -> dict[str, Any]:
    """A snapshot's ``snapshot.json``; ValueError when it is not JSON, not an object or fails
    its own CRC-32, OSError when it cannot be read."""
    text = read_regular(folder / SNAPSHOT_INFO_NAME)  # a pipe there: refused, not waited on
    try:
        data = json.loads(text)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise ValueError(f"{SNAPSHOT_INFO_NAME} is not JSON (cut short or overwritten)") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{SNAPSHOT_INFO_NAME} does not hold a JSON object")
    recorded = data.get(INFO_CRC_KEY)
    if recorded is not None and recorded != _info_crc(
            {k: v for k, v in data.items() if k != INFO_CRC_KEY}):
        raise ValueError(f"{SNAPSHOT_INFO_NAME} is not the file the snapshot wrote (fails its "
                         f"checksum)")
    return data


def recorded_sums(info: dict[str, Any]) -> dict[str, int] | None:
    """The per-file sums ``info`` records; None for a snapshot written before them."""
    sums = info.get(SUMS_KEY)
    if not isinstance(sums, dict):
        return None
    return {str(k): v for k, v in sums.items() if isinstance(v, int) and not isinstance(v, bool)}


def problems(folder: Path, sums: dict[str, int], *, indexes: bool) -> list[FileProblem]:
    """The recorded files that are missing or not the bytes the snapshot wrote: those of
    the index folders when ``indexes``, the others (tables, manifest) otherwise."""
    out = []
    for name, expected in sorted(sums.items()):
        if (index_kind(name) is not None) != indexes:
            continue
        reason = _reason(folder, name, expected)
        if reason is not None:
            out.append(FileProblem(name, reason))
    return out


def _reason(folder: Path, name: str, expected: int) -> str | None:
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts:
        # snapshot.json passed its own checksum, so this was written by hand
        return f"is named in {SNAPSHOT_INFO_NAME} but lies outside the snapshot"
    path = folder / relative
    if path.is_dir():
        return "is a folder where the snapshot wrote a file"
    if not path.is_file():
        return "is missing"
    try:
        if file_sum64(path) != expected:
            return "is not the file the snapshot wrote (damaged or replaced)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None


def _info_crc(info: dict[str, Any]) -> int:
    return zlib.crc32(json.dumps(info, sort_keys=True).encode("utf-8"))
