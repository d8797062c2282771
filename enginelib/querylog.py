"""The query log, buffered so a search never waits on a catalog write.

A writable store flushes its buffer into the catalog's ``query_log`` table (and bumps the
retrieval counters) in one transaction. A read-only store cannot write the catalog, so it
appends JSON lines to ``querylog/pending-<pid>.jsonl``; the next writer imports them,
each once, even if it is killed while importing (``QueryLog.import_pending``). Losing the
last few entries of a killed reader is accepted: the log is telemetry.

Bounded so a writer's open never grows with how much readers searched: a reader's file
rotates once it passes ``MAX_PENDING_BYTES`` (the previous rotation is dropped), and a
writer imports at most ``MAX_IMPORT_BYTES`` of the newest files, deleting the rest (their
count goes to the catalog meta ``query_log_dropped``). A reader on a read-only medium
logs nothing and says so once (a RuntimeWarning).
"""

from __future__ import annotations

import json
import math
import os
import stat
import uuid
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import faults
from .catalog import Catalog, utcnow
from .core.layout import QUERYLOG_DIR
from .durable import can_write
from .text import shell_word

FLUSH_EVERY = 64
_ROW_KEYS = ("query_text", "strategy", "filters", "status", "result_count", "chunks_retrieved",
             "reranked_count", "latency_ms")
PENDING_DIR = QUERYLOG_DIR  # the layout names it
# ~2,000 entries per file at ~450 bytes each: a reader keeps at most two files.
MAX_PENDING_BYTES = 1 << 20
# What a writer imports when it opens (newest files first, ~2,000 entries, ~0.3 s); the
# rest is dropped and counted: an open must not grow with how much readers searched.
MAX_IMPORT_BYTES = 1 << 20
# Catalog meta: the pending files an import claimed, committed with their rows, so that a
# writer killed before deleting them does not import them twice (cleared once they are gone).
CLAIMED_META = "query_log_claimed"


