"""Damaged snapshot files: every answer from a snapshot is right or a typed error naming the
snapshot, the file and the way out; `check` names every damaged file; a restore never starts
from a snapshot it cannot trust.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib import maintenance
from enginelib.cli.main import main
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


def _as_taken_before_file_sums(folder: Path) -> None:
    info_path = folder / "snapshot.json"
    info = json.loads(info_path.read_text())
    for key in ("file_sum64", "info_crc32"):
        del info[key]
    info_path.write_text(json.dumps(info))


def test_check_does_not_send_snapshot_damage_to_repair(tmp_path: Path) -> None:
    # its last line said "run `enginelib repair`", which never touches a snapshot: check
    # kept failing after it
    path = tmp_path / "s"
    _store_with_snapshot(path)
    _zero_middle(_rows_file(path))
    result = CliRunner().invoke(main, ["check", "--store", str(path)])
    assert result.exit_code == 1, result.output
    assert "snapshot 'before' vector index" in result.output
    assert "all in snapshots" in result.output and "enginelib repair" not in result.output


def test_a_snapshot_from_before_per_file_checksums_opens_and_checks_as_before(
        tmp_path: Path) -> None:
    path = tmp_path / "s"
    expected = _store_with_snapshot(path)
    _as_taken_before_file_sums(path / "snapshots" / "before")

    report = maintenance.check(path)
    assert report.ok, report.problems
    assert report.facts["snapshots_not_checksummed"] == ["before"]
    with enginelib.open(path, snapshot="before") as snap:
        assert _hits(snap) == expected


@pytest.mark.parametrize("target", ["rows", "fieldnorm"])
def test_damaged_index_files_of_a_snapshot_without_file_sums_never_rank(
        tmp_path: Path, target: str) -> None:
    # such a snapshot (taken by the previous release) ranked with zeroed vector rows, or with
    # a Tantivy segment whose first bytes were flipped (its footer still matched), and check
    # called it healthy
    path = tmp_path / "s"
    expected = _store_with_snapshot(path)
    folder = path / "snapshots" / "before"
    _as_taken_before_file_sums(folder)
    if target == "rows":
        _zero_middle(_rows_file(path))
    else:
        (segment,) = (folder / "indexes" / "text" / "tantivy").glob("*.fieldnorm")
        data = bytearray(segment.read_bytes())
        for at in range(8):
            data[at] ^= 0x5A
        segment.write_bytes(bytes(data))

    kind = "vector" if target == "rows" else "text"
    problems = maintenance.check(path).problems
    assert any(f"snapshot 'before' {kind} index" in p for p in problems), problems
    with pytest.warns(RuntimeWarning, match=f"snapshot 'before'.*{kind} index is rebuilt"):
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


# -- the matrix: every kind of file a snapshot holds x the ways a disk or a hand damages it ----

# One file per role (segment files differ only by extension; the rows file and the generation
# folder are named by a nonce): the glob under the snapshot folder picks it.
SNAPSHOT_FILES = (
    "snapshot.json", "manifest.json", "tables/chunks.parquet", "tables/documents.parquet",
    "tables/meta.parquet", "tables/acronyms.parquet", "indexes/vectors/stamp.json",
    "indexes/vectors/rows-*.f32", "indexes/vectors/gen-*/vectors.hnsw",
    "indexes/vectors/gen-*/labels.npy", "indexes/text/stamp.json",
    "indexes/text/tantivy/meta.json", "indexes/text/tantivy/.managed.json",
    "indexes/text/tantivy/*.term", "indexes/text/tantivy/*.idx",
    "indexes/text/tantivy/*.fieldnorm",
)
DAMAGES = ("truncated", "zeroed", "flipped", "deleted", "folder", "other-store")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[tuple[str, int, str]]]:
    """(a store with snapshot "before", another store's, the snapshot's hits), built once."""
    base = tmp_path_factory.mktemp("pristine")
    expected = _store_with_snapshot(base / "s")
    _store_with_snapshot(base / "other", "tyres")
    return base / "s", base / "other", expected


def _one(folder: Path, pattern: str) -> Path:
    return max(folder.glob(pattern), key=lambda p: p.stat().st_size)


def _damage(target: Path, how: str, twin: Path) -> None:
    data = target.read_bytes()
    if how == "truncated":
        target.write_bytes(data[: len(data) // 2])
    elif how == "zeroed":
        target.write_bytes(bytes(len(data)))
    elif how == "flipped":
        middle = len(data) // 2
        target.write_bytes(data[:middle] + bytes(b ^ 0x5A for b in data[middle:middle + 8])
                           + data[middle + 8:])
    elif how == "deleted":
        target.unlink()
    elif how == "folder":
        target.unlink()
        target.mkdir()
    else:
        shutil.copyfile(twin, target)


def _live_documents(path: Path) -> list[dict[str, object]]:
    with enginelib.open(path, read_only=True) as reader:
        return sorted(reader._catalog.list_documents(), key=lambda d: str(d["document_id"]))


@pytest.mark.slow
@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("pattern", SNAPSHOT_FILES)
def test_every_damaged_snapshot_file_is_named_and_never_answers_wrongly(
        tmp_path: Path, pristine: tuple[Path, Path, list[tuple[str, int, str]]],
        pattern: str, how: str) -> None:
    source, other, expected = pristine
    path = tmp_path / "s"
    shutil.copytree(source, path)
    folder = path / "snapshots" / "before"
    target = _one(folder, pattern)
    twin = _one(other / "snapshots" / "before", pattern)
    # the other store may have written the same bytes (an empty table): then nothing is damaged
    harmless = how == "other-store" and twin.read_bytes() == target.read_bytes()
    _damage(target, how, twin)

    problems = [p for p in maintenance.check(path).problems if "'before'" in p]
    if harmless:
        assert not problems, problems
        with enginelib.open(path, snapshot="before") as snap:
            assert _hits(snap) == expected
        return
    table = target.stem if target.parent.name == "tables" else None
    # another snapshot's sound snapshot.json names other sums: its files are blamed instead
    blamed_elsewhere = target.name == "snapshot.json" and how == "other-store"
    assert problems and (blamed_elsewhere or any(
        target.name in p or (table and f"['{table}']" in p) for p in problems)), problems

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an index rebuilt from the tables
        try:
            with enginelib.open(path, snapshot="before") as snap:
                assert _hits(snap) == expected
        except enginelib.DamagedSnapshotError as exc:
            assert "'before'" in str(exc) and "snapshot delete before" in str(exc), str(exc)

    live = _live_documents(path)
    with open_test_store(path) as store:
        try:
            store.restore_snapshot("before")
        except enginelib.DamagedSnapshotError:
            restored = False
        else:
            restored = True
            assert _hits(store) == expected
    if not restored:  # refused before it changed anything
        assert _live_documents(path) == live


@pytest.mark.parametrize("how", ["truncated", "deleted", "folder"])
def test_a_restore_names_the_damaged_manifest_of_a_snapshot_without_file_sums(
        tmp_path: Path, how: str) -> None:
    # the restore answered with the live manifest's advice ("put it back from a copy"), "was
    # built with ? and other chunking", or "cannot read ...: Is a directory"
    path = tmp_path / "s"
    _store_with_snapshot(path)
    folder = path / "snapshots" / "before"
    _as_taken_before_file_sums(folder)
    _damage(folder / "manifest.json", how, folder / "manifest.json")
    live = _live_documents(path)
    with open_test_store(path) as store:
        with pytest.raises(enginelib.DamagedSnapshotError,
                           match="'before' is damaged.*manifest.json.*snapshot delete before"):
            store.restore_snapshot("before")
    assert _live_documents(path) == live
