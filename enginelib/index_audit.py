"""Whether a store's derived index files still hold what its catalog says (for `check`, and
before a snapshot seals them with its checksums)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .catalog import Catalog
from .catalog_view import chunk_vectors
from .embedders.base import normalize_rows

# This many stored vectors, spread over the labels, are compared with the catalog's: a
# damaged vector file reads without error and ranks wrongly (8 KiB of zeros written into a
# rows file passed every other check). A sample keeps this fast on a million chunks.
VECTOR_SAMPLE = 2048
# An index may keep its vectors quantized (usearch-i8, -f16): above this cosine with the
# catalog's vector it holds the same one (int8 keeps > 0.999 on our models' vectors).
SAME_VECTOR_COSINE = 0.98


def wrong_vectors(catalog: Catalog, index: Any, labels: np.ndarray) -> tuple[np.ndarray, int]:
    """(labels whose stored vector is not the catalog's, how many were compared), over a
    sample of the labels both hold."""
    present = np.intersect1d(labels, index.labels())
    if not len(present):
        return np.zeros(0, dtype=np.int64), 0
    spread = np.linspace(0, len(present) - 1, min(VECTOR_SAMPLE, len(present)))
    sample = np.unique(present[spread.astype(np.int64)])
    truth = chunk_vectors(catalog, sample.tolist())
    sample = np.array([label for label in sample.tolist() if label in truth], dtype=np.int64)
    if not len(sample):
        return sample, 0
    expected = normalize_rows(np.stack([truth[label] for label in sample.tolist()]))
    stored = normalize_rows(np.asarray(index.vectors_for(sample), dtype=np.float32))
    cosine = np.einsum("ij,ij->i", expected, stored)
    zero = ~np.any(expected, axis=1)  # a zero vector has no direction to compare
    return sample[~(cosine >= SAME_VECTOR_COSINE) & ~zero], len(sample)  # NaN counts as wrong


def verify_files(files: Any, folder: Path) -> list[str]:
    """What a backend's own check of its files finds (the backends that have one)."""
    verify = getattr(files, "verify", None)
    return verify(folder) if verify is not None else []
