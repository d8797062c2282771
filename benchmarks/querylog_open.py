"""A writer's open time after readers logged many searches (issue 11).

Reader processes open the store read-only and run real searches; each search's log entry
goes through ``QueryLog.record`` (what ``Store.search`` calls). To reach a million logged
searches in minutes, each reader runs a few real searches and then records its last real
entry again for the rest of its share: the log cannot tell the difference, and the log is
what a writer's open has to read. Then a writer opens the store, several times over
(each open imports whatever the readers left), and the open is timed.

    python -m benchmarks.querylog_open [--searches 1000000] [--readers 4]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import percentiles

DIM = 32


def _reader(path: str, count: int) -> float:
    import enginelib
    from enginelib import HashingEmbedder

    started = time.perf_counter()
    store = enginelib.open(path, embedder=HashingEmbedder(DIM), read_only=True)
    real = min(count, 200)
    for i in range(real):
        store.search(f"brake pads wear {i % 7}", answerability_threshold=None)
    # The rest of this reader's share: its last entry again, through the same log path.
    rows = store.query_log._buffer or [({"query_text": "brake pads wear", "strategy": "hybrid",
                                         "filters": None, "status": "ok", "result_count": 5,
                                         "chunks_retrieved": 5, "reranked_count": 0,
                                         "latency_ms": 1.0}, [0, 1, 2, 3, 4])]
    entry, labels = rows[-1]
    for _ in range(count - real):
        store.query_log.record(dict(entry), list(labels), store._catalog)
    store.close()
    return time.perf_counter() - started


def _open_writer(path: str) -> dict[str, Any]:
    import enginelib
    from enginelib import HashingEmbedder

    pending = sum(p.stat().st_size for p in Path(path, "querylog").glob("pending-*"))
    started = time.perf_counter()
    store = enginelib.open(path, embedder=HashingEmbedder(DIM))
    opened = time.perf_counter() - started
    logged = store._catalog.con.execute("SELECT count(*) FROM query_log").fetchone()
    dropped = store._catalog.get_meta("query_log_dropped")
    store.close()
    return {"open_s": opened, "pending_bytes_before": pending, "query_log_rows": logged[0] if logged else 0,
            "dropped_total": int(dropped or 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=1_000_000)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/querylog_open.json"))
    args = parser.parse_args()

    import enginelib
    from enginelib import HashingEmbedder, LoadedDocument

    folder = Path(tempfile.mkdtemp(prefix="enginelib-qlog-"))
    path = str(folder / "s")
    try:
        store = enginelib.open(path, embedder=HashingEmbedder(DIM))
        store.ingest_documents([LoadedDocument(id=f"d{i}", text=f"brake pads wear {i} rotor " * 40)
                                for i in range(200)])
        store.close()
        baseline = _open_writer(path)
        share = args.searches // args.readers
        ctx = mp.get_context("spawn")
        started = time.perf_counter()
        with ctx.Pool(args.readers) as pool:
            reader_s = pool.starmap(_reader, [(path, share)] * args.readers)
        logging_s = time.perf_counter() - started
        pending_files = sorted(p.name for p in Path(path, "querylog").glob("pending-*"))
        opens = [_open_writer(path)]
        for _ in range(4):  # later opens: nothing pending any more
            opens.append(_open_writer(path))
        result = {
            "searches_logged": share * args.readers,
            "readers": args.readers,
            "logging_wall_s": round(logging_s, 1),
            "reader_s": [round(s, 1) for s in reader_s],
            "pending_files_left": pending_files,
            "writer_open_empty_log_s": round(baseline["open_s"], 3),
            "writer_open_after_s": round(opens[0]["open_s"], 3),
            "pending_bytes_read": opens[0]["pending_bytes_before"],
            "rows_imported": opens[0]["query_log_rows"],
            "entries_dropped": opens[0]["dropped_total"],
            "later_opens_ms": percentiles([o["open_s"] * 1000 for o in opens[1:]]),
            "cpu": os.cpu_count(),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
