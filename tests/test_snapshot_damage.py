"""Damaged snapshot files: every answer from a snapshot is right or a typed error naming the
snapshot, the file and the way out; `check` names every damaged file; a restore never starts
from a snapshot it cannot trust.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import enginelib
from enginelib import maintenance
from tests.helpers import doc, open_test_store, paragraphs
from tests.test_store_damage import _hits, _make


def _store_with_snapshot(path: Path, topic: str = "brakes") -> list[tuple[str, int, str]]:
    """A store with snapshot "before" and a later document; the snapshot's hits."""
    _make(path, topic)
    with open_test_store(path) as store:
        store.create_snapshot("before")
        store.ingest_documents([doc("later", paragraphs(3, "rotors"))])
    with enginelib.open(path, snapshot="before") as snap:
        return _hits(snap)


def _rows_file(path: Path) -> Path:
    (rows,) = (path / "snapshots" / "before" / "indexes" / "vectors").glob("rows-*.f32")
    return rows


def _zero_middle(target: Path) -> None:
    data = bytearray(target.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    target.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["zeroed", "other"])
def test_a_damaged_snapshot_vector_rows_file_is_named_and_never_ranks(tmp_path: Path,
                                                                     damage: str) -> None:
    # the rows file had no checksum: `check` called the store healthy while the snapshot's
    # vector scores came from zeroed (or another store's) rows
    path = tmp_path / "s"
    expected = _store_with_snapshot(path)
    rows = _rows_file(path)
    if damage == "zeroed":
        _zero_middle(rows)
    else:
        _store_with_snapshot(tmp_path / "other", "tyres")
        shutil.copyfile(_rows_file(tmp_path / "other"), rows)

    problems = maintenance.check(path).problems
    assert any("snapshot 'before' vector index" in p and rows.name in p and "delete it" in p
               for p in problems), problems
    with pytest.warns(RuntimeWarning, match=f"snapshot 'before'.*{rows.name}.*rebuilt"):
        with enginelib.open(path, snapshot="before") as snap:
            assert _hits(snap) == expected
    with open_test_store(path) as store:  # a restore reads the tables, which are sound
        store.restore_snapshot("before")
        assert _hits(store) == expected


def test_a_snapshot_from_before_per_file_checksums_opens_and_checks_as_before(
        tmp_path: Path) -> None:
    path = tmp_path / "s"
    expected = _store_with_snapshot(path)
    info_path = path / "snapshots" / "before" / "snapshot.json"
    info = json.loads(info_path.read_text())
    for key in ("file_sum64", "info_crc32"):
        del info[key]
    info_path.write_text(json.dumps(info))

    report = maintenance.check(path)
    assert report.ok, report.problems
    assert report.facts["snapshots_not_checksummed"] == ["before"]
    with enginelib.open(path, snapshot="before") as snap:
        assert _hits(snap) == expected


def test_a_damaged_index_stamp_does_not_hide_a_damaged_table_from_check(tmp_path: Path) -> None:
    # a stamp that was not JSON made check call the whole snapshot "unreadable (Expecting
    # value: line 6 column 10 (char 117))" and skip its other files: a table replaced
    # beside it went unreported
    path = tmp_path / "s"
    _store_with_snapshot(path)
    folder = path / "snapshots" / "before"
    stamp = folder / "indexes" / "vectors" / "stamp.json"
    stamp.write_bytes(stamp.read_bytes()[:100])
    _zero_middle(folder / "tables" / "chunks.parquet")

    problems = maintenance.check(path).problems
    assert any("snapshot 'before' is damaged: tables/chunks.parquet" in p for p in problems), problems
    assert any("snapshot 'before' vector index" in p and "stamp.json" in p for p in problems), problems
    assert not any("unreadable" in p for p in problems), problems


def test_a_snapshot_is_not_taken_of_damaged_live_index_files(tmp_path: Path) -> None:
    # the zeroed live rows were copied into the snapshot and sealed by its checksums: once
    # `repair` mended the live store, check called everything healthy while the snapshot
    # kept the wrong vectors for good
    path = tmp_path / "s"
    _make(path)
    (rows,) = (path / "indexes" / "vectors").glob("rows-*.f32")
    _zero_middle(rows)
    with open_test_store(path) as store:
        with pytest.raises(enginelib.IntegrityError, match="enginelib repair"):
            store.create_snapshot("sealed")
        assert store.list_snapshots() == []
        assert store.repair().ok
        store.create_snapshot("sealed")
    assert maintenance.check(path).ok
