"""Faults a store must survive: kills during writes, a full disk, a read-only medium, an
idle reader in another process, what a dead writer leaves behind, and the user's umask."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib import HashingEmbedder, LoadedDocument, maintenance, snapshots
from enginelib.catalog import Catalog
from enginelib.catalog_mend import active_header
from enginelib.cli.main import main
from enginelib.errors import (
    DiskFullError,
    EngineError,
    IncompatibleStoreError,
    StoreError,
    StoreLockedError,
)
from enginelib.faults import COMMIT_STEPS, ENOSPC_VAR
from enginelib.querylog import MAX_IMPORT_BYTES, MAX_PENDING_BYTES, QueryLog
from tests.helpers import doc, mount_tmpfs, open_test_store, paragraphs, read_only_copy, umount
from tests.reporting import say

REPO = Path(__file__).resolve().parent.parent
KILLS = 200
# Real processes killed and racing, file systems mounted: the slow tier (tests/conftest.py).
pytestmark = pytest.mark.slow


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path | None]:
    folder = tmp_path / "tiny"
    mounted = mount_tmpfs(folder, "8m")
    yield folder if mounted else None
    if mounted:
        umount(folder)


def _docs(prefix: str, count: int, words: int = 400) -> list[LoadedDocument]:
    return [LoadedDocument(id=f"{prefix}{i}", text=f"new words about rotor {i} " * words)
            for i in range(count)]


# -- kills during writes -------------------------------------------------------------------


def test_kill_loop_over_ingest_delete_snapshot_reindex(tmp_path: Path,
                                                       request: pytest.FixtureRequest) -> None:
    shm = Path("/dev/shm")
    base = Path(os.environ.get("ENGINELIB_KILL_DIR", shm if shm.is_dir() else tmp_path))
    work = Path(os.path.realpath(base)) / f"kill-{os.getpid()}-{tmp_path.name}"
    work.mkdir(parents=True)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.kill_driver", str(work / "s"), str(KILLS), "11"],
            cwd=REPO, capture_output=True, text=True, timeout=1500,
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(REPO)},
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    say(request, f"kill loop: {counts['kills']} kills in {counts['runs']} runs "
        f"(by operation {counts['by_op']}; {counts['crash_point_kills']} at crash points, "
        f"{counts['random_kills']} at random moments); stores that neither open nor repair "
        f"{counts['stores_unopenable']}, repaired {counts['repaired']}, committed documents "
        f"lost {counts['documents_lost']}, integrity problems {len(counts['problems'])}, "
        f"raw tracebacks {len(counts['raw'])}, failed runs {counts['failed_ops']}")
    assert counts["raw"] == []
    assert counts["kills"] >= KILLS
    assert set(counts["by_op"]) == {"ingest", "delete", "snapshot", "reindex"}
    assert counts["stores_unopenable"] == 0
    assert counts["documents_lost"] == 0
    assert counts["problems"] == []
    assert counts["failed_ops"] == 0


def test_orphan_tantivy_delete_files_do_not_wedge_the_store(tmp_path: Path) -> None:
    """What a writer killed between writing a delete file and publishing meta.json leaves:
    the next commit reaching that opstamp used to fail with FileAlreadyExists, forever."""
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(2, f"t{i}")) for i in range(6)])
    store.close()
    folder = path / "indexes" / "text" / "tantivy"
    meta = json.loads((folder / "meta.json").read_text())
    segment = meta["segments"][0]["segment_id"].replace("-", "")
    opstamp = int(meta["opstamp"])
    orphans = [folder / f"{segment}.{n}.del" for n in range(opstamp, opstamp + 200)]
    orphans.append(folder / ("0" * 32 + ".idx"))  # a half-written segment nobody published
    for orphan in orphans:
        orphan.write_bytes(b"\0" * 16)
    store = open_test_store(path)
    store.delete_document("d1")
    store.ingest_documents([doc("d1", paragraphs(3, "again"))])
    store.delete_document("d2")
    assert store.check().ok
    store.close()
    # What remains of those names is a file tantivy wrote and published itself since.
    meta = json.loads((folder / "meta.json").read_text())
    published = {f"{seg['segment_id'].replace('-', '')}.{seg['deletes']['opstamp']}.del"
                 for seg in meta["segments"] if seg.get("deletes")}
    assert {o.name for o in orphans if o.exists()} <= published


def test_half_written_tantivy_segment_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(2, f"t{i}")) for i in range(4)])
    store.close()
    for segment_file in (path / "indexes" / "text" / "tantivy").glob("*.term"):
        segment_file.write_bytes(segment_file.read_bytes()[:7])  # cut short
    store = open_test_store(path)
    assert store.search("paragraph", strategy="fulltext", answerability_threshold=None).hits
    assert store.check().ok
    store.close()


# -- disk full -----------------------------------------------------------------------------


@pytest.mark.parametrize("step", COMMIT_STEPS)
def test_disk_full_at_each_commit_step(tmp_path: Path, step: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC injected where each step writes: the commit happens whole and is reported,
    or does not happen and is reported; the next open is clean."""
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents(_docs("base", 3, 30))
    monkeypatch.setenv(ENOSPC_VAR, step)
    try:
        report = store.ingest_documents(_docs("new", 4, 30), batch_size=2)
        committed = set(report.added)
    except DiskFullError as exc:
        assert exc.report is not None and "free some space" in str(exc)
        committed = set(exc.report.added)  # type: ignore[attr-defined]
    finally:
        monkeypatch.delenv(ENOSPC_VAR)
        try:
            store.close()
        except DiskFullError:
            pass
    store = open_test_store(path)
    stored = {d["document_id"] for d in store._catalog.list_documents()}
    assert {d for d in stored if d.startswith("new")} == committed
    assert store.check().ok
    assert not list((path / "indexes" / "vectors").glob(".tmp-gen-*"))
    store.close()


