"""The contract every index backend follows; the store talks only to these Protocols.

Rules every backend obeys (one shared test in tests/test_indexes_contract.py proves them):

- Labels are the catalog's non-negative int64 chunk labels. ``add`` with a label that is
  already present replaces that entry (so replaying a commit twice is harmless);
  ``delete`` of an unknown label is a no-op.
- ``search`` is batch-first: one list of ``(label, score)`` per query, best first,
  higher score is better. Ties break on the smaller label so results are deterministic.
- ``k`` larger than the number of (allowed) entries returns them all; ``k <= 0`` is the
  caller's bug and raises ``InvalidInputError``.
- ``allowed`` restricts the search *before* ranking: the result is the true top-k among
  the allowed labels, never a post-filtered global top-k. An empty ``allowed`` returns
  empty lists.
- ``save(generation)`` writes the index durably and atomically (a crash leaves either the
  previous files or the new ones) and stamps it with the catalog generation it reflects;
  ``generation`` reads the stamp back (``None`` for a new or unreadable index, which the
  store then rebuilds from the catalog).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from enginelib.search.gate import QueryTerm

Labels = np.ndarray  # int64, shape (n,)
Matrix = np.ndarray  # float32, shape (n, dim)
SearchResult = list[tuple[int, float]]


@dataclass(frozen=True)
class TextDocument:
    """What the full-text index needs of one chunk."""

    label: int
    content: str
    headings: str = ""
    title: str = ""
    language: str = "en"


@runtime_checkable
class VectorIndex(Protocol):
    dim: int

    @property
    def generation(self) -> int | None: ...

    def __len__(self) -> int: ...

    def add(self, labels: Labels, vectors: Matrix) -> None: ...

    def delete(self, labels: Iterable[int]) -> None: ...

    def clear(self) -> None: ...

    def labels(self) -> Labels: ...

    def search(
        self, queries: Matrix, k: int, allowed: Labels | None = None
    ) -> list[SearchResult]: ...

    def save(self, generation: int) -> None: ...

    # The stored (L2-normalized, float32) vectors of the given labels, in order, so the
    # store need not keep its own copy; an unknown label raises InvalidInputError.
    def vectors_for(self, labels: Labels) -> Matrix: ...


@runtime_checkable
class TextIndex(Protocol):
    @property
    def generation(self) -> int | None: ...

    def __len__(self) -> int: ...

    def add(self, documents: Sequence[TextDocument]) -> None: ...

    def delete(self, labels: Iterable[int]) -> None: ...

    def clear(self) -> None: ...

    def labels(self) -> Labels: ...

    def search(
        self, queries: Sequence[str], k: int, allowed: Labels | None = None
    ) -> list[SearchResult]: ...

    def highlight_terms(self, query: str) -> list[str]: ...

    # The answerability gate's lexical evidence: the query's content words with their IDF,
    # and the tokens a passage's text is analyzed into (matched against those words).
    def query_terms(self, query: str) -> list[QueryTerm]: ...

    def text_tokens(self, text: str) -> set[str]: ...

    # How many entries match ``query`` (parsed as ``search`` parses it), counted without
    # ranking them: the gate asks whether a phrase is what a store is about (1 % of its
    # chunks), which a top k of 10,000 at 1M chunks answered 15 times slower.
    def count(self, query: str) -> int: ...

    def save(self, generation: int) -> None: ...


# A backend class (or function) called as ``factory(directory, dim, **options)`` for vectors
# and ``factory(directory, **options)`` for text; each backend names its own options.
VectorIndexFactory = Callable[..., VectorIndex]
TextIndexFactory = Callable[..., TextIndex]


class IndexFiles(Protocol):
    """What the store core may do with a backend's folder without opening the index.

    The names of the files inside the folder (stamps, segments, lock and delete files) are
    the backend's alone: the core, snapshots and maintenance ask through these calls.
    """

    def read_stamp(self, folder: Path) -> dict[str, object] | None:
        """The stamp the last ``save`` wrote, or None when there is none; raises OSError or
        ValueError when it cannot be read."""
        ...

    def recover(self, folder: Path) -> list[Path]:
        """Remove what a killed writer left in ``folder`` (the caller holds the writer
        lock); returns what was removed."""
        ...

    def copy(self, source: Path, target: Path) -> None:
        """Copy a saved index into ``target`` (a snapshot), leaving out unfinished files."""
        ...
