"""The vector index's exact float32 rows, read from an append-only file instead of held in RAM.

hnswlib keeps its own copy of every vector inside the graph; the exact path (filtered
searches, re-scoring the graph's candidates) needs row access too. Rather than a second
in-RAM copy, the saved rows are a copy-on-write memory map of a raw float32 rows file
(``rows-<nonce>.f32`` beside the generation folders): the page cache holds what searches
touch, the process owns only pages it changed (a delete moving the last row into the hole).

The rows file is append-only and shared by the generations that extend it: a generation
reads its first ``count`` rows (its stamp says how many), so appending rows for the next
one never changes what an older stamp, or a reader mapping it, sees. Saving 1,000 new rows
into a million-row index therefore writes 1,000 rows, not a million. Rows appended since
the last save live in a RAM tail; past ``SPILL_ROWS`` they are appended to the file early
(still past every stamp's count, so invisible until the stamp moves), which keeps a bulk
ingest's RAM bounded. Once a mapped row changes in place (a delete, a replaced vector)
the file no longer matches the rows, and the next save writes a fresh file.

Rows are kept dense: row ``i`` for ``i < len(self)`` is live; the index reorders them.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.durable import fsync_dir, fsync_file
from enginelib.input_files import check_regular

_INITIAL_TAIL = 1_024
# Rows copied per block when writing a file: bounded memory whatever the index size.
_WRITE_BLOCK = 65_536
# A RAM tail this long is appended to the rows file before the save (384 dims: 96 MB).
SPILL_ROWS = 65_536
ROWS_PREFIX = "rows-"
ROWS_SUFFIX = ".f32"


def load_npy(path: Path, **options: Any) -> np.ndarray:
    """``np.load`` of a file an index wrote (never pickles). A damaged file raises
    ValueError: numpy's header parser raises tokenize.TokenError or SyntaxError on
    garbage, which callers that rebuild from the catalog on bad files would not expect."""
    check_regular(path)  # np.load opens whatever the path names: a pipe would block
    try:
        return np.load(path, allow_pickle=False, **options)  # type: ignore[no-any-return]
    except (OSError, ValueError):
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the parser raised on this file
        raise ValueError(f"{path} is not a readable .npy file: {type(exc).__name__}: {exc}") from exc


def new_rows_name() -> str:
    return f"{ROWS_PREFIX}{secrets.token_hex(6)}{ROWS_SUFFIX}"


def is_rows_file(name: str) -> bool:
    return name.startswith(ROWS_PREFIX) and name.endswith(ROWS_SUFFIX)


class VectorRows:
    """Dense float32 rows: a memory-mapped base (a prefix of the rows file) plus a RAM tail."""

    def __init__(self, dim: int, base: np.ndarray | None = None, *,
                 file: Path | None = None, spill_dir: Path | None = None) -> None:
        self.dim = dim
        self._base = base if base is not None else np.zeros((0, dim), dtype=np.float32)
        self._tail = np.zeros((0, dim), dtype=np.float32)
        self._count = len(self._base)
        # The rows file whose first len(self._base) rows are the base, while they match it.
        self._file = file
        # Where rows may be appended early; None for a reader, which never writes files
        # (its base may be an older prefix of a file the writer has since extended).
        self._spill_dir = spill_dir
        self._dirty = False  # a base row changed in place, or rows below the base were cut

    @classmethod
    def mapped(cls, path: Path, dim: int, count: int | None = None, *,
               spill_dir: Path | None = None) -> VectorRows:
        """The first ``count`` rows of a raw rows file (all of an ``.npy`` file), mapped
        copy-on-write: the file's bytes below ``count`` never change."""
        if path.suffix == ".npy":  # format 1: one whole file per generation
            base = load_npy(path, mmap_mode="c")
            if base.dtype != np.float32 or base.ndim != 2 or base.shape[1] != dim:
                raise ValueError(f"{path} holds {base.dtype} {base.shape}, not float32 (n, {dim})")
            return cls(dim, base, spill_dir=spill_dir)
        assert count is not None
        return cls(dim, _map(path, dim, count), file=path, spill_dir=spill_dir)

    def __len__(self) -> int:
        return self._count

    def allow_spill(self, directory: Path) -> None:
        """Only the writer calls this: rows past the base may go to the file early."""
        self._spill_dir = directory

    @property
    def file(self) -> Path | None:
        return self._file

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
        if self._count - len(self._base) >= SPILL_ROWS and self._appendable():
            self._append_tail(sync=False)

    def put(self, rows: np.ndarray, matrix: np.ndarray) -> None:
        """Overwrite the given live rows (a row of the map becomes a private page)."""
        rows = np.asarray(rows, dtype=np.int64)
        base = len(self._base)
        in_base = rows < base
        if in_base.any():
            self._base[rows[in_base]] = matrix[in_base]
            self._dirty = True
        if not in_base.all():
            self._tail[rows[~in_base] - base] = matrix[~in_base]

    def truncate(self, count: int) -> None:
        if count < len(self._base):
            self._dirty = True
        self._count = count

    def _ensure(self, count: int) -> None:
        needed = count - len(self._base)
        if needed <= len(self._tail):
            return
        grown = np.zeros((max(_INITIAL_TAIL, needed, 2 * len(self._tail)), self.dim),
                         dtype=np.float32)
        grown[: len(self._tail)] = self._tail
        self._tail = grown

    # -- the rows file ---------------------------------------------------------------

    def _appendable(self) -> bool:
        return not self._dirty and self._spill_dir is not None and (
            self._file is not None or len(self._base) == 0)

    def _append_tail(self, *, sync: bool) -> None:
        """Append the RAM tail to the rows file (created if none) and map it."""
        assert self._spill_dir is not None
        if self._file is None:
            self._spill_dir.mkdir(parents=True, exist_ok=True)
            self._file = self._spill_dir / new_rows_name()
        base = len(self._base)
        row_bytes = 4 * self.dim
        fd = os.open(self._file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            # Bytes past the base are an earlier process's unsaved spill: no stamp counts
            # them (every stamp's count is <= base), so they are dropped.
            os.ftruncate(fd, base * row_bytes)
            os.lseek(fd, 0, os.SEEK_END)
            view = memoryview(np.ascontiguousarray(self._tail[: self._count - base]).tobytes())
            while len(view):
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._base = _map(self._file, self.dim, self._count)
        self._tail = np.zeros((0, self.dim), dtype=np.float32)

    def save(self, directory: Path) -> str:
        """Make every live row durable in a rows file under ``directory``; its name.

        Appends the tail when the file still matches the rows, else writes a new file
        (never touching one an older stamp names). The caller's stamp then records the
        name and ``len(self)``.
        """
        self._spill_dir = directory
        if self._appendable():
            self._append_tail(sync=True)
            if self._file is None:  # no rows at all: an empty file
                self._file = directory / new_rows_name()
                self._file.touch()
                fsync_file(self._file)
        else:
            path = directory / new_rows_name()
            self._write(path)
            self._base = _map(path, self.dim, self._count)
            self._tail = np.zeros((0, self.dim), dtype=np.float32)
            self._file, self._dirty = path, False
        fsync_dir(directory)
        assert self._file is not None
        return self._file.name

    def write(self, path: Path) -> None:
        """Write the live rows as one ``.npy`` file (format 1: a whole file per generation,
        the compact backend's form) without building them in RAM at once."""
        if self._count == 0:
            np.save(path, np.zeros((0, self.dim), dtype=np.float32))
        else:
            out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                            shape=(self._count, self.dim))
            for start in range(0, self._count, _WRITE_BLOCK):
                stop = min(self._count, start + _WRITE_BLOCK)
                out[start:stop] = self.take(np.arange(start, stop))
            out.flush()
            del out
        fsync_file(path)

    def _write(self, path: Path) -> None:
        with open(path, "wb") as out:
            for start in range(0, self._count, _WRITE_BLOCK):
                stop = min(self._count, start + _WRITE_BLOCK)
                out.write(np.ascontiguousarray(self.take(np.arange(start, stop))).tobytes())
            out.flush()
            os.fsync(out.fileno())

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


def drop_rows(rows: VectorRows, labels: np.ndarray, count: int, doomed: np.ndarray) -> int:
    """Remove rows ``doomed`` (distinct, each below ``count``) and keep the rows dense: the
    live rows past the new end move into the holes below it, their ``labels`` (row -> label)
    with them. Returns the new count. Shared by the hnswlib and USearch backends, whose
    row numbers must stay 0..count-1 for the exact path's matrix slices."""
    new_count = count - len(doomed)
    dead = np.zeros(count - new_count, dtype=bool)
    dead[doomed[doomed >= new_count] - new_count] = True
    movers = np.arange(new_count, count)[~dead]
    holes = np.sort(doomed[doomed < new_count])
    if len(holes):
        rows.put(holes, rows.take(movers))
        labels[holes] = labels[movers]
    rows.truncate(new_count)
    return new_count


def _map(path: Path, dim: int, count: int) -> np.ndarray:
    if count == 0:
        return np.zeros((0, dim), dtype=np.float32)
    size = path.stat().st_size
    if size < count * dim * 4:
        raise ValueError(f"{path} holds {size} bytes, fewer than {count} rows of {dim} float32")
    return np.memmap(path, dtype=np.float32, mode="c", shape=(count, dim))
