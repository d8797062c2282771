"""The job queue against unlucky or hostile input: odd file names, odd rows, odd timing."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from enginelib.cli.main import main
from enginelib.errors import InvalidInputError
from enginelib.jobs import DLQ, DONE, RUNNING, Worker, inbox
from enginelib.loaders import load_file
from tests.helpers import Clock, open_test_store, paragraphs

ENV = {"ENGINELIB_EMBEDDER": "hashing"}


def write(path: Path | bytes, text: str = "") -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text or paragraphs(2))


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_path_that_is_not_utf8_is_refused_naming_it(tmp_path: Path, where: str) -> None:
    """A file name with a Latin-1 byte was refused without naming the file (a folder of
    thousands: find it by hand); under such a folder, DuckDB's encoding error said to run
    `check` and `repair`, which find nothing."""
    src = tmp_path / "src"
    src.mkdir()
    write(src / "fine.md")
    odd = os.fsencode(src) + (b"/caf\xe9.txt" if where == "file" else b"/caf\xe9")
    if where == "folder":
        os.mkdir(odd)
        write(odd + b"/inside.txt")
    else:
        write(odd)
    shown = odd.decode("utf-8", "backslashreplace") + ("" if where == "file" else "/inside.txt")
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError) as caught:
            store.enqueue_paths(src)
        assert str(caught.value) == (
            f"{shown}: its path is not valid UTF-8, and the jobs table holds text: rename it "
            "(or leave it out with --exclude); nothing was queued")
        assert store.jobs().jobs() == []
        assert len(store.enqueue_paths(src, exclude=["caf*"])) == 1
    result = CliRunner().invoke(main, ["ingest", "--store", str(tmp_path / "store"), "--queue",
                                       str(src)], env=ENV)
    assert result.exit_code == 2 and f"Error: {shown}: its path is not valid UTF-8" in (
        result.output)


def test_a_file_whose_name_has_a_newline_is_named_on_one_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    write(src / "a\nb.md")
    result = CliRunner().invoke(main, ["ingest", "--store", str(tmp_path / "store"), "--queue",
                                       str(src)], env=ENV)
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {src}/a\\nb.md: its document id contains a control character ('\\n' at "
        "position 1): rename the file, or give the record another id; nothing was queued\n")


def test_a_delete_cancels_the_job_a_dead_worker_left_running(tmp_path: Path) -> None:
    """A worker killed after ingesting left its job RUNNING; the document was then deleted,
    and the job, taken back, ran again and brought the deleted document back: the delete
    sent only waiting (PENDING, FAILED) jobs to the DLQ. No worker can be running a job
    while the delete holds the store's one writer lock."""
    write(source := tmp_path / "brakes.md")
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        [job_id] = store.enqueue_paths(source)
        queue = store.jobs(clock=clock, lease_s=10)
        job = queue.claim("elsewhere:1:w")  # another machine's worker, killed mid-job
        assert job is not None
        store.ingest_documents(load_file(job["source"], doc_id=job["document_id"]))
        store.delete_document("brakes.md")
        [job] = queue.jobs()
        assert (job["status"], job["lease_owner"]) == (DLQ, None)
        assert "deleted after this job was queued" in job["last_error"]
        assert [(a["outcome"], a["finished_at"] is not None) for a in queue.attempts(job_id)] == [
            ("LOST", True)]
        clock.advance(3600)
        assert Worker(store, queue).run_until_idle() == []
        assert store.list_documents() == [] and queue.counts()[RUNNING] == 0


def test_a_newer_job_done_cancels_an_older_one_a_dead_worker_left_running(tmp_path: Path) -> None:
    """The same for an older upload of the document whose worker died: once its lease ran
    out it ran again, after the newer one, and put the replaced text back."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    write(first := tmp_path / "v1" / "pads.md", "# Pads\n\nVersion one of the pads text.")
    write(second := tmp_path / "v2" / "pads.md", "# Pads\n\nVersion two of the pads text.")
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        [old] = store.enqueue_paths(first)
        queue = store.jobs(clock=clock, lease_s=10)
        assert queue.claim("elsewhere:1:w") is not None  # another machine's, killed mid-job
        [new] = store.enqueue_paths(second)
        [outcome] = Worker(store, queue).run_until_idle()
        assert (outcome.job_id, outcome.status) == (new, DONE)
        clock.advance(3600)
        assert Worker(store, queue).run_until_idle() == []
        assert "Version two" in store.get_document("pads.md")["content"]
        older = [j for j in queue.jobs() if j["job_id"] == old][0]
        assert older["status"] == DLQ and f"job {new}" in older["last_error"]


@pytest.mark.slow  # ~3 s: six ingests, each reopening the catalog
def test_two_workers_on_one_store_in_two_threads_share_it_in_turn(tmp_path: Path) -> None:
    """Each pass of the second worker used the store's one DuckDB connection while the first
    was in it: DuckDB's raw "connection is busy" ended its run."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(6):
        write(src / f"f{i}.md", f"# File {i}\n\nText of file {i} about brakes and pads.")
    outcomes: list[object] = []
    errors: list[BaseException] = []
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(src)
        queue = store.jobs()

        def work() -> None:
            try:
                outcomes.extend(Worker(store, queue).run_until_idle())
            except BaseException as exc:  # noqa: BLE001 - the thread's failure is the finding
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert queue.counts()[DONE] == 6 and len(outcomes) == 6


