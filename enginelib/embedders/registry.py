"""Built-in embedders by name: the name a store records is the name that rebuilds it."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import EmbeddingError, InvalidInputError, UnknownEmbedderError
from .base import Embedder
from .e5 import E5_SMALL, E5SmallEmbedder
from .hashing import HASHING_PREFIX, HashingEmbedder
from .joined import E5_MINILM, JoinedEmbedder
from .minilm import MINILM, SentenceTransformerEmbedder

# The default serves French and cross-lingual questions (MiniLM is English-only) and needs no
# torch; benchmarks/RESULTS.md has the comparison this choice rests on.
DEFAULT_EMBEDDER = E5_SMALL

# Factories only: building one imports nothing heavy, the model loads on its first text.
EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    E5_SMALL: E5SmallEmbedder,
    MINILM: SentenceTransformerEmbedder,
    # English-strong, French as e5 (enginelib/embedders/joined.py); needs the [minilm] extra.
    E5_MINILM: JoinedEmbedder,
}


def embedder_names() -> list[str]:
    return [*EMBEDDERS, f"{HASHING_PREFIX}-DIM"]


def make_embedder(name: str) -> Embedder:
    """A built-in embedder by name ("e5-small", "all-MiniLM-L6-v2", "hashing-64")."""
    spec = name.strip()
    factory = EMBEDDERS.get(spec)
    if factory is not None:
        return factory()
    if spec == HASHING_PREFIX or spec.startswith(HASHING_PREFIX + "-"):
        dim_text = spec.partition("-")[2] or "64"
        if not dim_text.isdigit() or int(dim_text) <= 0:
            raise UnknownEmbedderError(f"embedder {name!r}: the hashing dimension must be a positive int")
        try:
            return HashingEmbedder(int(dim_text))
        except InvalidInputError as exc:  # a dimension past any store's: said as a name's
            raise UnknownEmbedderError(f"embedder {name!r}: {exc}") from exc
    close = difflib.get_close_matches(spec, list(EMBEDDERS), n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownEmbedderError(
        f"unknown embedder {name!r}{hint}; built in: {', '.join(embedder_names())}"
    )


def resolve_embedder(embedder: Embedder | str | None) -> Embedder:
    """An embedder object from what a caller gave: an object, a name, or None (the default)."""
    if embedder is None:
        return make_embedder(DEFAULT_EMBEDDER)
    if isinstance(embedder, str):
        return make_embedder(embedder)
    return embedder


def embedder_for_store(model: str, dim: int) -> Embedder:
    """The embedder a store recorded, rebuilt by name; a stand-in that says what it needs when
    the name is not a built-in (a caller's own model), so the store still opens for full-text
    search, maintenance and reading."""
    from ..own_vectors import embedder_for_model

    own = embedder_for_model(model)  # a store of the caller's own vectors loads no model
    if own is not None:
        return own
    try:
        embedder = make_embedder(model)
    except UnknownEmbedderError:
        return UnavailableEmbedder(
            model, dim,
            f"this store was built with the embedder {model!r} ({dim} dims), which is not built "
            "in: open it from Python with enginelib.open(path, embedder=<that embedder>), or "
            "re-embed it with a built-in one: `enginelib reindex --embedder "
            f"{DEFAULT_EMBEDDER}`",
        )
    if int(embedder.dim) != dim:
        return UnavailableEmbedder(
            model, dim,
            f"this store records {model} with {dim} dims but that embedder gives "
            f"{embedder.dim}: run `enginelib reindex --embedder {model}`",
        )
    return embedder


class UnavailableEmbedder:
    """Stands in for a model that cannot run here: same name and dim, refuses to embed."""

    def __init__(self, name: str, dim: int, reason: str) -> None:
        self.name, self.dim, self.reason = name, dim, reason

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError(self.reason)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError(self.reason)
