"""Query vectors given on the command line (``--vector-file``) for stores without a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from enginelib import InvalidVectorError, Store


def load_vector_file(path: Path) -> np.ndarray:
    """One query vector from a ``.npy`` file or a JSON list of numbers (``[[...]]`` too)."""
    try:
        if path.suffix.lower() == ".npy":
            raw = np.load(path, allow_pickle=False)
        else:
            raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidVectorError(
            f"--vector-file {path}: cannot read a vector ({exc}); give a JSON list of numbers "
            "or a .npy array"
        ) from exc
    try:
        array = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidVectorError(f"--vector-file {path}: expected a list of numbers") from exc
    if array.ndim == 2 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 1 or array.size == 0:
        raise InvalidVectorError(
            f"--vector-file {path}: expected one vector (a flat list of numbers), got shape "
            f"{array.shape}"
        )
    return array


def check_dimension(vector: np.ndarray, store: Store, path: Path) -> np.ndarray:
    dim = store.manifest.embedding_dim
    if vector.size != dim:
        raise InvalidVectorError(
            f"--vector-file {path} holds {vector.size} numbers; this store takes vectors of "
            f"{dim} ({store.manifest.embedding_model}): embed the query with the model the "
            "store's vectors came from"
        )
    return vector
