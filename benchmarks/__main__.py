"""`python -m benchmarks run|report|scaling`: the one entry point of the benchmark suite."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="ingest a BEIR dataset, measure ours and the peers, report")
    run.add_argument("--dataset", action="append", required=True,
                     help="scifact, nfcorpus, or a BEIR-layout folder (repeatable)")
    run.add_argument("--split", default="test", help="qrels split to score (default: test)")
    run.add_argument("--peers", default="all",
                     help="comma-separated peers, 'all' or 'none' "
                          "(exact-numpy,bm25s,lancedb-vector,lancedb-fts,lancedb-hybrid,chroma-vector)")
    run.add_argument("--passes", type=int, default=3, help="timed passes over the queries")
    run.add_argument("--no-report", action="store_true", help="skip RESULTS.md and the plot")
    run.add_argument("--embedder", default=None,
                     help="a built-in embedder (default: the library's); with it or --max-docs "
                          "the result goes to results/embedders/ beside the main figures")
    run.add_argument("--max-docs", type=int, default=0,
                     help="a deterministic subset of this many documents (0: all)")

    embed = sub.add_parser("embed", help="fill the vector cache for datasets (long; run it early)")
    embed.add_argument("--dataset", action="append", required=True)
    embed.add_argument("--embedder", action="append", required=True,
                       help="e5-small, all-MiniLM-L6-v2, ... (repeatable)")
    embed.add_argument("--split", default="test")
    embed.add_argument("--max-docs", type=int, default=0,
                       help="a deterministic subset of this many documents (0: all)")

    cold = sub.add_parser("cold-start", help="CLI/API process start -> first answer, 5k chunks")
    cold.add_argument("--runs", type=int, default=5)
    cold.add_argument("--model", action="append", default=None,
                      help="e5-small, all-MiniLM-L6-v2 (repeatable; default both)")
    cold.add_argument("--peer", type=Path, default=None,
                      help="another checkout timed in the same runs, e.g. the landed main")

    sub.add_parser("report", help="rewrite results/*.md, the plot and RESULTS.md from the JSON")

    scaling = sub.add_parser("scaling", help="synthetic 10k/100k/1M-chunk scaling benchmark")
    scaling.add_argument("--sizes", default="10000,100000,1000000")
    scaling.add_argument("--queries", type=int, default=200)
    scaling.add_argument("--build-threads", type=int, default=1,
                         help="hnswlib threads for the index build (queries stay single-threaded)")

    args = parser.parse_args(argv)
    # One BLAS thread: the benchmark measures single-thread latency, and on a small shared VM
    # a threaded BLAS adds multi-ms wake-up noise to small matrix products.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    for name in ("RUST_LOG", "LANCE_LOG", "LANCEDB_LOG"):  # LanceDB's per-query deprecation warnings
        os.environ.setdefault(name, "error")

    if args.command == "run":
        from .peers import PEER_NAMES
        from .report import write_reports
        from .run import run_dataset

        peers = PEER_NAMES if args.peers == "all" else () if args.peers == "none" else tuple(
            p.strip() for p in args.peers.split(",") if p.strip())
        for dataset in args.dataset:
            if args.embedder or args.max_docs:
                from enginelib.embedders import make_embedder

                from .run import RESULTS

                model = make_embedder(args.embedder or "e5-small")
                suffix = f"-{args.max_docs}docs" if args.max_docs else ""
                run_dataset(dataset, split=args.split, peers=peers, passes=args.passes,
                            embedder=model, max_docs=args.max_docs,
                            results_dir=RESULTS / "embedders",
                            results_name=f"{dataset}{suffix}-{model.name}")
                continue
            run_dataset(dataset, split=args.split, peers=peers, passes=args.passes)
        if not args.no_report and not (args.embedder or args.max_docs):
            print(f"wrote {write_reports()}")
    elif args.command == "embed":
        from .embed_cache import fill_cache

        for name in args.embedder:
            for dataset in args.dataset:
                fill_cache(dataset, name, split=args.split, max_docs=args.max_docs)
    elif args.command == "cold-start":
        from .cold_start import measure

        measure(models=args.model or ("e5-small", "all-MiniLM-L6-v2"), runs=args.runs,
                peer=args.peer)
    elif args.command == "report":
        from .report import write_reports

        print(f"wrote {write_reports()}")
    elif args.command == "scaling":
        from .scaling import run_scaling

        run_scaling([int(s) for s in args.sizes.split(",")], queries=args.queries,
                    build_threads=args.build_threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
