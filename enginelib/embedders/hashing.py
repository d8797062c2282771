"""A deterministic bag-of-words hashing embedder: no model, for unit tests and demos."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from ..errors import InvalidInputError
from ..own_vectors import is_external
from ..validation import MAX_DIM, check_int, show_value
from .base import ProgressHook, normalize_rows
from .e5 import E5_SMALL
from .joined import E5_MINILM
from .minilm import MINILM

_WORD = re.compile(r"\w+", re.UNICODE)
HASHING_PREFIX = "hashing"  # "hashing-64": the name make_embedder rebuilds this one from


class HashingEmbedder:
    """Deterministic bag-of-words hashing embedder: fast, no model, for unit tests.

    Texts sharing words get similar vectors, so vector search behaves plausibly in tests.
    """

    def __init__(self, dim: int = 64, *, name: str | None = None) -> None:
        # Checked here, not at the first embed: 0 failed there with a ZeroDivisionError, -1
        # with numpy's "negative dimensions", "64" with a TypeError, and 10**9 allocated
        # 4 GB a text. The bounds are a store's (validation.MAX_DIM).
        self.dim = check_int("embedding dimension", dim, minimum=1, maximum=MAX_DIM)
        self.name = _check_name(name, self.dim)

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


def _check_name(name: object, dim: int) -> str:
    """The name a store records, and rebuilds the embedder from when opened without one: a
    built-in's ("e5-small") was taken, and the store reopened with e5 compared its queries with
    these hashes, without a word; an int failed later as "not an embedder"."""
    own = f"{HASHING_PREFIX}-{dim}"
    if name is None or name == "":
        return own
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"HashingEmbedder name must be a non-blank str, got "
                                f"{show_value(name)}: leave it out for {own!r}")
    spec = name.strip()
    taken = (spec in (E5_SMALL, MINILM, E5_MINILM) or is_external(spec)
             or spec == HASHING_PREFIX or spec.startswith(f"{HASHING_PREFIX}-"))
    if taken and spec != own:
        raise InvalidInputError(
            f"HashingEmbedder name {name!r} names another embedder: a store records the name "
            "and, opened without embedder=, searches with that one, whose vectors are not "
            f"these hashes; leave the name out for {own!r} or give one of your own")
    return name


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
