"""Scale through the store: 10k / 100k / 1M chunks ingested, opened and searched as a user does.

Every figure goes through the public API (``enginelib.open``, ``Store.ingest_documents`` with
the caller's own vectors, ``store.search`` with a query vector), beside LanceDB on the same
texts and vectors in the same run. Each step runs in its own process so that peak and
after-open RSS belong to that step alone::

    python -m benchmarks.scale_store build   --size 1000000   # once; cached in benchmarks/.cache
    python -m benchmarks.scale_store measure --size 1000000   # open, search, recall, add 1,000
    python -m benchmarks.scale_store lance   --size 1000000   # LanceDB, same data and queries
    python -m benchmarks.scale_store report                   # table + plot from the JSON files
    python -m benchmarks.scale_store all --sizes 10000 100000 1000000

The corpus is deterministic and streamed: block ``b`` of ``BLOCK`` chunks is drawn from its own
seeded generator, so any chunk (for queries, for the exact ground truth) can be regenerated
without holding the corpus. One document is one chunk: ~100 pseudo-words (150-200 tokens, a
paragraph-sized RAG chunk) whose words lean toward its vector cluster's topic, so text and
vector agree as they do on real data.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .timing import disk_bytes, machine, peak_rss_mb, percentiles, rss_mb, versions

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "scale_store"
RESULTS = HERE / "results" / "scale_store"
DIM = 384
CLUSTERS = 2_000
VOCAB = 50_000
TOPIC_WORDS = 40
WORDS_MIN, WORDS_MAX = 60, 140
BLOCK = 10_000
SEED = 20261123
BATCH = 4_096  # documents per catalog transaction in the bulk ingest
# The graph is built with both cores (hnswlib's add_items threads): a store option, set at
# creation; searches are measured one query at a time all the same.
# The vector backend of the stores built here (``ENGINELIB_SCALE_BACKEND=usearch-i8`` for the
# compact form); its stores and result files carry the name, the default's keep theirs.
BACKEND = os.environ.get("ENGINELIB_SCALE_BACKEND", "hnsw")
BUILD_OPTIONS: dict[str, Any] = {"vector": {"num_threads": 2, **(
    {} if BACKEND == "hnsw" else {"backend": BACKEND})}}
LEVELS = np.array(["L1", "L1", "L2", "L3"])
QUERIES = 200
ADD_DOCS = 1_000
SEARCH = {"truth_levels": ["L1", "L2", "L3", "L4"], "answerability_threshold": None,
          "log": False}


# -- corpus ------------------------------------------------------------------------------

def _word_names(count: int) -> np.ndarray:
    """Letters-only pseudo-words: digits would make the text index treat them as codes."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    names = []
    for i in range(count):
        word, n = "", i + 26 * 26
        while n:
            n, r = divmod(n, 26)
            word = letters[r] + word
        names.append(word)
    return np.array(names, dtype=object)


