"""The Tantivy backend's files, for the store core (see ``IndexFiles`` in base.py).

A commit that never published can leave Tantivy files that ``meta.json`` does not
reference: a segment or a delete file (``<segment>.<opstamp>.del``). Tantivy does not
expect them: the next commit that reaches the same opstamp fails with
``FileAlreadyExists`` and the store would never open again, so a writer removes them first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from enginelib.indexes import stamp_files

# Tantivy's own folder inside the backend's (tantivy_text.INDEX_DIR; not imported so that
# reading files never loads tantivy itself).
TANTIVY_DIR = "tantivy"
# <32 hex digits>.<ext> or <32 hex>.<opstamp>.del: the files of tantivy segments.
_SEGMENT_FILE = re.compile(r"([0-9a-f]{32})\.(?:(\d+)\.)?([a-z]+)")


class TantivyFiles:
    def read_stamp(self, folder: Path) -> dict[str, object] | None:
        return stamp_files.read_stamp(folder)

    def recover(self, folder: Path) -> list[Path]:
        return stamp_files.remove_temps(folder) + remove_tantivy_orphans(folder / TANTIVY_DIR)

    def copy(self, source: Path, target: Path) -> None:
        # Tantivy's (empty) lock files are copied: a reader creates them on open, which
        # would otherwise write inside the snapshot.
        stamp_files.copy_saved(source, target)


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
