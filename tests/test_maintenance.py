"""check / repair / reindex, through the Python API and the CLI (history and snapshots too)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import enginelib
from enginelib import (
    ChunkingConfig,
    HashingEmbedder,
    IncompatibleStoreError,
    faults,
    maintenance,
    snapshots,
)
from enginelib.cli.main import main
from enginelib.errors import DiskFullError
from enginelib.store import open_for_maintenance
from tests.helpers import SMALL_CHUNKS, doc, open_test_store, paragraphs

REPO = Path(__file__).resolve().parent.parent


def _make_store(path: Path) -> None:
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(4 + i, f"topic{i}")) for i in range(5)])
    store.ingest_documents([doc("d0", paragraphs(2, "edited"))])
    store.close()


# -- reindex -------------------------------------------------------------------------------


def test_dimension_change_asks_for_reindex_which_then_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make_store(path)
    with pytest.raises(IncompatibleStoreError, match=r"hashing-64 \(64 dims\).*hashing-32 \(32 "
                                                     r"dims\): run `enginelib reindex"):
        enginelib.open(path, embedder=HashingEmbedder(32))

    report = maintenance.reindex(path, embedder=HashingEmbedder(32))
    assert (report.documents, report.embedding_dim, report.chunks_after) == (5, 32, report.chunks_before)
    manifest = json.loads((path / "manifest.json").read_text())
    assert (manifest["embedding_model"], manifest["embedding_dim"]) == ("hashing-32", 32)
    assert manifest["generation"] == report.generation

    with enginelib.open(path, embedder=HashingEmbedder(32)) as store:
        hits = store.search("caliper torque", strategy="vector", limit=3,
                            answerability_threshold=None).hits
        assert hits and all(store.get_document(h.document_id)["content"][
            h.start_offset:h.end_offset] == h.content for h in hits)
        assert [v["version"] for v in store.history("d0")] == ["1.0.0", "1.1.0"]
        assert store.version_text("d0", "1.0.0") == paragraphs(4, "topic0")
        assert store.check().ok
    with pytest.raises(IncompatibleStoreError):
        enginelib.open(path, embedder=HashingEmbedder(64))


def test_reindex_with_new_chunking_on_an_open_store(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make_store(path)
    bigger = ChunkingConfig(max_tokens=200, overlap_tokens=10, min_tokens=20)
    with open_test_store(path) as store:
        before = store._catalog.chunk_count()
        report = store.reindex(embedder=HashingEmbedder(64), chunking=bigger)
        assert report.chunks_after < before == report.chunks_before
        assert store._catalog.chunk_count() == len(store._vector_index) == len(store._text_index)
        assert store.search("caliper", limit=2, answerability_threshold=None).hits
        assert store.check().ok
    with pytest.raises(IncompatibleStoreError, match="chunked with"):
        open_test_store(path)  # asks for the old chunking
    with enginelib.open(path, embedder=HashingEmbedder(64), chunking=bigger) as store:
        assert store.manifest.chunking_hash == bigger.config_hash()


_REINDEXER = textwrap.dedent(
    """
    import sys
    from enginelib import HashingEmbedder, maintenance
    maintenance.reindex(sys.argv[1], embedder=HashingEmbedder(32))
    """
)


@pytest.mark.parametrize("step", maintenance.REINDEX_STEPS)
def test_reindex_killed_around_its_commit(tmp_path: Path, step: str) -> None:
    path = tmp_path / "s"
    _make_store(path)
    result = subprocess.run([sys.executable, "-c", _REINDEXER, str(path)], cwd=REPO,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "ENGINELIB_CRASH_AT": step})
    assert result.returncode == -9, result.stderr
    committed = step == "reindex_after_catalog_commit"
    dim = 32 if committed else 64
    with enginelib.open(path, embedder=HashingEmbedder(dim)) as store:
        assert store.manifest.embedding_dim == dim and store.check().ok
        assert len(store._catalog.list_documents()) == 5
    assert not (path / maintenance.REINDEX_MARKER).exists()


# -- check and repair ----------------------------------------------------------------------


def test_check_passes_then_detects_damage_and_repair_fixes_it(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make_store(path)
    healthy = maintenance.check(path)
    assert healthy.ok and healthy.facts["chunks"] == healthy.facts["vector_count"] > 0

    (path / "indexes" / "vectors" / "stamp.json").unlink()
    report = maintenance.check(path)
    assert not report.ok and any("vector index is missing" in p for p in report.problems)
    assert maintenance.repair(path).ok
    assert maintenance.check(path).ok

    # A lagging text index (stamp of an older generation) and a corrupt vector file.
    stamp_path = path / "indexes" / "text" / "stamp.json"
    stamp = json.loads(stamp_path.read_text())
    stamp_path.write_text(json.dumps({**stamp, "generation": stamp["generation"] - 1}))
    folder = next((path / "indexes" / "vectors").glob("gen-*"))
    (folder / "labels.npy").write_bytes(b"garbage")
    problems = maintenance.check(path).problems
    assert any("text index is stamped generation" in p for p in problems)
    assert any("vector index is missing or unreadable" in p for p in problems)
    maintenance.repair(path)
    assert maintenance.check(path).ok
    with open_test_store(path) as store:
        assert store.search("caliper", strategy="hybrid", limit=1,
                            answerability_threshold=None).hits


def test_a_manifest_removed_while_the_store_is_open_is_a_problem_repair_mends(
        tmp_path: Path) -> None:
    # store.check() and store.repair() of a writer whose manifest.json was removed raised a
    # bare AssertionError (maintenance._check asserted the file was there)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_documents([doc("pads", "Brake pads wear out.")])
        (tmp_path / "s" / "manifest.json").unlink()
        [problem] = store.check().problems
        assert problem.startswith("manifest.json is missing, removed while the store was open")
        assert "enginelib repair" in problem
        assert store.repair().ok
        assert (tmp_path / "s" / "manifest.json").is_file()
    with enginelib.open(tmp_path / "s") as reopened:
        assert reopened.check().ok and reopened.stats()["documents"] == 1


def test_check_compares_stored_vectors_with_the_catalogs(tmp_path: Path) -> None:
    # a rows file with a run of zeros reads without error: the ranking is silently wrong
    path = tmp_path / "s"
    _make_store(path)
    (rows,) = (path / "indexes" / "vectors").glob("rows-*")
    with open(rows, "r+b") as handle:
        handle.seek(256)
        handle.write(b"\0" * 4096)
    problems = maintenance.check(path).problems
    assert len(problems) == 1 and "hold other vectors than the catalog's" in problems[0]
    assert maintenance.repair(path).ok and maintenance.check(path).ok


@pytest.mark.parametrize("backend", ["usearch-i8", "usearch-f16"])
def test_a_quantized_index_holds_the_catalogs_vectors(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "s"
    with enginelib.open(path, embedder=HashingEmbedder(64),
                        index_options={"vector": {"backend": backend}}) as store:
        store.ingest_documents([doc(f"d{i}", paragraphs(3, topic=f"t{i}")) for i in range(8)])
    assert maintenance.check(path).ok


def test_check_reports_damaged_snapshots(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make_store(path)
    with open_test_store(path) as store:
        store.create_snapshot("s1")
    (path / "snapshots" / "s1" / "tables" / "chunks.parquet").unlink()
    problems = maintenance.check(path).problems
    assert problems == ("snapshot 's1' lacks ['chunks']: delete it",)
    assert maintenance.check(path, snapshots=False).ok



def test_check_and_a_diff_of_a_store_whose_catalog_file_is_gone_name_the_way_back(
        tmp_path: Path) -> None:
    # both read the catalog by path, read-only, and answered in DuckDB's words ("Cannot open
    # database ... in read-only mode: database does not exist"), where every open of the store
    # says the file is missing and that a snapshot restore is the way back
    path = tmp_path / "s"
    _make_store(path)
    with open_test_store(path) as store:
        store.create_snapshot("s1")
    (path / "catalog.duckdb").unlink()
    for attempt in (lambda: maintenance.check(path),
                    lambda: snapshots.diff_snapshots(path, "s1"),
                    lambda: snapshots.diff_snapshots(path, "live", "s1")):
        with pytest.raises(enginelib.CorruptStoreError, match="is missing") as info:
            attempt()
        assert "snapshot restore NAME" in str(info.value), info.value
    for args in (["check"], ["snapshot", "diff", "s1"]):
        result = CliRunner().invoke(main, [*args, "--store", str(path)])
        assert result.exit_code == 2 and "is missing, though" in result.output, result.output
        assert "database does not exist" not in result.output
    assert not (path / "catalog.duckdb").exists()  # nothing was started in its place

# -- CLI -----------------------------------------------------------------------------------


@pytest.fixture()
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    return CliRunner()


def invoke(runner: CliRunner, *args: str, code: int = 0) -> click.testing.Result:
    result = runner.invoke(main, list(args))
    assert result.exit_code == code, result.output
    return result


def test_cli_snapshots(runner: CliRunner, tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    _make_store(Path(store))
    out = invoke(runner, "snapshot", "create", "v1", "--store", store).output
    assert out == "created snapshot v1 (generation 2, 5 documents, 27 chunks)\n"
    with open_test_store(Path(store)) as live:
        live.ingest_documents([doc("d9", paragraphs(3, "new"))])
        live.delete_document("d1")

    created = json.loads(invoke(runner, "snapshot", "create", "--store", store, "--json").stdout)
    assert created["name"].count(".") == 2 and created["documents"] == 5
    listed = json.loads(invoke(runner, "snapshot", "list", "--store", store, "--json").stdout)
    assert [s["name"] for s in listed] == ["v1", created["name"]]
    lines = invoke(runner, "snapshot", "list", "--store", store).output.splitlines()
    assert lines[0].split() == ["NAME", "CREATED", "GENERATION", "INDEX", "VERSION", "DOCUMENTS",
                                "CHUNKS", "PINNED"]
    assert lines[1].startswith("v1 ") and len(lines) == 3
    # every creation time in UTC, said (before: the stamp's first 19 characters, local time)
    assert lines[1].split()[3] == "UTC"
    assert datetime.strptime(" ".join(lines[1].split()[1:3]), "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=UTC) == datetime.fromisoformat(listed[0]["created_at"]).replace(microsecond=0)

    diff = invoke(runner, "snapshot", "diff", "v1", created["name"], "--store", store).output
    assert diff.splitlines() == [
        f"v1 -> {created['name']}: 1 added, 1 removed, 0 changed, 4 unchanged; "
        "documents 5 -> 5, chunks 27 -> 24",
        "+ d9 1.0.0 (2 chunks)",
        "- d1 1.0.0 (5 chunks)",
    ]
    as_json = json.loads(invoke(runner, "snapshot", "diff", "v1", "--store", store, "--json").stdout)
    assert as_json["b"] == "live" and as_json["chunks_b"] == 24

    assert invoke(runner, "snapshot", "pin", "v1", "--store", store).output == "pinned snapshot v1\n"
    result = invoke(runner, "snapshot", "delete", "v1", "--store", store, code=2)
    assert result.output.startswith("Error: snapshot 'v1' is pinned")
    shown = json.loads(invoke(runner, "snapshot", "show", "v1", "--store", store, "--json").stdout)
    assert shown["pinned"] is True and shown["generation"] == 2

    out = invoke(runner, "snapshot", "restore", "v1", "--store", store).output
    assert out.startswith("restored snapshot v1 as generation ")
    found = json.loads(invoke(runner, "search", "topic1", "--store", store, "--json",
                              "--strategy", "fulltext").stdout)
    assert "d1" in {h["document_id"] for h in found["hits"]}
    old = json.loads(invoke(runner, "search", "new", "--store", store, "--snapshot",
                            created["name"], "--json", "--strategy", "fulltext").stdout)
    assert {h["document_id"] for h in old["hits"]} == {"d9"}

    invoke(runner, "snapshot", "pin", "v1", "--unpin", "--store", store)
    assert invoke(runner, "snapshot", "delete", "v1", "--store", store).output == "deleted snapshot v1\n"
    assert invoke(runner, "snapshot", "retention", "--store", store).output == (
        "keep 3 newest unpinned snapshots\n")


def test_cli_history(runner: CliRunner, tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    _make_store(Path(store))
    lines = invoke(runner, "history", "d0", "--store", store).output.splitlines()
    assert lines[0] == "d0: 2 version(s)"
    assert lines[1].split() == ["VERSION", "INDEX", "VERSION", "VALID", "FROM", "UNTIL", "CHANGE"]
    assert lines[2].startswith("1.0.0 ") and lines[2].endswith("content changed")
    assert lines[3].startswith("1.1.0 ") and lines[3].endswith("current")
    data = json.loads(invoke(runner, "history", "d0", "--store", store, "--json").stdout)
    assert [v["version"] for v in data["versions"]] == ["1.0.0", "1.1.0"]
    assert data["versions"][0]["index_version"].count(".") == 2
    text = invoke(runner, "history", "d0", "--text", "1.0.0", "--store", store).output
    assert text == paragraphs(4, "topic0") + "\n"
    result = invoke(runner, "history", "nope", "--store", store, code=2)
    assert "no document with id 'nope'" in result.output



def test_every_row_of_history_json_has_the_same_keys(runner: CliRunner, tmp_path: Path) -> None:
    # the current version's row lacked title, archived_at and generation, which every archived
    # row has: a program reading `history --json` failed on the last row (KeyError 'title')
    store = str(tmp_path / "s")
    with open_test_store(Path(store)) as opened:
        for topic in ("first", "second"):
            opened.ingest_documents([doc("d0", paragraphs(2, topic), title=f"Manual {topic}")])
    data = json.loads(invoke(runner, "history", "d0", "--store", store, "--json").stdout)
    archived, current = data["versions"]
    assert set(current) == set(archived), set(archived) ^ set(current)
    assert current["current"] and current["archived_at"] is None is current["generation"]
    assert (archived["title"], current["title"]) == ("Manual first", "Manual second")

def test_cli_check_repair_reindex(runner: CliRunner, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = str(tmp_path / "s")
    _make_store(Path(store))
    assert invoke(runner, "check", "--store", store).output == f"store {store} is healthy\n"
    (Path(store) / "indexes" / "text" / "stamp.json").unlink()
    result = invoke(runner, "check", "--store", store, code=1)
    assert result.output.startswith("problem: text index is missing or unreadable")
    assert f"1 problem(s) found: run `enginelib repair --store {store}`" in result.output
    report = json.loads(invoke(runner, "check", "--store", store, "--json", code=1).stdout)
    assert report["ok"] is False and len(report["problems"]) == 1

    out = invoke(runner, "repair", "--store", store).output
    assert out == f"rebuilt indexes of {store} at generation 2 (27 chunks); check passes\n"
    invoke(runner, "check", "--store", store)

    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-32")
    result = invoke(runner, "search", "caliper", "--store", store, code=2)
    assert "run `enginelib reindex" in result.output
    out = invoke(runner, "reindex", "--store", store, "--no-progress").output
    assert out.startswith("reindexed 5 documents with hashing-32 (32 dims): 27 -> 27 chunks")
    found = json.loads(invoke(runner, "search", "caliper", "--store", store, "--json",
                              "--no-gate").stdout)
    assert found["hits"]
    data = json.loads(invoke(runner, "reindex", "--store", store, "--json",
                             "--max-tokens", "200").stdout)
    assert data["chunks_after"] < 27


def test_reindex_and_repair_need_no_model(tmp_path: Path) -> None:
    """Maintenance opens the store with a stand-in that refuses to embed, never the model."""
    path = tmp_path / "s"
    _make_store(path)
    with open_for_maintenance(path) as store:
        assert store.search("caliper", strategy="fulltext", limit=1,
                            answerability_threshold=None).hits
        with pytest.raises(enginelib.EngineError, match="opened for maintenance"):
            store.search("caliper", strategy="vector")
    assert SMALL_CHUNKS.config_hash() == json.loads((path / "manifest.json").read_text())[
        "chunking_hash"]


def test_check_notes_a_text_index_under_the_old_word_limit_and_repair_lifts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from enginelib.indexes import tantivy_text
    from enginelib.indexes.analyzers import LEGACY_MAX_TOKEN_CHARS

    digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    path = tmp_path / "s"
    with monkeypatch.context() as patch:  # the index an older release wrote
        patch.setattr(tantivy_text, "MAX_TOKEN_CHARS", LEGACY_MAX_TOKEN_CHARS)
        with open_test_store(path) as store:
            store.ingest_documents([doc("image", f"The image digest is {digest}."),
                                    doc("other", "Brake pads wear in city traffic.")])
    stamp_path = path / "indexes" / "text" / tantivy_text.STAMP
    stamp = json.loads(stamp_path.read_text())
    del stamp["max_token"]
    stamp_path.write_text(json.dumps(stamp))

    with enginelib.open(path, read_only=True) as reader:
        assert not reader.search(digest, strategy="fulltext").hits
    runner = CliRunner(env={"ENGINELIB_EMBEDDER": ""})
    checked = runner.invoke(main, ["check", "--store", str(path)])
    assert checked.exit_code == 0, checked.output  # a note, not a problem
    assert "words of 40 bytes or more" in checked.output and "enginelib repair" in checked.output

    assert runner.invoke(main, ["repair", "--store", str(path)]).exit_code == 0
    with enginelib.open(path, read_only=True) as reader:
        assert [h.document_id for h in reader.search(digest, strategy="fulltext").hits] == ["image"]
    checked = runner.invoke(main, ["check", "--store", str(path)])
    assert checked.exit_code == 0 and "note:" not in checked.output


@pytest.mark.parametrize("new_model", [HashingEmbedder(16), HashingEmbedder(64, name="other-64")],
                         ids=["another dimension", "same dimension"])
def test_a_reader_open_across_a_reindex_to_another_model_says_to_open_again(
        tmp_path: Path, new_model: HashingEmbedder) -> None:
    # to another dimension the reader stayed at the old generation for good, silently (a
    # document ingested after never appeared); to a model of the same dimension it compared
    # its own model's query vectors with the other model's
    path = tmp_path / "s"
    writer = open_test_store(path)
    writer.ingest_documents([doc(f"d{i}", paragraphs(3, f"topic{i}")) for i in range(3)])
    reader = enginelib.open(path, read_only=True)  # the store's own model
    try:
        assert reader.search("pads rotor", answerability_threshold=None).hits
        writer.reindex(embedder=new_model)
        writer.ingest_documents([doc("zebra", "zebra giraffe savanna pads")])
        with pytest.raises(IncompatibleStoreError, match="open it again") as refused:
            reader.search("zebra giraffe", answerability_threshold=None)
        assert f"reindexed with {new_model.name} ({new_model.dim} dims)" in str(refused.value)
        again = enginelib.open(path, read_only=True, embedder=new_model)
        try:
            hits = again.search("zebra giraffe", answerability_threshold=None).hits
            assert hits and hits[0].document_id == "zebra"
        finally:
            again.close()
    finally:
        reader.close()
        writer.close()


def test_a_reader_follows_a_reindex_that_keeps_its_model(tmp_path: Path) -> None:
    path = tmp_path / "s"
    writer = open_test_store(path)
    writer.ingest_documents([doc(f"d{i}", paragraphs(3, f"topic{i}")) for i in range(3)])
    reader = enginelib.open(path, read_only=True)
    try:
        writer.reindex(chunking=ChunkingConfig(max_tokens=80, overlap_tokens=8, min_tokens=15))
        writer.ingest_documents([doc("zebra", "zebra giraffe savanna pads")])
        hits = reader.search("zebra giraffe", answerability_threshold=None).hits
        assert hits and hits[0].document_id == "zebra"
    finally:
        reader.close()
        writer.close()


def test_check_names_a_reindex_killed_after_its_commit_and_repair_finishes_it(
        tmp_path: Path) -> None:
    # check said "catalog vectors are FLOAT[16] but the manifest says 64 dims: run `enginelib
    # reindex`" (re-embedding everything again) of a reindex the next writer's open finishes
    path = tmp_path / "s"
    _make_store(path)
    env = {**os.environ, "ENGINELIB_CRASH_AT": "reindex_after_catalog_commit"}
    script = ("import enginelib, sys; from enginelib import HashingEmbedder; "
              "s = enginelib.open(sys.argv[1], embedder=HashingEmbedder(64)); "
              "s.reindex(embedder=HashingEmbedder(16))")
    done = subprocess.run([sys.executable, "-c", script, str(path)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    report = maintenance.check(path)
    assert report.problems, report
    assert report.problems[0].startswith("a reindex to hashing-16 (16 dims) was stopped after "
                                         "its commit"), report.problems
    assert "enginelib repair" in report.problems[0]
    assert not any("enginelib reindex" in problem for problem in report.problems), report.problems
    assert maintenance.repair(path).ok
    assert maintenance.check(path).ok
    store = enginelib.open(path, read_only=True)
    try:
        assert store.manifest.embedding_dim == 16
        assert store.search("pads rotor", answerability_threshold=None).hits
    finally:
        store.close()


def test_a_reindex_killed_midway_is_resumed_by_the_next_one(tmp_path: Path) -> None:
    # Two batches of documents: the first is staged when the reindexer is killed.
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc(f"d{i:02d}", f"note {i} on brake pads") for i in range(70)])
    result = subprocess.run([sys.executable, "-c", _REINDEXER, str(path)], cwd=REPO,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "ENGINELIB_CRASH_AT": "reindex_batch_staged:1"})
    assert result.returncode == -9, result.stderr
    with open_test_store(path) as store:  # the old model's store, whole
        assert store.manifest.embedding_dim == 64 and store.check().ok
        hits = store.search("note 7 on brake pads", strategy="vector", limit=1,
                            answerability_threshold=None).hits
        assert hits[0].document_id == "d07"
        # It embedded all 70 again; the 64 vectors the killed one staged are reused.
        report = store.reindex(embedder=HashingEmbedder(32))
        assert (report.chunks_after, report.chunks_embedded) == (70, 6)
    with enginelib.open(path) as store:
        assert store.manifest.embedding_dim == 32 and store.check().ok
        hits = store.search("note 7 on brake pads", strategy="vector", limit=1,
                            answerability_threshold=None).hits
        assert hits[0].document_id == "d07"


def test_a_reindex_failing_after_its_commit_leaves_the_open_store_on_the_new_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", f"note {i} on brake pads") for i in range(5)])
    monkeypatch.setenv(faults.ENOSPC_VAR, "reindex_after_catalog_commit")  # manifest not written
    with pytest.raises(DiskFullError):
        store.reindex(embedder=HashingEmbedder(32))
    monkeypatch.delenv(faults.ENOSPC_VAR)
    # The catalog holds 32-dim vectors: with the old model kept, this search found nothing
    # and the ingest failed in DuckDB ("Cannot cast list with length 64 to ... 32").
    assert (store.embedder.name, store.manifest.embedding_dim) == ("hashing-32", 32)
    hits = store.search("note 3 on brake pads", strategy="vector", limit=1,
                        answerability_threshold=None).hits
    assert [h.document_id for h in hits] == ["d3"]
    store.ingest_documents([doc("new", "note new on brake pads")])
    assert store.search("note new on brake pads", strategy="vector", limit=1,
                        answerability_threshold=None).hits[0].document_id == "new"
    store.close()
    with enginelib.open(path) as reopened:
        assert reopened.manifest.embedding_dim == 32 and reopened.check().ok
        assert len(reopened.list_documents()) == 6