# Mounting needs root: skipped only for a developer who is not, off CI (the injected ENOSPC
# test above covers every commit step there). CI runs as root, and a root that cannot mount
# fails the test below rather than hiding it.
NEEDS_ROOT_MOUNT = pytest.mark.skipif(
    (os.geteuid() != 0 or shutil.which("mount") is None) and not os.environ.get("CI"),
    reason="a real small file system needs root and mount")


@NEEDS_ROOT_MOUNT
def test_real_disk_full_on_a_tiny_file_system(tiny_disk: Path | None,
                                              request: pytest.FixtureRequest) -> None:
    assert tiny_disk is not None, "could not mount an 8 MB tmpfs: the real disk-full test did not run"
    outcomes = {"committed whole": 0, "refused, reported": 0, "partly (earlier batches)": 0}
    for free_kb in range(150, 2700, 300):
        for entry in tiny_disk.iterdir():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        store = enginelib.open(tiny_disk / "s", embedder=HashingEmbedder(32))
        store.ingest_documents(_docs("base", 5, 50))
        store.close()
        stat = os.statvfs(tiny_disk)
        filler = stat.f_bavail * stat.f_frsize - free_kb * 1024
        if filler > 0:
            (tiny_disk / "filler").write_bytes(b"\0" * filler)
        store = enginelib.open(tiny_disk / "s", embedder=HashingEmbedder(32))
        try:
            report = store.ingest_documents(_docs("new", 40), batch_size=10)
            committed = set(report.added)
            outcomes["committed whole"] += 1
        except DiskFullError as exc:
            committed = set(exc.report.added)  # type: ignore[attr-defined]
            outcomes["partly (earlier batches)" if committed else "refused, reported"] += 1
        try:
            store.close()
        except DiskFullError:
            pass
        (tiny_disk / "filler").unlink(missing_ok=True)
        store = enginelib.open(tiny_disk / "s", embedder=HashingEmbedder(32))
        stored = {d["document_id"] for d in store._catalog.list_documents()}
        assert {d for d in stored if d.startswith("new")} == committed, free_kb
        assert store.check().ok
        store.close()
        assert not list((tiny_disk / "s" / "indexes" / "vectors").glob(".tmp-gen-*"))
    say(request, f"disk full on an 8 MB tmpfs: {outcomes}; reported == committed every time")


def test_leftover_temporary_generations_are_cleaned_at_open(tmp_path: Path) -> None:
    path = tmp_path / "s"
    open_test_store(path).close()
    leftover = path / "indexes" / "vectors" / ".tmp-gen-00000009-deadbeef"
    leftover.mkdir(parents=True)
    (leftover / "vectors.npy").write_bytes(b"half")
    stray = path / ".manifest.json.abc123.tmp"
    stray.write_bytes(b"{")
    open_test_store(path).close()
    assert not leftover.exists() and not stray.exists()


# -- readers and writers -------------------------------------------------------------------

_IDLE_READER = textwrap.dedent(
    """
    import sys, time
    import enginelib
    store = enginelib.open(sys.argv[1], embedder=enginelib.HashingEmbedder(64), read_only=True)
    store.search("pads", answerability_threshold=None)
    store.get_document("d1"); store.show("d1"); store.history("d1"); store.stats()
    print("idle", flush=True)
    time.sleep(120)
    """
)


