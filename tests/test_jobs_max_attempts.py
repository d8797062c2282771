"""`ingest --queue --max-attempts`: the jobs it queues keep their attempts, catalog or inbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from enginelib.cli.main import main
from enginelib.jobs import DLQ, FAILED, NewJob, Worker, inbox
from tests.helpers import disk_full, open_test_store, paragraphs

ENV = {"ENGINELIB_EMBEDDER": "hashing"}


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=ENV)
    return result.exit_code, result.output


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    (path := tmp_path / "brakes.md").write_text("# Brakes\n\n" + paragraphs(2), encoding="utf-8")
    return path


def test_queued_jobs_take_the_attempts_asked_for(tmp_path: Path, source: Path) -> None:
    store = tmp_path / "store"
    assert run("ingest", "--store", str(store), "--queue", "--max-attempts", "2", str(source)) == (
        0, "queued 1 job(s) (catalog)\n")
    assert run("ingest", "--store", str(store), "--queue", str(source))[0] == 0
    code, out = run("jobs", str(store), "--json")
    assert code == 0
    assert [j["max_attempts"] for j in json.loads(out)["jobs"]] == [2, 5]


def test_a_job_queued_through_the_inbox_keeps_its_attempts_and_fails_into_the_dlq_by_them(
    tmp_path: Path, source: Path,
) -> None:
    with open_test_store(tmp_path / "store") as holder:  # the writer lock, as serve holds it
        code, out = run("ingest", "--store", str(holder.path), "--queue", "--max-attempts", "1",
                        str(source))
        assert (code, out) == (0, "queued 1 job(s) (inbox)\n")
        queue = holder.jobs(max_attempts=7)  # the worker's own setting: for jobs that do not say
        with disk_full():  # a failure worth retrying, as many times as the job may
            [outcome] = Worker(holder, queue).run_until_idle()
            assert (outcome.status, outcome.attempts) == (DLQ, 1)
            inbox.drop(holder.path, [NewJob(str(source), "other.md", {})])
            [outcome] = Worker(holder, queue).run_until_idle()
            assert outcome.status == FAILED
        assert [j["max_attempts"] for j in queue.jobs()] == [1, 7]


@pytest.mark.parametrize("value", [0, -1, "5", True, 1001, 2.0])
def test_an_inbox_entry_with_an_unusable_number_of_attempts_is_kept_aside_with_the_reason(
    tmp_path: Path, source: Path, value: object,
) -> None:
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        folder.mkdir()
        entry = {"source": str(source), "document_id": "a.md", "options": {}, "max_attempts": value}
        good = {"source": str(source), "document_id": "b.md", "options": {}}
        (folder / "hand.json").write_text(json.dumps([entry, good]), encoding="utf-8")
        outcomes = Worker(store, store.jobs()).run_until_idle()
        assert [o.source for o in outcomes] == [str(source)]
        [kept] = json.loads((folder / "hand.bad").read_text(encoding="utf-8"))
        assert "an entry's max_attempts must be" in kept["error"]


@pytest.mark.parametrize(("args", "said"), [
    (["--queue", "--max-attempts", "0"], "0 is not in the range 1<=x<=1000"),
    (["--queue", "--max-attempts", "1001"], "1001 is not in the range 1<=x<=1000"),
    (["--queue", "--max-attempts", "many"], "'many' is not a valid integer"),
    (["--max-attempts", "3"], "--max-attempts is for --queue"),
])
def test_unusable_max_attempts_are_usage_errors_and_queue_nothing(
    tmp_path: Path, source: Path, args: list[str], said: str,
) -> None:
    code, out = run("ingest", "--store", str(tmp_path / "store"), *args, str(source))
    assert code == 2 and said in out, out
    assert not (tmp_path / "store").exists()


def test_the_help_of_ingest_names_max_attempts() -> None:
    code, out = run("ingest", "--help")
    assert code == 0
    words = " ".join(out.split())
    assert ("--max-attempts INTEGER RANGE With --queue: attempts of each job before it goes to "
            "the DLQ [default: 5]. [1<=x<=1000]") in words



@pytest.mark.parametrize("command", ["worker", "serve"])
def test_the_worker_and_serve_say_their_max_attempts_does_not_change_queued_jobs(
    command: str,
) -> None:
    # "Attempts before a job goes to the DLQ" read as if `worker --max-attempts 10` gave
    # every queued job ten attempts; each keeps the number it was queued with
    code, out = run(command, "--help")
    assert code == 0
    assert "a job keeps the number it was queued with" in " ".join(out.split())