def test_a_symbolic_link_named_directly_is_the_document_a_direct_ingest_makes(
    tmp_path: Path,
) -> None:
    """Queued, a link was resolved first: the document was named and titled after the
    target (real.md), a direct ingest of the same link after the link (link.md)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "src").mkdir()
    write(tmp_path / "data" / "real.md", "Real text about brakes and rotors.")
    (link := tmp_path / "src" / "link.md").symlink_to(tmp_path / "data" / "real.md")
    with open_test_store(tmp_path / "direct") as store:
        store.ingest_path(link)
        direct = [(d["document_id"], d["title"]) for d in store.list_documents()]
    with open_test_store(tmp_path / "queued") as store:
        store.enqueue_paths(link)
        Worker(store, store.jobs()).run_until_idle()
        queued = [(d["document_id"], d["title"]) for d in store.list_documents()]
        assert store.jobs().jobs()[0]["source"] == str(link)
    assert queued == direct == [("link.md", "link")]


def test_an_inbox_entry_with_a_relative_source_is_kept_aside_not_read_from_the_workers_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`drop` writes absolute paths; a hand-made entry's relative one was read from wherever
    the worker (serve) had been started: another file than meant, or five failed attempts."""
    write(source := tmp_path / "brakes.md")
    monkeypatch.chdir(tmp_path)
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        folder.mkdir()
        entry = {"source": source.name, "document_id": "a.md", "options": {}}
        (folder / "hand.json").write_text(json.dumps([entry]), encoding="utf-8")
        assert Worker(store, store.jobs()).run_until_idle() == []
        [kept] = json.loads((folder / "hand.bad").read_text(encoding="utf-8"))
        assert kept["error"] == "an entry's source 'brakes.md' is not an absolute path"
        assert store.list_documents() == []


@pytest.mark.parametrize(("paths", "message"), [
    (("",), "path is empty"),
    ((None,), "path must be a str or Path, got NoneType"),
    ((3,), "path must be a str or Path, got int"),
    ((b"/tmp",), "path must be a str or Path, got bytes"),
    ((["a.md"],), "path must be a str or Path, got list"),
    ((), "enqueue_paths needs at least one file or folder"),
])
def test_enqueue_paths_checks_its_paths_as_ingest_path_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: tuple[object, ...],
        message: str) -> None:
    # "" queued every file under the current folder (Path("") is "."); None, 3, bytes or a
    # list failed as bare TypeErrors from pathlib; no path at all queued nothing unsaid
    work = tmp_path / "work"
    work.mkdir()
    write(work / "private.md")
    monkeypatch.chdir(work)
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError, match=message):
            store.enqueue_paths(*paths)
        assert store.jobs().jobs() == []
        with pytest.raises(InvalidInputError, match="include must be a list of glob patterns"):
            store.enqueue_paths(work, include=None)


def test_jobs_for_paths_refuses_an_empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the route `ingest --queue` takes while another process holds the store (the inbox)
    from enginelib.jobs import jobs_for_paths

    monkeypatch.chdir(tmp_path)
    write(tmp_path / "private.md")
    for bad, message in (("", "path is empty"), (None, "path must be a str or Path")):
        with pytest.raises(InvalidInputError, match=message):
            jobs_for_paths([bad], {})  # type: ignore[list-item]


def test_a_read_only_stores_queue_is_listed_and_refuses_every_change(tmp_path: Path) -> None:
    # each change failed inside DuckDB: "Invalid Input Error: Cannot execute statement of
    # type UPDATE on database catalog which is attached in read-only mode!"
    import enginelib
    from enginelib.errors import ReadOnlyStoreError
    from enginelib.jobs import NewJob

    write(source := tmp_path / "brakes.md")
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(source)
        store.jobs().fail(store.jobs().claim("w") or {}, "w", "broken", permanent=True)
    reader = enginelib.open(tmp_path / "store", read_only=True)
    try:
        queue = reader.jobs()
        [job] = queue.jobs(status=DLQ)  # reading the DLQ is fine
        assert queue.counts()[DLQ] == 1
        changes = {
            "retry_dlq": queue.retry_dlq, "drop_dlq": queue.drop_dlq,
            "drop": lambda: queue.drop(job["job_id"]), "purge_done": queue.purge_done,
            "prune": queue.prune, "expire_leases": queue.expire_leases,
            "claim": lambda: queue.claim("w"),
            "enqueue": lambda: queue.enqueue([NewJob(str(source), "brakes.md", {})]),
            "run_once": Worker(reader, queue).run_once,
        }
        for name, change in changes.items():
            with pytest.raises(ReadOnlyStoreError, match="opened read-only .* open it without "
                                                         "read_only=True"):
                change()
            assert queue.counts()[DLQ] == 1, name
    finally:
        reader.close()


def test_tags_given_as_a_set_reach_the_document_as_tags(tmp_path: Path) -> None:
    # the set was stored in the jobs table as its str, "{'x', 'y'}", which the worker read
    # as one comma-separated string: the document was tagged "{'x'" and "'y'}"
    import datetime

    from enginelib.jobs import NewJob

    write(source := tmp_path / "brakes.md")
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(source, tags={"x", "y"}, entities=frozenset({"ACME"}),
                            metadata={"when": datetime.date(2024, 1, 2)})
        store.jobs().enqueue([NewJob(str(source), "other.md", {"tags": {"z", "w"}})])
        assert [o.status for o in Worker(store, store.jobs()).run_until_idle()] == [DONE, DONE]
        document = store.get_document("brakes.md")
        assert sorted(document["tags"]) == ["x", "y"]
        assert document["custom"] == {"when": "2024-01-02"}  # as a direct ingest stores it
        assert sorted(store.get_document("other.md")["tags"]) == ["w", "z"]


def test_tags_given_as_a_set_through_the_inbox_reach_the_document_as_tags(tmp_path: Path) -> None:
    from enginelib.jobs import NewJob

    write(source := tmp_path / "brakes.md")
    with open_test_store(tmp_path / "store") as store:
        inbox.drop(store.path, [NewJob(str(source), "brakes.md", {"tags": {"x", "y"}})])
        assert [o.status for o in Worker(store, store.jobs()).run_until_idle()] == [DONE]
        assert sorted(store.get_document("brakes.md")["tags"]) == ["x", "y"]


@pytest.mark.parametrize(("jobs", "message"), [
    ("brakes.md", "takes a list of NewJob, got str"),
    ([{"source": "brakes.md"}], "item 0 is a dict"),
    (None, "takes a list of NewJob, got NoneType"),
])
def test_enqueue_refuses_what_is_not_a_list_of_new_jobs(tmp_path: Path, jobs: object,
                                                         message: str) -> None:
    # AttributeError: 'str' object has no attribute 'max_attempts'
    from enginelib.jobs import NewJob

    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        with pytest.raises(InvalidInputError, match=message):
            queue.enqueue(jobs)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="kind 'zip' is not one of"):
            queue.enqueue([NewJob(str(tmp_path / "a.md"), "a.md", {}, kind="zip")])
        with pytest.raises(InvalidInputError, match="options must be a dict"):
            queue.enqueue([NewJob(str(tmp_path / "a.md"), "a.md", None)])  # type: ignore[arg-type]
        # a job id of the wrong kind found no row: [] as for a job never retried
        with pytest.raises(InvalidInputError, match="job_id must be an integer, got '1'"):
            queue.attempts("1")  # type: ignore[arg-type]
        assert queue.jobs() == []


def test_a_job_interrupted_by_ctrl_c_is_taken_back_by_the_same_worker(tmp_path: Path) -> None:
    """Ctrl-C in a notebook's run_until_idle() left the job RUNNING under the worker's own
    name, a live worker's: its next run_until_idle() ran nothing, the job held for the whole
    lease (300 s). Now handed back, it is taken back at the next pass as a lost attempt and
    runs at its retry."""
    import enginelib
    from enginelib import HashingEmbedder
    from enginelib.jobs import FAILED

    class Interrupted(HashingEmbedder):
        armed = True

        def embed(self, texts, progress=None):  # type: ignore[no-untyped-def]
            if Interrupted.armed:
                Interrupted.armed = False
                raise KeyboardInterrupt
            return super().embed(texts, progress)

    write(source := tmp_path / "brakes.md")
    clock = Clock()
    with enginelib.open(tmp_path / "store", embedder=Interrupted(16, name="hashing-16")) as store:
        store.enqueue_paths(source)
        queue = store.jobs(clock=clock)
        worker = Worker(store, queue)
        with pytest.raises(KeyboardInterrupt):
            worker.run_until_idle()
        assert worker.run_until_idle() == []  # the lost attempt waits for its retry
        [job] = queue.jobs()
        assert (job["status"], job["attempts"]) == (FAILED, 1)
        clock.advance(3600)
        assert [o.status for o in worker.run_until_idle()] == [DONE]
