"""Vector index backend: an hnswlib graph (cosine) plus exact float32 rows.

The graph answers unfiltered queries approximately. The rows (label -> row of the
normalized vectors) serve three purposes: filtered searches over small allowed sets are
answered exactly by numpy, ANN candidates are re-scored with the same arithmetic as the
exact path (so scores and tie order never depend on which path ran), and the graph can
be rebuilt from them when deletions pile up. The rows are not a second in-RAM copy: once
saved they are a memory map of the generation's ``vectors.npy`` (``vector_rows.py``), so
RAM holds the vectors once, inside hnswlib, and the store reads them with ``vectors_for``.

How many candidates a query walks (``ef``) grows with the index: see ``auto_ef``.

On disk (one folder per saved generation, swapped in by rewriting a pointer)::

    directory/stamp.json            {"format", "generation", "folder", "rows", "dim", "count", ...}
    directory/rows-<nonce>.f32      raw float32 rows, append-only (vector_rows.py)
    directory/gen-<g>-<nonce>/      vectors.hnsw, labels.npy [, pending.npy, deleted.npy]

``stamp.json`` is written last (temp file, fsync, ``os.replace``), so a crash leaves it
pointing at a complete older folder or at the complete new one.

A save costs what changed, not the index size: the rows file is appended to, and the
graph (1.6 GB at a million 384-dim vectors) is rewritten only once enough changed. Until
then the new folder hard-links the last graph file and lists what it lacks: the labels
added since (``pending.npy``, answered by an exact scan beside the graph, at most
``GRAPH_DEFER_MAX`` rows) and those deleted or replaced since (``deleted.npy``, marked
deleted again at load). Format 1 stores (one ``vectors.npy`` per folder) still load.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

import hnswlib
import numpy as np

from enginelib.durable import file_sum64, write_atomic
from enginelib.errors import InvalidInputError
from enginelib.indexes.base import Labels, Matrix, SearchResult
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.generation_folders import (
    check_generation,
    is_stale_generation,
    new_generation,
    publish_generation,
)
from enginelib.indexes.graph_options import (
    LabelLookup,
    appended_labels,
    check_graph_options,
    check_labels,
    check_matrix,
    label_lookup,
    one_row_per_label,
    rows_of_labels,
)
from enginelib.indexes.vector_rows import VectorRows, drop_rows, is_rows_file, load_npy
from enginelib.input_files import read_regular

FORMAT_VERSION = 2
_READABLE_FORMATS = (1, 2)
STAMP = "stamp.json"
GRAPH_FILE = "vectors.hnsw"
VECTORS_FILE = "vectors.npy"
LABELS_FILE = "labels.npy"
PENDING_FILE = "pending.npy"
DELETED_FILE = "deleted.npy"

# Defaults from benchmarks/results/hnsw_tuning.md (SciFact + NFCorpus, all-MiniLM-L6-v2,
# 384 dims): the cheapest setting whose recall@10 against exact search is >= 0.98 on
# both (0.998 / 0.989, ~0.2 ms per query).
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 200
DEFAULT_EF_SEARCH = 100
# Past this size a fixed ef loses recall: on 1M synthetic 384-dim vectors (benchmarks/
# RESULTS.md, "Scaling") recall@10 was 0.846 at ef 100, 0.956 at 200 and 0.995 at 400,
# while 100k kept 1.000 at ef 100. ef grows as (count / AUTO_EF_FROM) ** AUTO_EF_POWER:
# 100 at 100k, ~190 at 300k, ~400 at 1M (each step costs well under a ms per query).
AUTO_EF_FROM = 100_000
AUTO_EF_POWER = 0.6
# A deep query (k = 100 for fusion) needs a candidate list wider than k itself.
AUTO_EF_PER_K = 2
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
# A save rewrites the graph only once this many labels differ from the saved graph file
# (and never past a twentieth of the index, where a rewrite is cheap anyway). The labels
# missing from it are scored exactly beside every graph query: 5,000 x 384 floats is a
# ~7 MB scan, well under a millisecond, against seconds to rewrite a million-node graph.
GRAPH_DEFER_MAX = 5_000


class HnswVectorIndex:
    """Cosine-similarity vector index following ``enginelib.indexes.base.VectorIndex``."""

    def __init__(
        self,
        directory: Path,
        dim: int,
        *,
        M: int = DEFAULT_M,
        ef_construction: int = DEFAULT_EF_CONSTRUCTION,
        ef_search: int | None = None,
        exact_threshold: int = DEFAULT_EXACT_THRESHOLD,
        num_threads: int = 1,
    ) -> None:
        check_graph_options(dim, exact_threshold, M=M, ef_construction=ef_construction,
                            ef_search=ef_search, num_threads=num_threads)
        self.directory = Path(directory)
        self.dim = int(dim)
        self.M = M
        self.ef_construction = ef_construction
        # None: chosen per query from the index size and k (auto_ef); a number is used as is.
        self.ef_search = ef_search
        self.exact_threshold = exact_threshold
        # One thread by default: hnswlib inserts in order with a fixed seed, so the same
        # inputs always build the same graph and give the same results.
        self.num_threads = num_threads
        self._lock = threading.Lock()  # set_ef + knn_query must not interleave
        self._generation: int | None = None
        self._writer = False  # set by allow_spill / save: this object may write files
        self._reset()
        self._load()

    # -- state ---------------------------------------------------------------------

    def _reset(self) -> None:
        self._rows = VectorRows(self.dim, spill_dir=self.directory if self._writer else None)
        self._labels = np.zeros(0, dtype=np.int64)  # row -> label, capacity-grown
        self._count = 0
        # label -> row as two aligned arrays sorted by label (searchsorted), rebuilt after a
        # write: a dict of a million Python ints costs ~100 MB and a Python loop per lookup.
        self._lookup: LabelLookup | None = None
        self._graph: hnswlib.Index | None = None
        # Live labels the in-memory graph lacks (loaded from a deferred save), sorted; the
        # graph search scores them exactly. Their rows are cached once looked up.
        self._pending = np.zeros(0, dtype=np.int64)
        # The last saved graph file and how the index differs from it: labels it lacks,
        # labels it holds that are dead or replaced (arrays appended per write).
        self._graph_saved: Path | None = None
        self._graph_checksum: int | None = None  # of the file at _graph_saved, if known
        self._file_missing: list[np.ndarray] = []
        self._file_dead: list[np.ndarray] = []

    @property
    def generation(self) -> int | None:
        return self._generation

    def __len__(self) -> int:
        return self._count

    def labels(self) -> Labels:
        return np.sort(self._labels[: self._count])

    # -- writes --------------------------------------------------------------------

    def add(self, labels: Labels, vectors: Matrix) -> None:
        labels_arr = check_labels(labels)
        labels_arr, matrix = one_row_per_label(labels_arr, self._check_matrix(vectors, what="vectors"))
        if len(labels_arr) == 0:
            return

        rows = self._find(labels_arr)
        present = rows >= 0
        if present.any():
            self._rows.put(rows[present], matrix[present])
            self._file_dead.append(labels_arr[present])  # the saved graph has the old vector
        self._file_missing.append(labels_arr)
        fresh = ~present
        slots = int(fresh.sum())
        if len(self._pending):  # re-added pending labels go into the graph below
            left = np.setdiff1d(self._pending, labels_arr)
            slots += len(self._pending) - len(left)
            self._set_pending(left)
        if fresh.any():
            self._labels = appended_labels(self._labels, self._count, labels_arr[fresh])
            self._rows.extend(matrix[fresh])
            self._count += int(fresh.sum())
            self._lookup = None

        graph = self._ensure_graph()
        # Every label the graph holds is live or marked deleted, so at most the labels
        # not live now take new slots (a re-added deleted label reuses its own).
        needed = graph.element_count + slots
        if needed > graph.get_max_elements():
            graph.resize_index(max(needed, 2 * graph.get_max_elements()))
        # hnswlib replaces the vector of an existing label in place and un-marks it if it
        # was deleted, which is exactly the contract's "add replaces".
        graph.add_items(matrix, labels_arr.astype(np.uint64), num_threads=self.num_threads)

    def delete(self, labels: Iterable[int]) -> None:
        wanted = np.unique(np.fromiter((int(x) for x in labels), dtype=np.int64))
        rows = self._find(wanted)
        gone, rows = wanted[rows >= 0], rows[rows >= 0]  # unknown labels: a no-op
        if not len(rows):
            return
        self._count = drop_rows(self._rows, self._labels, self._count, rows)
        self._lookup = None
        self._file_dead.append(gone)
        in_graph = gone
        if len(self._pending):
            in_graph = np.setdiff1d(gone, self._pending)
            self._set_pending(np.setdiff1d(self._pending, gone))
        if self._graph is not None:
            for label in in_graph.tolist():
                self._graph.mark_deleted(label)
            in_graph_live = self._count - len(self._pending)
            if self._graph.element_count - in_graph_live > max(COMPACT_MIN_DELETED, self._count):
                self._rebuild_graph()

    def clear(self) -> None:
        self._reset()

    def allow_spill(self) -> None:
        """The store's writer calls this: unsaved rows past ``SPILL_ROWS`` may be appended
        to the rows file early (bounded RAM in a bulk ingest). A reader never writes."""
        self._writer = True
        self._rows.allow_spill(self.directory)

    def _set_pending(self, labels: np.ndarray) -> None:
        self._pending = labels

    def _find(self, labels: np.ndarray) -> np.ndarray:
        """The row of each label, -1 where absent."""
        if self._lookup is None:
            self._lookup = label_lookup(self._labels[: self._count])
        return rows_of_labels(self._lookup, labels)

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
        return self._graph

    def _rebuild_graph(self) -> None:
        """Build a fresh graph from the rows, dropping marked-deleted slots."""
        self._graph = None
        self._set_pending(np.zeros(0, dtype=np.int64))
        self._graph_saved = None  # the next save writes this graph
        if self._count == 0:
            return
        graph = self._ensure_graph()
        step = 65_536  # bounded memory: never all rows copied out of the map at once
        for start in range(0, self._count, step):
            stop = min(self._count, start + step)
            graph.add_items(self._rows.take(np.arange(start, stop)),
                            self._labels[start:stop].astype(np.uint64),
                            num_threads=self.num_threads)

    def vectors_for(self, labels: Labels) -> Matrix:
        """The stored (L2-normalized, float32) vectors of ``labels``, in order: what the
        store reads instead of keeping its own copy. Unknown labels raise."""
        wanted = check_labels(labels)
        rows = self._find(wanted)
        if (rows < 0).any():
            missing = wanted[rows < 0][:5].tolist()
            raise InvalidInputError(f"labels {missing} are not in the vector index; pass labels "
                                    f"of chunks it holds (index.labels())")
        return self._rows.take(rows)

    def rows_in_order(self) -> tuple[Labels, Matrix]:
        """(labels, vectors) of every live row in the index's own row order, without a copy
        when nothing was appended since the last save: a caller whose rows line up with
        these (the store's chunk view) reads vectors by position instead of by label."""
        return self._labels[: self._count], self._rows.matrix()

    def ef_for(self, k: int) -> int:
        """The ef a query for ``k`` neighbours runs with (``auto_ef`` unless set)."""
        if self.ef_search is not None:
            return max(self.ef_search, k)
        return auto_ef(self._count, k)

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
        rows = self._find(np.unique(np.asarray(allowed, dtype=np.int64)))
        return rows[rows >= 0]

    def _exact(self, queries: Matrix, k: int, rows: np.ndarray | None) -> list[SearchResult]:
        if rows is None:
            return exact_topk(self._rows.matrix(), self._labels[: self._count], queries, k)
        return exact_topk(self._rows.take(rows), self._labels[rows], queries, k)

    def _graph_search(
        self, queries: Matrix, k: int, rows: np.ndarray | None
    ) -> list[SearchResult]:
        graph = self._graph
        assert graph is not None  # a non-empty index always has a graph
        if rows is None:
            # hnswlib keeps ef candidates anyway; taking them all and re-ranking exactly
            # costs ef dot products, lifts recall, and settles ties at the cut by label.
            fetch, allowed_labels = self.ef_for(k), None
        else:
            # Over-fetch instead of hnswlib's filter callback: a Python predicate is
            # called for every visited node (GIL-bound, ~10x slower), while widening ef by
            # the inverse of the allowed fraction keeps the walk in C++ and leaves about
            # ef_search allowed candidates, i.e. the recall of an unfiltered search. If
            # fewer than k allowed labels come back, answer exactly.
            fetch = math.ceil(self.ef_for(k) * self._count / len(rows))
            if fetch > MAX_FETCH:
                return self._exact(queries, k, rows)
            allowed_labels = np.sort(self._labels[rows])
        in_graph = self._count - len(self._pending)
        fetch = min(fetch, in_graph)
        if fetch <= 0:
            return self._exact(queries, k, rows)
        try:
            with self._lock:
                graph.set_ef(max(self.ef_for(k), fetch))
                found, _ = graph.knn_query(queries, k=fetch, num_threads=self.num_threads)
        except RuntimeError:
            # hnswlib could not collect enough live neighbours (heavy deletions): fall
            # back to the exact answer rather than return fewer.
            return self._exact(queries, k, rows)
        found = found.astype(np.int64)
        if len(self._pending):  # labels the graph lacks are candidates for every query
            found = np.hstack([found, np.broadcast_to(self._pending, (len(found), len(self._pending)))])
        results: list[SearchResult] = []
        for query, candidates in zip(queries, found):
            if allowed_labels is not None:
                at = np.minimum(np.searchsorted(allowed_labels, candidates),
                                len(allowed_labels) - 1)
                candidates = candidates[allowed_labels[at] == candidates]
                if len(candidates) < k:
                    results.append(self._exact(query[None, :], k, rows)[0])
                    continue
            # Re-score from the rows so scores and tie order are the same arithmetic as
            # the exact path.
            cand_rows = self._find(candidates)
            candidates = candidates[cand_rows >= 0]
            cand_rows = cand_rows[cand_rows >= 0]
            results.append(exact_topk(self._rows.take(cand_rows), candidates, query[None, :],
                                      k)[0])
        return results

    # -- validation ----------------------------------------------------------------

    def _check_matrix(self, data: Matrix, *, what: str) -> np.ndarray:
        return check_matrix(data, self.dim, what=what)

    # -- persistence ---------------------------------------------------------------

    def save(self, generation: int) -> None:
        check_generation(generation)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._writer = True
        rows_name = self._rows.save(self.directory)
        folder, tmp = new_generation(self.directory, generation)
        missing, dead = self._graph_delta()
        deferred = self._graph is not None and self._defer_graph(len(missing) + len(dead))
        if deferred:
            assert self._graph_saved is not None
            os.link(self._graph_saved, tmp / GRAPH_FILE)
            graph_checksum = (self._graph_checksum if self._graph_checksum is not None
                              else file_sum64(tmp / GRAPH_FILE))
            np.save(tmp / PENDING_FILE, missing)
            np.save(tmp / DELETED_FILE, dead)
        elif self._graph is not None:
            self._fold_pending()
            self._graph.save_index(str(tmp / GRAPH_FILE))
            graph_checksum = file_sum64(tmp / GRAPH_FILE)
        np.save(tmp / LABELS_FILE, self._labels[: self._count])
        publish_generation(self.directory, tmp, folder)
        stamp = {
            "format": FORMAT_VERSION,
            "generation": generation,
            "folder": folder,
            "rows": rows_name,
            "dim": self.dim,
            "count": self._count,
            "space": "cosine",
            "M": self.M,
            "ef_construction": self.ef_construction,
        }
        if self._graph is not None:
            stamp["graph_checksum"] = graph_checksum
        write_atomic(self.directory / STAMP, json.dumps(stamp, indent=2).encode())
        self._generation = generation
        if self._graph is not None:
            self._graph_saved = self.directory / folder / GRAPH_FILE
            self._graph_checksum = graph_checksum
            self._file_missing = [missing] if deferred else []
            self._file_dead = [dead] if deferred else []
        self._remove_stale(keep=folder, rows=rows_name)

    def _graph_delta(self) -> tuple[np.ndarray, np.ndarray]:
        """(live labels the saved graph file lacks, labels it holds that are dead or
        hold an old vector), sorted."""
        empty = np.zeros(0, dtype=np.int64)
        missing = np.unique(np.concatenate([empty, *self._file_missing]))
        if len(missing):
            missing = missing[self._find(missing) >= 0]
        dead = np.unique(np.concatenate([empty, *self._file_dead]))
        return missing, dead

    def _defer_graph(self, changed: int) -> bool:
        """Whether this save may keep the last graph file and list the changes instead."""
        return (self._graph_saved is not None and self._graph_saved.is_file()
                and changed <= min(GRAPH_DEFER_MAX, self._count // 20))

    def _fold_pending(self) -> None:
        """Insert the labels a deferred save left out of the graph (before writing it)."""
        if not len(self._pending) or self._graph is None:
            return
        graph, pending = self._graph, self._pending
        if graph.element_count + len(pending) > graph.get_max_elements():
            graph.resize_index(graph.element_count + len(pending))
        graph.add_items(self._rows.take(self._find(pending)), pending.astype(np.uint64),
                        num_threads=self.num_threads)
        self._set_pending(np.zeros(0, dtype=np.int64))

    def _remove_stale(self, keep: str, rows: str) -> None:
        for entry in self.directory.iterdir():
            if is_stale_generation(entry, keep):
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.is_file() and is_rows_file(entry.name) and entry.name != rows:
                # a reader mapping an older file keeps its pages (unlink, not truncate)
                entry.unlink(missing_ok=True)

    def _load(self) -> None:
        """Load the stamped generation; anything unreadable leaves an empty index."""
        try:
            stamp = json.loads(read_regular(self.directory / STAMP).decode("utf-8"))
            if stamp.get("format") not in _READABLE_FORMATS or stamp.get("dim") != self.dim:
                return
            folder = self.directory / str(stamp["folder"])
            labels = load_npy(folder / LABELS_FILE)
            count = int(stamp["count"])
            if stamp["format"] == 1:
                rows = (VectorRows.mapped(folder / VECTORS_FILE, self.dim) if count
                        else VectorRows(self.dim))
            else:
                rows = VectorRows.mapped(self.directory / str(stamp["rows"]), self.dim, count)
            if len(rows) != count or labels.shape != (count,):
                return
            pending = np.zeros(0, dtype=np.int64)
            dead = np.zeros(0, dtype=np.int64)
            graph = None
            if count or (folder / GRAPH_FILE).exists():
                expected = stamp.get("graph_checksum")
                # hnswlib trusts the file: a flipped byte in its header crashed the process
                # (SIGSEGV) or asked for terabytes. A file that fails its checksum is not loaded
                # and the graph is rebuilt from the catalog, as a missing one is.
                if expected is not None and file_sum64(folder / GRAPH_FILE) != expected:
                    raise ValueError(f"{folder / GRAPH_FILE} fails its checksum")
                graph = hnswlib.Index(space="cosine", dim=self.dim)
                graph.load_index(str(folder / GRAPH_FILE))
                if (folder / PENDING_FILE).exists():
                    pending = load_npy(folder / PENDING_FILE).astype(np.int64)
                    dead = load_npy(folder / DELETED_FILE).astype(np.int64)
            generation = int(stamp["generation"])
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            self._reset()
            return
        if graph is not None and count and not _graph_covers(graph, labels, pending, dead):
            return  # the graph does not cover the rows: rebuild from the catalog
        self._reset()
        self._rows = rows
        if self._writer:
            rows.allow_spill(self.directory)
        self._labels = labels.astype(np.int64)
        self._count = count
        self._graph = graph
        self._set_pending(pending)
        if graph is not None:
            self._graph_saved = folder / GRAPH_FILE
            checksum = stamp.get("graph_checksum")
            self._graph_checksum = checksum if isinstance(checksum, int) else None
            self._file_missing, self._file_dead = [pending], [dead]
        self.M = stamp.get("M", self.M)
        self.ef_construction = stamp.get("ef_construction", self.ef_construction)
        self._generation = generation


def _graph_covers(graph: hnswlib.Index, labels: np.ndarray, pending: np.ndarray,
                  dead: np.ndarray) -> bool:
    """Whether the graph holds every live label but the pending ones; marks ``dead``."""
    for label in dead.tolist():
        try:
            graph.mark_deleted(label)
        except RuntimeError:
            pass  # already marked in the file, or added and deleted since it was saved
    graph_ids = np.asarray(graph.get_ids_list(), dtype=np.int64)
    in_graph = np.setdiff1d(labels, pending, assume_unique=True) if len(pending) else labels
    return bool(np.isin(in_graph, graph_ids).all())


def auto_ef(count: int, k: int) -> int:
    """Candidates a graph query walks for ``k`` neighbours in an index of ``count``:
    DEFAULT_EF_SEARCH up to AUTO_EF_FROM, then growing with the size (see the constants),
    and never under AUTO_EF_PER_K * k."""
    grown = DEFAULT_EF_SEARCH * max(1.0, count / AUTO_EF_FROM) ** AUTO_EF_POWER
    return max(math.ceil(grown), AUTO_EF_PER_K * k)
