"""Parity of the Postgres export with the engine on a BEIR dataset (default SciFact test).

    python -m benchmarks.pg_parity [--dataset scifact] [--out benchmarks/results/pg_parity_scifact.json]

Builds the store with the default model (all-MiniLM-L6-v2) through the shared vector
cache (benchmarks/vector_cache.py), exports it into a fresh Postgres 18 + pgvector and runs
``verify_postgres`` on every judged test query: top-10 overlap per strategy with exact
vector search on both sides, and the store-derived filter matrix. Also times the export,
the re-export (a no-op) and hybrid_search with the HNSW index.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import psycopg

import enginelib
from enginelib import HashingEmbedder
from enginelib.embedder import default_embedder
from enginelib.export import export_postgres
from enginelib.export.verify import verify_postgres
from enginelib.search.request import SearchRequest

from . import beir
from .pg_common import new_database, percentiles, postgres
from .vector_cache import DEFAULT_CACHE, CachingEmbedder, VectorCache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--hashing", type=int, default=0, metavar="DIM",
                        help="Use the hashing embedder of DIM dims instead of the model (no model time).")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N judged queries.")
    args = parser.parse_args()
    data = beir.load(args.dataset, args.split)
    model = HashingEmbedder(args.hashing) if args.hashing else default_embedder()
    caching = CachingEmbedder(model, VectorCache.for_embedder(DEFAULT_CACHE, model))
    queries = list(data.queries.values())[: args.limit or None]
    result: dict[str, object] = {"dataset": data.name, "split": data.split, "queries": len(queries),
                                 "model": model.name}
    with tempfile.TemporaryDirectory(prefix="enginelib-pgparity-") as tmp, postgres() as admin:
        store = enginelib.open(Path(tmp) / "store", embedder=caching)
        started = time.perf_counter()
        store.ingest_documents(list(data.documents), truth_level="L2")
        result["ingest_s"] = round(time.perf_counter() - started, 1)
        dsn = new_database(admin)
        report = export_postgres(store, dsn)
        result["chunks"] = report.chunks
        result["export_s"] = round(report.seconds, 2)
        result["reexport_s"] = round(export_postgres(store, dsn).seconds, 3)
        vectors = caching.embed(queries)
        parity = verify_postgres(store, dsn, queries, query_vectors=vectors)
        result["parity"] = parity.to_dict()
        # Latency with the HNSW index (the served path), all queries once warm.
        latencies = []
        with psycopg.connect(dsn, autocommit=True) as conn:
            for query, vector in zip(queries, vectors, strict=True):
                text = "[" + ",".join(f"{float(x):.9g}" for x in vector) + "]"
                t0 = time.perf_counter()
                conn.execute("SELECT id FROM enginelib.hybrid_search(%s, %s::extensions.vector, %s)",
                             [query, text, SearchRequest.limit]).fetchall()
                latencies.append((time.perf_counter() - t0) * 1000)
        result["hybrid_search_ms"] = percentiles(latencies)
        store.close()
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
