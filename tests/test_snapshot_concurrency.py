"""Snapshots while other processes work on the same store: what a command reports must be
what it did, not what it saw change around it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
