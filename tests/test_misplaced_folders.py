"""A file where a store keeps one of its folders: `check` names it, `repair` moves it aside,
and a reader whose searches go unlogged because of it says why."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib import HashingEmbedder, maintenance
from enginelib.cli.main import main
from tests.helpers import doc, open_test_store, paragraphs

ENV = {"ENGINELIB_EMBEDDER": "hashing-64"}


def _store(path: Path) -> Path:
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(2))])
    return path


def _cli(*args: str) -> tuple[int, str]:
    """Exit code and output (the command line prints a warning as a "Warning: " line)."""
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        result = CliRunner().invoke(main, list(args), env=ENV)
    return result.exit_code, result.output


def _search_as_reader(path: Path) -> list[str]:
    """The warnings a read-only process's search (and close, which flushes its log) gives."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as reader:
            assert reader.search("pads", answerability_threshold=None).hits
    return [str(w.message) for w in said]


def test_a_file_where_readers_log_their_searches_is_named_and_moved_aside(tmp_path: Path) -> None:
    """Every reader's search went unlogged saying only "File exists", and check said the
    store was healthy."""
    path = _store(tmp_path / "s")
    (path / "querylog").write_text("notes of mine", encoding="utf-8")
    [said] = [w for w in _search_as_reader(path) if "query log" in w]
    assert f"{path / 'querylog'} is a file, not the folder read-only processes log into" in said
    assert "enginelib repair --store" in said
    report = maintenance.check(path)
    assert not report.ok
    assert [p for p in report.problems if p.startswith(f"{path / 'querylog'} is a file")], \
        report.problems
    code, output = _cli("check", "--store", str(path))
    assert code == 1 and "querylog is a file where the store keeps a folder of the query " \
        "logs of read-only processes" in output, output
    code, output = _cli("repair", "--store", str(path))
    assert code == 0 and "check passes" in output, output
    assert "querylog was a file where the store keeps a folder" in output
    (aside,) = path.glob("querylog.not-a-folder-*")
    assert aside.read_text(encoding="utf-8") == "notes of mine"  # kept, never deleted
    assert maintenance.check(path).ok
    assert not [w for w in _search_as_reader(path) if "query log" in w]
    with open_test_store(path) as store:  # the writer imports what the reader logged
        assert [q["query_text"] for q in store.logged_queries()] == ["pads"]


@pytest.mark.parametrize("where", ["indexes", "indexes/vectors", "indexes/text"])
def test_a_file_where_the_index_folders_belong_is_a_check_problem(tmp_path: Path,
                                                                  where: str) -> None:
    """check failed with "check failed: Not a directory" (exit 2) instead of reporting it."""
    path = _store(tmp_path / "s")
    target = path / where
    shutil.rmtree(target)
    target.write_text("not an index", encoding="utf-8")
    report = maintenance.check(path)
    assert report.problems == (
        f"{target} is a file where the store keeps a folder of derived index files, so the "
        f"indexes cannot be read from there: run `enginelib repair --store {path}` (a "
        f"writer's open moves it aside, keeping it)",)
    code, output = _cli("check", "--store", str(path))
    assert code == 1 and f"{target} is a file where the store keeps" in output, output
    code, output = _cli("repair", "--store", str(path))
    assert code == 0 and "check passes" in output, output
    assert f"{target} was a file where the store keeps a folder" in output
    (aside,) = target.parent.glob(f"{target.name}.not-a-folder-*")
    assert aside.read_text(encoding="utf-8") == "not an index"
    assert maintenance.check(path).ok
