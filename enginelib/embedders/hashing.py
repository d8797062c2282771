"""A deterministic bag-of-words hashing embedder: no model, for unit tests and demos."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from ..errors import InvalidInputError
from ..validation import MAX_DIM, check_int, show_value
from .base import ProgressHook, normalize_rows

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic bag-of-words hashing embedder: fast, no model, for unit tests.

    Texts sharing words get similar vectors, so vector search behaves plausibly in tests.
    """

    def __init__(self, dim: int = 64, *, name: str | None = None) -> None:
        # Checked here, not at the first embed: 0 failed there with a ZeroDivisionError, -1
        # with numpy's "negative dimensions", "64" with a TypeError, and 10**9 allocated
        # 4 GB a text. The bounds are a store's (validation.MAX_DIM).
        self.dim = check_int("embedding dimension", dim, minimum=1, maximum=MAX_DIM)
        self.name = name or f"hashing-{dim}"

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        _check_texts(texts)
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                sign = 1.0 if digest[4] & 1 else -1.0
                matrix[row, bucket] += sign
            if not matrix[row].any():
                matrix[row, 0] = 1.0  # empty/punctuation-only text still gets a unit vector
        if progress is not None:
            progress(len(texts))
        return normalize_rows(matrix)


def _check_texts(texts: object) -> None:
    """A list of str: one str was embedded a vector per character (embed("brake pads"), ten
    rows, no error), and None or bytes failed inside the loop (AttributeError, TypeError)."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise InvalidInputError(f"embed() takes a list of texts, got {show_value(texts)}"
                                + (": wrap one text in a list, embed([text])"
                                   if isinstance(texts, str) else ""))
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidInputError(f"embed() takes texts (str): texts[{i}] is "
                                    f"{show_value(text)}")
