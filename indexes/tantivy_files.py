"""The Tantivy backend's files, for the store core (see ``IndexFiles`` in base.py).

A commit that never published can leave Tantivy files that ``meta.json`` does not
reference: a segment or a delete file (``<segment>.<opstamp>.del``). Tantivy does not
expect them: the next commit that reaches the same opstamp fails with
``FileAlreadyExists`` and the store would never open again, so a writer removes them first.
"""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from pathlib import Path
from typing import Any

from enginelib.indexes import stamp_files
from enginelib.input_files import open_regular, read_regular, special_kind

# Tantivy's own folder inside the backend's (tantivy_text.INDEX_DIR; not imported so that
# reading files never loads tantivy itself).
TANTIVY_DIR = "tantivy"
# <32 hex digits>.<ext> or <32 hex>.<opstamp>.del: the files of tantivy segments.
_SEGMENT_FILE = re.compile(r"([0-9a-f]{32})\.(?:(\d+)\.)?([a-z]+)")
# Every segment file ends with tantivy's footer: JSON holding the CRC-32 of what precedes
# it, then the JSON's length (u32) and this magic number (u32), little-endian.
_FOOTER_MAGIC = 1337
_FOOTER_TAIL = struct.Struct("<II")
_MAX_FOOTER = 4096


class TantivyFiles:
    def read_stamp(self, folder: Path) -> dict[str, Any] | None:
        return stamp_files.read_stamp(folder)

    def recover(self, folder: Path) -> list[Path]:
        return stamp_files.remove_temps(folder) + remove_tantivy_orphans(folder / TANTIVY_DIR)

    def copy(self, source: Path, target: Path) -> None:
        # Tantivy's (empty) lock files are copied: a reader creates them on open, which
        # would otherwise write inside the snapshot.
        stamp_files.copy_saved(source, target)

    def verify(self, folder: Path) -> list[str]:
        """The published segment files whose bytes fail their footer's CRC, or that are not
        the files the stamp names (reads every file whole: for `check`)."""
        directory = folder / TANTIVY_DIR
        try:
            stamp = stamp_files.read_stamp(folder)
        except (OSError, ValueError):
            stamp = None  # reported as an unreadable index already
        named = stamp.get("files") if isinstance(stamp, dict) else None
        if isinstance(named, dict) and not files_match(directory, named):
            return [f"{directory}: its segment files are not those its stamp names (another "
                    f"index's, cut short, or missing)"]
        out = []
        for path in published_files(directory) or []:
            if not _body_matches_footer(path):
                out.append(f"{path} fails its checksum")
        return out


def _published_segments(directory: Path) -> dict[str, Any] | None:
    """Segment id -> the opstamp of its published deletes, from ``meta.json``; None
    without a readable one."""
    try:
        meta = json.loads(read_regular(directory / "meta.json").decode("utf-8"))
        return {
            str(seg["segment_id"]).replace("-", ""): (seg.get("deletes") or {}).get("opstamp")
            for seg in meta["segments"]
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _is_published(match: re.Match[str], segments: dict[str, Any]) -> bool:
    """Whether the segment file ``match`` names is one ``meta.json`` references: a file of
    a listed segment, its deletes only at the published opstamp."""
    segment, opstamp, ext = match.groups()
    if segment not in segments:
        return False
    if ext == "del":
        published = segments[segment]
        return opstamp is not None and published is not None and int(opstamp) == int(published)
    return opstamp is None


def published_files(directory: Path) -> list[Path] | None:
    """The segment files ``meta.json`` references, sorted; None without a readable one."""
    segments = _published_segments(directory)
    if segments is None:
        return None
    out = []
    for entry in sorted(directory.iterdir()):
        match = _SEGMENT_FILE.fullmatch(entry.name)
        if match is not None and _is_published(match, segments):
            out.append(entry)
    return out


def footer_checksums(directory: Path) -> dict[str, int | None]:
    """Each published segment file's name -> the CRC its footer records (None: no footer).
    Reads a few bytes per file: cheap enough for every open."""
    return {path.name: _footer_crc(path) for path in published_files(directory) or []}


def only_regular_files(directory: Path) -> bool:
    """Whether every entry of the index folder is a regular file: tantivy opens its own
    (``.managed.json``, its lock files, the segments) whatever they are, and a pipe among
    them blocked every open of the store for good."""
    try:
        return all(special_kind(os.stat(entry).st_mode) is None for entry in directory.iterdir())
    except OSError:
        return False


def files_match(directory: Path, named: object) -> bool:
    """Whether the published segment files are those a stamp's ``files`` names (a stamp
    without them, written by an older release, matches anything)."""
    if named is None:
        return True
    return footer_checksums(directory) == named


def _footer(path: Path) -> tuple[int, int] | None:
    """(CRC, body length) from a segment file's footer; None when it has none."""
    try:
        with open_regular(path) as f:
            size = f.seek(0, 2)
            if size < _FOOTER_TAIL.size:
                return None
            f.seek(size - _FOOTER_TAIL.size)
            length, magic = _FOOTER_TAIL.unpack(f.read(_FOOTER_TAIL.size))
            if magic != _FOOTER_MAGIC or length > min(_MAX_FOOTER, size - _FOOTER_TAIL.size):
                return None
            f.seek(size - _FOOTER_TAIL.size - length)
            crc = json.loads(f.read(length)).get("crc")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(crc, bool) or not isinstance(crc, int):
        return None
    return crc, size - _FOOTER_TAIL.size - length


def _footer_crc(path: Path) -> int | None:
    footer = _footer(path)
    return None if footer is None else footer[0]


def _body_matches_footer(path: Path) -> bool:
    footer = _footer(path)
    if footer is None:
        return False
    crc, remaining = 0, footer[1]
    try:
        with open_regular(path) as f:
            while remaining > 0:
                block = f.read(min(remaining, 1 << 20))
                if not block:
                    return False
                crc = zlib.crc32(block, crc)
                remaining -= len(block)
    except OSError:
        return False
    return crc == footer[0]


def remove_tantivy_orphans(directory: Path) -> list[Path]:
    """Delete segment and delete files that ``meta.json`` does not reference.

    Without a readable meta.json nothing is touched: the text index then fails to open
    and is rebuilt from the catalog as a whole.
    """
    segments = _published_segments(directory)
    if segments is None:
        return []
    removed = []
    for entry in directory.iterdir():
        match = _SEGMENT_FILE.fullmatch(entry.name)
        if match is None or not entry.is_file():
            continue
        if not _is_published(match, segments):
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed
