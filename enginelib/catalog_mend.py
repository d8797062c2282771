"""Mend a catalog block that a killed checkpoint left half-written.

DuckDB (2.0.1) rewrites its metadata blocks *in place* at every checkpoint: a 256 KiB
block holds 64 metadata sub-blocks, the checkpoint puts its new metadata into sub-blocks
that are free, and writes the whole block back over itself before it writes the new file
header. A SIGKILL or a power cut inside that one write leaves the block part new and part
old. The sub-blocks the last durable header points at hold the same bytes in both
versions, so nothing committed is lost, but the block's checksum (its first 8 bytes) no
longer matches its content and DuckDB refuses the whole file: "Corrupt database file:
computed checksum X does not match stored checksum Y in block at location 12288". This is
the failure the kill loop met twice in about 18,000 kills (``benchmarks/torn_metadata.py``
rebuilds it on purpose and measures the mend).

The mend writes the checksum DuckDB itself computed (we recompute it and touch nothing
unless ours equals the one in DuckDB's message, so a changed file format is left alone),
then accepts the file only if DuckDB opens it and reads every row of every table; else
the 8 bytes go back. The bytes it replaced are recorded in ``catalog.mended-<stamp>.json``
beside the catalog, so the change can be undone by hand. A kill at any point is safe: the
record is written (and fsynced) before the file changes, and the next repair finishes or
undoes what the record names.
"""

from __future__ import annotations

import json
import os
import re
import struct
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np

from . import faults
from .catalog import snapshot_advice
from .core import layout
from .durable import fsync_dir, write_atomic
from .errors import CorruptStoreError

PENDING_NAME = ".catalog.mend.pending.json"
RECORD_PREFIX = "catalog.mended-"
NOTHING_TO_MEND = "the catalog opens"
MAX_BLOCKS = 8  # a torn checkpoint leaves one block; more failing blocks is not this failure

# DuckDB's file layout: a 4 KiB main header, two 4 KiB database headers, then blocks.
_FIRST_BLOCK = 3 * 4096
_HEADER_OFFSETS = (4096, 8192)
_CHECKSUM_BYTES = 8
_CHECKSUM_FAILURE = re.compile(
    r"computed checksum (\d+) does not match stored checksum (\d+) in block at location (\d+)")
_MULTIPLIER = np.uint64(0xBF58476D1CE4E5B9)
_SEED = np.uint64(5381)


@dataclass(frozen=True)
class Patch:
    """One block whose stored checksum was replaced."""

    location: int
    stored: int  # what the block held (kept in the record)
    computed: int  # what it holds now

    def to_dict(self) -> dict[str, int]:
        return {"location": self.location, "stored": self.stored, "computed": self.computed}


@dataclass(frozen=True)
class MendReport:
    """What ``mend_torn_blocks`` did. ``mended`` is False when the file still fails (then
    it is byte for byte as it was) and ``reason`` says why."""

    mended: bool
    patches: tuple[Patch, ...]
    record: Path | None
    reason: str

    @property
    def opens(self) -> bool:
        """Whether DuckDB opens the catalog now (mended, or nothing was wrong)."""
        return self.mended or self.reason == NOTHING_TO_MEND


def unmendable_error(root: Path, reason: str) -> CorruptStoreError:
    """The error for a catalog DuckDB refuses that the mend cannot take back."""
    catalog = layout.catalog_path(root)
    return CorruptStoreError(f"the catalog {catalog} is damaged and cannot be mended ({reason}): "
                             f"{snapshot_advice(catalog)}", path=catalog)


def block_checksum(payload: bytes) -> int:
    """DuckDB's block checksum: 5381 xor-folded with each 64-bit word times a constant."""
    if len(payload) % 8:  # DuckDB hashes a tail differently; its blocks never have one
        raise ValueError("block payload is not a whole number of 64-bit words")
    words = np.frombuffer(payload, dtype="<u8")
    with np.errstate(over="ignore"):
        return int(np.bitwise_xor.reduce(words * _MULTIPLIER, initial=np.uint64(0)) ^ _SEED)


def open_failure(path: Path) -> str | None:
    """DuckDB's message when the file fails to open read-only, None when it opens."""
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.Error as exc:
        return str(exc)
    return None


def fails_on_a_checksum(path: Path) -> bool:
    """Whether DuckDB refuses the file on a block checksum (what a torn write leaves)."""
    return _CHECKSUM_FAILURE.search(open_failure(path) or "") is not None


def mend_torn_blocks(root: Path) -> MendReport:
    """Mend the store's catalog if it fails only on block checksums a torn write explains.

    The caller holds the writer lock. Finishes (or undoes) a mend a kill interrupted first.
    """
    path = layout.catalog_path(root)
    finish_pending(root)
    patches: list[Patch] = []
    header = active_header(path)
    failure = open_failure(path)
    while failure is not None:
        found = _CHECKSUM_FAILURE.search(failure)
        if found is None or header is None or len(patches) >= MAX_BLOCKS:
            break
        patch = _patch_for(path, header.block_size, int(found[1]), int(found[2]), int(found[3]))
        if patch is None or any(p.location == patch.location for p in patches):
            break
        patches.append(patch)
        _write_pending(root, patches)
        _write_checksum(path, patch.location, patch.computed)
        faults.crash_point("mend_after_patch")
        failure = open_failure(path)
    if not patches:
        return MendReport(False, (), None, failure or NOTHING_TO_MEND)
    reason = failure or _read_every_row(path)
    if reason:
        undo(path, patches)
        (root / PENDING_NAME).unlink(missing_ok=True)
        fsync_dir(root)
        return MendReport(False, (), None, reason)
    return MendReport(True, tuple(patches), _finish_record(root, patches), "")


