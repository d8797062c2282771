"""Scaling: synthetic clustered vectors + texts at 10k / 100k / 1M chunks.

Vectors are precomputed (random cluster centres plus noise, normalized, 384 dims) so the
embedding model does not dominate. Two levels are measured:

- ``store``: the real ingest path (``Store.ingest_documents`` with an embedder that looks
  the precomputed vector up by text), then ``store.search`` latency with a given query vector.
  Costly per chunk (chunking, DuckDB, Python rows), so only up to ``store_max`` chunks.
- ``indexes``: the hnswlib and Tantivy backends fed directly (as a rebuild from the catalog
  does), at every size: build time, disk, memory, p50/p95 of vector, BM25 and RRF-fused
  retrieval, and hnsw recall@10 against exact numpy search.
"""

from __future__ import annotations

import gc
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.indexes import HnswVectorIndex, TantivyTextIndex
from enginelib.indexes.base import TextDocument
from enginelib.indexes.exact import exact_topk
from enginelib.search import fusion

from .timing import disk_bytes, machine, percentiles, rss_mb, timed_ms

HERE = Path(__file__).resolve().parent
DIM = 384
CLUSTERS = 1_000
VOCAB = 30_000
WORDS_PER_CHUNK = 60
EF_SWEEP = (100, 200, 400, 800)


def synthetic(n: int, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """Clustered unit vectors, and texts whose words are drawn from the cluster's topic."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
    assign = rng.integers(0, CLUSTERS, n)
    vectors = np.empty((n, DIM), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        part = assign[start : start + step]
        noise = rng.standard_normal((len(part), DIM)).astype(np.float32)
        block = centres[part] + 0.9 * noise  # spread comparable to MiniLM neighbourhoods
        vectors[start : start + step] = block / np.linalg.norm(block, axis=1, keepdims=True)
    topic = rng.integers(0, VOCAB, (CLUSTERS, 40))
    common = rng.zipf(1.3, n * WORDS_PER_CHUNK) % VOCAB
    topical = rng.integers(0, 40, n * WORDS_PER_CHUNK)
    use_topic = rng.random(n * WORDS_PER_CHUNK) < 0.3
    words = np.where(use_topic, topic[np.repeat(assign, WORDS_PER_CHUNK), topical], common)
    words = words.reshape(n, WORDS_PER_CHUNK)
    names = _word_names(VOCAB)
    texts = [" ".join(names[w] for w in row) for row in words]
    return vectors, texts


def _word_names(count: int) -> list[str]:
    """Letters-only pseudo-words ("bab", "bac", ...): a word with digits ("w123") would look
    like a part number to the text index and also hit its exact-code field."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    names = []
    for i in range(count):
        word, n = "", i + 26 * 26  # at least three letters
        while n:
            n, r = divmod(n, 26)
            word = letters[r] + word
        names.append(word)
    return names


def queries_for(vectors: np.ndarray, texts: list[str], count: int, seed: int = 1) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(vectors), size=count, replace=False)
    noisy = vectors[picks] + 0.05 * rng.standard_normal((count, DIM)).astype(np.float32)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    words = [" ".join(texts[i].split()[:: 12][:4]) for i in picks]
    return noisy.astype(np.float32), words


def bench_indexes(n: int, folder: Path, queries: int, build_threads: int = 1) -> dict[str, Any]:
    shutil.rmtree(folder, ignore_errors=True)
    rss0 = rss_mb()
    vectors, texts = synthetic(n)
    gen_rss = rss_mb()
    labels = np.arange(n, dtype=np.int64)
    vec_index = HnswVectorIndex(folder / "vectors", DIM, num_threads=build_threads)
    _, hnsw_ms = timed_ms(lambda: vec_index.add(labels, vectors))
    vec_index.num_threads = 1  # queries are measured one at a time, single-threaded
    _, hnsw_save_ms = timed_ms(lambda: vec_index.save(1))
    text_index = TantivyTextIndex(folder / "text")
    step = 50_000
    started = time.perf_counter()
    for start in range(0, n, step):
        text_index.add([TextDocument(int(i), texts[i], "", "", "en") for i in range(start, min(n, start + step))])
    text_index.save(1)
    tantivy_s = time.perf_counter() - started
    built_rss = rss_mb()

    qvecs, qtexts = queries_for(vectors, texts, queries)
    truth = exact_topk(vectors, labels, qvecs, 10)
    vector_ms, text_ms, hybrid_ms, exact_ms, recall = [], [], [], [], []
    for i in range(len(qvecs)):  # warm-up pass
        vec_index.search(qvecs[i : i + 1], 100)
        text_index.search([qtexts[i]], 100)
    for i in range(len(qvecs)):
        q = qvecs[i : i + 1]
        (vres,), ms = timed_ms(lambda q=q: vec_index.search(q, 100))
        vector_ms.append(ms)
        (tres,), ms = timed_ms(lambda t=qtexts[i]: text_index.search([t], 100))
        text_ms.append(ms)
        _, ms = timed_ms(lambda q=q, t=qtexts[i]: fusion.order(fusion.rrf({
            "vector": vec_index.search(q, 100)[0], "bm25": text_index.search([t], 100)[0]})))
        hybrid_ms.append(ms)
        if i < 50:
            _, ms = timed_ms(lambda q=q: exact_topk(vectors, labels, q, 10))
            exact_ms.append(ms)
        got = {label for label, _ in vres[:10]}
        want = {label for label, _ in truth[i]}
        recall.append(len(got & want) / 10)
    # How much ef (candidates re-ranked exactly) buys back recall as the index grows.
    ef_sweep = {}
    for ef in EF_SWEEP:
        vec_index.ef_search = ef
        times, hits = [], []
        for i in range(len(qvecs)):
            (res,), ms = timed_ms(lambda q=qvecs[i : i + 1]: vec_index.search(q, 10))
            times.append(ms)
            want = {label for label, _ in truth[i]}
            hits.append(len({label for label, _ in res} & want) / 10)
        ef_sweep[str(ef)] = {"recall@10": round(float(np.mean(hits)), 4),
                             "p50_ms": percentiles(times)["p50"]}
    result = {
        "chunks": n,
        "ef_sweep": ef_sweep,
        "hnsw_build_s": round(hnsw_ms / 1000, 2),
        "hnsw_build_threads": build_threads,
        "hnsw_save_s": round(hnsw_save_ms / 1000, 2),
        "tantivy_build_s": round(tantivy_s, 2),
        "hnsw_disk_mib": round(disk_bytes(folder / "vectors") / 2**20, 1),
        "tantivy_disk_mib": round(disk_bytes(folder / "text") / 2**20, 1),
        "rss_mib_data": round(gen_rss - rss0, 1),
        "rss_mib_indexes": round(built_rss - gen_rss, 1),
        "vector_ms": percentiles(vector_ms),
        "bm25_ms": percentiles(text_ms),
        "hybrid_rrf_ms": percentiles(hybrid_ms),
        "exact_numpy_ms": percentiles(exact_ms),
        "hnsw_recall@10_vs_exact": round(float(np.mean(recall)), 4),
    }
    shutil.rmtree(folder, ignore_errors=True)
    return result


