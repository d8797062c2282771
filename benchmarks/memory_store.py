"""How quickly an in-memory store opens, empty and seeded, beside a store folder on disk.

    python -m benchmarks.memory_store [--records 100] [--repeat 20]

The hashing embedder keeps the model out of the figure (it is the same for both).
Prints JSON; the figures go in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import enginelib
from enginelib import HashingEmbedder

from .beir import iter_corpus, resolve


def _median_ms(make: Callable[[], enginelib.Store], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        store = make()
        store.close()
        times.append((time.perf_counter() - started) * 1000.0)
    return round(statistics.median(times), 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_store", description=__doc__)
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    docs = []
    for document in iter_corpus(resolve("scifact")):
        docs.append(document)
        if len(docs) == args.records:
            break
    embedder = HashingEmbedder(64)
    counter = iter(range(10**9))
    scratch = tempfile.TemporaryDirectory(prefix="enginelib-bench-")
    root = Path(scratch.name)

    def on_disk(records: list | None) -> Callable[[], enginelib.Store]:
        def make() -> enginelib.Store:
            store = enginelib.open(root / str(next(counter)), embedder=embedder)
            if records:
                store.ingest_documents(records, truth_level="L1")
            return store

        return make

    result = {
        "records": args.records,
        "memory_empty_ms": _median_ms(lambda: enginelib.memory(embedder=embedder), args.repeat),
        "disk_empty_ms": _median_ms(on_disk(None), args.repeat),
        "memory_seeded_ms": _median_ms(
            lambda: enginelib.memory(docs, embedder=embedder, truth_level="L1"), args.repeat),
        "disk_seeded_ms": _median_ms(on_disk(docs), args.repeat),
    }
    scratch.cleanup()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