def mend_and_warn(root: Path) -> MendReport:
    """``mend_torn_blocks``, with a warning when it mended (a writer's open, a restore)."""
    mended = mend_torn_blocks(root)
    if mended.mended:
        warnings.warn(
            f"enginelib: the catalog {layout.catalog_path(root)} was left half-written by a "
            f"killed checkpoint and is mended, nothing lost (the replaced bytes are recorded "
            f"in {mended.record})", RuntimeWarning, stacklevel=3,
        )
    return mended


def finish_pending(root: Path) -> None:
    """A mend killed half-way: keep it if the file now reads whole, else undo it."""
    pending = root / PENDING_NAME
    if not pending.exists():
        return
    try:
        patches = [Patch(**entry) for entry in json.loads(pending.read_text("utf-8"))["patches"]]
    except (OSError, ValueError, KeyError, TypeError):
        pending.unlink(missing_ok=True)  # written atomically: unreadable means never used
        return
    path = layout.catalog_path(root)
    if open_failure(path) is None and _read_every_row(path) is None:
        _finish_record(root, patches)
        return
    undo(path, patches)
    pending.unlink(missing_ok=True)
    fsync_dir(root)


def undo(path: Path, patches: list[Patch]) -> None:
    """Put back the checksums the patches replaced, last first."""
    for patch in reversed(patches):
        _write_checksum(path, patch.location, patch.stored)


def _patch_for(path: Path, block_size: int, computed: int, stored: int,
               location: int) -> Patch | None:
    """The patch for a failing block, or None unless the block is where DuckDB's blocks lie
    and our checksum of its content equals the one DuckDB computed."""
    size = path.stat().st_size
    if location < _FIRST_BLOCK or (location - _FIRST_BLOCK) % block_size or location + block_size > size:
        return None
    with open(path, "rb") as handle:
        handle.seek(location)
        block = handle.read(block_size)
    if len(block) != block_size or struct.unpack_from("<Q", block)[0] != stored:
        return None
    if block_checksum(block[_CHECKSUM_BYTES:]) != computed:
        return None  # not the layout we know (an encrypted file, a newer format)
    return Patch(location=location, stored=stored, computed=computed)


@dataclass(frozen=True)
class FileHeader:
    """The database header DuckDB opens a file with: the valid one of its two, newer first."""

    iteration: int
    block_size: int
    metadata_location: int  # byte offset of the block holding the first metadata


def active_header(path: Path) -> FileHeader | None:
    """The header a DuckDB open would use, or None when neither is valid."""
    best: FileHeader | None = None
    with open(path, "rb") as handle:
        for offset in _HEADER_OFFSETS:
            handle.seek(offset)
            header = handle.read(4096)
            if len(header) < 4096:
                return None
            checksum, iteration, meta_pointer = struct.unpack_from("<QQQ", header)
            block_size = struct.unpack_from("<Q", header, 40)[0]
            if checksum != block_checksum(header[_CHECKSUM_BYTES:]) or block_size < 4096 or block_size % 4096:
                continue
            if best is None or iteration > best.iteration:
                block_id = meta_pointer & ((1 << 56) - 1)  # the top byte names the sub-block
                best = FileHeader(iteration, block_size, _FIRST_BLOCK + block_id * block_size)
    return best


def _write_checksum(path: Path, location: int, value: int) -> None:
    # 8 bytes inside one page: a kill cannot tear them
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, struct.pack("<Q", value), location)
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_every_row(path: Path) -> str | None:
    """None when DuckDB reads every row of every table of the file (with its WAL replayed),
    else what failed: a checksum that matches over garbage fails here."""
    try:
        con = duckdb.connect(str(path), read_only=True)
        try:
            tables = [row[0] for row in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()]
            for table in tables:
                con.execute("SELECT count(*), sum(hash(t)) FROM query_table(?) AS t",
                            [table]).fetchall()
        finally:
            con.close()
    except duckdb.Error as exc:
        return f"the mended file does not read whole: {exc}"
    return None


def _write_pending(root: Path, patches: list[Patch]) -> None:
    write_atomic(root / PENDING_NAME, json.dumps(
        {"patches": [p.to_dict() for p in patches]}, indent=1).encode("utf-8"))


def _finish_record(root: Path, patches: list[Patch]) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    record = root / f"{RECORD_PREFIX}{stamp}.json"
    write_atomic(record, json.dumps({
        "what": "DuckDB block checksums rewritten after a checkpoint was killed mid-write; "
                "'stored' is what each block held before (write it back at 'location' to undo)",
        "catalog": layout.CATALOG_NAME,
        "patches": [p.to_dict() for p in patches],
    }, indent=1).encode("utf-8"))
    (root / PENDING_NAME).unlink(missing_ok=True)
    fsync_dir(root)
    return record
