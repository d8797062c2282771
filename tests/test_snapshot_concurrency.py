"""Snapshots while other processes work on the same store: what a command reports must be
what it did, not what it saw change around it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import enginelib
from enginelib import HashingEmbedder
from tests.helpers import doc, open_test_store, paragraphs

REPO = Path(__file__).resolve().parents[1]
# The real CLI in a fresh interpreter; filelock's debug log tells the test when it waits for
# the writer lock (every step before that is done).
_CLI_WAITING = """
import logging, sys
handler = logging.StreamHandler(sys.stderr)
logging.getLogger("filelock").addHandler(handler)
logging.getLogger("filelock").setLevel(logging.DEBUG)
from enginelib.cli.main import main
sys.argv[0] = "enginelib"
main()
"""


def _start_cli_and_wait_for_the_lock(*args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", _CLI_WAITING, *args], cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stderr is not None
    for line in process.stderr:
        if "not acquired" in line:
            return process
    process.wait()
    raise AssertionError(f"the CLI ended without waiting for the lock: {process.returncode}")


def test_create_reports_only_what_its_own_retention_removed(tmp_path: Path) -> None:
    """`snapshot create` compared the listings before and after: a snapshot another process
    deleted while the create waited for the writer lock was reported as "removed by
    retention" (and in --json's removed_by_retention), though retention kept it."""
    store = open_test_store(tmp_path / "s")
    try:
        store.ingest_documents([doc("a", paragraphs(2))])
        store.create_snapshot("other")
        process = _start_cli_and_wait_for_the_lock(
            "--wait", "600", "snapshot", "create", "mine", "--json", "--store", str(store.path))
        store.delete_snapshot("other")  # this process held the lock: the CLI waited
    finally:
        store.close()
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    data = json.loads(out)
    assert data["name"] == "mine" and data["removed_by_retention"] == []

    # what its retention does remove is still reported
    store = open_test_store(tmp_path / "s")
    try:
        for name in ("k1", "k2"):
            store.create_snapshot(name)
        process = _start_cli_and_wait_for_the_lock(
            "--wait", "600", "snapshot", "create", "last", "--keep", "2", "--store",
            str(store.path))
        store.delete_snapshot("k2")
    finally:
        store.close()
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert out.splitlines() == [
        "created snapshot last (generation 1, 1 documents, 1 chunks)",
        "removed by retention: mine"], out


_FLIPPER = """
import sys
from enginelib import snapshots
for _ in range(int(sys.argv[2])):
    snapshots.create_snapshot(sys.argv[1], "flip", keep=20)
    snapshots.delete_snapshot(sys.argv[1], "flip")
"""


def test_a_snapshot_deleted_while_it_is_opened_is_not_called_damaged(tmp_path: Path) -> None:
    """Opening a snapshot that another process deleted meanwhile said "snapshot 'flip' is
    damaged: tables/meta.parquet is missing: delete it" (serve: 503), advice that by then
    could delete a new snapshot of the same name."""
    import warnings

    import enginelib
    from enginelib import HashingEmbedder, snapshots
    from enginelib.errors import DamagedSnapshotError, SnapshotError

    with open_test_store(tmp_path / "s") as store:
        store.ingest_documents([doc("a", paragraphs(3)), doc("b", paragraphs(3, "tyres"))])
        store.create_snapshot("gone")
    root = tmp_path / "s"
    # the deterministic case: the folder checked, then deleted before its tables load
    folder = snapshots.snapshot_folder(root, "gone")
    snapshots.delete_snapshot(root, "gone")
    with pytest.raises(SnapshotError) as caught:
        snapshots.load_catalog(folder, 64)
    assert not isinstance(caught.value, DamagedSnapshotError)
    assert "deleted or replaced by another process" in str(caught.value)

    flipper = subprocess.Popen([sys.executable, "-c", _FLIPPER, str(root), "60"], cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)},
                               stderr=subprocess.PIPE, text=True)
    damaged = []
    while flipper.poll() is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # index files vanishing: rebuilt, warned
                with enginelib.open(root, snapshot="flip", embedder=HashingEmbedder(64)) as s:
                    s.search("brakes", answerability_threshold=None)
        except DamagedSnapshotError as exc:
            damaged.append(str(exc))
        except SnapshotError:
            pass
    _, err = flipper.communicate()
    assert flipper.returncode == 0, err
    assert damaged == []


