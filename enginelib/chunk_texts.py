"""Chunk texts in memory-mapped segment files beside the catalog, read per hit without DuckDB.

A search shows the text of a few dozen chunks. Holding every text in RAM makes a store's
memory grow with its corpus; reading them from DuckDB per search means opening the catalog
file per search (tens of milliseconds, and it keeps a writer process out meanwhile). So the
texts are also written, once, to append-only segment files that every process maps::

    <store>/texts/seg-<generation>-<nonce>.txts   label, content, heading_path (layout below)

A segment holds the chunks a commit added, sorted by label; the newest segment holding a
label wins (a restore may give a label back). Segments are derived, like the indexes: a
missing one (a crash between the catalog commit and its segment) is written again from the
catalog by the next writable open, and a reader fills the gap from the catalog into RAM.
A label deleted from the catalog stays in its segment, unread, until a rewrite. Segments of
an older release (``.arrow``) are not read: to this module they are missing, so a writer
writes their texts again from the catalog and deletes them.

Layout of a segment (little-endian; plain numpy, so no Arrow in the base install)::

    header   8-byte magic, int64 rows n, int64 blob bytes b, the 8-character nonce of its name
    blob     b bytes of UTF-8: per row its content then its heading path, padded to 8
    labels   int64[n], ascending
    offsets  int64[2n + 1] into the blob: row i's content is [2i, 2i+1), its heading [2i+1, 2i+2)
    checks   int64[n]: CRC-32 of row i's label, content and heading, seeded with the nonce

The header is written last and the file size must match it, so a torn file reads as missing.
A row is checked when read: a flipped byte, or another store's segment copied under this
one's name (its nonce differs), reads as missing, never as another chunk's text. Segments of
the first layout (``ELTXTS01``, no checks) are read unchecked by readers; a writer writes them
again in this layout.
"""

from __future__ import annotations

import mmap
import os
import secrets
import struct
import warnings
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from .core import layout
from .core.folders import require_folder
from .durable import fsync_dir, fsync_file
from .input_files import open_regular

FOLDER = layout.TEXTS_DIR
_PREFIX = "seg-"
_SUFFIX = ".txts"
_OLD_SUFFIX = ".arrow"  # segments of the releases that wrote them through pyarrow
_MAGIC = b"ELTXTS02"
_OLD_MAGIC = b"ELTXTS01"
_HEADER = struct.Struct("<8sqq8s")
_OLD_HEADER = struct.Struct("<8sqq")
# Past this many segments a writer merges all but the oldest into one (each segment is an
# open memory map, and a lookup looks at every segment whose label range holds the label).
MAX_SEGMENTS = 32
# A batch of texts: labels (int64, ascending), contents, heading paths ('' for none).
TextBatch = tuple[np.ndarray, list[str], list[str]]


class SegmentError(ValueError):
    """A segment file that does not hold what its header says (torn or foreign)."""


class _Segment:
    def __init__(self, path: Path, generation: int) -> None:
        self.path = path
        self.generation = generation
        # Memory-mapped: the texts are paged in when read, never loaded whole. The map
        # outlives a deletion of the file (Linux), so a merge never breaks a reader.
        with open_regular(path) as f:  # a pipe in its place: unreadable, not waited on
            size = os.fstat(f.fileno()).st_size
            if size < _HEADER.size:
                raise SegmentError(f"{path}: {size} bytes, shorter than a header")
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        # A segment of the first layout (no checks) is still read by a reader: a store last
        # written by the previous release would otherwise load every text of the catalog
        # into memory at each read-only open until a writer came by. A writer writes it
        # again in this layout (``legacy``).
        self.legacy = self._map[:8] == _OLD_MAGIC
        header = _OLD_HEADER if self.legacy else _HEADER
        magic, rows, blob, *nonce = header.unpack_from(self._map, 0)
        checks = 0 if self.legacy else 1
        if ((not self.legacy and (magic != _MAGIC or nonce[0] != _nonce_of(path.name)))
                or rows < 0 or blob < 0
                or size != header.size + blob + 8 * ((3 + checks) * rows + 1)):
            self._map.close()
            raise SegmentError(f"{path}: not a complete text segment of this store")
        self._seed = None if self.legacy else zlib.crc32(nonce[0])
        self._blob = header.size
        self.labels = np.frombuffer(self._map, dtype="<i8", count=rows, offset=header.size + blob)
        self._offsets = np.frombuffer(self._map, dtype="<i8", count=2 * rows + 1,
                                      offset=header.size + blob + 8 * rows)
        self._checks = np.frombuffer(self._map, dtype="<i8", count=rows * checks,
                                     offset=header.size + blob + 8 * (3 * rows + 1))
        self.damaged = False

    def text(self, row: int) -> tuple[str, str] | None:
        """Row ``row``'s (content, heading path); None when its bytes fail their check."""
        held = self._read(row)
        if held is None and not self.damaged:
            self.damaged = True
            # The text is read from the catalog instead; repair writes the segments again.
            warnings.warn(f"enginelib: the text segment {self.path} is damaged (a row fails its "
                          f"check); chunk texts are read from the catalog meanwhile: run "
                          f"`enginelib repair`", RuntimeWarning, stacklevel=3)
        return held

    def _read(self, row: int) -> tuple[str, str] | None:
        a, b, c = (int(x) for x in self._offsets[2 * row : 2 * row + 3])
        base = self._blob
        if 0 <= a <= b <= c <= len(self._map) - base:
            raw = self._map[base + a : base + c]
            if self._seed is None or (
                    _check(self._seed, int(self.labels[row]), raw) == int(self._checks[row])):
                try:
                    return raw[: b - a].decode("utf-8"), raw[b - a :].decode("utf-8")
                except UnicodeDecodeError:
                    pass
        return None

    def damaged_rows(self) -> int:
        """How many rows fail their check (reads the whole segment: for `check`)."""
        return sum(self._read(row) is None for row in range(len(self.labels)))


