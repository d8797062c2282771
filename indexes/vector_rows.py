"""The vector index's exact float32 rows, read from the saved file instead of held in RAM.

hnswlib keeps its own copy of every vector inside the graph; the exact path (filtered
searches, re-scoring the graph's candidates) needs row access too. Rather than a second
in-RAM copy, the rows saved with a generation are a copy-on-write memory map of that
generation's ``vectors.npy``: the page cache holds what searches touch, the process owns
only pages it changed (a delete moving the last row into the hole). Rows appended since
the last save live in a small RAM tail until the next save maps the new file.

Rows are kept dense: row ``i`` for ``i < len(self)`` is live; the index reorders them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_INITIAL_TAIL = 1_024
# Rows copied per block when writing a file: bounded memory whatever the index size.
_WRITE_BLOCK = 65_536


class VectorRows:
    """Dense float32 rows: a memory-mapped base (the last saved file) plus a RAM tail."""

    def __init__(self, dim: int, base: np.ndarray | None = None) -> None:
        self.dim = dim
        self._base = base if base is not None else np.zeros((0, dim), dtype=np.float32)
        self._tail = np.zeros((0, dim), dtype=np.float32)
        self._count = len(self._base)

    @classmethod
    def mapped(cls, path: Path, dim: int) -> VectorRows:
        """Rows of a saved ``.npy`` file, mapped copy-on-write (the file never changes)."""
        base = np.load(path, mmap_mode="c", allow_pickle=False)
        if base.dtype != np.float32 or base.ndim != 2 or base.shape[1] != dim:
            raise ValueError(f"{path} holds {base.dtype} {base.shape}, not float32 (n, {dim})")
        return cls(dim, base)

    def __len__(self) -> int:
        return self._count

    @property
    def ram_bytes(self) -> int:
        """Bytes held in RAM by rows not yet saved (the mapped part is the page cache's)."""
        return int(self._tail.nbytes)

    # -- writes --------------------------------------------------------------------

    def extend(self, matrix: np.ndarray) -> None:
        """Append rows after the last live one."""
        start = self._count
        self._ensure(start + len(matrix))
        self._count += len(matrix)
        self.put(np.arange(start, self._count), matrix)

    def put(self, rows: np.ndarray, matrix: np.ndarray) -> None:
        """Overwrite the given live rows (a row of the map becomes a private page)."""
        rows = np.asarray(rows, dtype=np.int64)
        base = len(self._base)
        in_base = rows < base
        if in_base.any():
            self._base[rows[in_base]] = matrix[in_base]
        if not in_base.all():
            self._tail[rows[~in_base] - base] = matrix[~in_base]

    def truncate(self, count: int) -> None:
        self._count = count

    def _ensure(self, count: int) -> None:
        needed = count - len(self._base)
        if needed <= len(self._tail):
            return
        grown = np.zeros((max(_INITIAL_TAIL, needed, 2 * len(self._tail)), self.dim),
                         dtype=np.float32)
        grown[: len(self._tail)] = self._tail
        self._tail = grown

    # -- reads ---------------------------------------------------------------------

    def take(self, rows: np.ndarray) -> np.ndarray:
        """A float32 copy of the given rows, in order."""
        rows = np.asarray(rows, dtype=np.int64)
        base = len(self._base)
        if not len(self._tail) or (len(rows) and rows.max() < base):
            return np.asarray(self._base[rows], dtype=np.float32)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        in_base = rows < base
        out[in_base] = self._base[rows[in_base]]
        out[~in_base] = self._tail[rows[~in_base] - base]
        return out

    def matrix(self) -> np.ndarray:
        """All live rows as one (n, dim) array: a view of the map when nothing was appended
        since the last save, a copy otherwise."""
        base = len(self._base)
        if self._count <= base:
            return self._base[: self._count]
        return np.concatenate([self._base, self._tail[: self._count - base]])

    def write(self, path: Path) -> None:
        """Write the live rows as a ``.npy`` file without building them in RAM at once."""
        if self._count == 0:
            np.save(path, np.zeros((0, self.dim), dtype=np.float32))
            return
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                        shape=(self._count, self.dim))
        for start in range(0, self._count, _WRITE_BLOCK):
            stop = min(self._count, start + _WRITE_BLOCK)
            out[start:stop] = self.take(np.arange(start, stop))
        out.flush()
        del out
