"""A writer importing read-only processes' query logs, killed at each step of the import:
every logged search (and every dropped one) is counted once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib import HashingEmbedder, maintenance
from enginelib.cli.main import main
from enginelib.errors import DiskFullError
from enginelib.faults import ENOSPC_VAR
from enginelib.querylog import QueryLog
from tests.helpers import doc, open_test_store, paragraphs

REPO = Path(__file__).resolve().parent.parent
SEARCHES = 3

_WRITER = textwrap.dedent(
    """
    import sys
    import enginelib
    from tests.helpers import open_test_store
    open_test_store(sys.argv[1]).close()
    print("finished")
    """
)


def _store_with_pending(path: Path) -> None:
    """A store whose folder holds one reader's pending file of SEARCHES entries."""
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(3))])
    with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as reader:
        for query in ("pads", "rotor", "fluid")[:SEARCHES]:
            reader.search(query, answerability_threshold=None)
    assert len(list((path / "querylog").glob("pending-*.jsonl"))) == 1


def _logged(path: Path) -> int:
    with open_test_store(path) as store:
        row = store._catalog.con.execute("SELECT count(*) FROM query_log").fetchone()
        assert row is not None
        return int(row[0])


def _healthy(path: Path) -> None:
    report = maintenance.check(path)
    assert report.ok, report.problems
    checked = CliRunner().invoke(main, ["check", "--store", str(path)])
    assert checked.exit_code == 0 and "is healthy" in checked.output, checked.output


@pytest.mark.parametrize("step", ["query_log_before_commit", "query_log_after_commit"])
def test_a_writer_killed_while_importing_counts_each_search_once(tmp_path: Path,
                                                                 step: str) -> None:
    """A writer killed after committing the imported rows, before deleting the files it had
    claimed, left them (``*.importing``) for the next writer, which imported them again:
    every search was logged twice. Killed before the commit, the rows are imported once by
    the next writer."""
    path = tmp_path / "s"
    _store_with_pending(path)
    killed = subprocess.run(
        [sys.executable, "-c", _WRITER, str(path)], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "ENGINELIB_CRASH_AT": step, "PYTHONPATH": str(REPO)}, timeout=120,
    )
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert list((path / "querylog").glob("*.importing")), "killed before it claimed a file"
    _healthy(path)  # what the killed writer left is no problem for check
    with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as reader:
        assert reader.stats()["queries_logged"] == (SEARCHES if "after" in step else 0)
    for _ in range(2):  # the first open after the kill and one more
        assert _logged(path) == SEARCHES
    assert not [p.name for p in (path / "querylog").iterdir()]
    _healthy(path)


def test_a_failed_import_counts_dropped_searches_once(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The files past the import budget are dropped and counted in ``query_log_dropped``;
    an import that failed after its commit counted them again at the next open."""
    path = tmp_path / "s"
    _store_with_pending(path)
    monkeypatch.setattr("enginelib.querylog.MAX_IMPORT_BYTES", 0)  # every file is dropped
    monkeypatch.setenv(ENOSPC_VAR, "query_log_after_commit")
    with pytest.raises(DiskFullError):
        open_test_store(path)
    assert list((path / "querylog").glob("*.importing"))  # committed, not yet deleted
    monkeypatch.delenv(ENOSPC_VAR)
    for _ in range(2):
        with open_test_store(path) as store:
            assert store._catalog.get_meta("query_log_dropped") == str(SEARCHES)
            row = store._catalog.con.execute("SELECT count(*) FROM query_log").fetchone()
            assert row == (0,)
    assert not list((path / "querylog").iterdir())


def test_a_claimed_file_put_back_does_not_overwrite_a_readers_file(tmp_path: Path) -> None:
    """A file left claimed by a writer killed before its commit went back under the name
    it was claimed from, replacing the file a reader of the same process id had started
    since: that reader's searches were lost."""
    path = tmp_path / "s"
    _store_with_pending(path)
    folder = path / "querylog"
    (pending,) = folder.glob("pending-*.jsonl")
    os.replace(pending, pending.with_suffix(".importing"))  # as a killed writer leaves it
    lines = pending.with_suffix(".importing").read_text(encoding="utf-8").splitlines()
    pending.write_text(lines[0] + "\n", encoding="utf-8")  # the reader's next search
    assert _logged(path) == SEARCHES + 1
    assert QueryLog(path, writable=False).pending() == []
    assert json.loads(lines[0])["entry"]["query_text"] == "pads"


def test_the_log_stays_newest_first_once_a_writer_imports_a_readers_searches(
        tmp_path: Path) -> None:
    """Listed by id, a reader's search came first once a writer had imported it (its id is
    given at the import), ahead of a writer's search that ran after it: `enginelib queries
    --limit 1` showed the older search, and the order changed with nothing searched."""
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(3))])
    writer = open_test_store(path)
    with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as reader:
        reader.search("earlier reader question", answerability_threshold=None)
    writer.search("later writer question", answerability_threshold=None)
    writer.close()
    newest_first = ["later writer question", "earlier reader question"]

    def listed() -> tuple[list[str], str]:
        shown = CliRunner().invoke(main, ["queries", "--store", str(path), "--limit", "1",
                                          "--json"])
        assert shown.exit_code == 0, shown.output
        with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as store:
            texts = [row["query_text"] for row in store.logged_queries()]
        return texts, json.loads(shown.output)[0]["query_text"]

    assert listed() == (newest_first, "later writer question")  # the reader's still pending
    open_test_store(path).close()  # a writer imports it
    assert not list((path / "querylog").glob("pending-*"))
    assert listed() == (newest_first, "later writer question")