def _check(seed: int, label: int, raw: bytes) -> int:
    return zlib.crc32(raw, zlib.crc32(label.to_bytes(8, "little", signed=True), seed))


def _nonce_of(name: str) -> bytes:
    return name[len(_PREFIX) : -len(_SUFFIX)].partition("-")[2].encode("ascii", "replace")[:8]


def _write(path: Path, name: str, batches: Iterable[TextBatch]) -> int:
    """Write segment ``name`` at ``path`` (a temp name the caller renames); the row count."""
    nonce = _nonce_of(name)
    seed = zlib.crc32(nonce)
    labels: list[np.ndarray] = []
    lengths: list[np.ndarray] = []  # per batch: content, heading, content, heading... bytes
    checks: list[int] = []
    blob = 0
    with open(path, "wb") as f:
        f.write(bytes(_HEADER.size))  # the header goes in last: a torn file never matches it
        for batch_labels, contents, headings in batches:
            labels.append(np.asarray(batch_labels, dtype=np.int64))
            parts = [text.encode("utf-8") for pair in zip(contents, headings, strict=True)
                     for text in (pair[0], pair[1] or "")]
            checks += [_check(seed, int(label), parts[2 * i] + parts[2 * i + 1])
                       for i, label in enumerate(labels[-1].tolist())]
            f.write(b"".join(parts))
            lengths.append(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
            blob += int(lengths[-1].sum())
        pad = -blob % 8  # the int64 columns stay aligned in the map
        f.write(bytes(pad))
        blob += pad
        rows = sum(len(x) for x in labels)
        all_labels = np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64)
        offsets = np.zeros(2 * rows + 1, dtype=np.int64)
        if rows:
            np.cumsum(np.concatenate(lengths), out=offsets[1:])
        f.write(all_labels.astype("<i8").tobytes())
        f.write(offsets.astype("<i8").tobytes())
        f.write(np.asarray(checks, dtype="<i8").tobytes())
        f.seek(0)
        f.write(_HEADER.pack(_MAGIC, rows, blob, nonce))
    return rows