# A delete in a fresh interpreter, killed ($ENGINELIB_CRASH_AT) between its rename of the
# snapshot to .trash-* and the removal.
_DELETER = """
import sys
from enginelib import snapshots
snapshots.delete_snapshot(sys.argv[1], sys.argv[2])
"""


def _killed_delete(root: Path, name: str) -> Path:
    from enginelib.snapshots import DELETE_STEP

    killed = subprocess.run(
        [sys.executable, "-c", _DELETER, str(root), name], cwd=REPO, capture_output=True,
        text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), "ENGINELIB_CRASH_AT": DELETE_STEP})
    assert killed.returncode == -9, killed.stderr
    [trash] = (root / "snapshots").glob(f".trash-{name}-*")
    return trash


def _cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from enginelib.cli.main import main

    result = CliRunner().invoke(main, list(args), env={"ENGINELIB_EMBEDDER": "hashing-64"})
    return result.exit_code, result.output


@pytest.mark.parametrize("next_writer", ["store open", "snapshot pin", "snapshot create"])
def test_a_killed_delete_leaves_trash_the_next_writer_removes(tmp_path: Path,
                                                             next_writer: str) -> None:
    """A delete killed between its rename and its removal left snapshots/.trash-* for good:
    a whole copy of the store no listing showed and nothing removed (only the next create
    looked; a store never snapshotted again kept it)."""
    from enginelib import maintenance, snapshots

    root = tmp_path / "s"
    with open_test_store(root) as store:
        store.ingest_documents([doc("a", paragraphs(3)), doc("b", paragraphs(3, "tyres"))])
        store.create_snapshot("old")
        store.create_snapshot("kept")
    trash = _killed_delete(root, "old")
    assert (trash / "snapshot.json").is_file()  # the whole snapshot, renamed
    assert [s.name for s in snapshots.list_snapshots(root)] == ["kept"]
    report = maintenance.check(root)
    assert report.ok, report.problems  # every command works: disk held, nothing broken
    assert report.facts["unfinished_snapshots"] == [str(trash)]
    assert report.facts["unfinished_snapshot_bytes"] > 0
    code, out = _cli("check", "--store", str(root))
    assert code == 0 and out.splitlines()[-1].startswith(
        "note: 1 folder(s) a killed snapshot create or delete left hold ")
    assert f"bytes: {trash}; the store's next writer removes them" in out
    with enginelib.open(root, embedder=HashingEmbedder(64), read_only=True) as reader:
        assert reader.search("brakes", answerability_threshold=None).hits
    assert trash.is_dir()  # a reader removes nothing

    if next_writer == "store open":
        open_test_store(root).close()
    elif next_writer == "snapshot pin":  # a path: no store opened, the lock alone
        assert _cli("snapshot", "pin", "kept", "--store", str(root))[0] == 0
    else:
        snapshots.create_snapshot(root, "new")
    assert not trash.exists()
    assert sorted(p.name for p in (root / "snapshots").iterdir()) == sorted(
        ["settings.json", "kept"] + (["new"] if next_writer == "snapshot create" else []))
    report = maintenance.check(root)
    assert report.ok and "unfinished_snapshots" not in report.facts
    assert "note: 1 folder" not in _cli("check", "--store", str(root))[1]


