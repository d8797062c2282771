"""Fill the on-disk vector cache for a dataset and an embedder, ahead of `benchmarks run`.

Embedding is the long part of a benchmark on a small machine (SciFact's 5.7k chunks take
many minutes on two cores); doing it once, in the background, lets every later run of the
harness take the vectors from the cache. The chunks are the ones a store's ingest cuts,
because the cache is filled through a real ingest.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from enginelib.embedders import make_embedder

from . import beir
from .run import _ingest, log
from .vector_cache import DEFAULT_CACHE, CachingEmbedder, VectorCache


def fill_cache(dataset: str, embedder: str, *, split: str = "test", max_docs: int = 0,
               cache_dir: Path = DEFAULT_CACHE) -> dict[str, Any]:
    data = beir.subsample(beir.load(dataset, split), max_docs)
    model = make_embedder(embedder)
    cache = VectorCache.for_embedder(cache_dir, model)
    caching = CachingEmbedder(model, cache)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="enginelib-embed-") as tmp:
        ingest = _ingest(Path(tmp) / "store", data, caching, cache)
    caching.embed_queries(list(data.queries.values()))
    log(f"{data.name} / {model.name}: {ingest['chunks']} chunks, "
        f"{ingest['chunks_embedded_now']} embedded now in {time.perf_counter() - started:.0f} s; "
        f"{cache.seconds_per_vector or 0:.4f} s per vector")
    return ingest