def test_idle_reader_in_another_process_does_not_block_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(2)) for i in range(3)])
    store.close()
    reader = subprocess.Popen([sys.executable, "-c", _IDLE_READER, str(path)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "idle"
        store = open_test_store(path)
        # The writer gives the catalog 1 s: a reader holding it would make this raise
        # StoreLockedError instead of committing.
        store._catalog.lock_timeout = 1.0
        try:
            report = store.ingest_documents([doc("new", paragraphs(2))])
            store.delete_document("d0")
        except StoreLockedError as exc:
            pytest.fail(f"an idle reader blocked the writer: {exc}")
        assert report.added == ("new",)
        store.close()
    finally:
        reader.kill()
        reader.wait()
        if reader.stdout is not None:
            reader.stdout.close()


def _same_results(a: enginelib.Store, b: enginelib.Store) -> None:
    for query, options in (("brake pads torque", {}), ("rotor", {"strategy": "fulltext"}),
                           ("caliper fluid", {"strategy": "vector"}),
                           ("wear", {"filters": {"domain": "d1"}})):
        left = a.search(query, answerability_threshold=None, **options)
        right = b.search(query, answerability_threshold=None, **options)
        assert [(h.document_id, h.chunk_index, h.scores.fused) for h in left.hits] == \
               [(h.document_id, h.chunk_index, h.scores.fused) for h in right.hits]
    assert a.get_document("d1")["content"] == b.get_document("d1")["content"]


def test_store_on_a_read_only_mount_answers_the_same(tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(3, f"topic{i}"), metadata={"domain": f"d{i % 2}"})
                            for i in range(8)])
    store.close()
    with read_only_copy(path, tmp_path / "media") as (medium, how, enforced):
        # As root, chmod does not stop writes: only a mount makes the medium read-only.
        say(request, f"read-only medium: {how}" + ("" if enforced else " (not enforced for root)"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # reading logs nothing: no warning yet
            copy = enginelib.open(medium, embedder=HashingEmbedder(64), read_only=True)
            assert copy.get_document("d1")["content"]
            assert copy.history("d1")
        original = enginelib.open(path, embedder=HashingEmbedder(64), read_only=True)
        original_chunks = maintenance.check(path).facts["chunks"]
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            _same_results(original, copy)  # the first search says it goes unlogged, once
        unlogged = [w for w in said if "query log" in str(w.message)]
        assert len(unlogged) == (1 if enforced else 0), [str(w.message) for w in said]
        copy.close()
        original.close()
        if enforced:
            # check takes no lock where none can be made (nor can any writer be): it said
            # "Read-only file system (.writer.lock) ... open with read_only=True"
            report = maintenance.check(medium)
            assert report.ok and report.facts["locked"] is False, report.problems
            assert report.facts["chunks"] == original_chunks
            checked = CliRunner().invoke(main, ["check", "--store", str(medium)])
            assert checked.exit_code == 0 and "is healthy" in checked.output, checked.output
            assert not (medium / ".writer.lock").exists()
            assert not (medium / "querylog").exists()
            with pytest.raises(EngineError):  # writing there is refused with a typed error
                enginelib.open(medium, embedder=HashingEmbedder(64))
            denied = CliRunner().invoke(main, ["repair", "--store", str(medium)])
            assert denied.exit_code == 2 and "Read-only file system" in denied.output


def test_reader_query_logs_stay_bounded(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc("d1", paragraphs(2))])
    store.close()
    log = QueryLog(path, writable=False)
    entry = {"query_text": "pads " * 20, "strategy": "hybrid", "filters": None, "status": "ok",
             "result_count": 3, "chunks_retrieved": 3, "reranked_count": 0, "latency_ms": 1.0}
    for _ in range(40):  # about 3x what one file holds
        for _ in range(256):
            log._buffer.append((dict(entry), [0, 1, 2]))
        log.flush(None)  # type: ignore[arg-type]  # a reader never touches the catalog
    files = list((path / "querylog").glob("pending-*"))
    assert 1 <= len(files) <= 2
    assert sum(f.stat().st_size for f in files) <= 2 * MAX_PENDING_BYTES + 256 * 1024
    store = open_test_store(path)  # imports at most MAX_IMPORT_BYTES, drops the rest
    assert not list((path / "querylog").glob("pending-*"))
    logged = store._catalog.con.execute("SELECT count(*) FROM query_log").fetchone()
    assert logged is not None and 0 < logged[0] <= MAX_IMPORT_BYTES // 100
    store.close()


def test_foreign_things_in_the_query_log_folder_do_not_stop_a_writer(tmp_path: Path) -> None:
    """A folder named like a reader's pending file made every writer open fail ("Is a
    directory"), wedging the store for writes until someone found and removed it."""
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(2))])
    with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as reader:
        reader.search("pads", answerability_threshold=None)  # a real pending file beside them
    folder = path / "querylog"
    (folder / "pending-1.jsonl").mkdir()
    (folder / "pending-2.importing").mkdir()
    for _ in range(2):
        with open_test_store(path) as store:
            logged = store._catalog.con.execute("SELECT count(*) FROM query_log").fetchone()
            assert logged is not None and logged[0] >= 1  # the reader's entry came in
    assert (folder / "pending-1.jsonl").is_dir() and (folder / "pending-2.importing").is_dir()


_ODD_LOG_LINES = [
    "5", "[1]", '{"entry": 5, "labels": []}', '{"entry": {}, "labels": []}',
    '{"entry": {"query_text": "q", "latency_ms": "fast"}, "labels": []}',
    '{"entry": {"query_text": "q", "strategy": "hybrid", "filters": null, "status": "ok", '
    '"result_count": 1e30, "chunks_retrieved": 1, "reranked_count": 0, "latency_ms": 1.0, '
    '"created_at": "yesterday"}, "labels": ["a"]}',
    '{"entry": {"query_text": "q", "strategy": "hybrid", "filters": null, "status": "ok", '
    '"result_count": 1, "chunks_retrieved": 1, "reranked_count": 0, "latency_ms": Infinity, '
    '"created_at": "2024-01-01T00:00:00+05:00"}, "labels": []}',
    '{"entry": {"query_text": "q", "strategy": "hybrid", "filters": null, "status": "ok", '
    '"result_count": 1, "chunks_retrieved": 1, "reranked_count": 0, "latency_ms": 1.0}, '
    '"labels": [100000000000000000000000000000]}',
    # what the catalog refuses, failing the whole import: a lone surrogate in a text or the
    # filters, a date past year 9999 once made UTC, JSON nested past Python's recursion limit
    '{"entry": {"query_text": "q\\ud800", "strategy": "hybrid", "filters": null, "status": '
    '"ok", "result_count": 1, "chunks_retrieved": 1, "reranked_count": 0, "latency_ms": 1.0}, '
    '"labels": []}',
    '{"entry": {"query_text": "q", "strategy": "hybrid", "filters": {"tag": "\\udc80"}, '
    '"status": "ok", "result_count": 1, "chunks_retrieved": 1, "reranked_count": 0, '
    '"latency_ms": 1.0}, "labels": []}',
    '{"entry": {"query_text": "q", "strategy": "hybrid", "filters": null, "status": "ok", '
    '"result_count": 1, "chunks_retrieved": 1, "reranked_count": 0, "latency_ms": 1.0, '
    '"created_at": "9999-12-31T23:00:00-05:00"}, "labels": []}',
    "[" * 100_000,
]


def test_odd_lines_in_a_readers_query_log_are_skipped(tmp_path: Path) -> None:
    """One line not shaped like a logged search (another version's reader, a hand edit) made
    `enginelib queries` fail ("unexpected TypeError ... this is a bug in enginelib") and
    every writer's open fail (KeyError: 'query_text'; a bad timestamp aborted the catalog's
    transaction; a lone surrogate, a date out of range or JSON nested too deep still did,
    as a StoreError blaming two threads, OverflowError or RecursionError), the file coming
    back at each open: the store was wedged for writes."""
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(2))])
    with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as reader:
        reader.search("pads", answerability_threshold=None)  # one good line among them
    pending = next((path / "querylog").glob("pending-*.jsonl"))
    pending.write_text(pending.read_text(encoding="utf-8") + "\n".join(_ODD_LOG_LINES) + "\n",
                       encoding="utf-8")
    for as_json in ([], ["--json"]):
        shown = CliRunner().invoke(main, ["queries", "--store", str(path), *as_json])
        assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)[0]["query_text"] == "pads"
    assert len(json.loads(shown.output)) == 1
    for _ in range(2):
        with open_test_store(path) as store:
            logged = store._catalog.con.execute("SELECT query_text FROM query_log").fetchall()
            assert logged == [("pads",)]
    assert not list((path / "querylog").glob("pending-*"))


@pytest.mark.parametrize("where", ["indexes", "indexes/vectors", "indexes/text"])
def test_a_file_where_the_index_folders_belong_is_moved_aside_and_rebuilt(tmp_path: Path,
                                                                           where: str) -> None:
    """Every writer's open failed with "Not a directory" (repair too): a wedge."""
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(2))])
    target = path / where
    shutil.rmtree(target)
    target.write_text("not an index")
    with pytest.warns(RuntimeWarning, match="rebuilt"):
        store = open_test_store(path)
    with store:
        assert store.check().ok and store.search("pads", answerability_threshold=None).hits
    (aside,) = target.parent.glob(f"{target.name}.not-a-folder-*")
    assert aside.read_text() == "not an index" and target.is_dir()


def test_a_folder_where_the_writer_lock_belongs_is_named_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(2))])
    (path / ".writer.lock").unlink()
    (path / ".writer.lock").mkdir()
    with pytest.raises(enginelib.StoreError, match="is a folder where enginelib keeps its writer lock"):
        open_test_store(path)
    with enginelib.open(path, embedder=HashingEmbedder(64), read_only=True) as reader:
        assert reader.search("pads", answerability_threshold=None).hits  # readers take no lock
    (path / ".writer.lock").rmdir()
    open_test_store(path).close()


@pytest.mark.parametrize(("content", "what"), [
    ("[1, 2]", "a JSON list, not an object"),
    ('{"embedding_model": "x"', "not JSON"),
    ('{"embedding_model": "hashing-16"}', "'embedding_dim' should be int, is missing"),
    (None, "'embedding_dim' should be int, is str '16'"),
    (None, "'generation' should be int, is bool True"),
])
def test_a_damaged_manifest_says_so_and_what_to_put_back(tmp_path: Path, content: str | None,
                                                          what: str) -> None:
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(2))])
    manifest = json.loads((path / "manifest.json").read_text())
    if content is None:  # one field of the real manifest with the wrong JSON type
        field = "embedding_dim" if "str" in what else "generation"
        manifest[field] = "16" if field == "embedding_dim" else True
        content = json.dumps(manifest)
    (path / "manifest.json").write_text(content)
    for read_only in (True, False):
        with pytest.raises(enginelib.StoreError, match="is damaged") as info:
            enginelib.open(path, embedder=HashingEmbedder(16), read_only=read_only)
        assert what in str(info.value) and "snapshots/NAME/manifest.json" in str(info.value)
    out = _cli("search", "pads", "--store", str(path))
    assert out.returncode == 2 and "is damaged" in out.stderr and "bug" not in out.stderr


@pytest.mark.parametrize(("edit", "error", "what"), [
    ({"vector_backend": "faiss"}, IncompatibleStoreError,
     "names the vector_backend 'faiss', which this enginelib does not have"),
    ({"text_backend": "lucene"}, IncompatibleStoreError, "names the text_backend 'lucene'"),
    ({"embedding_dim": 10**12}, StoreError, "'embedding_dim' is 1,000,000,000,000, not a vector"),
    ({"index_options": {"vector": 5}}, StoreError,
     "field 'index_options': index_options['vector'] must be a mapping"),
    ({"index_options": {"vector": {"M": "x"}}}, StoreError, "['M'] must be an integer"),
    ({"chunking": {"max_tokens": "x"}}, StoreError,
     "field 'chunking': chunking max_tokens must be an int"),
])
def test_a_manifest_value_no_store_has_is_named_by_every_open(
        tmp_path: Path, edit: dict[str, object], error: type[Exception], what: str) -> None:
    """Right JSON type, impossible value: open, check and repair failed with KeyError: 'faiss'
    (the CLI: 'this is a bug in enginelib'), TypeError, numpy's 'cannot reshape array', or
    an InvalidInputError that named no file; the manifest is left as the user made it."""
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_documents([doc("d1", paragraphs(2))])
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(edit)
    (path / "manifest.json").write_text(json.dumps(manifest))
    edited = (path / "manifest.json").read_bytes()
    for read_only in (True, False):
        with pytest.raises(error) as info:
            enginelib.open(path, embedder=HashingEmbedder(64), read_only=read_only)
        assert str(info.value).startswith(f"{path / 'manifest.json'} ")
        assert what in str(info.value)
    with pytest.raises(error, match="manifest.json"):
        maintenance.check(path)
    for command in ("check", "repair", "search"):
        out = CliRunner().invoke(main, [command, *(["pads"] if command == "search" else []),
                                        "--store", str(path)])
        assert out.exit_code == 2 and what in out.output and "bug" not in out.output, out.output
    assert (path / "manifest.json").read_bytes() == edited


