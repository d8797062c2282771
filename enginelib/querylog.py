"""The query log, buffered so a search never waits on a catalog write.

A writable store flushes its buffer into the catalog's ``query_log`` table (and bumps the
retrieval counters) in one transaction. A read-only store cannot write the catalog, so it
appends JSON lines to ``querylog/pending-<pid>.jsonl``; the next writer imports them.
Losing the last few entries of a killed process is accepted: the log is telemetry.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from .catalog import Catalog, utcnow

FLUSH_EVERY = 64
_ROW_KEYS = ("query_text", "strategy", "filters", "status", "result_count", "chunks_retrieved",
             "reranked_count", "latency_ms")
PENDING_DIR = "querylog"


class QueryLog:
    def __init__(self, store_path: Path, *, writable: bool) -> None:
        self._dir = store_path / PENDING_DIR
        self._writable = writable
        self._buffer: list[tuple[dict[str, Any], list[int]]] = []

    def record(self, entry: dict[str, Any], labels: list[int], catalog: Catalog) -> None:
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
        self._dir.mkdir(exist_ok=True)
        with open(self._dir / f"pending-{os.getpid()}.jsonl", "a", encoding="utf-8") as handle:
            for entry, labels in entries:
                handle.write(json.dumps({"entry": entry, "labels": labels}, default=str) + "\n")

    def pending(self) -> list[dict[str, Any]]:
        """Entries that read-only processes logged and no writer has imported yet (and
        this process's unflushed buffer), as rows shaped like the query_log table's."""
        items = [entry for entry, _ in self._buffer]
        if self._dir.exists():
            for path in sorted(self._dir.glob("pending-*.jsonl")):
                try:
                    lines = path.read_text(encoding="utf-8").splitlines()
                except FileNotFoundError:
                    continue  # a writer claimed it meanwhile
                for line in lines:
                    try:
                        items.append(json.loads(line)["entry"])
                    except (ValueError, KeyError):
                        continue
        rows = []
        for entry in items:
            created = entry.get("created_at")
            rows.append({
                "id": None,
                "created_at": datetime.fromisoformat(created) if isinstance(created, str) else created,
                **{key: entry.get(key) for key in _ROW_KEYS},
            })
        return rows

    def import_pending(self, catalog: Catalog) -> int:
        """Writers only: move read-only processes' entries into the catalog."""
        if not self._dir.exists():
            return 0
        imported = 0
        for path in sorted(self._dir.glob("pending-*.jsonl")):
            claimed = path.with_suffix(".importing")
            try:
                os.replace(path, claimed)  # a reader appending now starts a fresh file
            except FileNotFoundError:
                continue
            entries = []
            for line in claimed.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                except ValueError:
                    continue  # a line cut by a killed reader
                entries.append((item["entry"], item["labels"]))
            catalog.log_queries(entries)
            claimed.unlink()
            imported += len(entries)
        return imported
