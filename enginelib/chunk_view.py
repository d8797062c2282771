"""The chunks a search reads, by label: compact columns in RAM, text and vectors on demand.

Opening a store must not cost time or memory in proportion to its text. So the view holds
only what every search touches for every candidate (labels, truth levels, document ids,
offsets, short document metadata) as numpy columns (strings as dictionary codes); a chunk's text is read when a
returned hit (or the gate) asks for it, from memory-mapped segment files beside the catalog
(``chunk_texts.py``; from the catalog itself when it is in memory); vectors are read from
the vector index, which is their one owner in RAM, never copied here.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import catalog_view as queries
from . import view_cache
from .catalog import Catalog
from .chunk_texts import FOLDER as TEXTS_FOLDER
from .chunk_texts import MAX_SEGMENTS, TextSegments

# Text of this many chunks is kept per view (a top hit comes back for many queries).
TEXT_CACHE_SIZE = 4096
# On a text miss, the next candidates of the ranking being read are fetched in the same
# statement (each DuckDB statement costs about a millisecond, whatever its row count).
READ_AHEAD = 64
# A ranking longer than this is an allowed-label set, not candidates: no read-ahead hint.
_HINT_MAX = 20_000
# Every string column is per document (the chunks of one document repeat it), so each is
# held as int32 codes into its distinct values: four bytes per chunk, not a Python string.
_DICTIONARY = ("truth_level", "source_type", "source_id", "language", "version", "index_version",
               "document_id", "title", "source_path", "source_url")
_NUMBERS = ("chunk_index", "start_offset", "end_offset", "token_count", "page_start", "page_end")
_NULL = -(2**31)  # a null page number among the int32 columns (the catalog's INTEGER)
_NO_SOURCE: tuple[Any, Any, Any, Any] = (None, None, None, None)


@dataclass(frozen=True, eq=False)
class ChunkRecord:
    """One chunk as a hit needs it; ``content`` and ``heading_path`` are read on first use."""

    label: int
    document_id: str
    chunk_index: int
    start_offset: int
    end_offset: int
    token_count: int
    page_start: int | None
    page_end: int | None
    truth_level: str
    title: str | None
    source_path: str | None
    source_type: str | None
    source_url: str | None
    source_id: str | None
    language: str | None
    version: str
    index_version: str
    source_tier: str | None
    evidence_level: str | None
    authority_score: float | None
    peer_reviewed: bool | None
    _view: ChunkView = field(repr=False)

    @property
    def content(self) -> str:
        return self._view.text_of(self.label)[0]

    @property
    def heading_path(self) -> str:
        return self._view.text_of(self.label)[1]


class ViewVectors:
    """The view's vectors in its row order, read from the vector index (never copied whole
    unless a caller asks for the full matrix and the index's rows are in another order)."""

    def __init__(self, view: ChunkView, index: Any | None) -> None:
        self._view = view
        self._index = index
        self._aligned: tuple[int, int] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self._view), self._view.dim)

    dtype = np.dtype(np.float32)

    def __len__(self) -> int:
        return len(self._view)

    def __getitem__(self, positions: Any) -> np.ndarray:
        if isinstance(positions, (int, np.integer)):
            mirror = self._mirror_if_aligned()
            if mirror is not None:
                return mirror[int(positions)]  # type: ignore[no-any-return]
            return self.rows(np.array([int(positions)], dtype=np.int64))[0]
        if isinstance(positions, slice):
            positions = np.arange(len(self._view))[positions]
        return self.rows(np.asarray(positions, dtype=np.int64))

    def rows(self, positions: np.ndarray) -> np.ndarray:
        mirror = self._mirror_if_aligned()
        if mirror is not None:
            return mirror[positions]
        return self._view.vectors_of(self._view.labels[positions], self._index)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        mirror = self._mirror_if_aligned()
        array = mirror if mirror is not None else self.rows(np.arange(len(self._view)))
        return array if dtype is None else array.astype(dtype)

    @property
    def T(self) -> np.ndarray:  # noqa: N802 - numpy's name: exact_topk computes q @ matrix.T
        return np.asarray(self).T

    def _mirror_if_aligned(self) -> np.ndarray | None:
        """The index's own matrix when its rows hold exactly the view's labels in order.

        A store opened from disk and grown by appends keeps them so; a deletion moves rows.
        """
        index = self._index
        in_order = getattr(index, "rows_in_order", None)
        if in_order is None or index is None or len(index) != len(self._view):
            return None
        labels, vectors = in_order()
        count = len(labels)
        base = getattr(vectors, "base", None)
        key = (id(vectors if base is None else base), count)
        if self._aligned != key:
            if count != len(self._view) or not np.array_equal(labels, self._view.labels):
                return None
            self._aligned = key
        return vectors  # type: ignore[no-any-return]


