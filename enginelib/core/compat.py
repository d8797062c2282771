"""What an open checks: the store's schema, model and chunking against what the caller asks,
the index options a session may change, and the stand-in model maintenance opens with."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import manifest as mf
from .. import schema
from ..chunker import ChunkingConfig
from ..embedders import Embedder
from ..errors import EmbeddingError, IncompatibleStoreError, InvalidInputError
from ..text import shell_word

# Index options that only change how a search runs, not what is on disk: an existing store
# accepts them at open, for that session. The others are fixed when the store is created.
RUNTIME_INDEX_OPTIONS: dict[str, frozenset[str]] = {
    "vector": frozenset({"ef_search", "exact_threshold", "num_threads"}),
    "text": frozenset({"lenient"}),
}
# Every index option a new store takes: the backends' own (``backend`` picks the vector one).
# Any other was recorded in the manifest and passed to the backend as it was: a raw TypeError
# ("unexpected keyword argument 'ef'") at this open and at every later one; another kind
# ("vectors") was recorded and never read.
CREATION_INDEX_OPTIONS: dict[str, frozenset[str]] = {
    "vector": frozenset({"backend", "M", "ef_construction", "ef_search", "exact_threshold",
                         "num_threads"}),
    "text": frozenset({"languages", "boosts", "heap_size", "lenient"}),
}


def check_creation_index_options(options: dict[str, Any] | None) -> None:
    """A new store's index options: only the kinds and names its backends take."""
    for kind, values in (options or {}).items():
        allowed = CREATION_INDEX_OPTIONS.get(kind)
        if allowed is None:
            raise InvalidInputError(f"index_options[{kind!r}] is not understood; use 'vector' "
                                    "or 'text' dicts; nothing was created")
        for name in values:
            if name not in allowed:
                raise InvalidInputError(
                    f"index_options[{kind!r}][{name!r}] is not an index option; {kind!r} "
                    f"takes {', '.join(sorted(allowed))}; nothing was created")


def runtime_index_options(options: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """An existing store's session overrides, refusing the options fixed at creation."""
    if not options:
        return {}
    checked: dict[str, dict[str, Any]] = {}
    for kind, values in options.items():
        allowed = RUNTIME_INDEX_OPTIONS.get(kind)
        if allowed is None or not isinstance(values, dict):
            raise InvalidInputError(
                f"index_options[{kind!r}] is not understood; use 'vector' or 'text' dicts"
            )
        fixed = sorted(set(values) - allowed)
        if fixed:
            raise InvalidInputError(
                f"index option(s) {fixed} are fixed when a store is created; an existing store "
                f"accepts only {sorted(allowed)} for {kind!r} (run `enginelib reindex` into a "
                "new store to change the others)"
            )
        checked[kind] = dict(values)
    return checked


def require_known_schema(root: Path, manifest: mf.Manifest) -> None:
    """A store written by a newer enginelib is refused, by open and check alike (check called
    one with schema_version 999 healthy, which open, repair and stats refuse)."""
    if manifest.schema_version > schema.SCHEMA_VERSION:
        raise IncompatibleStoreError(
            f"store {root} uses schema {manifest.schema_version}, newer than this enginelib "
            f"({schema.SCHEMA_VERSION}): upgrade enginelib",
            path=root,
        )


def check_compatible(
    root: Path, manifest: mf.Manifest, embedder: Embedder, chunking: ChunkingConfig | None
) -> None:
    require_known_schema(root, manifest)
    if embedder.name != manifest.embedding_model or int(embedder.dim) != manifest.embedding_dim:
        raise IncompatibleStoreError(
            f"store {root} was built with {manifest.embedding_model} "
            f"({manifest.embedding_dim} dims); this embedder is {embedder.name} ({embedder.dim} "
            f"dims): run `enginelib reindex --store {shell_word(root)} --embedder {embedder.name}` to switch "
            "(or Store.reindex(embedder=...)), or open it without an embedder to use its own",
            path=root,
        )
    if chunking is not None and chunking.config_hash() != manifest.chunking_hash:
        raise IncompatibleStoreError(
            f"store {root} was chunked with {manifest.chunking}; the requested chunking differs: "
            f"run `enginelib reindex --store {shell_word(root)}` to re-chunk",
            path=root,
        )


class CatalogOnlyEmbedder:
    """Stands in for the store's model during maintenance: same name and dim, never embeds."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError(
            f"this store was opened for maintenance without its model {self.name!r}: open it "
            "with enginelib.open(path, embedder=...) to run vector or hybrid searches"
        )
