"""The compact vector form (usearch int8 / fp16 graph, exact fp32 re-rank) beside hnsw fp32
and LanceDB, at 10k / 100k / 1M synthetic chunks (the ``benchmarks/scaling.py`` recipe).

Each backend is built once into ``benchmarks/.cache/compact/`` with the index's own ``save``
(so it is opened exactly as a store opens it), then measured in a fresh subprocess per
(backend, size): open time, process RSS after open and after the queries, recall@10 against
exact numpy search at the default settings, and vector k=10 / k=100 p50/p99 with the CPU time
beside the wall time (the machine is shared), plus a filtered search at 0.1 % selectivity
checked against the exact top k.

    python -m benchmarks.compact_vectors build --sizes 10000,100000,1000000
    python -m benchmarks.compact_vectors run --sizes 10000,100000,1000000
    python -m benchmarks.compact_vectors calibrate --size 1000000   # training queries only
    python -m benchmarks.compact_vectors real --vector-cache /work/main/benchmarks/.cache/vectors/e5-small
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.indexes import VECTOR_BACKENDS
from enginelib.indexes.exact import exact_topk

from .scaling import DIM, queries_for
from .scaling_cache import RECIPE, corpus
from .timing import machine, percentiles, rss_mb

os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("RUST_LOG", "error")

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "compact"
OUT = HERE / "results" / "compact_vectors.json"
BACKENDS = ("usearch-i8", "usearch-f16", "hnsw", "lancedb")
QUERIES = 200
BENCH_SEED = 1  # the measured queries (scaling.queries_for's default)
TRAIN_SEED = 7  # the queries constants are calibrated on; never the measured ones
# LanceDB as in benchmarks/scaling_indexes.py: flat (exact) below LANCE_INDEX_FROM rows, else
# IVF_PQ searched with nprobes 20 and an fp32 refine of 10 x k (its own exact re-rank).
LANCE_INDEX_FROM = 500_000
LANCE_NPROBES = 20
LANCE_REFINE = 10
STEP = 100_000


def _folder(backend: str, n: int) -> Path:
    return CACHE / f"{backend}-{n}-r{RECIPE}"


def _shared_mib() -> float:
    """Resident file-backed pages (memory maps of index files): page cache the kernel can
    drop, counted in RSS. RSS minus this is the process's own memory."""
    import psutil

    return float(psutil.Process().memory_info().shared) / 2**20


def _load() -> list[str]:
    return open("/proc/loadavg").read().split()[:3]


def build(backend: str, n: int, threads: int) -> dict[str, Any]:
    """Build (once) and save the index of size ``n``; returns its meta (build times)."""
    folder = _folder(backend, n)
    meta_file = folder / "meta.json"
    if meta_file.exists():
        return dict(json.loads(meta_file.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    vectors, _ = corpus(n)
    load0 = _load()
    wall, cpu = time.perf_counter(), time.process_time()
    if backend == "lancedb":
        index_kind = _build_lance(folder, vectors)
    else:
        index = VECTOR_BACKENDS[backend](folder / "vectors", DIM, num_threads=threads)
        for start in range(0, n, STEP):
            stop = min(n, start + STEP)
            index.add(np.arange(start, stop, dtype=np.int64), vectors[start:stop])
            print(f"  {backend} {n}: {stop} added, {time.perf_counter() - wall:.0f} s",
                  flush=True)
        index.save(1)
        index_kind = "graph"
        del index
    meta = {"backend": backend, "chunks": n, "index": index_kind, "threads": threads,
            "build_s": round(time.perf_counter() - wall, 1),
            "build_cpu_s": round(time.process_time() - cpu, 1),
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "load_before": load0, "load_after": _load()}
    meta_file.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def _build_lance(folder: Path, vectors: np.ndarray) -> str:
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(folder / "lance"))
    table = None
    for start in range(0, len(vectors), STEP):
        part = vectors[start : start + STEP]
        data = pa.table({
            "row": pa.array(np.arange(start, start + len(part), dtype=np.int64)),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(part.reshape(-1), type=pa.float32()), DIM),
        })
        if table is None:
            table = db.create_table("chunks", data=data, mode="overwrite")
        else:
            table.add(data)
    assert table is not None
    if len(vectors) < LANCE_INDEX_FROM:
        return "flat (exact)"
    # IVF_PQ: LanceDB's default ANN index, the one its docs advise past ~0.5M rows.
    table.create_index(metric="cosine", index_type="IVF_PQ", vector_column_name="vector")
    return f"IVF_PQ, nprobes {LANCE_NPROBES}, refine x{LANCE_REFINE}"


def _queries(n: int, seed: int) -> tuple[Path, Path]:
    """Query vectors and their exact top 100 labels for size ``n``, saved for subprocesses."""
    qfile = CACHE / f"queries-{n}-s{seed}-r{RECIPE}.npy"
    tfile = CACHE / f"truth-{n}-s{seed}-r{RECIPE}.npy"
    if not tfile.exists():
        vectors, texts = corpus(n)
        qvecs, _ = queries_for(vectors, texts, QUERIES, seed=seed)
        truth = exact_topk(vectors, np.arange(n, dtype=np.int64), qvecs, 100)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(qfile, qvecs)
        np.save(tfile, np.array([[label for label, _ in row] for row in truth], dtype=np.int64))
    return qfile, tfile


