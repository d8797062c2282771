"""Chunk texts in memory-mapped Arrow files beside the catalog, read per hit without DuckDB.

A search shows the text of a few dozen chunks. Holding every text in RAM makes a store's
memory grow with its corpus; reading them from DuckDB per search means opening the catalog
file per search (tens of milliseconds, and it keeps a writer process out meanwhile). So the
texts are also written, once, to append-only segment files that every process maps::

    <store>/texts/seg-<generation>-<nonce>.arrow   Arrow IPC: label, content, heading_path

A segment holds the chunks a commit added, sorted by label; the newest segment holding a
label wins (a restore may give a label back). Segments are derived, like the indexes: a
missing one (a crash between the catalog commit and its segment) is written again from the
catalog by the next writable open, and a reader fills the gap from the catalog into RAM.
A label deleted from the catalog stays in its segment, unread, until a rewrite.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from .durable import fsync_dir, fsync_file

FOLDER = "texts"
_PREFIX = "seg-"
# Past this many segments a writer merges all but the oldest into one (each segment is an
# open memory map, and a lookup looks at every segment whose label range holds the label).
MAX_SEGMENTS = 32
SCHEMA = pa.schema([("label", pa.int64()), ("content", pa.string()), ("heading_path", pa.string())])


class _Segment:
    def __init__(self, path: Path, generation: int) -> None:
        self.path = path
        self.generation = generation
        # Memory-mapped: the texts are paged in when read, never loaded whole.
        table = ipc.open_file(pa.memory_map(str(path), "r")).read_all()
        self.labels = np.asarray(table.column("label").to_numpy(), dtype=np.int64)
        # Per record batch (no combine: that would copy the mapped texts into RAM).
        self.contents = table.column("content").chunks
        self.headings = table.column("heading_path").chunks
        self.starts = np.cumsum([0] + [len(c) for c in self.contents])[:-1]

    def text(self, row: int) -> tuple[str, str]:
        batch = int(np.searchsorted(self.starts, row, side="right")) - 1
        at = row - int(self.starts[batch])
        return self.contents[batch][at].as_py(), self.headings[batch][at].as_py() or ""


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
        if folder.is_dir():
            for entry in folder.iterdir():
                stamped = _generation_of(entry.name)
                if stamped is None:
                    if writable and entry.name.startswith(".") and entry.name.endswith(".tmp"):
                        entry.unlink(missing_ok=True)  # a segment a killed writer left half-written
                    continue
                if stamped > generation:
                    if writable:
                        entry.unlink(missing_ok=True)
                    continue
                try:
                    self._segments.append(_Segment(entry, stamped))
                except (OSError, pa.ArrowInvalid):
                    continue  # unreadable: its labels read as missing and are written again
        self._segments.sort(key=lambda s: -s.generation)
        self._index()

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

    def merge_newer(self, batches: Iterable[pa.RecordBatch], base: int, generation: int) -> None:
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
                    out[label] = segment.text(row)
                    break
        return out

    def add(self, batches: Iterable[pa.RecordBatch], generation: int) -> int:
        """Keep texts read from the catalog: a new segment when writable, else in RAM.
        Returns the number of rows kept."""
        if not self.writable:
            rows = 0
            for batch in batches:
                for label, content, heading in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                                   batch.column(2).to_pylist(), strict=True):
                    self._memory[int(label)] = (content, heading or "")
                    rows += 1
            self._memory_generation = generation
            return rows
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{_PREFIX}{generation:012d}-{secrets.token_hex(4)}.arrow"
        tmp = self.folder / f".{name}.tmp"
        rows = 0
        try:
            with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, SCHEMA) as writer:
                for batch in batches:
                    writer.write_batch(pa.RecordBatch.from_arrays(
                        [batch.column(0).cast(pa.int64()), batch.column(1).cast(pa.string()),
                         batch.column(2).cast(pa.string())], schema=SCHEMA))
                    rows += batch.num_rows
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
    if not (name.startswith(_PREFIX) and name.endswith(".arrow")):
        return None
    try:
        return int(name[len(_PREFIX):].split("-", 1)[0])
    except ValueError:
        return None