class ChunkView:
    """Chunk rows at one catalog generation, addressed by label (sorted) and row position.

    Public surface (what the search engine reads): ``generation``, ``labels``,
    ``truth_levels``, ``vectors`` (indexable by positions), ``positions``, ``record``,
    ``labels_with_truth``, ``filter_labels``, ``close``. Filters run as SQL on the catalog;
    texts come from the catalog for the records a search reads.
    """

    def __init__(
        self, catalog: Catalog, table: _Table, generation: int,
        sources: dict[str, tuple[Any, Any, Any, Any]], vector_index: Any | None = None,
        segments: TextSegments | None = None,
    ) -> None:
        self.generation = generation
        self.dim = catalog.dim
        self._catalog = catalog
        self._segments = segments
        self._mismatch_told = False
        self._table = table
        self._sources = sources
        self.labels = table.labels
        # Columns as numpy numbers and codes: a record is read in microseconds from them,
        # while the rows never become Python objects (1M rows: ~100 MB).
        self._numbers = table.numbers
        self._codes = table.codes
        levels, level_names = self._codes["truth_level"]
        self.truth_levels = (np.array(level_names, dtype="U2")[levels] if len(self.labels)
                             else np.zeros(0, dtype="U2"))
        # Typed as the array it stands for: it answers every array use the engine makes
        # (indexing by positions, len, shape, .T, np.asarray) without holding a copy.
        self.vectors: np.ndarray = ViewVectors(self, vector_index)  # type: ignore[assignment]
        self._texts: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._hint = np.zeros(0, dtype=np.int64)
        # Rows changed since the columns saved beside the catalog (view_cache.py).
        self._unsaved_rows = 0

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, catalog: Catalog, vector_index: Any | None = None, *,
             use_saved: bool = True) -> ChunkView:
        """The view at the catalog's generation: the saved columns plus what changed since
        them when there are any, else every row read from the catalog (then saved)."""
        generation = catalog.generation
        folder = _columns_folder(catalog)
        table: _Table | None = None
        unsaved = 0
        saved = view_cache.load(folder, generation) if folder is not None and use_saved else None
        if saved is not None:
            since, (labels, numbers, codes) = saved
            caught = _catch_up(_Table(labels, numbers, codes), since, catalog)
            if caught is not None:
                table, unsaved = caught
        if table is None:
            table = _prepare(queries.compact_rows(catalog))
            unsaved = len(table.labels)
        segments = _segments_of(catalog)
        if segments is not None:
            _fill(segments, catalog, generation)
        view = cls(catalog, table, generation, queries.sources(catalog), vector_index, segments)
        view._unsaved_rows = unsaved
        view._save_if_stale(catalog)
        return view

    def _save_if_stale(self, catalog: Catalog) -> None:
        """The writer saves the columns once enough changed since the saved ones."""
        folder = _columns_folder(catalog)
        if folder is None or catalog.read_only or len(self.labels) < view_cache.MIN_ROWS or (
                self._unsaved_rows <= min(view_cache.STALE_ROWS, len(self.labels) // 10)):
            return
        try:
            view_cache.save(folder, self.generation, self.labels, self._numbers, self._codes)
        except OSError:
            return  # derived and optional: the next open reads the catalog instead
        self._unsaved_rows = 0

    def advance(self, catalog: Catalog, vector_index: Any | None = None) -> ChunkView:
        """The view at the catalog's generation, built from this one plus what changed.

        Labels are never reused for other content except by a restore, so a commit is
        tombstoned labels out and changed rows in; anything unexpected (a count that does
        not add up) falls back to a full load.
        """
        generation = catalog.generation
        if generation < self.generation:
            return ChunkView.load(catalog, vector_index, use_saved=False)
        caught = _catch_up(self._table, self.generation, catalog)
        if caught is None:
            return ChunkView.load(catalog, vector_index, use_saved=False)
        table, changed = caught
        if self._segments is not None:
            _fill(self._segments, catalog, generation)
        view = ChunkView(catalog, table, generation, queries.sources(catalog), vector_index,
                         self._segments)
        # A label's text never changes: the new view takes over what this one read (this
        # one is closed next, and closing empties its cache).
        view._texts, self._texts = self._texts, OrderedDict()
        view._unsaved_rows = self._unsaved_rows + changed
        view._save_if_stale(catalog)
        return view

    def __len__(self) -> int:
        return len(self.labels)

    # -- addressing ------------------------------------------------------------------------

    def positions(self, labels: np.ndarray) -> np.ndarray:
        """Row positions of ``labels``; -1 where a label is not in this view."""
        labels = np.asarray(labels, dtype=np.int64)
        if len(self.labels) == 0:
            return np.full(len(labels), -1, dtype=np.int64)
        pos = np.searchsorted(self.labels, labels)
        pos = np.clip(pos, 0, len(self.labels) - 1)
        found = self.labels[pos] == labels
        if len(labels) <= _HINT_MAX:
            # The ranking being resolved: its next rows are the likely next text reads.
            self._hint = labels[found]
        return np.where(found, pos, -1)

    def record(self, position: int) -> ChunkRecord:
        p = int(position)
        numbers: dict[str, Any] = {name: (None if values[p] == _NULL else int(values[p]))
                                   for name, values in self._numbers.items()}
        codes: dict[str, Any] = {name: (None if values[p] < 0 else names[values[p]])
                                 for name, (values, names) in self._codes.items()}
        authority = self._sources.get(codes["source_id"] or "", (None, None, None, None))
        return ChunkRecord(
            label=int(self.labels[p]), **numbers, **codes,
            source_tier=authority[0], evidence_level=authority[1],
            authority_score=authority[2], peer_reviewed=authority[3], _view=self,
        )

    def fields_at(self, positions: np.ndarray) -> dict[str, list[Any]]:
        """Every ``ChunkRecord`` field but the texts, one list per field over ``positions``:
        a page of hits reads its rows column by column instead of a record per row."""
        positions = np.asarray(positions, dtype=np.int64)
        out: dict[str, list[Any]] = {"label": self.labels[positions].tolist()}
        for name, values in self._numbers.items():
            out[name] = [None if v == _NULL else v for v in values[positions].tolist()]
        for name, (codes, names) in self._codes.items():
            out[name] = [None if c < 0 else names[c] for c in codes[positions].tolist()]
        authority = [self._sources.get(s or "", _NO_SOURCE) for s in out["source_id"]]
        for i, name in enumerate(("source_tier", "evidence_level", "authority_score",
                                  "peer_reviewed")):
            out[name] = [a[i] for a in authority]
        return out

    def codes(self, name: str) -> np.ndarray:
        """A string column's int32 codes by row position (-1 for null; equal codes, equal
        values): grouping by document compares codes, not strings."""
        return self._codes[name][0]

    def number_column(self, name: str) -> np.ndarray:
        """An integer column's int32 values by row position (``_NULL`` for null)."""
        return self._numbers[name]

    def texts_of(self, labels: list[int]) -> list[tuple[str, str]]:
        """(content, heading_path) of each label, as ``text_of`` reads them."""
        texts = self._texts
        return [texts.get(label) or self.text_of(label) for label in labels]

    def read_texts(self, labels: list[int]) -> dict[int, tuple[str, str]]:
        """(content, heading_path) of many chunks in one catalog read, not kept: a scan
        (the gate's look at documents' openings) must not evict a search's texts."""
        return queries.chunk_texts(self._catalog, labels)

    def column(self, name: str) -> _Column:
        """One ``ChunkRecord`` field (not ``label``, not a text) by row position, without
        building records: grouping and caps read hundreds of candidates per search."""
        if name in self._codes:
            values, names = self._codes[name]
            return _Column(lambda p: None if values[p] < 0 else names[values[p]])
        if name in self._numbers:
            numbers = self._numbers[name]
            return _Column(lambda p: None if numbers[p] == _NULL else int(numbers[p]))
        raise KeyError(f"no column {name!r} in the chunk view")

    # -- on demand -------------------------------------------------------------------------

    def text_of(self, label: int) -> tuple[str, str]:
        """(content, heading_path) of one chunk, read from the catalog on a miss together
        with the next candidates of the ranking last resolved by ``positions``."""
        cached = self._texts.get(label)
        if cached is not None:
            return cached
        if self._segments is not None:
            held = self._segments.get([label]).get(label)
            if held is not None and self._fits(label, held[0]):
                self._remember({label: held})
                return held
        wanted = [label]
        at = np.flatnonzero(self._hint == label)
        if len(at):
            ahead = self._hint[int(at[0]) + 1 : int(at[0]) + 1 + 4 * READ_AHEAD].tolist()
            wanted += [x for x in ahead if x not in self._texts][: READ_AHEAD - 1]
        fetched = queries.chunk_texts(self._catalog, wanted)
        self._remember(fetched)
        # A label deleted by another process after this view was loaded has no text left.
        return fetched.get(label, ("", ""))

    def _fits(self, label: int, content: str) -> bool:
        """Whether a segment's text has the length the catalog's offsets give the chunk: a
        segment left beside a catalog put back from another store holds other texts under
        the same labels, and would be cited at these offsets."""
        pos = int(np.searchsorted(self.labels, label))
        if pos >= len(self.labels) or self.labels[pos] != label:
            return True  # a chunk this view does not hold: nothing to compare with
        start, end = (int(self._numbers[name][pos]) for name in ("start_offset", "end_offset"))
        if end - start == len(content):
            return True
        if not self._mismatch_told:
            self._mismatch_told = True
            warnings.warn(f"enginelib: the chunk texts beside {self._catalog.path} do not match "
                          f"its catalog (another store's, or a catalog put back without them); "
                          f"texts are read from the catalog meanwhile: run `enginelib repair`",
                          RuntimeWarning, stacklevel=3)
        return False

    def _remember(self, texts: dict[int, tuple[str, str]]) -> None:
        self._texts.update(texts)
        while len(self._texts) > TEXT_CACHE_SIZE:
            self._texts.popitem(last=False)

    def vectors_of(self, labels: np.ndarray, index: Any | None) -> np.ndarray:
        """Vectors of ``labels`` from the vector index; the catalog for any it lacks."""
        labels = np.asarray(labels, dtype=np.int64)
        out = np.zeros((len(labels), self.dim), dtype=np.float32)
        missing = np.ones(len(labels), dtype=bool)
        getter = getattr(index, "vectors_for", None)
        if getter is not None:
            out[:] = getter(labels)
            missing[:] = False
        else:
            row_of = getattr(index, "_row", None)
            mirror = getattr(index, "_vectors", None)
            if row_of is not None and mirror is not None:
                rows = np.fromiter((row_of.get(int(x), -1) for x in labels.tolist()),
                                   dtype=np.int64, count=len(labels))
                missing = rows < 0
                out[~missing] = mirror[rows[~missing]]
        if missing.any():
            stored = queries.chunk_vectors(self._catalog, labels[missing].tolist())
            for i in np.flatnonzero(missing):
                out[i] = stored.get(int(labels[i]), out[i])
        return out

    def filter_labels(self, where: str, params: tuple[object, ...]) -> np.ndarray:
        """Labels of the rows matching a compiled filter (``d.<column>`` references)."""
        return queries.filtered_labels(self._catalog, where, params)

    def close(self) -> None:
        self._texts.clear()

    def labels_with_truth(self, levels: tuple[str, ...]) -> np.ndarray | None:
        """Labels whose document has one of ``levels``; None when that is every chunk."""
        mask = np.isin(self.truth_levels, np.array(levels, dtype="U2"))
        if mask.all():
            return None
        return self.labels[mask]


class _Table:
    """The view's rows, sorted by label: int64 labels, int32 numbers (``_NULL`` for null),
    and per string column int32 codes (-1 for null) into a list of its distinct values."""

    def __init__(self, labels: np.ndarray, numbers: dict[str, np.ndarray],
                 codes: dict[str, tuple[np.ndarray, list[Any]]]) -> None:
        self.labels = labels
        self.numbers = numbers
        self.codes = codes

    def take(self, rows: np.ndarray) -> _Table:
        return _Table(self.labels[rows], {k: v[rows] for k, v in self.numbers.items()},
                      {k: (v[rows], names) for k, (v, names) in self.codes.items()})

    def concat(self, other: _Table) -> _Table:
        """These rows then ``other``'s; ``other``'s codes are mapped into these values
        (a value no row uses any more stays in the list: a few bytes, never read)."""
        codes: dict[str, tuple[np.ndarray, list[Any]]] = {}
        for name, (values, names) in self.codes.items():
            their_values, their_names = other.codes[name]
            at = _Names.index_of(names)
            added: list[Any] = []
            mapping = np.full(len(their_names) + 1, -1, dtype=np.int32)
            for i, value in enumerate(their_names):
                code = at.get(value)
                if code is None:
                    code = at[value] = len(at)
                    added.append(value)
                mapping[i] = code
            grown = _Names(names)
            grown.extend(added)
            grown.at = at  # the map now covers exactly the grown list
            # -1 (null) indexes the mapping's last entry, which is -1 again.
            codes[name] = (np.concatenate([values, mapping[their_values]]), grown)
        return _Table(np.concatenate([self.labels, other.labels]),
                      {k: np.concatenate([v, other.numbers[k]]) for k, v in self.numbers.items()},
                      codes)


class _Names(list[Any]):
    """A column's distinct values, with their value -> code map kept from commit to commit:
    rebuilding it per commit costs ~0.3 s at a million documents."""

    at: dict[Any, int] | None = None

    @staticmethod
    def index_of(names: list[Any]) -> dict[Any, int]:
        """The value -> code map of ``names`` (grown in place by the caller)."""
        at = names.at if isinstance(names, _Names) else None
        # A longer map was grown for a newer list that shares it: not this list's.
        if at is None or len(at) != len(names):
            at = {value: i for i, value in enumerate(names)}
        return at


def _numbers(column: np.ndarray) -> np.ndarray:
    """An integer column from ``fetchnumpy`` as int32, ``_NULL`` where it is NULL."""
    if isinstance(column, np.ma.MaskedArray):
        column = column.filled(_NULL)
    return np.asarray(column, dtype=np.int32)


def _codes(column: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """A string column from ``fetchnumpy`` as codes (-1 for NULL) into its distinct values."""
    mask = np.ma.getmaskarray(column) if isinstance(column, np.ma.MaskedArray) else None
    values = column.data if isinstance(column, np.ma.MaskedArray) else column
    rows = values.tolist()
    names = _Names(dict.fromkeys(rows))
    at = names.at = {value: i for i, value in enumerate(names)}
    # One dict probe per row, iterated by ``map`` in C (a generator costs 3x more at 1M rows).
    codes = np.fromiter(map(at.__getitem__, rows), dtype=np.int32, count=len(rows))
    if mask is not None and mask.any():
        codes[mask] = -1
    return codes, names


def _catch_up(table: _Table, since: int, catalog: Catalog) -> tuple[_Table, int] | None:
    """``table`` (the rows at generation ``since``) brought to the catalog's generation,
    and how many rows changed; None when the counts do not add up (read it all again).

    Labels are never reused for other content except by a restore, which commits its
    rows at a new generation, so a commit is tombstoned labels out and changed rows in.
    """
    if catalog.generation < since:
        return None
    changed = _prepare(queries.compact_rows(catalog, since=since))
    drop = np.union1d(catalog.tombstones_since(since), changed.labels)
    if len(drop):
        keep = ~np.isin(table.labels, drop, assume_unique=True)
        if not keep.all():
            table = table.take(np.flatnonzero(keep))
    if len(changed.labels):
        table = table.concat(changed)
        if len(table.labels) > 1 and not (np.diff(table.labels) > 0).all():
            table = table.take(np.argsort(table.labels, kind="stable"))
    if len(table.labels) != catalog.chunk_count():
        return None
    return table, len(drop)


def _columns_folder(catalog: Catalog) -> Path | None:
    """Where the writer saves the view's columns; None for a catalog held in memory."""
    return None if catalog.in_memory_db else catalog.path.parent / view_cache.FOLDER


def _segments_of(catalog: Catalog) -> TextSegments | None:
    """The text segments beside a catalog file; None for a catalog held in memory, which
    answers text lookups itself in microseconds and locks no file."""
    if catalog.in_memory_db:
        return None
    return TextSegments(catalog.path.parent / TEXTS_FOLDER, writable=not catalog.read_only,
                        generation=catalog.generation)


def _fill(segments: TextSegments, catalog: Catalog, generation: int) -> None:
    """Make the segments hold every chunk up to ``generation``: the chunks committed after
    what they hold, streamed from the catalog (a new segment, or a reader's RAM)."""
    if segments.generation < generation:
        segments.add(queries.texts_since(catalog, segments.generation), generation)
    if segments.writable and len(segments) > MAX_SEGMENTS:
        base = segments.oldest_generation
        segments.merge_newer(queries.texts_since(catalog, base), base, generation)


def _prepare(columns: dict[str, np.ndarray]) -> _Table:
    """``fetchnumpy`` columns sorted by label, strings as codes."""
    labels = np.asarray(columns["label"], dtype=np.int64)
    table = _Table(labels, {name: _numbers(columns[name]) for name in _NUMBERS},
                   {name: _codes(columns[name]) for name in _DICTIONARY})
    if len(labels) > 1 and not (np.diff(labels) > 0).all():
        table = table.take(np.argsort(labels, kind="stable"))
    return table


class _Column:
    """Read-only access to one view column by row position."""

    __slots__ = ("_get",)

    def __init__(self, get: Any) -> None:
        self._get = get

    def __getitem__(self, position: int) -> Any:
        return self._get(int(position))
