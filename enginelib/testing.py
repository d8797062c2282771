"""A pytest plugin shipped with enginelib: in-memory stores for your own tests, no model needed.

Installed with the package (entry point ``pytest11``), so after ``pip install enginelib``
any test may ask for these fixtures:

- ``enginelib_store``: an empty in-memory store with the deterministic HashingEmbedder
  (64 dims: texts sharing words get close vectors), closed and removed after the test;
- ``enginelib_store_factory``: a function building more of them, with ``records``,
  ``embedder``, ``truth_level`` (for records that carry none), ``chunking``.

Nothing touches the disk and no model is loaded, so such tests run in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest

from .chunker import ChunkingConfig
from .embedder import Embedder, HashingEmbedder
from .memory_store import open_memory
from .store import Store
from .types import LoadedDocument

TEST_EMBEDDER_DIM = 64

StoreFactory = Callable[..., Store]


def test_embedder(dim: int = TEST_EMBEDDER_DIM) -> Embedder:
    """The embedder the fixtures use: deterministic, instant, no model files."""
    return HashingEmbedder(dim)


test_embedder.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


@pytest.fixture
def enginelib_store_factory() -> Iterator[StoreFactory]:
    """Build in-memory stores: ``factory(records=[...], embedder=..., truth_level="L1")``."""
    made: list[Store] = []

    def factory(
        records: Iterable[LoadedDocument | Mapping[str, Any]] | None = None,
        *,
        embedder: Embedder | None = None,
        truth_level: str | None = None,
        chunking: ChunkingConfig | None = None,
        **options: Any,
    ) -> Store:
        # "is None": a falsy embedder ("", 0, False) was replaced by the test embedder unseen,
        # where enginelib.memory() refuses it
        store = open_memory(
            records=records, embedder=test_embedder() if embedder is None else embedder,
            truth_level=truth_level, chunking=chunking, **options,
        )
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def enginelib_store(enginelib_store_factory: StoreFactory) -> Store:
    """An empty in-memory store with the deterministic test embedder."""
    return enginelib_store_factory()
