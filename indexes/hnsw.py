"""Vector index backend: an hnswlib graph (cosine) plus an exact float32 mirror.

The graph answers unfiltered queries approximately. The mirror (label -> row of the
normalized vectors) serves three purposes: filtered searches over small allowed sets are
answered exactly by numpy, ANN candidates are re-scored with the same arithmetic as the
exact path (so scores and tie order never depend on which path ran), and the graph can
be rebuilt from it when deletions pile up.

On disk (one folder per saved generation, swapped in by rewriting a pointer)::

    directory/stamp.json            {"format", "generation", "folder", "dim", "count", ...}
    directory/gen-<g>-<nonce>/      vectors.hnsw, vectors.npy, labels.npy

``stamp.json`` is written last (temp file, fsync, ``os.replace``), so a crash leaves it
pointing at a complete older folder or at the complete new one.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

import hnswlib
import numpy as np

from enginelib.durable import fsync_dir, fsync_file, write_atomic
from enginelib.errors import InvalidInputError, InvalidVectorError
from enginelib.faults import crash_point
from enginelib.indexes.base import Labels, Matrix, SearchResult
from enginelib.indexes.exact import exact_topk

FORMAT_VERSION = 1
STAMP = "stamp.json"
GRAPH_FILE = "vectors.hnsw"
VECTORS_FILE = "vectors.npy"
LABELS_FILE = "labels.npy"

# Defaults from benchmarks/results/hnsw_tuning.md (SciFact + NFCorpus, all-MiniLM-L6-v2,
# 384 dims): the cheapest setting whose recall@10 against exact search is >= 0.98 on
# both (0.998 / 0.989, ~0.2 ms per query).
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 200
DEFAULT_EF_SEARCH = 100
# Allowed sets up to this size are ranked exactly with numpy: gathering and scoring
# ~2,000 scattered 384-dim rows costs 0.2-2 ms, about one filtered graph query (0.8-1.7 ms
# in benchmarks/results/hnsw_tuning.md), and it is exact by construction. Larger sets
# go through the graph with a widened ef (recall@10 >= 0.99 there).
DEFAULT_EXACT_THRESHOLD = 2_000
# Below this fraction of the index, filtered graph search loses recall quickly (most
# visited nodes are rejected), so an exact scan is both safer and not slower.
EXACT_FRACTION = 0.1
# A filtered graph search fetches ef_search / (allowed fraction) neighbours and keeps
# the allowed ones; past MAX_FETCH neighbours an exact scan is cheaper.
MAX_FETCH = 4_000
# Rebuild the graph once marked-deleted slots outnumber live ones (and are not trivial):
# deleted slots still cost memory and traversal time.
COMPACT_MIN_DELETED = 1_000
_INITIAL_CAPACITY = 1_024


class HnswVectorIndex:
    """Cosine-similarity vector index following ``enginelib.indexes.base.VectorIndex``."""

    def __init__(
        self,
        directory: Path,
        dim: int,
        *,
        M: int = DEFAULT_M,
        ef_construction: int = DEFAULT_EF_CONSTRUCTION,
        ef_search: int = DEFAULT_EF_SEARCH,
        exact_threshold: int = DEFAULT_EXACT_THRESHOLD,
        num_threads: int = 1,
    ) -> None:
        if dim <= 0:
            raise InvalidInputError(f"vector dimension must be positive, got {dim}")
        for name, value in (("M", M), ("ef_construction", ef_construction),
                            ("ef_search", ef_search), ("num_threads", num_threads)):
            if value <= 0:
                raise InvalidInputError(f"{name} must be positive, got {value}")
        if exact_threshold < 0:
            raise InvalidInputError(f"exact_threshold must be >= 0, got {exact_threshold}")
        self.directory = Path(directory)
        self.dim = int(dim)
        self.M = M
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.exact_threshold = exact_threshold
        # One thread by default: hnswlib inserts in order with a fixed seed, so the same
        # inputs always build the same graph and give the same results.
        self.num_threads = num_threads
        self._lock = threading.Lock()  # set_ef + knn_query must not interleave
        self._generation: int | None = None
        self._reset()
        self._load()

    # -- state ---------------------------------------------------------------------

    def _reset(self) -> None:
        self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        self._labels = np.zeros(0, dtype=np.int64)
        self._count = 0
        self._row: dict[int, int] = {}
        self._graph: hnswlib.Index | None = None
        self._graph_ids: set[int] = set()  # every label the graph holds, deleted or not
        self._graph_deleted: set[int] = set()  # labels marked deleted in the graph

    @property
    def generation(self) -> int | None:
        return self._generation

    def __len__(self) -> int:
        return self._count

    def labels(self) -> Labels:
        return np.sort(self._labels[: self._count])

    # -- writes --------------------------------------------------------------------

    def add(self, labels: Labels, vectors: Matrix) -> None:
        labels_arr = _check_labels(labels)
        matrix = self._check_matrix(vectors, what="vectors")
        if len(labels_arr) != len(matrix):
            raise InvalidInputError(
                f"got {len(labels_arr)} labels for {len(matrix)} vectors; pass one label per row"
            )
        if len(labels_arr) == 0:
            return
        # A label repeated within one batch: the last row wins, as if added one by one.
        _, last = np.unique(labels_arr[::-1], return_index=True)
        keep = np.sort(len(labels_arr) - 1 - last)
        labels_arr, matrix = labels_arr[keep], matrix[keep]

        for label, vector in zip(labels_arr.tolist(), matrix):
            row = self._row.get(label)
            if row is None:
                row = self._append_row(label)
            self._vectors[row] = vector

        graph = self._ensure_graph()
        new_slots = sum(
            1 for label in labels_arr.tolist() if label not in self._graph_ids
        )
        needed = graph.element_count + new_slots
        if needed > graph.get_max_elements():
            graph.resize_index(max(needed, 2 * graph.get_max_elements()))
        # hnswlib replaces the vector of an existing label in place and un-marks it if it
        # was deleted, which is exactly the contract's "add replaces".
        graph.add_items(matrix, labels_arr.astype(np.uint64), num_threads=self.num_threads)
        self._graph_ids.update(labels_arr.tolist())
        self._graph_deleted.difference_update(labels_arr.tolist())

    def delete(self, labels: Iterable[int]) -> None:
        for label in {int(x) for x in labels}:
            row = self._row.pop(label, None)
            if row is None:
                continue  # unknown label: the contract makes this a no-op
            last = self._count - 1
            if row != last:  # keep the mirror dense: move the last row into the hole
                moved = int(self._labels[last])
                self._vectors[row] = self._vectors[last]
                self._labels[row] = moved
                self._row[moved] = row
            self._count = last
            if self._graph is not None:
                self._graph.mark_deleted(label)
                self._graph_deleted.add(label)
        if len(self._graph_deleted) > max(COMPACT_MIN_DELETED, self._count):
            self._rebuild_graph()

    def clear(self) -> None:
        self._reset()

    def _append_row(self, label: int) -> int:
        if self._count == len(self._vectors):
            capacity = max(_INITIAL_CAPACITY, 2 * len(self._vectors))
            vectors = np.zeros((capacity, self.dim), dtype=np.float32)
            vectors[: self._count] = self._vectors[: self._count]
            labels = np.zeros(capacity, dtype=np.int64)
            labels[: self._count] = self._labels[: self._count]
            self._vectors, self._labels = vectors, labels
        row = self._count
        self._labels[row] = label
        self._row[label] = row
        self._count += 1
        return row

    def _ensure_graph(self) -> hnswlib.Index:
        if self._graph is None:
            graph = hnswlib.Index(space="cosine", dim=self.dim)
            graph.init_index(
                max_elements=max(_INITIAL_CAPACITY, self._count),
                M=self.M,
                ef_construction=self.ef_construction,
                random_seed=100,
            )
            self._graph = graph
            self._graph_ids = set()
        return self._graph

    def _rebuild_graph(self) -> None:
        """Build a fresh graph from the mirror, dropping marked-deleted slots."""
        self._graph = None
        self._graph_deleted = set()
        if self._count == 0:
            return
        graph = self._ensure_graph()
        labels = self._labels[: self._count]
        graph.add_items(self._vectors[: self._count], labels.astype(np.uint64),
                        num_threads=self.num_threads)
        self._graph_ids = set(labels.tolist())

    # -- search --------------------------------------------------------------------

    def search(
        self, queries: Matrix, k: int, allowed: Labels | None = None
    ) -> list[SearchResult]:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
            raise InvalidInputError(f"k must be a positive integer, got {k!r}")
        k = int(k)
        matrix = self._check_matrix(queries, what="query vectors")
        if self._count == 0 or len(matrix) == 0:
            return [[] for _ in range(len(matrix))]

        if allowed is None:
            rows = None
            m = self._count
        else:
            rows = self._rows_of(allowed)
            m = len(rows)
            if m == 0:
                return [[] for _ in range(len(matrix))]

        if m <= self.exact_threshold or k >= m or m <= EXACT_FRACTION * self._count:
            return self._exact(matrix, k, rows)
        return self._graph_search(matrix, k, rows)

    def _rows_of(self, allowed: Labels) -> np.ndarray:
        get = self._row.get
        rows = [get(int(label)) for label in np.unique(np.asarray(allowed, dtype=np.int64))]
        return np.array([r for r in rows if r is not None], dtype=np.int64)

    def _exact(self, queries: Matrix, k: int, rows: np.ndarray | None) -> list[SearchResult]:
        return exact_topk(self._vectors[: self._count], self._labels[: self._count],
                          queries, k, rows)

    def _graph_search(
        self, queries: Matrix, k: int, rows: np.ndarray | None
    ) -> list[SearchResult]:
        graph = self._graph
        assert graph is not None  # a non-empty index always has a graph
        if rows is None:
            # hnswlib keeps ef candidates anyway; taking them all and re-ranking exactly
            # costs ef dot products, lifts recall, and settles ties at the cut by label.
            fetch, allowed_labels = max(self.ef_search, k), None
        else:
            # Over-fetch instead of hnswlib's filter callback: a Python predicate is
            # called for every visited node (GIL-bound, ~10x slower), while widening ef by
            # the inverse of the allowed fraction keeps the walk in C++ and leaves about
            # ef_search allowed candidates, i.e. the recall of an unfiltered search. If
            # fewer than k allowed labels come back, answer exactly.
            fetch = math.ceil(max(self.ef_search, k) * self._count / len(rows))
            if fetch > MAX_FETCH:
                return self._exact(queries, k, rows)
            allowed_labels = set(self._labels[rows].tolist())
        fetch = min(fetch, self._count)
        try:
            with self._lock:
                graph.set_ef(max(self.ef_search, fetch))
                found, _ = graph.knn_query(queries, k=fetch, num_threads=self.num_threads)
        except RuntimeError:
            # hnswlib could not collect enough live neighbours (heavy deletions): fall
            # back to the exact answer rather than return fewer.
            return self._exact(queries, k, rows)
        results: list[SearchResult] = []
        for query, candidates in zip(queries, found.astype(np.int64)):
            if allowed_labels is not None:
                candidates = np.array([c for c in candidates.tolist() if c in allowed_labels],
                                      dtype=np.int64)
                if len(candidates) < k:
                    results.append(self._exact(query[None, :], k, rows)[0])
                    continue
            # Re-score from the mirror so scores and tie order are the same arithmetic
            # as the exact path.
            cand_rows = np.fromiter((self._row[c] for c in candidates.tolist()),
                                    dtype=np.int64, count=len(candidates))
            results.append(exact_topk(self._vectors[cand_rows], candidates, query[None, :],
                                      k)[0])
        return results

    # -- validation ----------------------------------------------------------------

    def _check_matrix(self, data: Matrix, *, what: str) -> np.ndarray:
        try:
            matrix = np.asarray(data, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidVectorError(f"{what} must be numeric arrays: {exc}") from exc
        if matrix.ndim == 1 and matrix.size == self.dim:
            matrix = matrix[None, :]
        if matrix.ndim != 2 or matrix.shape[1] != self.dim:
            got = matrix.shape[-1] if matrix.ndim else 0
            raise InvalidVectorError(
                f"{what} have {got} dimensions (shape {matrix.shape}); this index holds "
                f"{self.dim}-dimensional vectors: embed with the store's model"
            )
        if not np.isfinite(matrix).all():
            raise InvalidVectorError(f"{what} contain NaN or infinite values")
        norms = np.linalg.norm(matrix, axis=1)
        if (norms == 0).any():
            raise InvalidVectorError(f"{what} contain an all-zero vector; cosine is undefined")
        return np.ascontiguousarray(matrix / norms[:, None], dtype=np.float32)

    # -- persistence ---------------------------------------------------------------

    def save(self, generation: int) -> None:
        if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
            raise InvalidInputError(f"generation must be a non-negative int, got {generation!r}")
        self.directory.mkdir(parents=True, exist_ok=True)
        folder = f"gen-{generation:08d}-{secrets.token_hex(4)}"
        tmp = self.directory / f".tmp-{folder}"
        tmp.mkdir()
        if self._graph is not None:
            self._graph.save_index(str(tmp / GRAPH_FILE))
        np.save(tmp / VECTORS_FILE, self._vectors[: self._count])
        np.save(tmp / LABELS_FILE, self._labels[: self._count])
        for name in os.listdir(tmp):
            fsync_file(tmp / name)
        fsync_dir(tmp)
        crash_point("mid_vector_save")
        os.replace(tmp, self.directory / folder)
        fsync_dir(self.directory)
        stamp = {
            "format": FORMAT_VERSION,
            "generation": generation,
            "folder": folder,
            "dim": self.dim,
            "count": self._count,
            "space": "cosine",
            "M": self.M,
            "ef_construction": self.ef_construction,
        }
        write_atomic(self.directory / STAMP, json.dumps(stamp, indent=2).encode())
        self._generation = generation
        self._remove_stale(keep=folder)

    def _remove_stale(self, keep: str) -> None:
        for entry in self.directory.iterdir():
            if entry.is_dir() and entry.name != keep and (
                entry.name.startswith("gen-") or entry.name.startswith(".tmp-gen-")
            ):
                shutil.rmtree(entry, ignore_errors=True)

    def _load(self) -> None:
        """Load the stamped generation; anything unreadable leaves an empty index."""
        try:
            stamp = json.loads((self.directory / STAMP).read_text(encoding="utf-8"))
            if stamp.get("format") != FORMAT_VERSION or stamp.get("dim") != self.dim:
                return
            folder = self.directory / str(stamp["folder"])
            vectors = np.load(folder / VECTORS_FILE, allow_pickle=False)
            labels = np.load(folder / LABELS_FILE, allow_pickle=False)
            count = int(stamp["count"])
            if vectors.shape != (count, self.dim) or labels.shape != (count,):
                return
            if len(np.unique(labels)) != count:
                return
            graph = None
            if count or (folder / GRAPH_FILE).exists():
                graph = hnswlib.Index(space="cosine", dim=self.dim)
                graph.load_index(str(folder / GRAPH_FILE))
            generation = int(stamp["generation"])
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            self._reset()
            return
        graph_ids = set(graph.get_ids_list()) if graph is not None else set()
        if not set(labels.tolist()) <= graph_ids:
            return  # the graph does not cover the mirror: rebuild from the catalog
        self._reset()
        self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._labels = labels.astype(np.int64)
        self._count = count
        self._row = {int(label): row for row, label in enumerate(self._labels.tolist())}
        self._graph = graph
        self._graph_ids = graph_ids
        self._graph_deleted = graph_ids - set(self._row)
        self.M = stamp.get("M", self.M)
        self.ef_construction = stamp.get("ef_construction", self.ef_construction)
        self._generation = generation


def _check_labels(labels: Labels) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InvalidInputError(f"labels must be a 1-D array of integers, got {arr.dtype} "
                                f"with shape {arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        raise InvalidInputError("labels must be non-negative chunk labels")
    return arr
