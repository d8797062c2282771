"""The chunk view with and without pyarrow: open + view load, RSS and search cost, two trees
timed alternately in the same run (each measurement in a fresh process of its own tree).

    python benchmarks/view_port.py --before <old checkout> --before-store <store copy> \
        --after <this checkout> --after-store <store copy> --runs 3

Each store is a copy of one ``benchmarks/scale_store.py`` store (the text segment format
differs between the trees, so each tree gets its own copy); the first, untimed, writable
open of each lets a tree write its segments. Prints one JSON object per measurement and a
summary (medians) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import numpy as np
import enginelib
from benchmarks.scale_store import Corpus, SEARCH
path, n, count, writable = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
t_import = time.perf_counter()
store = enginelib.open(path, read_only=not writable)
t_open = time.perf_counter()
view = store.view()
t_view = time.perf_counter()
queries = Corpus().queries(n, count=count)
times = []
for text, vector in zip(queries["texts"], queries["vectors"]):
    s = time.perf_counter()
    hits = store.search(text, query_vector=vector, limit=10, **SEARCH).hits
    assert all(h.content for h in hits)
    times.append(time.perf_counter() - s)
store.close()
print(json.dumps({
    "import_s": t_import - t0, "open_s": t_open - t_import, "view_s": t_view - t_open,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "search_p50_ms": 1000 * float(np.median(times)), "search_mean_ms": 1000 * float(np.mean(times)),
    "pyarrow_loaded": "pyarrow" in sys.modules, "chunks": len(view),
    "module": enginelib.__file__,
}))
"""


def _measure(tree: Path, store: Path, n: int, count: int, writable: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(store), str(n), str(count),
                          "1" if writable else "0"], cwd=tree, env=env, capture_output=True,
                         text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["module"].startswith(str(tree)), result["module"]  # the tree timed is the tree meant
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    for side in ("before", "after"):
        parser.add_argument(f"--{side}", type=Path, required=True)
        parser.add_argument(f"--{side}-store", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sides = {"before": (args.before.resolve(), args.before_store.resolve()),
             "after": (args.after.resolve(), args.after_store.resolve())}
    for tree, store in sides.values():
        _measure(tree, store, args.chunks, 1, writable=True)  # untimed: segments written
    results: dict[str, list[dict]] = {side: [] for side in sides}
    for run in range(args.runs):
        for side in (("before", "after") if run % 2 == 0 else ("after", "before")):
            result = _measure(*sides[side], args.chunks, args.queries)
            results[side].append(result)
            print(json.dumps({"run": run, "side": side, **result}), flush=True)
    keys = ("import_s", "open_s", "view_s", "rss_mb", "search_p50_ms", "search_mean_ms")
    summary = {side: {k: round(statistics.median(r[k] for r in rows), 4) for k in keys}
               | {"pyarrow_loaded": rows[0]["pyarrow_loaded"]} for side, rows in results.items()}
    print(json.dumps({"summary": summary}, indent=1))


if __name__ == "__main__":
    main()
