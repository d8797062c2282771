"""Index-level scaling beside LanceDB: the hnswlib and Tantivy backends opened from built
folders (``scaling_cache``) at 10k / 100k / 1M synthetic chunks, and LanceDB on the same
vectors and texts in the same run.

Per size: open time and RSS growth of opening the indexes (after open, and after the
queries touched what they read), recall@10 against exact numpy search at the default
settings, p50/p99 of vector (k=10 and k=100), BM25 (k=100) and hybrid (both at depth 100,
RRF-fused: what the search layer's retrieval stage does), and a filtered search at 0.1 %
selectivity checked against the exact top k.

``python -m benchmarks.scaling_indexes --sizes 10000,100000,1000000``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.indexes import HnswVectorIndex, TantivyTextIndex, tantivy_prune
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.hnsw import auto_ef
from enginelib.search import fusion

from .scaling import DIM, queries_for
from .scaling_cache import CACHE, RECIPE, built, corpus
from .timing import machine, percentiles, rss_mb, timed_ms

# LanceDB's scanner warns on every query that selects columns without its scores.
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("RUST_LOG", "error")

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "scaling_indexes.json"
DEPTH = 100  # what the search layer asks each retriever for before fusion
# LanceDB: exact (flat) search below this size, as its docs advise; an ANN index above.
LANCE_INDEX_FROM = 500_000
# Query settings for the indexed case: the fp32 re-rank of refine_factor x k candidates is
# what our index does with its ef candidates.
LANCE_NPROBES = 20
LANCE_REFINE = 10


def _recall(got: list[list[tuple[int, float]]], want: list[list[tuple[int, float]]]) -> float:
    return float(np.mean([len({a for a, _ in g} & {a for a, _ in w}) / max(1, len(w))
                          for g, w in zip(got, want)]))


def _series(fn: Any, items: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """Results, and wall-clock percentiles with the process CPU time beside them: on a
    machine shared by many jobs the wall clock mostly measures waiting for a core, the
    CPU time (all threads of this process) what the query itself costs."""
    out, times, cpu = [], [], []
    for item in items:
        cpu0 = time.process_time()
        result, ms = timed_ms(lambda item=item: fn(item))
        cpu.append((time.process_time() - cpu0) * 1000)
        out.append(result)
        times.append(ms)
    return out, {**percentiles(times), "cpu": percentiles(cpu)}


def bench_ours(n: int, qvecs: np.ndarray, qtexts: list[str], truth: list[Any],
               filt: tuple[np.ndarray, list[Any]], threads: int) -> dict[str, Any]:
    folder, meta = built(n, threads=threads)
    gc.collect()
    rss0 = rss_mb()
    started = time.perf_counter()
    vec = HnswVectorIndex(folder / "vectors", DIM)
    text = TantivyTextIndex(folder / "text", read_only=True)
    open_s = time.perf_counter() - started
    rss_open = rss_mb()
    assert len(vec) == n and vec.generation == 1, "the cached vector index did not load"
    qs = [qvecs[i : i + 1] for i in range(len(qvecs))]
    for q, t in zip(qs, qtexts):  # warm-up: the pages the queries read
        vec.search(q, DEPTH)
        text.search([t], DEPTH)
    res10, vector10 = _series(lambda q: vec.search(q, 10)[0], qs)
    _, vector100 = _series(lambda q: vec.search(q, DEPTH)[0], qs)
    _, bm25 = _series(lambda t: text.search([t], DEPTH)[0], qtexts)

    def hybrid(i: int) -> list[tuple[int, float]]:
        return fusion.order(fusion.rrf({"vector": vec.search(qs[i], DEPTH)[0],
                                        "bm25": text.search([qtexts[i]], DEPTH)[0]}))

    _, hybrid_ms = _series(hybrid, list(range(len(qs))))
    # The fusion step alone (RRF of the two depth-100 rankings, then the ordered list).
    pairs = [(vec.search(q, DEPTH)[0], text.search([t], DEPTH)[0]) for q, t in zip(qs, qtexts)]
    _, fusion_ms = _series(lambda p: fusion.order(fusion.rrf({"vector": p[0], "bm25": p[1]})),
                           pairs)
    allowed, filt_truth = filt
    filt_got, filt_ms = _series(lambda q: vec.search(q, 10, allowed=allowed)[0], qs[:50])
    exact_filtered = all([a for a, _ in g] == [a for a, _ in w] for g, w in zip(filt_got, filt_truth))
    rss_after = rss_mb()
    result = {
        "build": meta,
        "open_s": round(open_s, 2),
        "rss_mib_open": round(rss_open - rss0, 1),
        "rss_mib_after_queries": round(rss_after - rss0, 1),
        "rows_ram_mib": round(vec._rows.ram_bytes / 2**20, 1),
        "text_label_order": text._label_order,
        "ef_k10": auto_ef(n, 10), "ef_k100": auto_ef(n, DEPTH),
        "recall@10": round(_recall(res10, truth), 4),
        "vector_k10_ms": vector10, "vector_k100_ms": vector100,
        "bm25_k100_ms": bm25, "hybrid_rrf_ms": hybrid_ms, "fusion_only_ms": fusion_ms,
        "filtered_0.1pct_ms": filt_ms, "filtered_0.1pct_exact": exact_filtered,
        "filtered_allowed": int(len(allowed)),
    }
    return result  # the indexes are released with this frame


def _lance_table(n: int, vectors: np.ndarray, texts: list[str]) -> tuple[Any, dict[str, Any]]:
    import lancedb
    import pyarrow as pa

    folder = CACHE / f"lance-{n}-r{RECIPE}"
    meta_file = folder / "meta.json"
    db = lancedb.connect(str(folder))
    if meta_file.exists():
        return db.open_table("chunks"), json.loads(meta_file.read_text())
    started = time.perf_counter()
    step = 100_000
    table = None
    for start in range(0, n, step):
        part = vectors[start : start + step]
        data = pa.table({
            "row": pa.array(np.arange(start, start + len(part), dtype=np.int64)),
            "text": pa.array(texts[start : start + step]),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(part.reshape(-1), type=pa.float32()), DIM),
        })
        if table is None:
            table = db.create_table("chunks", data=data, mode="overwrite")
        else:
            table.add(data)
    assert table is not None
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    table.create_fts_index("text", replace=True)
    fts_s = time.perf_counter() - started
    index = "flat (exact)"
    vec_s = 0.0
    if n >= LANCE_INDEX_FROM:
        started = time.perf_counter()
        # IVF_PQ: LanceDB's default and the one its docs advise past ~0.5M rows.
        table.create_index(metric="cosine", index_type="IVF_PQ", vector_column_name="vector")
        vec_s = time.perf_counter() - started
        index = f"IVF_PQ, nprobes {LANCE_NPROBES}, refine x{LANCE_REFINE}"
    meta = {"load_s": round(load_s, 1), "fts_build_s": round(fts_s, 1),
            "vector_index_build_s": round(vec_s, 1), "vector_index": index}
    meta_file.write_text(json.dumps(meta, indent=1) + "\n")
    return table, meta


def bench_lance(n: int, vectors: np.ndarray, texts: list[str], qvecs: np.ndarray,
                qtexts: list[str], truth: list[Any], queries: int) -> dict[str, Any]:
    import lancedb
    from lancedb.rerankers import RRFReranker

    _, meta = _lance_table(n, vectors, texts)
    gc.collect()
    rss0 = rss_mb()
    started = time.perf_counter()
    table = lancedb.connect(str(CACHE / f"lance-{n}-r{RECIPE}")).open_table("chunks")
    open_s = time.perf_counter() - started
    reranker = RRFReranker(K=60)
    indexed = n >= LANCE_INDEX_FROM

    def vsearch(q: np.ndarray, k: int) -> list[tuple[int, float]]:
        query = table.search(q, vector_column_name="vector").metric("cosine")
        if indexed:
            query = query.nprobes(LANCE_NPROBES).refine_factor(LANCE_REFINE)
        rows = query.select(["row"]).limit(k).to_arrow()
        return list(zip(rows["row"].to_pylist(), (1 - rows["_distance"].to_numpy()).tolist()))

    def fts(t: str) -> list[tuple[int, float]]:
        rows = table.search(t, query_type="fts").select(["row"]).limit(DEPTH).to_arrow()
        return list(zip(rows["row"].to_pylist(), rows["_score"].to_pylist()))

    def hybrid(i: int) -> Any:
        query = (table.search(query_type="hybrid", vector_column_name="vector")
                 .vector(qvecs[i]).text(qtexts[i]).metric("cosine"))
        if indexed:
            query = query.nprobes(LANCE_NPROBES).refine_factor(LANCE_REFINE)
        return query.rerank(reranker=reranker).select(["row"]).limit(DEPTH).to_arrow()

    qvecs, qtexts, truth = qvecs[:queries], qtexts[:queries], truth[:queries]
    for i in range(len(qvecs)):  # warm-up
        vsearch(qvecs[i], DEPTH)
        fts(qtexts[i])
    res10, vector10 = _series(lambda q: vsearch(q, 10), list(qvecs))
    _, vector100 = _series(lambda q: vsearch(q, DEPTH), list(qvecs))
    _, fts_ms = _series(fts, qtexts)
    _, hybrid_ms = _series(hybrid, list(range(len(qvecs))))
    return {"build": meta, "open_s": round(open_s, 2),
            "rss_mib_after_queries": round(rss_mb() - rss0, 1),
            "recall@10": round(_recall(res10, truth), 4),
            "vector_k10_ms": vector10, "vector_k100_ms": vector100,
            "fts_k100_ms": fts_ms, "hybrid_rrf_ms": hybrid_ms}


def bench_size(n: int, queries: int, threads: int, lance: int) -> dict[str, Any]:
    vectors, texts = corpus(n)
    labels = np.arange(n, dtype=np.int64)
    qvecs, qtexts = queries_for(vectors, texts, queries)
    truth = exact_topk(vectors, labels, qvecs, 10)
    allowed = np.sort(np.random.default_rng(7).choice(n, max(10, n // 1000), replace=False))
    filt_truth = exact_topk(vectors[allowed], allowed, qvecs[:50], 10)
    if not lance:
        del vectors, texts
    result: dict[str, Any] = {"chunks": n, "queries": queries, "lance_queries": lance,
                              "load_before": open("/proc/loadavg").read().split()[:3]}
    result["enginelib"] = bench_ours(n, qvecs, qtexts, truth, (allowed, filt_truth), threads)
    print(json.dumps(result["enginelib"]), flush=True)
    if lance:
        result["lancedb"] = bench_lance(n, vectors, texts, qvecs, qtexts, truth, lance)
        print(json.dumps(result["lancedb"]), flush=True)
    result["load_after"] = open("/proc/loadavg").read().split()[:3]
    return result


def run(sizes: list[int], queries: int = 200, threads: int = 2, lance: int = 50) -> dict[str, Any]:
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    result: dict[str, Any] = {"machine": machine(), "dim": DIM, "sizes": previous.get("sizes", {})}
    for n in sizes:
        print(f"[scaling_indexes] {n} chunks", flush=True)
        result["sizes"][str(n)] = bench_size(n, queries, threads, lance)
        gc.collect()
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=1) + "\n")
    return result


def bm25_paths(n: int, queries: int) -> dict[str, Any]:
    """Where BM25 time goes at size ``n``: tantivy's own top 100 for the parsed query (a
    full scan: tantivy-py's search never prunes), our search as it runs (pruned for plain
    word queries, ``indexes/tantivy_prune.py``), and our two full-scan paths (tantivy's tie
    order is label order; the exact tie path), each checked against the pruned answers."""
    folder, _ = built(n)
    texts = (CACHE / f"corpus-{n}-r{RECIPE}" / "texts.txt").read_text(encoding="utf-8").splitlines()
    placeholder = np.zeros((len(texts), DIM), dtype=np.float32)
    placeholder[:, 0] = 1.0  # queries_for needs vectors; only its texts are used here
    _, qtexts = queries_for(placeholder, texts, queries)
    del texts, placeholder
    text = TantivyTextIndex(folder / "text", read_only=True)
    searcher = text._index.searcher()
    parsed = {q: text._parse(q, False, True) for q in qtexts}
    for q in qtexts:
        text.search([q], DEPTH)
    _, raw = _series(lambda q: searcher.search(parsed[q], limit=DEPTH, count=False).hits, qtexts)
    answered = []
    real_top_k = tantivy_prune.top_k

    def counting(*args: Any) -> Any:
        hits = real_top_k(*args)
        answered.append(hits is not None)
        return hits

    tantivy_prune.top_k = counting  # type: ignore[assignment]
    try:
        pruned_results, pruned = _series(lambda q: text.search([q], DEPTH)[0], qtexts)
    finally:
        tantivy_prune.top_k = real_top_k  # type: ignore[assignment]
    saved_order, saved_min = text._label_order, tantivy_prune.MIN_POSTINGS
    tantivy_prune.MIN_POSTINGS = 10**15  # never prune: the full-scan paths
    try:
        text._label_order = True
        _, label_order = _series(lambda q: text.search([q], DEPTH), qtexts)
        text._label_order = False
        exact_results, tie_path = _series(lambda q: text.search([q], DEPTH)[0], qtexts)
    finally:
        text._label_order, tantivy_prune.MIN_POSTINGS = saved_order, saved_min
    return {"chunks": n, "segments": int(searcher.num_segments), "index_in_label_order": saved_order,
            "load": open("/proc/loadavg").read().split()[:3],
            "tantivy_top100_ms": raw, "ours_pruned_ms": pruned,
            "pruned_share": round(sum(answered) / max(1, len(answered)), 3),
            "pruned_identical_to_exact": sum(a == b for a, b in zip(pruned_results, exact_results)),
            "ours_label_order_path_ms": label_order, "ours_exact_tie_path_ms": tie_path}


def _ms(stats: dict[str, Any]) -> str:
    cpu = stats.get("cpu")
    wall = f"{stats['p50']:.2f} / {stats['p99']:.1f}"
    return wall if cpu is None else f"{wall} (CPU {cpu['p50']:.2f} / {cpu['p99']:.1f})"


def table(result: dict[str, Any]) -> str:
    """The "Scale: indexes" table of RESULTS.md, from a run's JSON."""
    lines = [
        "| chunks | engine | build (vector / text) | open | RSS after open / after queries | "
        "recall@10 | vector k=10 p50 / p99 ms | BM25 k=100 p50 / p99 ms | "
        "hybrid (2 x k=100 + RRF) p50 / p99 ms | filtered 0.1 % exact |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n, size in sorted(result["sizes"].items(), key=lambda item: int(item[0])):
        ours = size["enginelib"]
        build = ours["build"]
        lines.append(
            f"| {int(n):,} | enginelib (hnsw ef {ours['ef_k10']}/{ours['ef_k100']}) | "
            f"{build['hnsw_build_s']:.0f} s / {build['tantivy_build_s']:.0f} s | "
            f"{ours['open_s']:.2f} s | {ours['rss_mib_open']:.0f} / "
            f"{ours['rss_mib_after_queries']:.0f} MiB | {ours['recall@10']:.3f} | "
            f"{_ms(ours['vector_k10_ms'])} | {_ms(ours['bm25_k100_ms'])} | "
            f"{_ms(ours['hybrid_rrf_ms'])} | {'yes' if ours['filtered_0.1pct_exact'] else 'NO'} "
            f"({ours['filtered_allowed']} allowed) |")
        lance = size.get("lancedb")
        if lance:
            lb = lance["build"]
            lines.append(
                f"| {int(n):,} | LanceDB ({lb['vector_index']}) | "
                f"{lb['vector_index_build_s']:.0f} s / {lb['fts_build_s']:.0f} s | "
                f"{lance['open_s']:.2f} s | - / {lance['rss_mib_after_queries']:.0f} MiB | "
                f"{lance['recall@10']:.3f} | {_ms(lance['vector_k10_ms'])} | "
                f"{_ms(lance['fts_k100_ms'])} | {_ms(lance['hybrid_rrf_ms'])} | - |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--lance-queries", type=int, default=50,
                        help="queries run on LanceDB (its first ones); 0 skips it")
    parser.add_argument("--table", action="store_true", help="print the table of the last run")
    parser.add_argument("--bm25-paths", action="store_true",
                        help="only compare tantivy's own top k with our two BM25 paths")
    args = parser.parse_args()
    if args.bm25_paths:
        out = HERE / "results" / "scaling_bm25_paths.json"
        out.write_text(json.dumps([bm25_paths(int(n), args.queries)
                                   for n in args.sizes.split(",")], indent=1) + "\n")
        print(out.read_text())
        return
    if args.table:
        print(table(json.loads(OUT.read_text())))
        return
    run([int(s) for s in args.sizes.split(",")], args.queries, args.build_threads,
        args.lance_queries)


if __name__ == "__main__":
    main()
