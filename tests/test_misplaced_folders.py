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
from enginelib.errors import StorageError
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


# The store's other folders: where a plain file sat, check said the store was healthy (or
# failed, "check failed: Not a directory", for snapshots/), repair said "check passes" and
# left it there, and writes there failed saying only "File exists" or "Not a directory".
OTHER_FOLDERS = {
    "texts": "chunk texts derived from the catalog",
    "view": "the chunk view's saved columns",
    "jobs-inbox": "the jobs queued while another process writes the store",
    "uploads": "the files uploaded to `serve`, kept until their jobs are done",
    "snapshots": "snapshots",
}


@pytest.mark.parametrize("where", sorted(OTHER_FOLDERS))
def test_a_file_where_the_store_keeps_its_other_folders_is_named_and_moved_aside(
    tmp_path: Path, where: str,
) -> None:
    path = _store(tmp_path / "s")
    target = path / where
    if target.is_dir():
        shutil.rmtree(target)
    target.write_text("notes of mine", encoding="utf-8")
    [problem] = maintenance.check(path).problems
    assert problem.startswith(
        f"{target} is a file where the store keeps a folder of {OTHER_FOLDERS[where]}, so "), problem
    assert f"run `enginelib repair --store {path}`" in problem
    code, output = _cli("check", "--store", str(path))
    assert code == 1 and f"{target} is a file where the store keeps a folder" in output, output
    code, output = _cli("repair", "--store", str(path))
    assert code == 0 and "check passes" in output, output
    assert f"{target} was a file where the store keeps a folder of {OTHER_FOLDERS[where]}" in output
    (aside,) = path.glob(f"{where}.not-a-folder-*")
    assert aside.read_text(encoding="utf-8") == "notes of mine"  # kept, never deleted
    assert maintenance.check(path).ok


def _refusal(path: Path, where: str) -> str:
    return (f"{path / where} is a file where the store keeps a folder of "
            f"{OTHER_FOLDERS[where]}, so ")


def test_a_snapshot_is_refused_while_a_file_holds_the_snapshots_folder(tmp_path: Path) -> None:
    """create said "create snapshot failed: File exists"; the CLI's create and list said
    "cannot read .../snapshots/settings.json: Not a directory: fix it, or delete it"."""
    path = _store(tmp_path / "s")
    (path / "snapshots").write_text("notes of mine", encoding="utf-8")
    with open_test_store(path) as store:  # a writer's open leaves it: it holds no derived data
        with pytest.raises(StorageError) as caught:
            store.create_snapshot()
    assert str(caught.value).startswith(_refusal(path, "snapshots"))
    assert f"`enginelib repair --store {path}`" in str(caught.value)
    assert caught.value.path == str(path / "snapshots")
    for command in (["snapshot", "create"], ["snapshot", "list"], ["snapshot", "show", "x"]):
        code, output = _cli(*command, "--store", str(path))
        assert code == 2 and output.startswith(f"Error: {_refusal(path, 'snapshots')}"), output
    assert (path / "snapshots").read_text(encoding="utf-8") == "notes of mine"


def test_an_upload_is_refused_while_a_file_holds_the_uploads_folder(tmp_path: Path) -> None:
    """serve answered "upload of 'pads.md' failed: Not a directory (<store>/uploads/<id>)"."""
    from tests.test_web import make_client

    with make_client(tmp_path / "s") as client:
        (tmp_path / "s" / "uploads").write_text("notes of mine", encoding="utf-8")
        response = client.post("/api/upload", files={"file": ("pads.md", b"# Pads\n\nWorn.")})
        assert response.status_code == 503, response.text
        assert response.json()["type"] == "StorageError"
        error = response.json()["error"]
        assert error.startswith("<store>/uploads is a file where the store keeps a folder of "
                                "the files uploaded to `serve`"), error
        assert "`enginelib repair --store <store>`" in error
        assert client.get("/api/jobs").json()["total"] == 0


def test_a_writers_open_moves_aside_a_file_where_chunk_texts_belong(tmp_path: Path) -> None:
    """Every search of the writer failed: "view failed: File exists (.../texts)"."""
    path = _store(tmp_path / "s")
    (path / "texts").write_text("notes of mine", encoding="utf-8")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with open_test_store(path) as store:
            assert store.search("pads", answerability_threshold=None).hits
    assert [str(w.message) for w in said if f"{path / 'texts'} was a file" in str(w.message)]
    (aside,) = path.glob("texts.not-a-folder-*")
    assert aside.read_text(encoding="utf-8") == "notes of mine"
    assert maintenance.check(path).ok


def test_a_write_of_chunk_texts_after_the_open_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = _store(tmp_path / "s")  # searched by no writer yet: no texts folder
    with open_test_store(path) as store:
        (path / "texts").write_text("notes of mine", encoding="utf-8")
        with pytest.raises(StorageError) as caught:
            store.search("pads", answerability_threshold=None)
    assert str(caught.value).startswith(_refusal(path, "texts")), caught.value


def test_an_open_stores_repair_moves_aside_a_file_where_snapshots_belong(tmp_path: Path) -> None:
    path = _store(tmp_path / "s")
    (path / "snapshots").write_text("notes of mine", encoding="utf-8")
    with open_test_store(path) as store:
        assert not store.check().ok
        with pytest.warns(RuntimeWarning, match="snapshots was a file where the store keeps"):
            assert store.repair().ok
        assert store.create_snapshot("after").name == "after"
    (aside,) = path.glob("snapshots.not-a-folder-*")
    assert aside.read_text(encoding="utf-8") == "notes of mine"