class Corpus:
    """Chunk ``i`` of the synthetic corpus, regenerated on demand block by block."""

    def __init__(self) -> None:
        rng = np.random.default_rng(SEED)
        self.centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
        self.topics = rng.integers(0, VOCAB, (CLUSTERS, TOPIC_WORDS))
        self.words = _word_names(VOCAB)

    def block(self, b: int, prefix: str = "c") -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        """(ids, texts, unit vectors, truth levels) of block ``b``."""
        rng = np.random.default_rng([SEED, b, 0 if prefix == "c" else 1])
        assign = rng.integers(0, CLUSTERS, BLOCK)
        noise = rng.standard_normal((BLOCK, DIM)).astype(np.float32)
        vectors = self.centres[assign] + 0.9 * noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        lengths = rng.integers(WORDS_MIN, WORDS_MAX + 1, BLOCK)
        total = int(lengths.sum())
        common = rng.zipf(1.3, total) % VOCAB
        topical = self.topics[np.repeat(assign, lengths), rng.integers(0, TOPIC_WORDS, total)]
        ids = np.where(rng.random(total) < 0.3, topical, common)
        flat = self.words[ids]
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        texts = [" ".join(flat[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        start = b * BLOCK
        names = [f"{prefix}{start + i}" for i in range(BLOCK)]
        return names, texts, vectors.astype(np.float32), LEVELS[rng.integers(0, len(LEVELS), BLOCK)]

    def documents(self, n: int, prefix: str = "c", first_block: int = 0) -> Iterator[Any]:
        """The first ``n`` chunks as LoadedDocuments with their own vector, streamed."""
        from enginelib import LoadedDocument

        done = 0
        b = first_block
        while done < n:
            names, texts, vectors, levels = self.block(b, prefix)
            take = min(BLOCK, n - done)
            for i in range(take):
                yield LoadedDocument(
                    id=names[i], text=texts[i], title=None, language="en",
                    metadata={"truth_level": str(levels[i])}, vectors=vectors[i : i + 1],
                )
            done += take
            b += 1

    def queries(self, n: int, count: int = QUERIES) -> dict[str, Any]:
        """Query vectors (a chunk's vector plus noise) and 4 of that chunk's words."""
        rng = np.random.default_rng([SEED, 99, n])
        picks = np.sort(rng.choice(n, size=count, replace=False))
        vectors, texts = [], []
        for b in np.unique(picks // BLOCK):
            _, block_texts, block_vectors, _ = self.block(int(b))
            for i in picks[picks // BLOCK == b] - b * BLOCK:
                vectors.append(block_vectors[i])
                words = block_texts[i].split()
                texts.append(" ".join(words[:: max(1, len(words) // 4)][:4]))
        qv = np.array(vectors) + 0.05 * rng.standard_normal((count, DIM)).astype(np.float32)
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
        return {"picks": picks, "vectors": qv.astype(np.float32), "texts": texts}

    def exact_top10(self, n: int, qvecs: np.ndarray) -> np.ndarray:
        """Exact cosine top-10 labels (= chunk numbers: the store labels them in order)."""
        best_s = np.full((len(qvecs), 10), -np.inf, dtype=np.float32)
        best_i = np.zeros((len(qvecs), 10), dtype=np.int64)
        for b in range(-(-n // BLOCK)):
            _, _, vectors, _ = self.block(b)
            take = min(BLOCK, n - b * BLOCK)
            scores = qvecs @ vectors[:take].T
            s = np.concatenate([best_s, scores], axis=1)
            i = np.concatenate([best_i, np.arange(b * BLOCK, b * BLOCK + take)[None, :].repeat(len(qvecs), 0)], axis=1)
            top = np.argsort(-s, axis=1, kind="stable")[:, :10]
            best_s, best_i = np.take_along_axis(s, top, 1), np.take_along_axis(i, top, 1)
        return best_i


def store_path(n: int) -> Path:
    return CACHE / (f"store-{n}" if BACKEND == "hnsw" else f"store-{BACKEND}-{n}")


def _save(name: str, payload: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    if BACKEND != "hnsw":
        name = f"{BACKEND}_{name}"
    payload = {**payload, "vector_backend": BACKEND, "load_average": os.getloadavg(), "machine": machine()}
    (RESULTS / name).write_text(json.dumps(payload, indent=2, default=str))
    print(json.dumps(payload, indent=2, default=str))


# -- steps -------------------------------------------------------------------------------

def build(n: int) -> None:
    """Ingest ``n`` chunks through ``Store.ingest_documents`` (own vectors), in this process."""
    import enginelib
    from enginelib.own_vectors import ExternalVectors

    path = store_path(n)
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    corpus = Corpus()
    load_before = os.getloadavg()
    started = time.perf_counter()
    marks: list[tuple[int, float]] = []

    def counted() -> Iterator[Any]:
        for i, doc in enumerate(corpus.documents(n)):
            if i and i % 50_000 == 0:
                marks.append((i, time.perf_counter() - started))
                print(f"{i} chunks in {marks[-1][1]:.0f} s, rss {rss_mb():.0f} MB", flush=True)
            yield doc

    with enginelib.open(path, embedder=ExternalVectors(DIM), index_options=BUILD_OPTIONS) as store:
        report = store.ingest_documents(counted(), batch_size=BATCH,
                                        progress=sys.stderr.isatty())
    ingest_s = time.perf_counter() - started
    ingest_cpu_s = time.process_time()
    first_open_s = prepare(n)
    seconds = time.perf_counter() - started
    assert report.chunks_written == n, report.chunks_written
    _save(f"build_{n}.json", {
        "chunks": n, "seconds": round(seconds, 1), "chunks_per_s": round(n / seconds, 1),
        "ingest_s": round(ingest_s, 1), "ingest_cpu_s": round(ingest_cpu_s, 1),
        "first_open_s": round(first_open_s, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1), "disk_mb": round(disk_bytes(path) / 2**20, 1),
        "batch_size": BATCH, "progress_marks": marks, "load_average_before": load_before,
    })


def prepare(n: int) -> float:
    """The first open after a bulk ingest: it writes the text segments and the view's
    columns (once). Timed apart from the open that ``measure`` reports, every later open."""
    import enginelib
    from enginelib import view_cache
    from enginelib.chunk_texts import FOLDER

    saved_view = n < view_cache.MIN_ROWS or (store_path(n) / view_cache.FOLDER).is_dir()
    if (store_path(n) / FOLDER).is_dir() and saved_view:
        return 0.0
    started = time.perf_counter()
    with enginelib.open(store_path(n)) as store:
        store.view()
    return time.perf_counter() - started


def _timed_searches(store: Any, queries: dict[str, Any], strategy: str) -> tuple[list[float], list[list[int]]]:
    times, labels = [], []
    for text, vector in zip(queries["texts"], queries["vectors"], strict=True):
        started = time.perf_counter()
        response = store.search(text, strategy=strategy, query_vector=vector, limit=10, **SEARCH)
        times.append((time.perf_counter() - started) * 1000.0)
        labels.append([hit.label for hit in response.hits])
    return times, labels


def measure(n: int) -> None:
    """Open the cached store, search it, then add 1,000 documents, in this fresh process."""
    import enginelib

    path = store_path(n)
    if not path.exists():
        raise SystemExit(f"no store at {path}: run `python -m benchmarks.scale_store build --size {n}`")
    # In a child process, so this process's RSS is that of one ordinary open.
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "benchmarks.scale_store", "prepare", "--size", str(n)],
                   check=True, cwd=HERE.parent)
    first_open_s = time.perf_counter() - started  # includes the child's interpreter start
    corpus = Corpus()
    queries = corpus.queries(n)
    gc.collect()
    rss_before = rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    store = enginelib.open(path)
    store.view()  # what the first search needs, so open time is open-to-searchable
    open_s = time.perf_counter() - started
    open_cpu_s = time.process_time() - cpu
    rss_open = rss_mb()
    result: dict[str, Any] = {"chunks": n, "open_s": round(open_s, 3),
                              "open_cpu_s": round(open_cpu_s, 3),
                              "first_open_after_ingest_s": round(first_open_s, 3),
                              "rss_before_open_mb": round(rss_before, 1),
                              "rss_after_open_mb": round(rss_open, 1)}
    # The truth is the store's own exact search (exact=True: every vector scored), so it
    # stays right after earlier runs added documents to the cached store.
    truth = [[h.label for h in store.search(t, strategy="vector", query_vector=v, exact=True,
                                             limit=10, **SEARCH).hits]
             for t, v in zip(queries["texts"], queries["vectors"], strict=True)]
    found = 0
    for strategy in ("vector", "fulltext", "hybrid"):
        _timed_searches(store, {k: v[:20] for k, v in queries.items()}, strategy)  # warm-up
        times, labels = _timed_searches(store, queries, strategy)
        result[strategy] = percentiles(times)
        if strategy == "vector":
            result["recall@10"] = round(float(np.mean(
                [len(set(got) & set(want)) / 10 for got, want in zip(labels, truth, strict=True)]
            )), 4)
        if strategy == "hybrid":
            found = sum(int(p) in got for p, got in zip(queries["picks"], labels, strict=True))
    result["hybrid_source_chunk_in_top10"] = round(found / len(queries["texts"]), 3)
    result["rss_after_searches_mb"] = round(rss_mb(), 1)
    # Incremental growth: 1,000 new documents (new ids, one batch of 1,000 chunks).
    docs = list(corpus.documents(ADD_DOCS, prefix=f"add{int(time.time())}-", first_block=n // BLOCK))
    started, cpu = time.perf_counter(), time.process_time()
    store.ingest_documents(docs, batch_size=BATCH)
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    store.view()
    view_s = time.perf_counter() - started
    # CPU seconds beside the wall: on a shared machine the wall time is mostly waiting.
    result["add_1000"] = {"ingest_s": round(ingest_s, 3), "view_update_s": round(view_s, 3),
                          "total_s": round(ingest_s + view_s, 3),
                          "cpu_s": round(time.process_time() - cpu, 3)}
    hits = store.search(queries["texts"][0], query_vector=queries["vectors"][0], **SEARCH).hits
    result["search_after_add_ok"] = bool(hits)
    store.close()
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    result["versions"] = versions(["duckdb", "hnswlib", "tantivy", "pyarrow", "numpy"])
    _save(f"measure_{n}.json", result)


def _lance_rows(corpus: Corpus, count: int, prefix: str = "c", first_block: int = 0) -> Iterator[Any]:
    import pyarrow as pa

    done, b = 0, first_block
    while done < count:
        names, texts, vectors, _ = corpus.block(b, prefix)
        take = min(BLOCK, count - done)
        yield pa.table({
            "row": pa.array(np.arange(b * BLOCK, b * BLOCK + take), type=pa.int64()),
            "id": pa.array(names[:take]), "text": pa.array(texts[:take]),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors[:take].reshape(-1), type=pa.float32()), DIM),
        })
        done += take
        b += 1


def lance_build(n: int) -> None:
    """LanceDB table of the same chunks (streamed block by block) and its FTS index."""
    import lancedb

    folder = CACHE / f"lance-{n}"
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    db = lancedb.connect(str(folder))
    blocks = _lance_rows(Corpus(), n)
    table = db.create_table("chunks", data=next(blocks))
    for block in blocks:
        table.add(block)
    table.create_fts_index("text", replace=True)
    seconds = time.perf_counter() - started
    _save(f"lance_build_{n}.json", {"chunks": n, "build_s": round(seconds, 1),
                                    "chunks_per_s": round(n / seconds, 1),
                                    "peak_rss_mb": round(peak_rss_mb(), 1)})


def lance(n: int) -> None:
    """LanceDB on the same texts and vectors: built in a child process, then reopened here,
    searched, and grown by 1,000 rows."""
    import lancedb
    from lancedb.rerankers import RRFReranker

    folder = CACHE / f"lance-{n}"
    subprocess.run([sys.executable, "-m", "benchmarks.scale_store", "lance-build", "--size", str(n)],
                   check=True, cwd=HERE.parent)
    built = json.loads((RESULTS / f"lance_build_{n}.json").read_text())
    corpus = Corpus()

    queries = corpus.queries(n)
    truth = corpus.exact_top10(n, queries["vectors"])
    rss_before = rss_mb()
    started = time.perf_counter()
    table = lancedb.connect(str(folder)).open_table("chunks")
    table.search(queries["vectors"][0], vector_column_name="vector").metric("cosine").limit(10).to_arrow()
    open_s = time.perf_counter() - started
    rss_open = rss_mb()
    reranker = RRFReranker(K=60)

    def run(kind: str, text: str, vector: np.ndarray) -> list[int]:
        if kind == "vector":
            query = table.search(vector, vector_column_name="vector").metric("cosine")
        elif kind == "fulltext":
            query = table.search(text, query_type="fts")
        else:
            query = (table.search(query_type="hybrid", vector_column_name="vector").vector(vector)
                     .text(text).metric("cosine").rerank(reranker=reranker))
        return query.select(["row"]).limit(10).to_arrow()["row"].to_pylist()  # type: ignore[no-any-return]

    result: dict[str, Any] = {"chunks": n, "build_s": built["build_s"],
                              "chunks_per_s": built["chunks_per_s"],
                              "build_peak_rss_mb": built["peak_rss_mb"], "open_s": round(open_s, 3),
                              "rss_before_open_mb": round(rss_before, 1),
                              "rss_after_open_mb": round(rss_open, 1),
                              "config": "flat vector search (no ANN index), native FTS index, "
                                        "RRFReranker(K=60), cosine"}
    for kind in ("vector", "fulltext", "hybrid"):
        for text, vector in list(zip(queries["texts"], queries["vectors"], strict=True))[:20]:
            run(kind, text, vector)
        times, got = [], []
        for text, vector in zip(queries["texts"], queries["vectors"], strict=True):
            t0 = time.perf_counter()
            got.append(run(kind, text, vector))
            times.append((time.perf_counter() - t0) * 1000.0)
        result[kind] = percentiles(times)
        if kind == "vector":
            result["recall@10"] = round(float(np.mean(
                [len(set(g) & set(w.tolist())) / 10 for g, w in zip(got, truth, strict=True)])), 4)
        if kind == "hybrid":
            found = sum(int(p) in g for p, g in zip(queries["picks"], got, strict=True))
            result["hybrid_source_chunk_in_top10"] = round(found / len(got), 3)
    result["rss_after_searches_mb"] = round(rss_mb(), 1)
    started = time.perf_counter()
    for block in _lance_rows(corpus, ADD_DOCS, prefix="add-", first_block=n // BLOCK):
        table.add(block)
    add_s = time.perf_counter() - started
    started = time.perf_counter()
    table.optimize()  # folds the new rows into the FTS index
    result["add_1000"] = {"add_s": round(add_s, 3), "optimize_s": round(time.perf_counter() - started, 3),
                          "total_s": round(time.perf_counter() - started + add_s, 3)}
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    result["versions"] = versions(["lancedb", "pylance", "pyarrow"])
    _save(f"lance_{n}.json", result)


def catalog_only(n: int) -> None:
    """The chunk view alone at ``n`` chunks: a catalog written through ``Catalog``'s insert
    functions (no indexes, so 1M fits in minutes), then ``ChunkView.load`` in child processes:
    the first load (it writes the text segments) and a later one. Isolates the view's open
    time and RAM from the vector index's."""
    from enginelib.catalog import Catalog, ChunkRow

    folder = CACHE / f"catalog-{n}"
    path = folder / "catalog.duckdb"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        catalog = Catalog(path, DIM)
        corpus = Corpus()
        started = time.perf_counter()
        for b in range(-(-n // BLOCK)):
            names, texts, vectors, levels = corpus.block(b)
            take = min(BLOCK, n - b * BLOCK)
            with catalog.transaction():
                generation = catalog.bump_generation()
                catalog.insert_documents([_document_row(names[i], texts[i], str(levels[i]), generation)
                                          for i in range(take)])
                labels = catalog.allocate_labels(take)
                chunks = [ChunkRow(0, texts[i], "", 0, len(texts[i]), len(texts[i].split()), None, None, "")
                          for i in range(take)]
                catalog.insert_chunks(names[:take], labels, chunks, vectors[:take], generation)
        catalog.close()
        print(f"catalog of {n} chunks written in {time.perf_counter() - started:.0f} s", flush=True)
    for step in ("view-first", "view-again"):
        subprocess.run([sys.executable, "-m", "benchmarks.scale_store", step, "--size", str(n)],
                       check=True, cwd=HERE.parent)


def _document_row(name: str, text: str, level: str, generation: int) -> dict[str, Any]:
    from enginelib.catalog import utcnow

    now = utcnow()
    return {"document_id": name, "title": None, "content": text, "content_hash": "", "fingerprint": "",
            "source_type": None, "source_path": None, "source_url": None, "source_id": None,
            "truth_level": level, "validated_by": None, "validated_at": None, "version": "1.0.0",
            "index_version": "2026.11.0", "domain": None, "entities": [], "keywords": [],
            "language": "en", "total_chunks": 1, "parent_document_id": None, "author": None,
            "created_at": now, "updated_at": now, "document_type": None, "tags": [],
            "file_path": None, "file_extension": None, "tenant_id": None, "custom": {}, "pages": None,
            "ingested_at": now, "generation": generation}


def view_load(n: int, step: str) -> None:
    from enginelib.catalog import Catalog
    from enginelib.chunk_view import ChunkView

    path = CACHE / f"catalog-{n}" / "catalog.duckdb"
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    catalog = Catalog(path, DIM, read_only=step == "view-again")
    view = ChunkView.load(catalog)
    catalog.release()
    seconds = time.perf_counter() - started
    after = rss_mb()
    text = view.record(len(view) // 2).content  # a text read through the segments
    _save(f"{step}_{n}.json", {"chunks": n, "load_s": round(seconds, 3), "rss_before_mb": round(before, 1),
                               "rss_after_mb": round(after, 1), "view_mb": round(after - before, 1),
                               "text_ok": bool(text)})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_store")
    parser.add_argument("step", choices=["build", "prepare", "measure", "lance-build", "lance",
                                         "catalog-only", "view-first", "view-again", "report", "all"])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args(argv)
    if args.step == "build":
        build(args.size)
    elif args.step == "prepare":
        print(f"first open {prepare(args.size):.1f} s")
    elif args.step == "measure":
        measure(args.size)
    elif args.step == "catalog-only":
        catalog_only(args.size)
    elif args.step in ("view-first", "view-again"):
        view_load(args.size, args.step)
    elif args.step == "lance-build":
        lance_build(args.size)
    elif args.step == "lance":
        lance(args.size)
    elif args.step == "report":
        from .scale_store_report import report

        report(RESULTS, HERE / "results")
    elif args.step == "all":
        for n in args.sizes:
            for step in ("build", "measure", "lance"):
                if step == "build" and (RESULTS / f"build_{n}.json").exists() and store_path(n).exists():
                    continue
                subprocess.run([sys.executable, "-m", "benchmarks.scale_store", step, "--size", str(n)],
                               check=True, cwd=HERE.parent)
        main(["report"])


if __name__ == "__main__":
    main()