def test_the_manifest_knows_every_backend_by_its_name() -> None:
    from enginelib import manifest
    from enginelib.indexes import TEXT_BACKENDS, VECTOR_BACKENDS

    assert set(manifest.VECTOR_BACKEND_NAMES) == set(VECTOR_BACKENDS)
    assert set(manifest.TEXT_BACKEND_NAMES) == set(TEXT_BACKENDS)


def test_files_and_folders_follow_the_umask(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, sys
        os.umask(0o027)
        import enginelib
        from tests.helpers import doc, paragraphs
        store = enginelib.open(sys.argv[1], embedder=enginelib.HashingEmbedder(16))
        store.ingest_documents([doc("a", paragraphs(3)), doc("b", paragraphs(2))])
        store.delete_document("b")
        store.create_snapshot("one")
        store.close()
        """
    )
    path = tmp_path / "s"
    subprocess.run([sys.executable, "-c", script, str(path)], cwd=REPO, check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    modes = {p.relative_to(path): p.stat().st_mode & 0o777 for p in [path, *path.rglob("*")]}
    wrong = {str(p): oct(m) for p, m in modes.items()
             if m != (0o750 if (path / p).is_dir() else 0o640)}
    assert wrong == {}


# -- a damaged catalog file ------------------------------------------------------------------


def garble_metadata_block(catalog: Path) -> None:
    """Noise over the block holding the catalog's metadata (not a torn write: the live
    metadata itself is gone, so no mend can bring it back)."""
    header = active_header(catalog)
    assert header is not None
    noise = random.Random(7).randbytes(header.block_size - 8)
    with open(catalog, "r+b") as handle:
        handle.seek(header.metadata_location + 8)
        handle.write(noise)


def test_a_damaged_catalog_says_so_and_its_snapshots_stay_searchable(tmp_path: Path) -> None:
    """A catalog whose metadata is gone (media damage, not a torn checkpoint, which the
    next open mends: tests/test_catalog_mend.py): the open says what is damaged, that it
    cannot be mended, and where to read."""
    path = tmp_path / "s"
    with enginelib.open(path, embedder=HashingEmbedder(16)) as store:
        store.ingest_documents([doc(f"d{i}", f"brake pads rotor {i} " * 30) for i in range(5)])
        name = store.create_snapshot().name
    catalog = path / "catalog.duckdb"
    garble_metadata_block(catalog)
    with pytest.raises(enginelib.CorruptStoreError, match="damaged") as info:
        enginelib.open(path, embedder=HashingEmbedder(16))
    assert "--snapshot NAME" in str(info.value) and info.value.path == str(catalog)
    with enginelib.open(path, embedder=HashingEmbedder(16), snapshot=name) as snapshot:
        hits = snapshot.search("brake pads", answerability_threshold=None).hits
        assert {h.document_id for h in hits} == {f"d{i}" for i in range(5)}
    out = subprocess.run([sys.executable, "-m", "enginelib.cli.main", "search", "brake",
                          "--store", str(path)], cwd=REPO, capture_output=True, text=True,
                         timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 2 and "damaged" in out.stderr and "Traceback" not in out.stderr


def _damaged_store(path: Path) -> tuple[str, int]:
    """Five documents, a snapshot, one more document, then a garbled catalog block;
    returns the snapshot's name and the generation the store had reached."""
    with enginelib.open(path, embedder=HashingEmbedder(16)) as store:
        store.ingest_documents([doc(f"d{i}", f"brake pads rotor {i} " * 30) for i in range(5)])
        name = store.create_snapshot().name
        store.ingest_documents([doc("late", "torque wrench calibration " * 20)])
        reached = store.generation
    garble_metadata_block(path / "catalog.duckdb")
    return name, reached


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "enginelib.cli.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def _assert_restored_from(path: Path, reached: int) -> None:
    with enginelib.open(path, embedder=HashingEmbedder(16)) as store:
        assert store.check().ok, store.check().problems
        assert {d["document_id"] for d in store.list_documents()} == {f"d{i}" for i in range(5)}
        hits = store.search("brake pads rotor", answerability_threshold=None, limit=20).hits
        assert {h.document_id for h in hits} == {f"d{i}" for i in range(5)}
        assert store.generation > reached  # past every generation the damaged store used
        store.ingest_documents([doc("late", "torque wrench calibration " * 20)])
        top = store.search("torque wrench", strategy="fulltext", answerability_threshold=None)
        assert top.hits[0].document_id == "late"