class QueryLog:
    def __init__(self, store_path: Path, *, writable: bool) -> None:
        self._dir = store_path / PENDING_DIR
        self._writable = writable
        self._buffer: list[tuple[dict[str, Any], list[int]]] = []
        self._unwritable = False
        # Said at the first search, not at the open: reading a document's history or the
        # jobs of a store on read-only media logs nothing, so there is nothing to warn of.
        self._unsaid: str | None = None
        if not writable and not can_write(store_path):
            self._unwritable = True
            self._unsaid = "the store is on a read-only medium or not writable by this user"
        elif not writable and _not_a_folder(self._dir):
            self._unwritable = True
            self._unsaid = self._not_a_folder_reason()

    def _not_a_folder_reason(self) -> str:
        # "File exists" was all it said: nobody looked for a file named querylog
        store = shell_word(self._dir.parent)
        return (f"{self._dir} is a file, not the folder read-only processes log into: run "
                f"`enginelib repair --store {store}`, which moves it aside")

    def _disable(self, reason: str) -> None:
        self._unwritable = True
        self._buffer = []
        self._warn(reason)

    def _warn(self, reason: str) -> None:
        warnings.warn(
            f"enginelib: the query log of {self._dir.parent} cannot be written ({reason}); "
            "searches from this process are not logged", RuntimeWarning, stacklevel=5,
        )

    def record(self, entry: dict[str, Any], labels: list[int], catalog: Catalog) -> None:
        if self._unwritable:
            if self._unsaid is not None:
                reason, self._unsaid = self._unsaid, None
                self._warn(reason)
            return
        entry.setdefault("created_at", utcnow())
        self._buffer.append((entry, labels))
        if len(self._buffer) >= FLUSH_EVERY:
            self.flush(catalog)

    def flush(self, catalog: Catalog) -> None:
        if not self._buffer:
            return
        entries, self._buffer = self._buffer, []
        if self._writable:
            catalog.log_queries(entries)
            return
        if self._unwritable:
            return
        try:
            self._append(entries)
        except OSError as exc:
            # No permission, disk full: searching goes on unlogged.
            self._disable(self._not_a_folder_reason() if _not_a_folder(self._dir)
                          else exc.strerror or str(exc))

    def _append(self, entries: list[tuple[dict[str, Any], list[int]]]) -> None:
        self._dir.mkdir(exist_ok=True)
        path = self._dir / f"pending-{os.getpid()}.jsonl"
        try:
            if path.stat().st_size >= MAX_PENDING_BYTES:
                # Rotate: the previous rotation (older entries) is dropped.
                os.replace(path, self._dir / f"pending-{os.getpid()}.1.jsonl")
        except FileNotFoundError:
            pass
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("".join(
                json.dumps({"entry": entry, "labels": labels}, default=str) + "\n"
                for entry, labels in entries
            ))

    def pending(self) -> list[dict[str, Any]]:
        """Entries that read-only processes logged and no writer has imported yet (and
        this process's unflushed buffer), as rows shaped like the query_log table's."""
        items = [entry for entry, _ in self._buffer]
        if self._dir.exists():
            for path in _newest_within(self._dir, MAX_IMPORT_BYTES)[0]:
                try:
                    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    continue  # a writer claimed it meanwhile
                for line in lines:
                    parsed = _parsed(line)
                    if parsed is not None:
                        items.append(parsed[0])
        return [{"id": None, "created_at": entry["created_at"],
                 **{key: entry.get(key) for key in _ROW_KEYS}} for entry in items]

    def import_pending(self, catalog: Catalog) -> int:
        """Writers only: move read-only processes' entries into the catalog, each once.

        Each file is claimed under a name no other claim had (``*.importing``), and the
        claimed names commit with the rows read from them; the files go after. A writer
        killed before that commit leaves claims no commit names: the next writer puts them
        back and imports them. Killed after it, the next writer deletes them unread.
        """
        self._settle_claims(catalog)
        if not self._dir.is_dir():
            return 0
        keep, drop = _newest_within(self._dir, MAX_IMPORT_BYTES)
        claimed: list[Path] = []
        dropped = 0
        for path in drop:
            taken = _claim(path)
            if taken is None:
                continue
            try:
                with open(taken, "rb") as handle:
                    chunks = iter(lambda: handle.read(1 << 20), b"")
                    dropped += sum(chunk.count(b"\n") for chunk in chunks)
            except OSError:
                continue  # put back and counted at the next open
            claimed.append(taken)
        entries = []
        for path in keep:
            taken = _claim(path)  # a reader appending now starts a fresh file
            if taken is None:
                continue
            try:
                text = taken.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue  # unreadable (another user's, a bad sector): tried again next open
            claimed.append(taken)
            for line in text.splitlines():
                parsed = _parsed(line)
                if parsed is not None:
                    entries.append(parsed)
        if not claimed:
            return 0
        with catalog.transaction():
            catalog.insert_queries(entries)
            if dropped:
                total = int(catalog.get_meta("query_log_dropped") or 0) + dropped
                catalog.set_meta("query_log_dropped", str(total))
            catalog.set_meta(CLAIMED_META, json.dumps(sorted(p.name for p in claimed)))
            faults.crash_point("query_log_before_commit")
        faults.crash_point("query_log_after_commit")
        self._settle_claims(catalog)
        return len(entries)

    def _settle_claims(self, catalog: Catalog) -> None:
        """Delete the claimed files whose rows a commit holds, put back the others (their
        import never committed), and keep on record only the names still there."""
        recorded = _names(catalog.get_meta(CLAIMED_META))
        left: list[str] = []
        claims = sorted(self._dir.glob("*.importing")) if self._dir.is_dir() else []
        for stale in claims:
            if not stale.is_file():
                continue  # only our own files: anything else in the folder is left be
            if stale.name not in recorded:
                os.replace(stale, stale.with_name(f"{_origin(stale)}.{uuid.uuid4().hex}.jsonl"))
                continue
            try:
                stale.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                left.append(stale.name)  # still recorded: deleted by a later open
        if left:
            if left != sorted(recorded):
                catalog.set_meta(CLAIMED_META, json.dumps(left))
        elif recorded:
            catalog.delete_meta(CLAIMED_META)