class TextSegments:
    """The texts of a store's chunks by label: mapped segments, plus what a reader had to
    read from the catalog itself (``remember``) because no segment holds it yet."""

    def __init__(self, folder: Path, *, writable: bool, generation: int) -> None:
        """Map the segments of ``folder`` up to the catalog's ``generation``; a segment
        stamped later than the catalog (a catalog put back from elsewhere) is not used,
        and a writer deletes it."""
        self.folder = folder
        self.writable = writable
        self._segments: list[_Segment] = []  # newest first
        self._memory: dict[int, tuple[str, str]] = {}
        self._memory_generation = -1
        unreadable: list[Path] = []
        if folder.is_dir():
            for entry in folder.iterdir():
                stamped = _generation_of(entry.name)
                if stamped is None:
                    if writable and entry.name.startswith(".") and entry.name.endswith(".tmp"):
                        entry.unlink(missing_ok=True)  # a segment a killed writer left half-written
                    elif writable and entry.name.startswith(_PREFIX) and entry.name.endswith(_OLD_SUFFIX):
                        # An older release's segment: its texts are written again (see above).
                        entry.unlink(missing_ok=True)
                    continue
                if stamped > generation:
                    if writable:
                        entry.unlink(missing_ok=True)
                    continue
                try:
                    segment = _Segment(entry, stamped)
                    if writable and segment.legacy:
                        unreadable.append(entry)  # written again in this layout, below
                    else:
                        self._segments.append(segment)
                except (OSError, ValueError):
                    # unreadable (torn, foreign, of the first layout): its labels read as
                    # missing, from the catalog; a writer starts the segments again, since
                    # only a gap at the newest end is ever filled
                    unreadable.append(entry)
        if writable and any(entry.is_file() for entry in unreadable):
            for segment in self._segments:
                segment.path.unlink(missing_ok=True)
            for entry in unreadable:
                if entry.is_file():
                    entry.unlink(missing_ok=True)
            self._segments = []
        self._segments.sort(key=lambda s: -s.generation)
        self._index()

    def damaged(self) -> list[str]:
        """The segments whose rows fail their check, each with its count (reads them all)."""
        out = []
        for segment in self._segments:
            bad = segment.damaged_rows()
            if bad:
                segment.damaged = True  # reported here: no warning on top
                out.append(f"{segment.path} ({bad} of {len(segment.labels)} rows)")
        return out

    def _index(self) -> None:
        self._firsts = np.array([s.labels[0] if len(s.labels) else 0 for s in self._segments],
                                dtype=np.int64)
        self._lasts = np.array([s.labels[-1] if len(s.labels) else -1 for s in self._segments],
                               dtype=np.int64)

    @property
    def generation(self) -> int:
        """Every chunk committed at or before this generation is held (-1: none is).

        Each segment holds every chunk committed after the previous segment's generation,
        up to its own (see ``ChunkView``), so the newest one tells.
        """
        return max(self._memory_generation, max((s.generation for s in self._segments), default=-1))

    def __len__(self) -> int:
        return len(self._segments)

    @property
    def oldest_generation(self) -> int:
        return min((s.generation for s in self._segments), default=-1)

    def merge_newer(self, batches: Iterable[TextBatch], base: int, generation: int) -> None:
        """Replace every segment newer than ``base`` by one holding ``batches`` (the chunks
        committed after ``base``, read again from the catalog)."""
        merged = [s for s in self._segments if s.generation > base]
        self.add(batches, generation)
        newest = self._segments[0]
        for segment in merged:
            if segment is not newest:
                segment.path.unlink(missing_ok=True)  # mapped elsewhere: Linux keeps it readable
        self._segments = [s for s in self._segments if s is newest or s not in merged]
        if self.folder.is_dir():
            fsync_dir(self.folder)
        self._index()

    def covered(self, labels: np.ndarray) -> np.ndarray:
        """Which of ``labels`` some segment (or the reader's memory) holds."""
        mask = np.zeros(len(labels), dtype=bool)
        for segment in self._segments:
            if len(segment.labels):
                pos = np.clip(np.searchsorted(segment.labels, labels), 0, len(segment.labels) - 1)
                mask |= segment.labels[pos] == labels
        if self._memory:
            mask |= np.fromiter((int(x) in self._memory for x in labels), dtype=bool,
                                count=len(labels))
        return mask

    def get(self, labels: Sequence[int]) -> dict[int, tuple[str, str]]:
        """label -> (content, heading_path) for the labels held."""
        out: dict[int, tuple[str, str]] = {}
        for label in labels:
            label = int(label)
            held = self._memory.get(label)
            if held is not None:
                out[label] = held
                continue
            for i in np.flatnonzero((self._firsts <= label) & (self._lasts >= label)):
                segment = self._segments[int(i)]
                row = int(np.searchsorted(segment.labels, label))
                if row < len(segment.labels) and segment.labels[row] == label:
                    held = segment.text(row)
                    if held is not None:  # else read from the catalog, not an older segment
                        out[label] = held
                    break
        return out

    def add(self, batches: Iterable[TextBatch], generation: int) -> int:
        """Keep texts read from the catalog: a new segment when writable, else in RAM.
        Returns the number of rows kept."""
        if not self.writable:
            rows = 0
            for labels, contents, headings in batches:
                for label, content, heading in zip(labels.tolist(), contents, headings, strict=True):
                    self._memory[int(label)] = (content, heading or "")
                    rows += 1
            self._memory_generation = generation
            return rows
        require_folder(self.folder.parent, self.folder.name).mkdir(parents=True, exist_ok=True)
        name = f"{_PREFIX}{generation:012d}-{secrets.token_hex(4)}{_SUFFIX}"
        tmp = self.folder / f".{name}.tmp"
        try:
            rows = _write(tmp, name, batches)
            if rows == 0:  # nothing new: the next fetch after this generation finds it empty
                tmp.unlink()
                return 0
            fsync_file(tmp)
            os.replace(tmp, self.folder / name)
            fsync_dir(self.folder)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._segments.insert(0, _Segment(self.folder / name, generation))
        self._index()
        return rows


def _generation_of(name: str) -> int | None:
    if not (name.startswith(_PREFIX) and name.endswith(_SUFFIX)):
        return None
    try:
        return int(name[len(_PREFIX):].split("-", 1)[0])
    except ValueError:
        return None