class _LookupEmbedder:
    """Returns the precomputed vector of each text (the 'model' of the scaling run)."""

    name, dim = "synthetic-clustered-384", DIM

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self.rows = {t: i for i, t in enumerate(texts)}
        self.vectors = vectors

    def embed(self, texts: list[str], progress: Any = None) -> np.ndarray:
        out = self.vectors[[self.rows[t] for t in texts]]
        if progress is not None:
            progress(len(texts))
        return out


def bench_store(n: int, folder: Path, queries: int) -> dict[str, Any]:
    import enginelib

    shutil.rmtree(folder, ignore_errors=True)
    vectors, texts = synthetic(n)
    docs = [enginelib.LoadedDocument(id=f"c{i}", text=t, language="en") for i, t in enumerate(texts)]
    embedder = _LookupEmbedder(texts, vectors)
    rss0 = rss_mb()
    started = time.perf_counter()
    with enginelib.open(folder, embedder=embedder) as store:
        report = store.ingest_documents(docs, truth_level="L2", batch_size=1000)
    ingest_s = time.perf_counter() - started
    qvecs, qtexts = queries_for(vectors, texts, queries)
    with enginelib.open(folder, embedder=embedder, read_only=True) as store:
        _, open_ms = timed_ms(lambda: store.view())
        ms_hybrid, ms_vector = [], []
        for i in range(len(qvecs)):
            store.search(qtexts[i], query_vector=qvecs[i], answerability_threshold=None, log=False)
        for i in range(len(qvecs)):
            r = store.search(qtexts[i], query_vector=qvecs[i], answerability_threshold=None, log=False)
            ms_hybrid.append(r.timings["retrieval_ms"])
            r = store.search(qtexts[i], query_vector=qvecs[i], strategy="vector",
                             answerability_threshold=None, log=False)
            ms_vector.append(r.timings["retrieval_ms"])
        rss = rss_mb()
    result = {
        "chunks": report.chunks_written,
        "ingest_s": round(ingest_s, 1),
        "ingest_chunks_per_s": round(report.chunks_written / ingest_s, 1),
        "disk_mib": round(disk_bytes(folder) / 2**20, 1),
        "view_load_ms": round(open_ms, 1),
        "rss_mib_growth": round(rss - rss0, 1),
        "store_hybrid_ms": percentiles(ms_hybrid),
        "store_vector_ms": percentiles(ms_vector),
    }
    shutil.rmtree(folder, ignore_errors=True)
    return result


def run_scaling(
    sizes: list[int], *, queries: int = 200, store_max: int = 100_000, build_threads: int = 1
) -> dict[str, Any]:
    work = HERE / ".work" / "scaling"
    out = HERE / "results" / "scaling.json"
    previous = json.loads(out.read_text()) if out.exists() else {}
    result: dict[str, Any] = {"machine": machine(), "queries": queries, "dim": DIM,
                              "clusters": CLUSTERS, "indexes": previous.get("indexes", {}),
                              "store": previous.get("store", {})}
    for n in sizes:
        print(f"[scaling] indexes at {n} chunks", flush=True)
        result["indexes"][str(n)] = bench_indexes(n, work / f"idx-{n}", queries, build_threads)
        gc.collect()  # the last size's vectors and indexes, before the next one
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result["indexes"][str(n)]), flush=True)
        if n <= store_max:
            print(f"[scaling] store at {n} chunks", flush=True)
            result["store"][str(n)] = bench_store(n, work / f"store-{n}", queries)
            out.write_text(json.dumps(result, indent=1) + "\n")
            print(json.dumps(result["store"][str(n)]), flush=True)
    result["peak_rss_mib"] = round(__import__("resource").getrusage(
        __import__("resource").RUSAGE_SELF).ru_maxrss / 1024, 1)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result
