"""Snapshots under careless or hostile use: versions a restore must keep, diffs that must
not hide a change, snapshot folders damaged by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib import HashingEmbedder, Store
from enginelib.cli.main import main
from enginelib.errors import InvalidInputError, SnapshotError
from tests.helpers import doc, open_test_store, paragraphs


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(2, "brakes")), doc("b", paragraphs(2, "tyres"))])
    yield store
    store.close()


def test_restore_keeps_a_live_version_whose_text_the_snapshot_shares(store: Store) -> None:
    # the live 1.0.1 (truth level L1) had the snapshot's text: the restore gave the document
    # a new number without archiving it, so it vanished
    store.create_snapshot("s0")
    store.update_document("a", truth_level="L1")
    store.delete_document("b")
    store.ingest_documents([doc("b", paragraphs(2, "tyres"))])
    before = {d: [v["version"] for v in store.history(d)] for d in ("a", "b")}
    assert before == {"a": ["1.0.0", "1.0.1"], "b": ["1.0.0", "1.1.0"]}

    report = store.restore_snapshot("s0")
    assert report.archived == 1
    history = store.history("a")
    after = [v["version"] for v in history]
    assert set(before["a"]) < set(after) and len(after) == len(set(after)), after
    assert history[-2]["change_summary"] == "replaced by restore of snapshot s0"
    assert store.version_text("a", "1.0.1") == paragraphs(2, "brakes")
    assert store.get_document("a")["truth_level"] == "L2"
    # b re-added as it was in s0 is what s0 holds: it stays, under its own number
    assert [v["version"] for v in store.history("b")] == before["b"]
    assert store.get_document("b")["version"] == "1.1.0"


def test_restoring_the_same_snapshot_again_changes_nothing(store: Store) -> None:
    """Each restore of the snapshot already restored archived every document it had renumbered
    before and gave it the next number (1.1.0 archived, 1.2.0; then 1.2.0 archived, 1.3.0)."""
    store.create_snapshot("s0")
    store.update_document("a", truth_level="L1")
    store.restore_snapshot("s0")
    settled = {d: store.history(d) for d in ("a", "b")}
    hits = [(h.document_id, h.chunk_index) for h in store.search("brakes", answerability_threshold=None).hits]
    for _ in range(2):
        report = store.restore_snapshot("s0")
        assert report.archived == 0
        assert {d: store.history(d) for d in ("a", "b")} == settled
        assert [(h.document_id, h.chunk_index) for h in
                store.search("brakes", answerability_threshold=None).hits] == hits
    assert store.get_document("a")["truth_level"] == "L2"
    store.update_document("a", truth_level="L3")  # the next change still numbers after all
    assert store.get_document("a")["version"] > settled["a"][-1]["version"]


def test_diff_shows_a_document_changed_by_update(store: Store) -> None:
    # `update` changes truth level, tags and metadata but not the ingest fingerprint: the
    # diff called the document unchanged
    store.create_snapshot("s0")
    store.update_document("a", truth_level="L1")
    store.update_document("b", tags=["new"])
    diff = store.diff("s0")
    assert [(c.document_id, c.version_a, c.version_b, c.content_changed)
            for c in diff.changed] == [("a", "1.0.0", "1.0.1", False), ("b", "1.0.0", "1.0.1", False)]
    assert diff.unchanged == 0
    store.restore_snapshot("s0")
    after = store.diff("s0")
    assert not (after.added or after.removed or after.changed) and after.unchanged == 2


def _damage(folder: Path, how: str) -> None:
    target = folder / "tables" / "documents.parquet"
    if how == "missing":
        target.unlink()
    elif how == "truncated":
        target.write_bytes(target.read_bytes()[:100])
    else:  # a folder where the file was
        target.unlink()
        target.mkdir()


@pytest.mark.parametrize("how", ["missing", "truncated", "folder"])
def test_a_damaged_snapshot_table_is_named_with_the_way_out(store: Store, how: str) -> None:
    # each command blamed the live catalog ("failed in the catalog (DuckDB) ... run `enginelib
    # check` and `enginelib repair`", and check said healthy) or printed DuckDB's query text
    store.create_snapshot("s0")
    store.create_snapshot("s1")
    store.ingest_documents([doc("c", paragraphs(2, "rotors"))])
    _damage(store.path / "snapshots" / "s0", how)
    path = store.path
    store.close()

    runner = CliRunner()
    for args in (["snapshot", "diff", "s0"], ["snapshot", "diff", "s1", "s0"],
                 ["snapshot", "restore", "s0"], ["search", "--snapshot", "s0", "brakes"]):
        result = runner.invoke(main, [*args, "--store", str(path)])
        assert result.exit_code == 2, result.output
        assert "snapshot 's0' is damaged" in result.output, result.output
        assert "documents.parquet" in result.output and "snapshot delete s0" in result.output
        assert "DuckDB" not in result.output and "LINE 1" not in result.output, result.output
    with pytest.raises(SnapshotError, match="is damaged"):
        enginelib.open(path, snapshot="s0", embedder=HashingEmbedder(64))

    reopened = open_test_store(path)  # the live store is untouched, and the way out works
    try:
        assert {d["document_id"] for d in reopened._catalog.list_documents()} == {"a", "b", "c"}
        reopened.delete_snapshot("s0")
        assert reopened.restore_snapshot("s1").documents == 2
    finally:
        reopened.close()


def test_check_names_a_snapshot_table_cut_short(store: Store) -> None:
    # a truncated table passed `check` ("healthy") while restore and search failed on it
    store.create_snapshot("s0")
    _damage(store.path / "snapshots" / "s0", "truncated")
    problems = store.check().problems
    assert problems == ("snapshot 's0' is damaged: tables/documents.parquet is not a readable "
                        "Parquet file (cut short or overwritten): delete it",)


def test_check_accepts_a_snapshot_older_than_the_acronyms_table(store: Store) -> None:
    # such a snapshot loads and restores, but check called it a problem: "lacks
    # ['acronyms']: delete it"
    store.create_snapshot("old")
    folder = store.path / "snapshots" / "old"
    (folder / "tables" / "acronyms.parquet").unlink()
    info = json.loads((folder / "snapshot.json").read_text())
    for key in ("file_sum64", "info_crc32"):  # as written then: before the per-file sums
        del info[key]
    (folder / "snapshot.json").write_text(json.dumps(info))
    assert store.check().ok, store.check().problems
    assert store.restore_snapshot("old").documents == 2
    assert store.check().ok


def test_a_snapshot_cannot_take_the_name_of_the_retention_file(tmp_path: Path) -> None:
    # as the first snapshot, "settings.json" became a folder where the retention setting is
    # written: the create failed with a bare IsADirectoryError and every later snapshot
    # command failed ("cannot read .../settings.json") while check called the store healthy
    store = open_test_store(tmp_path / "s")
    try:
        store.ingest_documents([doc("a", paragraphs(2, "brakes"))])
        with pytest.raises(InvalidInputError, match="settings.json"):
            store.create_snapshot("settings.json")
        assert store.create_snapshot("next").name == "next"
        assert [s.name for s in store.list_snapshots()] == ["next"]
    finally:
        store.close()
    result = CliRunner().invoke(main, ["snapshot", "create", "settings.json", "--store",
                                       str(tmp_path / "s")])
    assert result.exit_code == 2 and "is not allowed" in result.output, result.output


@pytest.mark.parametrize("how", ["missing", "folder"])
def test_a_snapshot_folder_without_its_snapshot_json_can_be_deleted_and_its_name_reused(
        store: Store, how: str) -> None:
    # check said "delete it", but `snapshot delete` answered "no snapshot 'half'" and a new
    # snapshot of that name "already exists": the name was lost for good
    store.create_snapshot("half")
    info = store.path / "snapshots" / "half" / "snapshot.json"
    info.unlink()
    if how == "folder":
        info.mkdir()
    assert any("'half'" in p and "delete it" in p for p in store.check().problems)
    with pytest.raises(SnapshotError, match="snapshot delete half"):
        store.create_snapshot("half")
    path = store.path
    store.close()
    with pytest.raises(SnapshotError, match="'half' is damaged.*snapshot delete half"):
        enginelib.open(path, snapshot="half", embedder=HashingEmbedder(64))

    result = CliRunner().invoke(main, ["snapshot", "delete", "half", "--store", str(path)])
    assert result.exit_code == 0, result.output
    reopened = open_test_store(path)
    try:
        assert reopened.create_snapshot("half").documents == 2
        assert reopened.check().ok
    finally:
        reopened.close()


def test_a_retention_write_killed_before_its_rename_leaves_nothing_behind(store: Store) -> None:
    # the temp file of settings.json's atomic write stayed in snapshots/ for good: the
    # leftovers sweep of the next create only knew folders
    store.create_snapshot("s0")
    base = store.path / "snapshots"
    (base / ".settings.json.k1ll3d.tmp").write_text('{"keep": 3, "pin')
    store.create_snapshot("s1")
    assert sorted(p.name for p in base.iterdir()) == ["s0", "s1", "settings.json"]


_FULL_DISK_CHILD = """
import json, resource, signal, sys
from pathlib import Path
import enginelib
from enginelib import HashingEmbedder
from enginelib.memory_store import open_memory
store_path, limit, op = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
store = (enginelib.open(store_path, embedder=HashingEmbedder(64)) if op == "snapshot"
         else open_memory(records=[{"id": "m", "text": open(sys.argv[4]).read()}],
                          embedder=HashingEmbedder(64)))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    store.create_snapshot("full") if op == "snapshot" else store.save(store_path)
    outcome = {"raised": None}