def test_a_damaged_catalog_starts_again_from_a_snapshot_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s"
    name, reached = _damaged_store(path)
    out = _cli("snapshot", "restore", name, "--store", str(path))
    assert out.returncode == 0, out.stderr
    kept = list(path.glob("catalog.damaged-*.duckdb"))
    assert len(kept) == 1 and str(kept[0].name) in out.stdout and "ingest them again" in out.stdout
    with pytest.raises(enginelib.CorruptStoreError):  # the kept file is the damaged one, whole
        Catalog(kept[0], 16, read_only=True)
    _assert_restored_from(path, reached)
    # the same through the API, on a store damaged again: the report says where the file went
    garble_metadata_block(path / "catalog.duckdb")
    report = snapshots.restore_snapshot(path, name)
    assert report.damaged_catalog and Path(report.damaged_catalog).exists()
    assert len(list(path.glob("catalog.damaged-*.duckdb"))) == 2


@pytest.mark.parametrize("step", ["rescue_after_derived_removed", "rescue_after_damaged_kept"])
def test_a_restore_over_a_damaged_catalog_killed_midway_runs_again(tmp_path: Path, step: str) -> None:
    path = tmp_path / "s"
    name, reached = _damaged_store(path)
    killed = _cli("snapshot", "restore", name, "--store", str(path),
                  env={"ENGINELIB_CRASH_AT": step})
    assert killed.returncode == -9, killed.stderr
    # until the fresh catalog's rename the damaged one is still the store's
    with pytest.raises(enginelib.CorruptStoreError):
        enginelib.open(path, embedder=HashingEmbedder(16))
    out = _cli("snapshot", "restore", name, "--store", str(path))
    assert out.returncode == 0, out.stderr
    assert not list(path.glob(".catalog.duckdb.*.tmp*"))  # the killed run's fresh file is gone
    _assert_restored_from(path, reached)


def test_a_missing_catalog_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    """A writable open used to start an empty catalog in place of a deleted one: the store
    silently had no documents, and its indexes were emptied to match at the next sync."""
    path = tmp_path / "s"
    name, reached = _damaged_store(path)
    (path / "catalog.duckdb").unlink()
    for read_only in (True, False):
        with pytest.raises(enginelib.CorruptStoreError, match="missing") as info:
            enginelib.open(path, embedder=HashingEmbedder(16), read_only=read_only)
        assert "snapshot restore NAME" in str(info.value)
    out = _cli("ingest", str(REPO / "demo"), "--store", str(path), "--no-progress",
               env={"ENGINELIB_EMBEDDER": "hashing-16"})
    assert out.returncode == 2 and "missing" in out.stderr
    assert not (path / "catalog.duckdb").exists()  # nothing was started in its place
    restored = _cli("snapshot", "restore", name, "--store", str(path))
    assert restored.returncode == 0 and "was missing" in restored.stdout, restored.stderr
    _assert_restored_from(path, reached)
    # a store that never committed may lose its (empty) catalog: the next open makes one
    fresh = tmp_path / "fresh"
    enginelib.open(fresh, embedder=HashingEmbedder(16)).close()
    (fresh / "catalog.duckdb").unlink()
    with enginelib.open(fresh, embedder=HashingEmbedder(16)) as store:
        assert store.list_documents() == []


def test_an_empty_catalog_file_is_started_again_only_when_nothing_was_committed(
        tmp_path: Path) -> None:
    """A new store's creation killed after DuckDB made its file but before it wrote the
    headers leaves an empty file: every open failed with DuckDB's "not a valid DuckDB
    database file" and the store was wedged for good."""
    fresh = tmp_path / "fresh"
    enginelib.open(fresh, embedder=HashingEmbedder(16)).close()
    (fresh / "catalog.duckdb").write_bytes(b"")
    with pytest.raises(enginelib.StoreError, match="creation was killed.*starts it again"):
        enginelib.open(fresh, embedder=HashingEmbedder(16), read_only=True)
    with enginelib.open(fresh, embedder=HashingEmbedder(16)) as store:
        store.ingest_documents([doc("d", "brake pads rotor " * 20)])
    with enginelib.open(fresh, embedder=HashingEmbedder(16), read_only=True) as store:
        assert [d["document_id"] for d in store.list_documents()] == ["d"]
    # committed documents were in the file: never started again, the snapshots are the way back
    path = tmp_path / "s"
    name, reached = _damaged_store(path)
    (path / "catalog.duckdb").write_bytes(b"\0" * 100)
    (path / "catalog.duckdb.wal").unlink(missing_ok=True)
    for read_only in (True, False):
        with pytest.raises(enginelib.CorruptStoreError, match="empty .shorter than") as info:
            enginelib.open(path, embedder=HashingEmbedder(16), read_only=read_only)
        assert "snapshot restore NAME" in str(info.value)
    assert (path / "catalog.duckdb").stat().st_size == 100
    restored = _cli("snapshot", "restore", name, "--store", str(path))
    assert restored.returncode == 0, restored.stderr
    assert len(list(path.glob("catalog.damaged-*.duckdb"))) == 1
    _assert_restored_from(path, reached)


