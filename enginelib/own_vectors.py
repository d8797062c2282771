"""Vectors the user brings: records' own embeddings, and stores that have no model at all."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from .embedders.base import Embedder
from .errors import EmbeddingError, InvalidInputError, InvalidVectorError
from .types import LoadedDocument
from .validation import real_array

EXTERNAL_PREFIX = "external-"


class ExternalVectors:
    """The embedder of a store without a model: every vector comes from the caller.

    Ingest takes records' own ``vector`` (or ``vectors``, one per chunk); a vector or hybrid
    search takes ``query_vector=`` (``--vector-file`` on the command line). Full-text
    search needs nothing. The store records the name ``external-<dim>``, so every later
    open knows it has no model to load.
    """

    def __init__(self, dim: int) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidInputError(f"the vector dimension must be a positive integer, got {dim!r}")
        self.dim = dim
        self.name = f"{EXTERNAL_PREFIX}{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        raise EmbeddingError(
            f"this store has no embedding model ({self.name}): it takes the vectors you bring. "
            "Give records a 'vector' field when ingesting, and search with query_vector= "
            "(CLI: --vector-file FILE) or with strategy='fulltext'"
        )


def is_external(model_name: str) -> bool:
    return model_name.startswith(EXTERNAL_PREFIX) and model_name[len(EXTERNAL_PREFIX):].isdigit()


def embedder_for_model(model_name: str) -> Embedder | None:
    """The embedder a store recorded when it needs no model to load, else None."""
    if is_external(model_name):
        return ExternalVectors(int(model_name[len(EXTERNAL_PREFIX):]))
    return None


def vectors_digest(document: LoadedDocument) -> str:
    """A short digest of a document's own vectors, so re-ingesting new ones is a change."""
    array = np.ascontiguousarray(_matrix(document))
    return hashlib.blake2b(array.tobytes(), digest_size=16).hexdigest()


def _matrix(document: LoadedDocument) -> np.ndarray:
    # A LoadedDocument's vectors are whatever the caller put there (JSONL records are
    # checked when read): a string was numpy's bare ValueError, a (1, 1, dim) array was
    # "vectors of dim dimensions; this store takes dim". First read for the fingerprint,
    # where the error skips the record under its id. Real numbers alone, as a query vector:
    # numpy parsed text "0.5", took True as 1 and dropped a complex number's imaginary part,
    # and a Python int past float's range was a bare OverflowError out of the ingest.
    try:
        array = real_array(document.vectors, "vectors")
    except InvalidVectorError as exc:
        raise InvalidVectorError(f"{exc}: give a float array with one row per chunk") from exc
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.size == 0:
        raise InvalidVectorError(
            f"vectors must be one vector or a matrix with one row per chunk, got shape "
            f"{array.shape}")
    return array


def own_vectors(document: LoadedDocument, chunks: int, dim: int) -> np.ndarray:
    """A document's own vectors checked against its chunk count and the store's dimension."""
    array = _matrix(document)
    if array.shape[1] != dim:
        raise InvalidVectorError(
            f"document {document.id!r} brings vectors of {array.shape[-1]} dimensions; this "
            f"store takes {dim}: give vectors from the store's model, or ingest into a store "
            f"made for them (enginelib init --vector-dim {array.shape[-1]})"
        )
    if array.shape[0] != chunks:
        raise InvalidVectorError(
            f"document {document.id!r} brings {array.shape[0]} vector(s) but its text makes "
            f"{chunks} chunks: give one 'vector' per chunk-sized record (split the text), or "
            "'vectors' with one row per chunk"
        )
    if not np.isfinite(array).all():
        raise InvalidVectorError(f"document {document.id!r} brings NaN or infinite vector values "
                                 "(or numbers beyond float32's range, about 3.4e38)")
    # The norm in float64, as a query vector's (search/engine._query_vectors): in float32 the
    # squares of components past ~2e18 overflowed (inf: the vector became zeros, refused as
    # "an all-zero vector" with numpy's overflow warning) and those under ~1e-23 underflowed
    # (refused as all zeros). Any finite float32 vector's squares fit float64.
    wide = array.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    if (norms == 0).any():
        raise InvalidVectorError(f"document {document.id!r} brings an all-zero vector: it has "
                                 "no direction to search")
    # The indexes search by cosine on unit vectors, as the model embedders return them.
    return (wide / norms).astype(np.float32)