except BaseException as exc:
    outcome = {"raised": f"{type(exc).__module__}.{type(exc).__name__}", "message": str(exc)}
print(json.dumps(outcome))
"""


@pytest.mark.parametrize("op", ["snapshot", "save"])
def test_a_disk_that_fills_while_index_files_are_copied_is_a_disk_full_error(
        tmp_path: Path, op: str) -> None:
    # the copy of the index files (shutil.copytree) gathered the file's EFBIG/ENOSPC into a
    # shutil.Error of strings: create_snapshot and an in-memory store's save raised it raw
    import subprocess
    import sys

    from tests.test_snapshots import REPO

    text = paragraphs(60, "brakes")
    source = tmp_path / "text.txt"
    source.write_text(text)
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc(f"d{i}", paragraphs(20, f"topic{i}")) for i in range(4)])
    probe = store.create_snapshot("probe").name
    files = {p: p.stat().st_size for p in (store.path / "snapshots" / probe).rglob("*")
             if p.is_file()}
    store.delete_snapshot(probe)
    store.close()
    tables = max(size for path, size in files.items() if path.suffix == ".parquet")
    indexes = max(size for path, size in files.items() if "indexes" in path.parts)
    assert tables < indexes  # the limit lets the tables be written, not the index copy
    limit = (tables + indexes) // 2
    target = tmp_path / ("s" if op == "snapshot" else "saved")
    run = subprocess.run([sys.executable, "-c", _FULL_DISK_CHILD, str(target), str(limit), op,
                          str(source)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout.splitlines()[-1])
    assert outcome["raised"] == "enginelib.errors.DiskFullError", outcome
    assert "free some space" in outcome["message"]
    if op == "snapshot":
        assert sorted(p.name for p in (tmp_path / "s" / "snapshots").iterdir()) == ["settings.json"]
        reopened = open_test_store(tmp_path / "s")
        try:
            assert reopened.check().ok
            assert reopened.create_snapshot("after").documents == 4
        finally:
            reopened.close()
    else:
        assert not target.exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".saved")] == []


def test_a_pinned_snapshot_that_lost_its_snapshot_json_can_be_deleted(store: Store) -> None:
    # delete said "pinned: unpin it first", the unpin said "damaged: delete it": no command
    # got rid of it, and its name stayed taken
    store.create_snapshot("kept", pin=True)
    store.create_snapshot("other", pin=True)
    (store.path / "snapshots" / "kept" / "snapshot.json").unlink()
    assert any("'kept'" in problem and "delete it" in problem for problem in store.check().problems)
    store.delete_snapshot("kept")
    assert not (store.path / "snapshots" / "kept").exists()
    assert [(s.name, s.pinned) for s in store.list_snapshots()] == [("other", True)]
    assert store.create_snapshot("kept").pinned is False
    assert [(s.name, s.pinned) for s in store.list_snapshots()] == [("other", True), ("kept", False)]
    with pytest.raises(SnapshotError, match="unpin it first"):  # a sound pinned one still is
        store.delete_snapshot("other")
    assert store.check().ok


def test_a_new_snapshot_does_not_inherit_the_pin_of_a_removed_one(store: Store) -> None:
    # settings.json kept the pin of a pinned snapshot whose folder is gone: a new snapshot of
    # that name was pinned by it, while create_snapshot returned pinned=False
    import shutil

    store.create_snapshot("weekly", pin=True)
    shutil.rmtree(store.path / "snapshots" / "weekly")
    made = store.create_snapshot("weekly")
    assert made.pinned is False
    assert [(s.name, s.pinned) for s in store.list_snapshots()] == [("weekly", False)]
    store.delete_snapshot("weekly")  # not refused as pinned
    assert store.create_snapshot("weekly", pin=True).pinned is True
    assert [(s.name, s.pinned) for s in store.list_snapshots()] == [("weekly", True)]


@pytest.mark.parametrize("damage", ["cut short", "out of range", "a folder"])
def test_check_names_a_retention_file_that_every_snapshot_command_fails_on(
        tmp_path: Path, damage: str) -> None:
    # check said healthy (for a folder: "snapshot 'settings.json' ...: delete it", a name
    # snapshot delete refuses) while list, create, pin and delete all failed on the file
    from enginelib import maintenance, snapshots

    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(2, "brakes"))])
    store.create_snapshot("s0")
    store.close()
    settings = tmp_path / "s" / "snapshots" / "settings.json"
    if damage == "a folder":
        settings.unlink()
        settings.mkdir()
    else:
        settings.write_text('{"keep": 3, "pin' if damage == "cut short" else '{"keep": 0}')
    with pytest.raises(SnapshotError) as refused:
        snapshots.list_snapshots(tmp_path / "s")
    report = maintenance.check(tmp_path / "s")
    assert report.problems == (f"snapshots: {refused.value}",)
    assert report.facts["snapshot_problems"] == 1  # the CLI says: all in snapshots, not repair
    assert "settings.json" in report.problems[0] and "delete it" in report.problems[0]
    settings.rmdir() if settings.is_dir() else settings.unlink()
    assert maintenance.check(tmp_path / "s").ok


@pytest.mark.parametrize("where", ["manifest", "snapshot_json"])
def test_a_snapshot_of_a_newer_format_is_not_called_damaged(store: Store, where: str) -> None:
    """A snapshot whose manifest.json a newer enginelib wrote (format_version 99) was
    "damaged ...: delete it" from open, restore and check; one whose snapshot.json says a newer
    format was read as if it were this one's."""
    from enginelib import snapshot_files as sf
    from enginelib.errors import DamagedSnapshotError, IncompatibleStoreError

    store.create_snapshot("new")
    folder = store.path / "snapshots" / "new"
    info = json.loads((folder / "snapshot.json").read_text(encoding="utf-8"))
    info.pop("info_crc32")
    if where == "manifest":
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        (folder / "manifest.json").write_text(json.dumps({**manifest, "format_version": 99}),
                                              encoding="utf-8")
        info["file_sum64"] = sf.record(folder)  # sealed as the newer release would
    else:
        info["format"] = 2
    (folder / "snapshot.json").write_text(json.dumps(sf.seal(info)), encoding="utf-8")

    for attempt in (lambda: store.restore_snapshot("new"),
                    lambda: enginelib.open(store.path, snapshot="new")):
        with pytest.raises(IncompatibleStoreError) as caught:
            attempt()
        assert not isinstance(caught.value, DamagedSnapshotError)
        assert "newer enginelib" in str(caught.value) and "upgrade" in str(caught.value)
        assert "delete" not in str(caught.value)
    problems = store.check().problems
    assert len(problems) == 1 and "newer enginelib" in problems[0], problems
    assert "delete" not in problems[0]
    result = CliRunner().invoke(main, ["search", "brakes", "--snapshot", "new",
                                       "--store", str(store.path)])
    assert result.exit_code != 0 and "newer enginelib" in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert [s.name for s in store.list_snapshots()] == ["new"]


