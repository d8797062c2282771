"""Other processes: one writer at a time, readers keep searching while a writer commits."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import enginelib
from enginelib import maintenance
from enginelib.errors import StoreLockedError
from tests.helpers import doc, open_test_store, paragraphs

REPO = Path(__file__).resolve().parent.parent

_READER = textwrap.dedent(
    """
    import json, sys, time
    import enginelib
    from enginelib import HashingEmbedder
    store = enginelib.open(sys.argv[1], embedder=HashingEmbedder(64), read_only=True)
    deadline = time.monotonic() + float(sys.argv[2])
    searches, errors, generations, problems = 0, 0, set(), []
    while time.monotonic() < deadline:
        for strategy in ("fulltext", "vector", "hybrid"):
            try:
                view = store.view()
                r = store.search("workshop manual section", strategy=strategy, limit=20,
                                 answerability_threshold=None)
                generations.add(store.generation)
                if store.view() is not view:
                    continue  # refreshed during the search: checked on the next round
                for hit in r.hits:
                    pos = view.positions([hit.label])[0]
                    record = view.record(int(pos)) if pos >= 0 else None
                    if record is None or record.content != hit.content or not hit.content:
                        problems.append(hit.label)
            except Exception as exc:  # any read error fails the test
                errors += 1
                problems.append(repr(exc))
            searches += 1
    store.close()
    print(json.dumps({"searches": searches, "errors": errors,
                      "generations": sorted(generations), "problems": problems[:5]}))
    """
)


def test_readers_search_while_a_writer_commits(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"d{i}", paragraphs(4, f"t{i}")) for i in range(10)])
    store.close()

    readers = [
        subprocess.Popen([sys.executable, "-c", _READER, str(path), "8"], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # communicate() below closes their pipes
    time.sleep(2.0)  # let the readers open and start searching
    writer = open_test_store(path)
    for round_ in range(6):
        # Replace half the documents (new content, so chunks change) and add new ones.
        writer.ingest_documents(
            [doc(f"d{i}", paragraphs(3 + (i + round_) % 5, f"r{round_}")) for i in range(0, 10, 2)]
            + [doc(f"new{round_}-{j}", paragraphs(2, "extra")) for j in range(3)],
            batch_size=4,
        )
        writer.persist()
        time.sleep(0.3)
    final_generation = writer.generation
    writer.close()

    for reader in readers:
        out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        assert report["errors"] == 0 and report["problems"] == [], report
        assert report["searches"] > 20
        # Readers moved forward through the writer's generations as it committed.
        assert len(report["generations"]) >= 2, report
        assert max(report["generations"]) <= final_generation


_HOLD_WRITER = textwrap.dedent(
    """
    import sys, time
    import enginelib
    store = enginelib.open(sys.argv[1], embedder=enginelib.HashingEmbedder(64))
    print("ready", flush=True)
    time.sleep(float(sys.argv[2]))
    store.close()
    """
)


def test_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s"
    open_test_store(path).close()
    with subprocess.Popen([sys.executable, "-c", _HOLD_WRITER, str(path), "6"], cwd=REPO,
                          stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError, match="another process is writing"):
            enginelib.open(path, embedder=enginelib.HashingEmbedder(64))
        # Readers are not blocked by the writer.
        reader = enginelib.open(path, embedder=enginelib.HashingEmbedder(64), read_only=True)
        assert reader.stats()["documents"] == 0
        reader.close()
        # A writer that waits gets the store once the holder is done.
        waited = enginelib.open(path, embedder=enginelib.HashingEmbedder(64), lock_timeout=30)
        waited.close()
        holder.wait(timeout=30)


def test_a_writer_whose_lock_file_was_removed_still_keeps_a_second_writer_out(
        tmp_path: Path) -> None:
    # a user clearing a "stale" .writer.lock while the writer ran let a second writer take a
    # new lock file and commit beside the first: the first's next save left the second's
    # chunk out of the vector index ("vector index lacks 1 catalog chunk(s)")
    from enginelib.core.layout import LOCK_NAME

    path = tmp_path / "s"
    open_test_store(path).close()
    with subprocess.Popen([sys.executable, "-c", _HOLD_WRITER, str(path), "4"], cwd=REPO,
                          stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        (path / LOCK_NAME).unlink()
        with pytest.raises(StoreLockedError, match="was removed while it wrote"):
            enginelib.open(path, embedder=enginelib.HashingEmbedder(64))
        with pytest.raises(StoreLockedError, match="was removed while it wrote"):
            maintenance.repair(path)
        # a writer that waits gets the store once the holder is done
        waited = enginelib.open(path, embedder=enginelib.HashingEmbedder(64), lock_timeout=30)
        try:
            waited.ingest_documents([enginelib.LoadedDocument(id="w1", text="pads rotor")])
            assert waited.check().ok
        finally:
            waited.close()
        holder.wait(timeout=30)


def test_a_long_holder_is_named_with_what_to_do_instead(tmp_path: Path) -> None:
    from filelock import FileLock

    from enginelib.core.layout import HOLDER_NAME, LOCK_NAME
    from enginelib.core.lock import acquire_writer_lock, clear_holder, note_holder

    root = tmp_path / "s"
    root.mkdir()
    held = FileLock(str(root / LOCK_NAME))  # a second flock on the file blocks, even in-process
    held.acquire()
    try:
        note_holder(root, "`enginelib serve` at http://127.0.0.1:1/", "upload there")
        with pytest.raises(StoreLockedError, match=r"held by `enginelib serve` at http://127\.0\.0\.1:1/ "
                           r"\(pid \d+\): upload there; searches can read it"):
            acquire_writer_lock(root, 0.0)
        # a note left by a holder that died says nothing: the plain message
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
        note = json.loads((root / HOLDER_NAME).read_text(encoding="utf-8"))
        (root / HOLDER_NAME).write_text(json.dumps({**note, "pid": int(gone.stdout)}),
                                        encoding="utf-8")
        with pytest.raises(StoreLockedError, match="another process is writing"):
            acquire_writer_lock(root, 0.0)
        clear_holder(root)  # not ours: left alone
        assert (root / HOLDER_NAME).exists()
    finally:
        held.release()


@pytest.mark.parametrize("read_only", [True, False])
def test_one_store_object_serves_many_threads(tmp_path: Path, read_only: bool) -> None:
    # a web app's thread pool sharing one Store: DuckDB refused a second concurrent call
    # ("connection is busy"), reported as a damaged store; about a quarter of searches failed
    import threading

    path = tmp_path / "s"
    with open_test_store(path) as writer:
        writer.ingest_documents([doc(f"d{i}", paragraphs(3, f"topic{i}")) for i in range(12)])
    store = enginelib.open(path, embedder=enginelib.HashingEmbedder(64), read_only=read_only)
    errors: list[str] = []
    totals: list[int] = []

    def search(worker: int) -> None:
        for j in range(25):
            try:
                response = store.search(f"topic{(worker + j) % 12} checking", limit=5,
                                        answerability_threshold=None)
                totals.append(response.total)
                store.get_document(f"d{j % 12}")
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=search, args=(i,)) for i in range(8)]
    if not read_only:  # a writer thread commits meanwhile
        threads.append(threading.Thread(target=lambda: [
            store.ingest_documents([doc(f"new{k}", paragraphs(2, f"added{k}"))]) for k in range(5)]))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    store.close()
    assert errors == [] and len(totals) == 8 * 25 and min(totals) > 0