def test_the_sweep_takes_only_the_folders_snapshots_names_and_follows_no_link(
    tmp_path: Path
) -> None:
    from enginelib.core.recovery import remove_unfinished_snapshots, snapshot_folder_in_hand

    root = tmp_path / "s"
    with open_test_store(root) as store:
        store.ingest_documents([doc("a", paragraphs(2))])
        store.create_snapshot("kept")
    base = root / "snapshots"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me", encoding="utf-8")
    # a delete's trash holding links out, and a trash that is itself a link (a snapshot
    # "folder" that was one): the links go, never what they point to
    (dead := base / ".trash-old-0123abcd").mkdir()
    (dead / "tables").mkdir()
    (dead / "tables" / "out").symlink_to(outside)
    (dead / "file-link").symlink_to(outside / "precious.txt")
    (base / ".trash-link-89abcdef").symlink_to(outside, target_is_directory=True)
    (base / ".tmp-new-00ff00ff").mkdir()  # a create killed before its rename
    # not names this code gives: left as they are
    foreign = [".trash-mine", ".trash-x-XYZ01234", ".trashy-a-0123abcd", ".tmp-", "notes",
               "..trash-a-0123abcd"]
    for name in foreign:
        (base / name).mkdir()
    with snapshot_folder_in_hand(".trash-busy-fedcba98"):  # another thread's delete, here
        (base / ".trash-busy-fedcba98").mkdir()
        removed = remove_unfinished_snapshots(root)
        assert (base / ".trash-busy-fedcba98").is_dir()
    assert sorted(p.name for p in removed) == [
        ".tmp-new-00ff00ff", ".trash-link-89abcdef", ".trash-old-0123abcd"]
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "keep me"
    assert sorted(p.name for p in base.iterdir()) == sorted(
        [*foreign, ".trash-busy-fedcba98", "kept", "settings.json"])
    assert remove_unfinished_snapshots(root)[0].name == ".trash-busy-fedcba98"  # out of hand


_MID_DELETE = """
import os, sys
import enginelib
from enginelib import HashingEmbedder
store = enginelib.open(sys.argv[1], embedder=HashingEmbedder(64))
base = store.path / "snapshots"
os.rename(base / "old", base / ".trash-old-0123abcd")  # as a delete's rename leaves it
print("renamed", flush=True)
sys.stdin.readline()
store.close()
"""


def test_no_other_process_sweeps_the_trash_of_a_delete_still_running(tmp_path: Path) -> None:
    """The trash of a delete in a live process is never another process's to remove: the
    removers are writers, and the delete holds the writer lock until it is done."""
    from enginelib import maintenance, snapshots
    from enginelib.errors import StoreLockedError

    root = tmp_path / "s"
    with open_test_store(root) as store:
        store.ingest_documents([doc("a", paragraphs(2))])
        store.create_snapshot("old")
        store.create_snapshot("kept")
    deleting = subprocess.Popen([sys.executable, "-c", _MID_DELETE, str(root)], cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    try:
        assert deleting.stdout is not None and deleting.stdout.readline() == "renamed\n"
        trash = root / "snapshots" / ".trash-old-0123abcd"
        with pytest.raises(StoreLockedError):
            open_test_store(root)
        with pytest.raises(StoreLockedError):
            snapshots.delete_snapshot(root, "kept")
        with pytest.raises(StoreLockedError):
            snapshots.create_snapshot(root, "new")
        with pytest.raises(StoreLockedError):
            maintenance.check(root, lock_timeout=0.0)
        assert _cli("snapshot", "pin", "kept", "--store", str(root))[0] == 2
        assert (trash / "snapshot.json").is_file()  # untouched, still the delete's
    finally:
        out, err = deleting.communicate("\n", timeout=120)
    assert deleting.returncode == 0, err
    open_test_store(root).close()  # that process is gone: the next writer removes it
    assert not trash.exists()


def test_a_snapshots_folder_it_cannot_read_stops_no_writer_nor_check(tmp_path: Path) -> None:
    # the sweep's listing let its OSError through: a store whose snapshots/ this user cannot
    # read (made by another user, mode 0700; a link loop here, as root reads any folder)
    # could no longer be opened to write nor checked, where before it was both
    from enginelib import maintenance

    root = tmp_path / "s"
    with open_test_store(root) as store:
        store.ingest_documents([doc("a", paragraphs(2))])
    (root / "snapshots").symlink_to("snapshots")
    with open_test_store(root) as store:
        store.ingest_documents([doc("b", paragraphs(2))])
    report = maintenance.check(root)
    assert report.ok and "unfinished_snapshots" not in report.facts
    assert (root / "snapshots").is_symlink()  # left as it was