def test_a_store_without_its_manifest_says_what_to_put_back(tmp_path: Path) -> None:
    path = tmp_path / "s"
    name, _ = _damaged_store(path)
    (path / "catalog.duckdb").unlink()
    assert _cli("snapshot", "restore", name, "--store", str(path)).returncode == 0
    (path / "manifest.json").unlink()
    for read_only in (True, False):  # never "no store here: create one" over a live catalog
        with pytest.raises(enginelib.StoreError, match="no manifest.json"):
            enginelib.open(path, embedder=HashingEmbedder(16), read_only=read_only)
    out = _cli("init", "--store", str(path))
    assert out.returncode == 2 and "no manifest.json" in out.stderr
    # the snapshot's manifest has the same settings: put back, a repair catches up
    shutil.copy(path / "snapshots" / name / "manifest.json", path / "manifest.json")
    assert _cli("repair", "--store", str(path)).returncode == 0
    with enginelib.open(path, embedder=HashingEmbedder(16)) as store:
        assert store.check().ok and len(store.list_documents()) == 5


_FILE_SIZE_LIMIT_CHILD = """
import json, resource, signal, sys
import enginelib
from enginelib import HashingEmbedder
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
store = enginelib.open(sys.argv[1], embedder=HashingEmbedder(64))
resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
calls = {"restore": lambda: store.restore_snapshot("a"),
         "update": lambda: store.update_document("d0", tags=["x"]),
         "reindex": lambda: store.reindex(), "repair": lambda: store.repair()}
outcomes = {}
for name in sys.argv[2].split(","):
    try:
        calls[name]()
        outcomes[name] = None
    except BaseException as exc:
        outcomes[name] = [f"{type(exc).__module__}.{type(exc).__name__}", str(exc)]
print(json.dumps(outcomes))
"""


def test_a_catalog_write_past_the_file_size_limit_is_a_full_disk(tmp_path: Path) -> None:
    # DuckDB's "Could not write file .../catalog.duckdb.wal: File too large" (EFBIG: a file
    # system's largest file, a process's RLIMIT_FSIZE) came out as a BackendError saying to
    # run check and repair, where the same errno from a file write is a DiskFullError
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(6, f"topic{i}")) for i in range(4)])
    store.create_snapshot("a")
    store.delete_document("d1")
    store.close()
    run = subprocess.run([sys.executable, "-c", _FILE_SIZE_LIMIT_CHILD, str(path),
                          "restore,update,reindex"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    outcomes = json.loads(run.stdout.splitlines()[-1])
    for name, (kind, message) in outcomes.items():
        assert kind == "enginelib.errors.DiskFullError", (name, message)
        assert "free some space" in message and "File too large" not in message, (name, message)
    store = open_test_store(path)
    try:
        assert {d["document_id"] for d in store.list_documents()} == {"d0", "d2", "d3"}
        assert store.get_document("d0")["tags"] in ([], None)
        assert store.check().ok
    finally:
        store.close()


def test_an_index_write_past_the_file_size_limit_is_a_full_disk(tmp_path: Path) -> None:
    # Tantivy's "An IO error occurred: 'File too large (os error 27) at path ...'" (or "No
    # space left on device (os error 28)") came out as a BackendError saying to run repair,
    # which fails the same way until the disk has room
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(6, f"topic{i}")) for i in range(4)])
    store.close()
    run = subprocess.run([sys.executable, "-c", _FILE_SIZE_LIMIT_CHILD, str(path), "repair"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    kind, message = json.loads(run.stdout.splitlines()[-1])["repair"]
    assert kind == "enginelib.errors.DiskFullError", message
    assert "free some space" in message and "os error" not in message, message
    store = open_test_store(path)
    try:
        assert len(store.list_documents()) == 4
        assert store.search("pads rotor", answerability_threshold=None).hits
        assert store.check().ok
    finally:
        store.close()
