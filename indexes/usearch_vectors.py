"""Compact vector backend: a usearch graph over int8 (or fp16) vectors, re-ranked exactly.

hnswlib stores float32 only, so its graph holds the vectors at 4 bytes a dimension (1.5 GiB
at 1M x 384). usearch keeps the graph's vectors quantized in RAM (int8: 1 byte, fp16: 2),
walks it to a short candidate list, and the candidates are re-scored exactly from the
float32 rows, which stay on disk as a memory map of ``vectors.npy`` (``labelled_rows.py``):
scores, tie order and the filtered exact path are the same arithmetic as the hnsw backend.

At open the saved graph is memory-mapped (``Index.view``), so opening costs no copy; the
first write loads it into RAM (a viewed usearch index must never be written: it crashes the
process), and it stays loaded for the rest of the session.

On disk (one folder per saved generation, swapped in by rewriting the stamp)::

    directory/stamp.json            {"format", "generation", "folder", "dim", "dtype", ...}
    directory/gen-<g>-<nonce>/      graph.usearch, vectors.npy, labels.npy
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.durable import write_atomic
from enginelib.errors import InvalidInputError, MissingExtraError
from enginelib.indexes.base import Labels, Matrix, SearchResult
from enginelib.indexes.generation_folders import (
    check_generation,
    is_stale_generation,
    new_generation,
    publish_generation,
)
from enginelib.indexes.graph_options import (
    check_graph_options,
    check_labels,
    check_matrix,
    one_row_per_label,
)
from enginelib.indexes.labelled_rows import LabelledRows
from enginelib.input_files import read_regular

FORMAT_VERSION = 1
STAMP = "stamp.json"
GRAPH_FILE = "graph.usearch"
VECTORS_FILE = "vectors.npy"
LABELS_FILE = "labels.npy"
DTYPES = ("i8", "f16")

# Graph shape: usearch's own defaults (M 16, efConstruction 128).
DEFAULT_CONNECTIVITY = 16
DEFAULT_EXPANSION_ADD = 128
# Candidates a query walks: DEFAULT_EXPANSION up to AUTO_FROM, then growing as
# (count / AUTO_FROM) ** AUTO_POWER (64 at 100k, 640 at 1M). Calibrated on training queries
# (seed 7, never the benchmark's) over the synthetic corpus of benchmarks/scaling.py, int8:
# recall@10 0.9945 at 100k with 64; at 1M 0.800 / 0.889 / 0.922 / 0.956 / 0.981 / 0.981 with
# 128 / 200 / 256 / 400 / 600 / 800 (the graph, not the int8 order, limits it: re-ranking 10x
# more candidates at 400 gave 0.961). benchmarks/compact_vectors.py calibrate re-runs it.
DEFAULT_EXPANSION = 64
AUTO_FROM = 100_000
AUTO_POWER = 1.0
# The quantized distances misorder near neighbours, so a query for k fetches OVERSAMPLE * k
# candidates from the graph and re-ranks them exactly. At 100k, int8, expansion 64, training
# queries: recall@10 0.894 re-ranking 10 candidates, 0.9945 re-ranking 20 (and no better at
# 40); recall@100 0.985 re-ranking 200 (1.4 ms CPU) against 0.992 re-ranking 400 (2.8 ms).
OVERSAMPLE = 2
# As in the hnsw backend: small or sparse allowed sets are ranked exactly with numpy; a
# filtered graph search over-fetches by the inverse of the allowed fraction, up to MAX_FETCH.
DEFAULT_EXACT_THRESHOLD = 2_000
EXACT_FRACTION = 0.1
MAX_FETCH = 4_000
# Removed nodes stay in the graph until a rebuild; rebuild once they outnumber live ones.
COMPACT_MIN_DELETED = 1_000


def require_usearch() -> Any:
    """usearch's ``index`` module, or MissingExtraError naming the [compact] extra."""
    try:
        import usearch.index
    except ImportError as exc:
        raise MissingExtraError("the compact vector form (usearch-i8 / usearch-f16)",
                                "usearch", "compact") from exc
    return usearch.index


