"""What a killed or starved writer leaves behind, cleared by the next writer before it opens.

- ``indexes/vectors/.tmp-gen-*``: a vector generation whose save died (kill, disk full);
- ``.<name>.<random>.tmp``: a durable write (``durable.write_atomic``) that never renamed;
- Tantivy files that ``meta.json`` does not reference: a segment or a delete file
  (``<segment>.<opstamp>.del``) written by a commit that never published. Tantivy does
  not expect them: the next commit that reaches the same opstamp fails with
  ``FileAlreadyExists`` and the store would never open again.

Only the writer runs this (it holds the store's lock, so no other process is writing).
Everything removed is derived or unpublished: the catalog is the truth and the indexes
replay from it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

# <32 hex digits>.<ext> or <32 hex>.<opstamp>.del: the files of tantivy segments.
_SEGMENT_FILE = re.compile(r"([0-9a-f]{32})\.(?:(\d+)\.)?([a-z]+)")


def recover_files(root: Path) -> list[Path]:
    """Remove a dead writer's leftovers under store ``root``; returns what was removed."""
    removed: list[Path] = []
    indexes = root / "indexes"
    vectors = indexes / "vectors"
    if vectors.is_dir():
        for entry in vectors.iterdir():
            if entry.name.startswith(".tmp-gen-"):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    for folder in (root, indexes, vectors, indexes / "text"):
        if folder.is_dir():
            for entry in folder.iterdir():
                if entry.is_file() and entry.name.startswith(".") and entry.name.endswith(".tmp"):
                    entry.unlink(missing_ok=True)
                    removed.append(entry)
    removed.extend(remove_tantivy_orphans(indexes / "text" / "tantivy"))
    return removed


def remove_tantivy_orphans(directory: Path) -> list[Path]:
    """Delete segment and delete files that ``meta.json`` does not reference.

    Without a readable meta.json nothing is touched: the text index then fails to open
    and is rebuilt from the catalog as a whole.
    """
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        segments = {
            str(seg["segment_id"]).replace("-", ""): (seg.get("deletes") or {}).get("opstamp")
            for seg in meta["segments"]
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    removed = []
    for entry in directory.iterdir():
        match = _SEGMENT_FILE.fullmatch(entry.name)
        if match is None or not entry.is_file():
            continue
        segment, opstamp, ext = match.groups()
        if segment not in segments:
            orphan = True
        elif ext == "del":
            published = segments[segment]
            orphan = opstamp is None or published is None or int(opstamp) != int(published)
        else:
            orphan = opstamp is not None
        if orphan:
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed
