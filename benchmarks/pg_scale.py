"""Postgres export at scale: export time, re-export, hybrid_search p50/p95 beside the engine.

    python -m benchmarks.pg_scale [--sizes 10000 100000] [--queries 200] [--out FILE]

Synthetic corpus of benchmarks/scaling.py: clustered 384-dim unit vectors given to the
store (no model), texts of 60 pseudo-words drawn from the cluster's topic and a Zipf
background; queries are 4 words of a chunk with its vector plus noise. One chunk in 20
is L3, so a truth-level filter keeps 5% of the rows (filtered queries must still return
k rows). The engine and Postgres answer the same queries with the same vectors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

import enginelib
from enginelib.export import export_postgres

from .pg_common import new_database, percentiles, postgres
from .scaling import _LookupEmbedder, queries_for, synthetic

FILTERED = '{"truth_level": "L3"}'


def bench(n: int, admin: str, queries: int, folder: Path) -> dict[str, Any]:
    shutil.rmtree(folder, ignore_errors=True)
    vectors, texts = synthetic(n)
    embedder = _LookupEmbedder(texts, vectors)
    docs = [enginelib.LoadedDocument(id=f"c{i}", text=t, language="en") for i, t in enumerate(texts)]
    result: dict[str, Any] = {"chunks": n}
    started = time.perf_counter()
    with enginelib.open(folder, embedder=embedder) as store:
        rare = [d for i, d in enumerate(docs) if i % 20 == 0]
        common = [d for i, d in enumerate(docs) if i % 20]
        store.ingest_documents(common, truth_level="L2", batch_size=2000)
        store.ingest_documents(rare, truth_level="L3", batch_size=2000)
    result["ingest_s"] = round(time.perf_counter() - started, 1)
    qvecs, qtexts = queries_for(vectors, texts, queries)
    dsn = new_database(admin)
    with enginelib.open(folder, embedder=embedder, read_only=True) as store:
        report = export_postgres(store, dsn)
        result["export_s"] = round(report.seconds, 1)
        result["reexport_s"] = round(export_postgres(store, dsn).seconds, 3)
        engine_ms: list[float] = []
        for i in range(queries):
            r = store.search(qtexts[i], query_vector=qvecs[i], answerability_threshold=None, log=False)
            engine_ms.append(r.timings["retrieval_ms"])
        result["engine_hybrid_ms"] = percentiles(engine_ms)
    pg_ms: list[float] = []
    filtered_ms: list[float] = []
    filtered_rows: list[int] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE")
        for i in range(queries):
            vector = "[" + ",".join(f"{float(x):.9g}" for x in qvecs[i]) + "]"
            t0 = time.perf_counter()
            conn.execute("SELECT id FROM enginelib.hybrid_search(%s, %s::extensions.vector, 10)",
                         [qtexts[i], vector]).fetchall()
            pg_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            rows = conn.execute("SELECT id FROM enginelib.match_chunks(%s::extensions.vector, -1, 10, %s::jsonb)",
                                [vector, FILTERED]).fetchall()
            filtered_ms.append((time.perf_counter() - t0) * 1000)
            filtered_rows.append(len(rows))
    result["pg_hybrid_ms"] = percentiles(pg_ms)
    result["pg_filtered_vector_ms"] = percentiles(filtered_ms)
    result["pg_filtered_rows_mean"] = round(float(np.mean(filtered_rows)), 2)
    shutil.rmtree(folder, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="enginelib-pgscale-") as tmp, postgres() as admin:
        for n in args.sizes:
            results.append(bench(n, admin, args.queries, Path(tmp) / f"store-{n}"))
            print(json.dumps(results[-1]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
