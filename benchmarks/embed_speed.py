"""Passage and query embedding speed of each built-in embedder, in CPU time on one thread.

On a shared, busy machine wall time measures the queue for a core; the CPU time a
single-threaded model spends is what an idle core would take. Same chunks (SciFact's first
documents, cut by the store's chunker) for every model. `python -m benchmarks.embed_speed`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before any engine loads
os.environ.setdefault("ENGINELIB_EMBED_THREADS", "1")

from enginelib.chunker import Chunker, ChunkingConfig  # noqa: E402
from enginelib.embedders import embed_queries, make_embedder, passage_text  # noqa: E402

from . import beir  # noqa: E402
from .run import RESULTS  # noqa: E402


def measure(models: tuple[str, ...] = ("e5-small", "all-MiniLM-L6-v2", "e5-minilm"), chunks: int = 48) -> dict[str, Any]:
    data = beir.load("scifact")
    chunker = Chunker(ChunkingConfig())
    texts: list[str] = []
    for document in data.documents:
        texts += [passage_text(document.title, s.heading_path, s.content) for s in chunker.chunk(document.text)]
        if len(texts) >= chunks:
            break
    texts = texts[:chunks]
    queries = list(data.queries.values())[:chunks]
    out: dict[str, Any] = {"chunks": len(texts), "queries": len(queries), "models": {}}
    for name in models:
        model = make_embedder(name)
        if name in ("all-MiniLM-L6-v2", "e5-minilm"):
            import torch

            torch.set_num_threads(1)
        model.embed(texts[:2])  # load and warm up
        embed_queries(model, queries[:2])
        cpu, wall = time.process_time(), time.perf_counter()
        model.embed(texts)
        passage_cpu, passage_wall = time.process_time() - cpu, time.perf_counter() - wall
        cpu = time.process_time()
        for q in queries:
            embed_queries(model, [q])
        query_cpu = time.process_time() - cpu
        out["models"][name] = {
            "passage_cpu_s_per_chunk": round(passage_cpu / len(texts), 4),
            "chunks_per_cpu_s": round(len(texts) / passage_cpu, 2),
            "passage_wall_s_per_chunk": round(passage_wall / len(texts), 4),
            "query_cpu_ms": round(1000 * query_cpu / len(queries), 2),
        }
        print(name, out["models"][name], file=sys.stderr, flush=True)
    (RESULTS / "embedders").mkdir(parents=True, exist_ok=True)
    (RESULTS / "embedders" / "embed_speed.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    measure()