def _claim(path: Path) -> Path | None:
    """``path`` renamed to a name of its own (a claim put back and claimed again, or a
    reader's file of a reused process id, never takes a recorded name), or None if gone."""
    claimed = path.with_name(f"{_origin(path)}.{uuid.uuid4().hex}.importing")
    try:
        os.replace(path, claimed)
    except FileNotFoundError:
        return None
    return claimed


def _origin(path: Path) -> str:
    """The reader's part of a pending file's name: ``pending-<pid>``."""
    return path.name.split(".", 1)[0]


def _names(recorded: str | None) -> set[str]:
    try:
        names = json.loads(recorded or "[]")
    except ValueError:
        return set()  # not ours (a hand edit): no claim is deleted on its word
    return {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()


_TEXT_KEYS = ("query_text", "strategy", "status")
_COUNT_KEYS = ("result_count", "chunks_retrieved", "reranked_count")
_INT32 = 2**31 - 1  # the catalog's INTEGER columns
_INT64 = 2**63 - 1  # a chunk's label (BIGINT)


def _parsed(line: str) -> tuple[dict[str, Any], list[int]] | None:
    """A pending line as ``(entry, labels)``, or None for a line that is not one whole logged
    search: a line cut by a killed reader, or one another version or a hand edit left. One
    such line must not stop ``queries`` nor, imported, every writer's open (it comes back
    at each open), so it is skipped like a cut line: the log is telemetry."""
    try:
        item = json.loads(line)
        entry, labels = dict(item["entry"]), [_whole(label) for label in item["labels"]]
        # Undated (none of ours): dated as a writer importing it would date it.
        stamp = entry.get("created_at")
        created = utcnow() if stamp is None else datetime.fromisoformat(stamp)
        latency = float(entry["latency_ms"])
        counts = [_whole(entry[key]) for key in _COUNT_KEYS]
        texts_ok = all(isinstance(entry[key], str) for key in _TEXT_KEYS)
        # What the catalog would refuse, failing the whole import (every writer's open): a
        # lone surrogate (UnicodeEncodeError, a ValueError) in the texts or the filters (its
        # JSON column refuses the escape '\ud800'), a date past year 9999 once made UTC.
        json.dumps([entry.get(key) for key in (*_TEXT_KEYS, "filters")], ensure_ascii=False,
                   default=str).encode("utf-8")
        if created.tzinfo is not None:  # the catalog's timestamps are naive UTC
            created = created.astimezone(UTC).replace(tzinfo=None)
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # [[[[...
        return None
    if (not texts_ok or not math.isfinite(latency) or not all(0 <= n <= _INT32 for n in counts)
            or not all(0 <= n <= _INT64 for n in labels)):
        return None
    entry.update(created_at=created, latency_ms=latency, **dict(zip(_COUNT_KEYS, counts, strict=True)))
    return entry, labels


def _not_a_folder(path: Path) -> bool:
    """Something other than a folder (a file, a pipe) where the pending files go."""
    return path.exists() and not path.is_dir()


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not a whole number: {value!r}")
    return value


def _newest_within(folder: Path, budget: int) -> tuple[list[Path], list[Path]]:
    """Pending files, newest first, split into those within ``budget`` bytes and the rest."""
    stamped = []
    for path in folder.glob("pending-*.jsonl"):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue  # a folder or device someone named like ours: never ours to move
        stamped.append((st.st_mtime_ns, st.st_size, path))
    stamped.sort(key=lambda item: (-item[0], item[2].name))
    keep: list[Path] = []
    drop: list[Path] = []
    used = 0
    for _, size, path in stamped:
        if used + size <= budget:
            keep.append(path)
            used += size
        else:
            drop.append(path)
    return keep, drop
