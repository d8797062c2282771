"""Jobs enqueued while another process holds the store's writer lock (e.g. `serve` runs).

Such a process cannot write the catalog, so it drops one JSON file per request into
``<store>/jobs-inbox/``; the writer's worker moves them into the jobs table on its next
poll. The file is written atomically, then removed in the same step that inserts its jobs
(a crash in between re-imports it: enqueueing is at-least-once, ingesting is idempotent).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import layout
from ..durable import write_atomic
from .queue import NewJob

if TYPE_CHECKING:
    from .queue import JobQueue

INBOX_DIR = layout.INBOX_DIR


def drop(store_path: Path, jobs: Sequence[NewJob]) -> Path:
    payload = [{"source": j.source, "document_id": j.document_id, "options": j.options,
                "kind": j.kind} for j in jobs]
    path = store_path / INBOX_DIR / f"{uuid.uuid4().hex}.json"
    write_atomic(path, json.dumps(payload, default=str).encode("utf-8"))
    return path


def pending_files(store_path: Path) -> bool:
    """Cheap: is there anything to import? (one directory listing, no parsing)"""
    folder = store_path / INBOX_DIR
    return folder.is_dir() and any(folder.glob("*.json"))


def pending(store_path: Path) -> int:
    folder = store_path / INBOX_DIR
    if not folder.is_dir():
        return 0
    total = 0
    for path in folder.glob("*.json"):
        try:
            total += len(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return total


def import_into(store_path: Path, queue: JobQueue) -> int:
    folder = store_path / INBOX_DIR
    if not folder.is_dir():
        return 0
    imported = 0
    for path in sorted(folder.glob("*.json")):
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
            jobs = [NewJob(str(i["source"]), str(i["document_id"]), dict(i["options"]),
                           str(i.get("kind", "file"))) for i in items]
            queue.enqueue(jobs)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            # not a file `drop` wrote (hand-made, truncated by a full disk, a folder, one
            # this user cannot read): keep it for a person to look at; the worker goes on
            # (an exception here stopped serve's worker at every poll)
            path.rename(path.with_suffix(".bad"))
            continue
        path.unlink()
        imported += len(jobs)
    return imported