class UsearchVectorIndex:
    """Cosine vector index following ``enginelib.indexes.base.VectorIndex``."""

    def __init__(
        self,
        directory: Path,
        dim: int,
        *,
        dtype: str = "i8",
        M: int = DEFAULT_CONNECTIVITY,
        ef_construction: int = DEFAULT_EXPANSION_ADD,
        ef_search: int | None = None,
        exact_threshold: int = DEFAULT_EXACT_THRESHOLD,
        num_threads: int = 1,
    ) -> None:
        self._ui = require_usearch()
        check_graph_options(dim, exact_threshold, M=M, ef_construction=ef_construction,
                            ef_search=ef_search, num_threads=num_threads)
        if dtype not in DTYPES:
            raise InvalidInputError(f"compact dtype must be one of {DTYPES}, got {dtype!r}")
        self.directory = Path(directory)
        self.dim = int(dim)
        self.dtype = dtype
        self.M = M
        self.ef_construction = ef_construction
        self.ef_search = ef_search  # None: auto_expansion per query
        self.exact_threshold = exact_threshold
        self.num_threads = num_threads
        self._lock = threading.Lock()  # expansion_search + search must not interleave
        self._generation: int | None = None
        self._folder = ""  # the saved generation's folder (where a viewed graph lives)
        self._reset()
        self._load()

    def _reset(self) -> None:
        self._rows = LabelledRows(self.dim)
        self._graph: Any = None
        self._viewed = False  # the graph is a read-only map of the saved file
        self._deleted = 0  # nodes removed from the graph since it was built

    @property
    def generation(self) -> int | None:
        return self._generation

    def __len__(self) -> int:
        return len(self._rows)

    def labels(self) -> Labels:
        return np.sort(self._rows.live_labels())

    # -- writes --------------------------------------------------------------------

    def add(self, labels: Labels, vectors: Matrix) -> None:
        labels_arr = check_labels(labels)
        labels_arr, matrix = one_row_per_label(labels_arr, check_matrix(vectors, self.dim, what="vectors"))
        if len(labels_arr) == 0:
            return
        present = self._rows.upsert(labels_arr, matrix)
        graph = self._writable_graph()
        keys = labels_arr.astype(np.uint64)
        if present.any():
            # usearch refuses a key it holds: replacing is remove, then add.
            graph.remove(keys[present])
            self._deleted += int(present.sum())
        graph.add(keys, matrix, threads=self.num_threads)
        self._maybe_rebuild()

    def delete(self, labels: Iterable[int]) -> None:
        wanted = np.unique(np.fromiter((int(x) for x in labels), dtype=np.int64))
        gone = self._rows.remove(wanted)  # unknown labels: a no-op
        if not len(gone):
            return
        graph = self._writable_graph()
        graph.remove(gone.astype(np.uint64))
        self._deleted += len(gone)
        self._maybe_rebuild()

    def clear(self) -> None:
        self._reset()

    def _new_graph(self) -> Any:
        return self._ui.Index(ndim=self.dim, metric="cos", dtype=self.dtype,
                              connectivity=self.M, expansion_add=self.ef_construction)

    def _writable_graph(self) -> Any:
        if self._graph is None:
            self._graph = self._new_graph()
        elif self._viewed:
            # Writing into a viewed (memory-mapped) usearch index crashes: load a copy.
            loaded = self._new_graph()
            loaded.load(self._graph_path)
            self._graph, self._viewed = loaded, False
        return self._graph

    def _maybe_rebuild(self) -> None:
        if self._deleted > max(COMPACT_MIN_DELETED, len(self._rows)):
            self._rebuild_graph()

    def _rebuild_graph(self) -> None:
        """A fresh graph from the exact rows, dropping removed nodes."""
        self._graph, self._viewed, self._deleted = None, False, 0
        if not len(self._rows):
            return
        graph = self._writable_graph()
        labels = self._rows.live_labels()
        step = 65_536  # bounded memory: never all rows copied out of the map at once
        for start in range(0, len(labels), step):
            stop = min(len(labels), start + step)
            graph.add(labels[start:stop].astype(np.uint64),
                      self._rows.take(np.arange(start, stop)), threads=self.num_threads)

    # -- reads ---------------------------------------------------------------------

    def vectors_for(self, labels: Labels) -> Matrix:
        """The stored (L2-normalized, float32) vectors of ``labels``, in order; unknown raise."""
        return self._rows.vectors_for(check_labels(labels))

    def rows_in_order(self) -> tuple[Labels, Matrix]:
        """(labels, vectors) of every live row in row order (see HnswVectorIndex)."""
        return self._rows.live_labels(), self._rows.matrix()

    def ef_for(self, k: int) -> int:
        """The expansion a query for ``k`` neighbours runs with (auto unless set)."""
        if self.ef_search is not None:
            return max(self.ef_search, k)
        return auto_expansion(len(self._rows), k)

    def search(
        self, queries: Matrix, k: int, allowed: Labels | None = None
    ) -> list[SearchResult]:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
            raise InvalidInputError(f"k must be a positive integer, got {k!r}")
        k = int(k)
        matrix = check_matrix(queries, self.dim, what="query vectors")
        count = len(self._rows)
        if count == 0 or len(matrix) == 0:
            return [[] for _ in range(len(matrix))]
        rows = None if allowed is None else self._rows.rows_of(allowed)
        m = count if rows is None else len(rows)
        if m == 0:
            return [[] for _ in range(len(matrix))]
        if m <= self.exact_threshold or k >= m or m <= EXACT_FRACTION * count:
            return self._rows.exact(matrix, k, rows)
        return self._graph_search(matrix, k, rows)

    def _graph_search(
        self, queries: Matrix, k: int, rows: np.ndarray | None
    ) -> list[SearchResult]:
        count = len(self._rows)
        fetch = max(math.ceil(OVERSAMPLE * k), k)
        allowed_labels = None
        if rows is not None:
            # Over-fetch rather than filter inside the walk (see the hnsw backend): about
            # as many allowed candidates survive as an unfiltered walk visits (the expansion;
            # OVERSAMPLE * k allowed ones lost recall at 40 % selectivity), else exact.
            fetch = math.ceil(self.ef_for(k) * count / len(rows))
            if fetch > MAX_FETCH:
                return self._rows.exact(queries, k, rows)
            allowed_labels = np.sort(self._rows.live_labels()[rows])
        fetch = min(fetch, count)
        with self._lock:
            self._graph.expansion_search = max(self.ef_for(k), fetch)
            found = self._graph.search(queries, count=fetch, threads=self.num_threads)
        keys = np.atleast_2d(found.keys).astype(np.int64)
        # One query comes back as ``Matches`` (trimmed keys), a batch as ``BatchMatches``.
        counts = np.atleast_1d(getattr(found, "counts", len(found.keys)))
        results: list[SearchResult] = []
        for query, candidates, got in zip(queries, keys, counts):
            candidates = candidates[:got]
            if allowed_labels is not None:
                at = np.minimum(np.searchsorted(allowed_labels, candidates),
                                len(allowed_labels) - 1)
                candidates = candidates[allowed_labels[at] == candidates]
            if len(candidates) < k:
                # Too few live (or allowed) candidates came back: answer exactly.
                results.append(self._rows.exact(query[None, :], k, rows)[0])
                continue
            results.append(self._rows.rerank(query, candidates, k))
        return results

    # -- persistence ---------------------------------------------------------------

    @property
    def _graph_path(self) -> str:
        return str(self.directory / self._folder / GRAPH_FILE)

    def save(self, generation: int) -> None:
        check_generation(generation)
        self.directory.mkdir(parents=True, exist_ok=True)
        folder, tmp = new_generation(self.directory, generation)
        if self._viewed:  # unchanged since it was opened: copy the file it maps
            shutil.copyfile(self._graph_path, tmp / GRAPH_FILE)
        elif self._graph is not None:
            self._graph.save(str(tmp / GRAPH_FILE))
        self._rows.write(tmp, VECTORS_FILE, LABELS_FILE)
        publish_generation(self.directory, tmp, folder)
        stamp = {
            "format": FORMAT_VERSION, "generation": generation, "folder": folder,
            "dim": self.dim, "count": len(self._rows), "space": "cosine", "dtype": self.dtype,
            "M": self.M, "ef_construction": self.ef_construction, "deleted": self._deleted,
        }
        write_atomic(self.directory / STAMP, json.dumps(stamp, indent=2).encode())
        self._generation = generation
        self._folder = folder
        self._rows.remap(self.directory / folder, VECTORS_FILE)
        if self._viewed:  # the old map's folder is about to go: map the new file
            graph = self._new_graph()
            graph.view(self._graph_path)
            self._graph = graph
        self._remove_stale(keep=folder)

    def _remove_stale(self, keep: str) -> None:
        for entry in self.directory.iterdir():
            if is_stale_generation(entry, keep):
                shutil.rmtree(entry, ignore_errors=True)

    def _load(self) -> None:
        """Open the stamped generation; anything unreadable leaves an empty index (which the
        store then rebuilds from the catalog)."""
        try:
            stamp = json.loads(read_regular(self.directory / STAMP).decode("utf-8"))
            if (stamp.get("format") != FORMAT_VERSION or stamp.get("dim") != self.dim
                    or stamp.get("dtype") != self.dtype):
                return
            self._folder = str(stamp["folder"])
            folder = self.directory / self._folder
            count = int(stamp["count"])
            rows = LabelledRows.mapped(folder, VECTORS_FILE, LABELS_FILE, self.dim, count)
            graph = None
            if count:
                if os.stat(self._graph_path).st_size == 0:
                    # usearch's view() of an empty file closes a file descriptor it does not
                    # own (the writer lock's, or DuckDB's): "Bad file descriptor" later on.
                    raise ValueError(f"{self._graph_path} is empty")
                graph = self._new_graph()
                graph.view(self._graph_path)
                if len(graph) != count or not graph.contains(
                        rows.live_labels().astype(np.uint64)).all():
                    return  # the graph does not cover the rows: rebuild from the catalog
            generation = int(stamp["generation"])
            deleted = int(stamp.get("deleted", 0))
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            self._reset()
            return
        self._rows, self._graph, self._viewed = rows, graph, graph is not None
        self._deleted = deleted
        self.M = int(stamp.get("M", self.M))
        self.ef_construction = int(stamp.get("ef_construction", self.ef_construction))
        self._generation = generation


def auto_expansion(count: int, k: int) -> int:
    """Candidates a graph query walks for ``k`` neighbours in an index of ``count``."""
    grown = DEFAULT_EXPANSION * max(1.0, count / AUTO_FROM) ** AUTO_POWER
    return max(math.ceil(grown), math.ceil(OVERSAMPLE * k))


def usearch_i8(directory: Path, dim: int, **options: Any) -> UsearchVectorIndex:
    """The registry's "usearch-i8": int8 graph vectors (a quarter of float32's RAM)."""
    return UsearchVectorIndex(directory, dim, dtype="i8", **options)


def usearch_f16(directory: Path, dim: int, **options: Any) -> UsearchVectorIndex:
    """The registry's "usearch-f16": fp16 graph vectors (half of float32's RAM)."""
    return UsearchVectorIndex(directory, dim, dtype="f16", **options)
