"""multilingual-e5-small and all-MiniLM-L6-v2 in one vector (``e5-minilm``): an English-strong
embedder that keeps e5's French and cross-lingual search.

Each text's two unit vectors side by side, each half scaled by sqrt(1/2), so the cosine of
two joined vectors is the mean of the two models' cosines: unlike models make unlike
mistakes, and their mean ranks better than either alone on English text (NFCorpus test
nDCG@10 0.3575 in hybrid search, e5-small alone 0.3402; benchmarks/RESULTS.md). MiniLM is
English-only, so where the language guesser does not call a text English its half carries
nothing of the text:

- a non-English query's MiniLM half is zero: it meets every passage on e5's cosine alone
  (scaled by sqrt(1/2)), so French questions rank exactly as e5-small, in any store;
- a non-English passage's MiniLM half is one fixed unit vector (``null_half``), the same for
  every such passage: it keeps the passage at unit length, on the same scale as an English
  one, and adds the same small constant to every such passage for a given English query,
  so a French store still ranks exactly as e5-small for English questions too.

A query of keywords only has no language to tell and keeps both halves. In a store that
mixes languages an English query meets English passages on the mean of both cosines and
the others on e5's half alone: it prefers English passages (measured on the regulatory
texts mixed in one store: EN top-3 86.5 % against e5-small's 90.6 %). Use it for English or
one-language stores; the default (``e5-small``) stays the choice for mixed ones. The
answerability gate reads the e5 half only (``GATE_PART``), so its calibrated levels hold.

Needs the ``enginelib[minilm]`` extra (torch) for the MiniLM half.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..language import detect_language, query_language
from .base import ProgressHook, normalize_rows
from .e5 import E5_DIM, E5_SMALL, E5SmallEmbedder
from .fingerprint import fingerprint_of
from .minilm import SentenceTransformerEmbedder
from .path import embed_passages, embed_queries

E5_MINILM = "e5-minilm"
_HALF = math.sqrt(0.5)
# The slice of a joined vector the gate weighs, and the embedder whose levels apply to it.
GATE_PART = {E5_MINILM: (E5_DIM, E5_SMALL)}


def english_passage(text: str) -> bool:
    return detect_language(text) == "en"


def english_query(text: str) -> bool:
    return query_language(text) in (None, "en")


def null_half(dim: int) -> np.ndarray:
    """The MiniLM half of a non-English passage: a fixed pseudo-random unit vector, nearly
    orthogonal to every real embedding (cosines ~N(0, 1/sqrt(dim)))."""
    vector = np.random.default_rng(20261123).standard_normal(dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class JoinedEmbedder:
    """``[e5, MiniLM] / sqrt(2)`` per text; see the module docstring for non-English text."""

    def __init__(self, first: Any | None = None, second: Any | None = None) -> None:
        self.first = first if first is not None else E5SmallEmbedder()
        self.second = second if second is not None else SentenceTransformerEmbedder()
        self.name = E5_MINILM
        self.dim = int(self.first.dim) + int(self.second.dim)

    def model_fingerprint(self) -> dict[str, Any]:
        return {"first": fingerprint_of(self.first), "second": fingerprint_of(self.second)}

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        texts = list(texts)
        first = embed_passages(self.first, texts, progress=progress)
        keep = [english_passage(t) for t in texts]
        second = self._second(embed_passages, texts, keep)
        second[~np.asarray(keep, dtype=bool)] = null_half(int(self.second.dim))
        return _join(first, second)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        first = embed_queries(self.first, texts)
        keep = [english_query(t) for t in texts]
        return _join(first, self._second(embed_queries, texts, keep))

    def _second(self, embed: Any, texts: list[str], keep: list[bool]) -> np.ndarray:
        second = np.zeros((len(texts), int(self.second.dim)), dtype=np.float32)
        english = [t for t, k in zip(texts, keep, strict=True) if k]
        if english:  # MiniLM runs only on the texts that keep its half
            second[np.flatnonzero(keep)] = embed(self.second, english)
        return second


def _join(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    # Passages keep both halves; a query's zero half leaves its e5 half at full length after
    # normalizing, so its cosine to any passage is e5's scaled by sqrt(1/2).
    return normalize_rows(np.hstack([first * _HALF, second * _HALF]))