def test_an_automatic_name_past_the_name_limit_is_refused_before_anything_is_written(
        store: Store) -> None:
    # a snapshot named by hand 2026.11.<92 nines> (100 characters, allowed) made the next
    # unnamed create write 2026.11.1000...0 (101): the create then failed on its own name,
    # and show, delete, restore and open refused that snapshot as "not allowed" for good
    from enginelib import snapshots

    month = snapshots.next_name(store.path).rsplit(".", 1)[0]
    longest = f"{month}.{'9' * (100 - len(month) - 1)}"
    store.create_snapshot(longest)
    with pytest.raises(SnapshotError, match="give this snapshot a name"):
        store.create_snapshot()
    assert [s.name for s in store.list_snapshots()] == [longest]
    assert sorted(p.name for p in (store.path / "snapshots").iterdir()) == [
        longest, "settings.json"]
    assert store.create_snapshot("named").documents == 2
    assert store.check().ok


def test_a_snapshot_from_before_a_reindex_names_what_differs_and_the_reindex_that_restores_it(
        store: Store) -> None:
    # the refusal said "built with hashing-64 (64 dims) and other chunking or model than the
    # live store (hashing-64, 64 dims)" after a reindex that changed only the chunking: it named
    # no difference, and no way to restore the snapshot
    import re
    import shlex

    store.create_snapshot("before")
    store.reindex(embedder=HashingEmbedder(32),
                  chunking=enginelib.ChunkingConfig(max_tokens=40, overlap_tokens=4,
                                                    min_tokens=10))
    with pytest.raises(SnapshotError) as caught:
        store.restore_snapshot("before")
    said = str(caught.value)
    assert "hashing-64 (64 dims) where the live store has hashing-32 (32 dims)" in said, said
    assert "max_tokens 60 (live 40)" in said and "overlap_tokens 6 (live 4)" in said, said
    command = re.search(r"`enginelib (reindex [^`]+)`", said)
    assert command is not None, said
    path = store.path
    store.close()
    done = CliRunner().invoke(main, shlex.split(command.group(1)) + ["--no-progress"])
    assert done.exit_code == 0, done.output
    restored = CliRunner().invoke(main, ["snapshot", "restore", "before", "--store", str(path)])
    assert restored.exit_code == 0, restored.output
    with open_test_store(path) as again:
        assert again.check().ok and again.stats()["documents"] == 2