def _series(fn: Any, items: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    out, wall, cpu = [], [], []
    for item in items:
        w0, c0 = time.perf_counter(), time.process_time()
        out.append(fn(item))
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    return out, {**percentiles(wall), "cpu": percentiles(cpu)}


def _recall(got: list[list[int]], truth: np.ndarray, k: int = 10) -> float:
    return float(np.mean([len(set(g[:k]) & set(t[:k].tolist())) / k
                          for g, t in zip(got, truth)]))


def measure(backend: str, n: int, seed: int, ef: int | None) -> dict[str, Any]:
    """One backend at one size, in this (fresh) process."""
    qfile, tfile = _queries(n, seed)
    qvecs, truth = np.load(qfile), np.load(tfile)
    if backend == "lancedb":
        import lancedb  # imported before the baseline: its import is not the index's RAM
    rss0 = rss_mb()
    started = time.perf_counter()
    if backend == "lancedb":
        table = lancedb.connect(str(_folder(backend, n) / "lance")).open_table("chunks")
        indexed = n >= LANCE_INDEX_FROM

        def search(q: np.ndarray, k: int) -> list[int]:
            query = table.search(q, vector_column_name="vector").metric("cosine")
            if indexed:
                query = query.nprobes(LANCE_NPROBES).refine_factor(LANCE_REFINE)
            return list(query.select(["row"]).limit(k).to_arrow()["row"].to_pylist())
    else:
        options = {} if ef is None else {"ef_search": ef}
        index = VECTOR_BACKENDS[backend](_folder(backend, n) / "vectors", DIM, **options)
        assert len(index) == n, f"{backend} {n}: opened {len(index)} rows"

        def search(q: np.ndarray, k: int) -> list[int]:
            return [label for label, _ in index.search(q[None, :], k)[0]]
    open_s = time.perf_counter() - started
    rss_open, shared_open = rss_mb(), _shared_mib()
    search(qvecs[0], 10)  # first query: pages of the graph's entry levels
    got10, k10 = _series(lambda q: search(q, 10), list(qvecs))
    got100, k100 = _series(lambda q: search(q, 100), list(qvecs))
    result: dict[str, Any] = {
        "backend": backend, "chunks": n, "open_s": round(open_s, 3),
        "rss_mib_before_open": round(rss0, 1), "rss_mib_after_open": round(rss_open, 1),
        "rss_mib_after_queries": round(rss_mb(), 1),
        "shared_mib_after_open": round(shared_open, 1),
        "shared_mib_after_queries": round(_shared_mib(), 1),
        "recall@10": round(_recall(got10, truth), 4),
        "recall@100": round(_recall(got100, truth, 100), 4),
        "vector_k10_ms": k10, "vector_k100_ms": k100, "load": _load(),
    }
    if backend != "lancedb":
        result["ef_k10"] = index.ef_for(10)  # type: ignore[attr-defined]
        rng = np.random.default_rng(3)
        allowed = np.sort(rng.choice(n, size=max(10, n // 1000), replace=False))
        filtered = index.search(qvecs[:20], 10, allowed=allowed)
        want = exact_topk(index.vectors_for(allowed), allowed, qvecs[:20], 10)
        result["filtered_0.1pct_exact"] = all(
            [label for label, _ in f] == [label for label, _ in w] for f, w in zip(filtered, want))
    return result


def _in_subprocess(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "benchmarks.compact_vectors", *args],
                          check=True, capture_output=True, text=True,
                          cwd=HERE.parent, env={**os.environ})
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(sizes: list[int], backends: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"machine": machine(), "started": time.strftime("%Y-%m-%d %H:%M UTC"),
                              "load_start": _load(), "sizes": {}}
    for n in sizes:
        _queries(n, BENCH_SEED)
        rows = result["sizes"][str(n)] = {}
        for backend in backends:
            if not (_folder(backend, n) / "meta.json").exists() or (
                    backend != "lancedb"
                    and not (_folder(backend, n) / "vectors" / "stamp.json").exists()):
                print(f"{backend} {n}: not built, skipped", flush=True)
                continue
            row = _in_subprocess("one", "--backend", backend, "--size", str(n))
            row["build"] = json.loads((_folder(backend, n) / "meta.json").read_text())
            rows[backend] = row
            print(json.dumps(row), flush=True)
    result["load_end"] = _load()
    return result


def calibrate(n: int, backend: str, efs: list[int]) -> list[dict[str, Any]]:
    """Recall@10 and CPU per query by expansion, on the training queries (seed 7)."""
    out = []
    for ef in efs:
        row = _in_subprocess("one", "--backend", backend, "--size", str(n),
                             "--seed", str(TRAIN_SEED), "--ef", str(ef))
        out.append({"ef": ef, "recall@10": row["recall@10"], "recall@100": row["recall@100"],
                    "k10_cpu_p50": row["vector_k10_ms"]["cpu"]["p50"],
                    "k100_cpu_p50": row["vector_k100_ms"]["cpu"]["p50"]})
        print(json.dumps(out[-1]), flush=True)
    return out


def real_vectors(cache: Path, queries: int = 1_000) -> list[dict[str, Any]]:
    """Recall on real embeddings: the e5-small vector cache (SciFact, NFCorpus, regulatory
    documents and queries, ~11k rows), 1,000 of them held out as queries, graph path forced
    (exact_threshold 0) so the quantized graph is what is measured."""
    import tempfile

    files = sorted(cache.glob("vectors-*.npy"))
    vectors = np.concatenate([np.load(f) for f in files]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    order = np.random.default_rng(0).permutation(len(vectors))
    qvecs, corpus_vectors = vectors[order[:queries]], vectors[order[queries:]]
    labels = np.arange(len(corpus_vectors), dtype=np.int64)
    out = []
    for k in (10, 100):
        want = exact_topk(corpus_vectors, labels, qvecs, k)
        for backend in ("usearch-i8", "usearch-f16", "hnsw"):
            with tempfile.TemporaryDirectory() as folder:
                index = VECTOR_BACKENDS[backend](Path(folder), vectors.shape[1], exact_threshold=0)
                index.add(labels, corpus_vectors)
                cpu = time.process_time()
                got = index.search(qvecs, k)
                cpu_ms = (time.process_time() - cpu) / len(qvecs) * 1000
            recall = float(np.mean([len({a for a, _ in g} & {a for a, _ in w}) / k
                                    for g, w in zip(got, want)]))
            out.append({"backend": backend, "k": k, "chunks": len(corpus_vectors),
                        f"recall@{k}": round(recall, 4), "cpu_ms_per_query": round(cpu_ms, 3)})
            print(json.dumps(out[-1]), flush=True)
    return out


def plot(files: list[Path], out: Path) -> None:
    """Vector k=10 CPU p50 and RSS after open against size, per backend, from result files
    (a later file's (size, backend) replaces an earlier one's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows: dict[str, dict[int, dict[str, Any]]] = {}
    for file in files:
        for n, by_backend in json.loads(file.read_text())["sizes"].items():
            for backend, row in by_backend.items():
                rows.setdefault(backend, {})[int(n)] = row
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for backend, by_size in sorted(rows.items()):
        sizes = sorted(by_size)
        left.plot(sizes, [by_size[n]["vector_k10_ms"]["cpu"]["p50"] for n in sizes], "o-",
                  label=backend)
        right.plot(sizes, [by_size[n]["rss_mib_after_open"] for n in sizes], "o-", label=backend)
    for axis, title in ((left, "vector k=10: CPU ms per query (p50)"),
                        (right, "process RSS after open (MiB)")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("chunks")
        axis.set_title(title)
        axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def table(result: dict[str, Any]) -> str:
    lines = ["| chunks | backend | build s (cpu) | open s | RSS open / after q MiB | "
             "recall@10 | k10 p50 / p99 ms (cpu p50) | k100 p50 ms | 0.1 % filter exact |",
             "|---|---|---|---|---|---|---|---|---|"]
    # RSS cells: total (of which file-backed shared pages, i.e. mapped index files)
    for n, rows in result["sizes"].items():
        for backend, r in rows.items():
            k10, k100 = r["vector_k10_ms"], r["vector_k100_ms"]
            lines.append(
                f"| {int(n):,} | {backend} | {r['build']['build_s']} ({r['build']['build_cpu_s']}) "
                f"| {r['open_s']:.2f} | {r['rss_mib_after_open']:.0f} "
                f"({r['shared_mib_after_open']:.0f}) / {r['rss_mib_after_queries']:.0f} "
                f"({r['shared_mib_after_queries']:.0f}) | {r['recall@10']:.3f} | "
                f"{k10['p50']:.2f} / {k10['p99']:.2f} ({k10['cpu']['p50']:.2f}) | "
                f"{k100['p50']:.2f} | {r.get('filtered_0.1pct_exact', '-')} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["build", "run", "one", "calibrate", "real", "plot"])
    parser.add_argument("--files", default="", help="plot: result files, later ones win")
    parser.add_argument("--vector-cache", default=str(HERE / ".cache" / "vectors" / "e5-small"))
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--backend", default="usearch-i8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=BENCH_SEED)
    parser.add_argument("--ef", type=int, default=None)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--efs", default="64,100,150,200,256,300,400")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    if args.command == "build":
        for n in sizes:
            for backend in backends:
                print(json.dumps(build(backend, n, args.threads)), flush=True)
    elif args.command == "one":
        print(json.dumps(measure(args.backend, args.size, args.seed, args.ef)))
    elif args.command == "plot":
        plot([Path(f) for f in args.files.split(",")], OUT.with_suffix(".png"))
    elif args.command == "real":
        real_vectors(Path(args.vector_cache))
    elif args.command == "calibrate":
        calibrate(args.size, args.backend, [int(e) for e in args.efs.split(",")])
    else:
        result = run(sizes, backends)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(table(result))


if __name__ == "__main__":
    main()
