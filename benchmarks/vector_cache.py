"""Document and query vectors cached on disk by model + content hash, shared by every system.

A cache is a folder per model holding append-only shards: ``keys-N.txt`` (one sha256 a line)
and ``vectors-N.npy`` (float32 rows in the same order). Plain files, nothing pickled.
``CachingEmbedder`` wraps an embedder so a rerun (or a peer) skips the model entirely and
records how long the model took, so ingest throughput with embedding stays reportable.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from enginelib.embedders import Embedder, QueryEmbedder, embed_queries

DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache" / "vectors"


def text_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


class VectorCache:
    def __init__(self, root: Path, model: str, dim: int) -> None:
        self.folder = root / model.replace("/", "_")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.model, self.dim = model, dim
        self._rows: dict[str, np.ndarray] = {}
        self.meta_path = self.folder / "meta.json"
        self.meta = json.loads(self.meta_path.read_text()) if self.meta_path.exists() else {
            "model": model, "dim": dim, "vectors": 0, "embed_seconds": 0.0}
        for keys_file in sorted(self.folder.glob("keys-*.txt")):
            vectors = np.load(keys_file.with_name(keys_file.name.replace("keys-", "vectors-")
                                                  .replace(".txt", ".npy")))
            keys = keys_file.read_text().split()
            self._rows.update(zip(keys, vectors, strict=True))

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: str) -> np.ndarray | None:
        return self._rows.get(key)

    def add(self, keys: Sequence[str], vectors: np.ndarray, seconds: float) -> None:
        if not keys:
            return
        shard = len(list(self.folder.glob("keys-*.txt")))
        np.save(self.folder / f"vectors-{shard:05d}.npy", np.asarray(vectors, dtype=np.float32))
        (self.folder / f"keys-{shard:05d}.txt").write_text("\n".join(keys) + "\n")
        self._rows.update(zip(keys, vectors, strict=True))
        self.meta["vectors"] = len(self._rows)
        self.meta["embed_seconds"] = float(self.meta["embed_seconds"]) + seconds
        self.meta_path.write_text(json.dumps(self.meta, indent=1))

    @property
    def seconds_per_vector(self) -> float | None:
        n = int(self.meta.get("vectors", 0))
        return float(self.meta["embed_seconds"]) / n if n else None


class CachingEmbedder:
    """An Embedder that serves cached vectors and computes only the missing ones."""

    def __init__(self, inner: Embedder, cache: VectorCache) -> None:
        self.inner, self.cache = inner, cache
        self.name, self.dim = inner.name, inner.dim
        self.model_seconds = 0.0  # time spent in the model during this process
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str], progress=None) -> np.ndarray:  # type: ignore[no-untyped-def]
        return self._cached(texts, self.name, self.inner.embed, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        # A model with a query role (e5) embeds queries differently: their own keys.
        if not isinstance(self.inner, QueryEmbedder):
            return self.embed(texts)
        return self._cached(texts, f"{self.name}\0query",
                            lambda batch: embed_queries(self.inner, batch), None)

    def _cached(self, texts, model, compute, progress) -> np.ndarray:  # type: ignore[no-untyped-def]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keys = [text_key(model, t) for t in texts]
        missing = []
        for i, key in enumerate(keys):
            row = self.cache.get(key)
            if row is None:
                missing.append(i)
            else:
                out[i] = row
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            started = time.perf_counter()
            vectors = compute([texts[i] for i in missing])
            seconds = time.perf_counter() - started
            self.model_seconds += seconds
            fresh = list(dict.fromkeys(keys[i] for i in missing))
            by_key = {keys[i]: vectors[j] for j, i in enumerate(missing)}
            self.cache.add(fresh, np.vstack([by_key[k] for k in fresh]), seconds)
            out[missing] = vectors
        if progress is not None:
            progress(len(texts))
        return out