def test_check_names_a_file_or_a_dangling_link_under_a_snapshot_name(store: Store) -> None:
    # every snapshot command called such an entry a damaged snapshot and said to delete it, a
    # create of its name was refused, yet `check` (which skipped all but folders) said healthy
    store.create_snapshot("good")
    base = store.path / "snapshots"
    (base / "copied").write_text("not a snapshot", encoding="utf-8")
    (base / "archived").symlink_to(store.path.parent / "unmounted" / "archived")
    problems = store.check().problems
    assert problems == (
        "snapshot 'archived' is a link to "
        f"{store.path.parent / 'unmounted' / 'archived'}, which is not a folder there (a drive "
        "not mounted?): mount it, or delete it",
        "snapshot 'copied' is a file, not a snapshot folder: delete it"), problems
    path = str(store.path)
    store.close()
    result = CliRunner().invoke(main, ["check", "--store", path])
    assert result.exit_code == 1 and "'copied' is a file" in result.output, result.output
    for name in ("copied", "archived"):
        deleted = CliRunner().invoke(main, ["snapshot", "delete", name, "--store", path])
        assert deleted.exit_code == 0, deleted.output
    assert CliRunner().invoke(main, ["check", "--store", path]).exit_code == 0
    assert sorted(p.name for p in base.iterdir()) == ["good", "settings.json"]
