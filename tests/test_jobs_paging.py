"""Paging through the job list by id (``after``): jobs purged or queued between two pages
neither shift the next page nor make it skip or repeat a job, in Python, the CLI and the API."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from enginelib.catalog import utcnow
from enginelib.cli.main import main
from enginelib.errors import InvalidInputError
from enginelib.jobs import JobQueue, NewJob
from enginelib.web.app import create_app
from enginelib.web.service import Service
from tests.helpers import open_test_store


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def queue_jobs(queue: JobQueue, count: int) -> list[int]:
    return queue.enqueue([NewJob(f"/nowhere/{n}.md", f"{n}.md", {}) for n in range(count)])


def finish(queue: JobQueue, count: int) -> None:
    for _ in range(count):
        job = queue.claim("test")
        assert job is not None
        queue.complete(job, "test", [job["document_id"]])


def test_pages_by_id_neither_skip_nor_repeat_when_jobs_are_purged_between(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs(clock=Clock())
        ids = queue_jobs(queue, 6)
        finish(queue, 3)  # the first three are DONE
        seen: list[int] = []
        first = queue.page(limit=2)
        seen += [job["job_id"] for job in first.jobs]
        assert first.next_after == ids[1]
        # Purged before the next page: an offset of 2 would now start at the 6th job, the
        # 4th and 5th never listed.
        assert queue.purge_done() == 3
        assert [j["job_id"] for j in queue.jobs(limit=2, offset=2)] == [ids[5]]
        second = queue.page(limit=2, after=first.next_after)
        seen += [job["job_id"] for job in second.jobs]
        later = queue_jobs(queue, 1)  # queued between pages: listed once, at the end
        third = queue.page(limit=2, after=second.next_after)
        seen += [job["job_id"] for job in third.jobs]
        assert third.next_after is None  # the last page says so
        # every job still there when its page was read, once; the 3rd went to the history
        assert seen == ids[:2] + ids[3:] + later
        assert len(seen) == len(set(seen))


def test_after_and_offset_together_are_refused(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        queue_jobs(queue, 2)
        with pytest.raises(InvalidInputError, match="after .* or offset, not both"):
            queue.page(after=1, offset=1)
        # a full last page says there is nothing after it (one row more was read to know)
        assert queue.page(limit=2).next_after is None
        assert queue.page(limit=1, statuses=["DLQ"]).jobs == []


def test_cli_jobs_pages_with_after_and_a_next_after_cursor(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    with open_test_store(store_path) as store:
        ids = queue_jobs(store.jobs(), 3)
    env = {"ENGINELIB_EMBEDDER": "hashing-64"}

    def jobs(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, ["jobs", str(store_path), *args], env=env)
        return result.exit_code, result.output

    code, out = jobs("--limit", "2", "--json")
    data = json.loads(out)
    assert code == 0 and [j["job_id"] for j in data["jobs"]] == ids[:2]
    assert (data["after"], data["next_after"]) == (None, ids[1])
    code, out = jobs("--limit", "2", "--after", str(ids[1]), "--json")
    data = json.loads(out)
    assert [j["job_id"] for j in data["jobs"]] == ids[2:] and data["next_after"] is None
    code, out = jobs("--limit", "1")
    assert out.splitlines()[-1] == f"(jobs 1-1 of 3; the next ones: --after {ids[0]})"
    code, out = jobs("--limit", "1", "--after", str(ids[0]))
    assert out.splitlines()[-1] == f"(the next ones: --after {ids[1]})"
    code, out = jobs("--after", "1", "--offset", "1")
    assert code == 2 and out.startswith("Error: give after")
    code, out = jobs("--help")
    assert "--after JOB_ID" in out


def test_api_jobs_pages_with_after_and_a_next_after_cursor(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    with open_test_store(store_path) as store:
        ids = queue_jobs(store.jobs(), 3)
    service = Service(open_test_store(store_path))
    try:
        # no `with`: the worker is not started, the jobs stay as queued
        client = TestClient(create_app(service), base_url="http://127.0.0.1:8765")
        first = client.get("/api/jobs", params={"limit": 2}).json()
        assert [j["job_id"] for j in first["jobs"]] == ids[:2]
        assert (first["after"], first["next_after"]) == (None, ids[1])
        rest = client.get("/api/jobs", params={"limit": 2, "after": first["next_after"]}).json()
        assert [j["job_id"] for j in rest["jobs"]] == ids[2:] and rest["next_after"] is None
        for params, message in (({"after": "x"}, "after must be an integer"),
                                ({"after": 1, "offset": 1}, "not both")):
            answer = client.get("/api/jobs", params=params)
            assert answer.status_code == 400 and message in answer.json()["error"]
        described = client.get("/api/openapi.json").json()["paths"]["/api/jobs"]["get"]
        assert "after" in [p["name"] for p in described["parameters"]]
    finally:
        service.stop()


def _history_of_five(store_path: Path) -> list[int]:
    """Five jobs queued: the 1st, 2nd and 4th run and purged to the history, the 3rd and
    5th cancelled there, so the history holds all five, by id, DONE and CANCELLED between."""
    with open_test_store(store_path) as store:
        queue = store.jobs(clock=Clock())
        ids = queue_jobs(queue, 5)
        queue.cancel(ids[2])
        queue.cancel(ids[4])
        finish(queue, 3)
        assert queue.purge_done() == 3
    return ids


def test_the_history_pages_by_id_as_the_queue_does(tmp_path: Path) -> None:
    # the history held every job done or cancelled, and nothing listed it
    ids = _history_of_five(tmp_path / "store")
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        assert queue.history_counts() == {"DONE": 3, "CANCELLED": 2}
        first = queue.history_page(limit=2)
        assert [j["job_id"] for j in first.jobs] == ids[:2] and first.next_after == ids[1]
        assert first.jobs[0]["options"] == {} and first.jobs[0]["purged_at"] is not None
        rest = queue.history_page(limit=3, after=first.next_after)
        assert [(j["job_id"], j["status"]) for j in rest.jobs] == [
            (ids[2], "CANCELLED"), (ids[3], "DONE"), (ids[4], "CANCELLED")]
        assert rest.next_after is None
        cancelled = queue.history_page(status="CANCELLED")
        assert [j["job_id"] for j in cancelled.jobs] == [ids[2], ids[4]]
        assert cancelled.jobs[0]["last_error"] == "cancelled while PENDING"
        assert [j["job_id"] for j in queue.history_page(offset=4).jobs] == [ids[4]]
        with pytest.raises(InvalidInputError, match="after .* or offset, not both"):
            queue.history_page(after=1, offset=1)
        with pytest.raises(InvalidInputError, match="history status 'PENDING' is not one of"):
            queue.history_page(status="PENDING")
        with pytest.raises(InvalidInputError, match="limit"):
            queue.history_page(limit=0)
    with open_test_store(tmp_path / "fresh") as store:  # never queued: nothing, not an error
        assert store.jobs().history_page().jobs == []


def test_cli_jobs_history_pages_with_after_and_a_next_after_cursor(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    ids = _history_of_five(store_path)
    env = {"ENGINELIB_EMBEDDER": "hashing-64"}

    def jobs(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, ["jobs", str(store_path), "--history", *args],
                                    env=env)
        return result.exit_code, result.output

    code, out = jobs("--limit", "2", "--json")
    data = json.loads(out)
    assert code == 0 and [j["job_id"] for j in data["jobs"]] == ids[:2]
    assert (data["counts"], data["total"], data["limit"], data["offset"], data["after"],
            data["next_after"]) == ({"DONE": 3, "CANCELLED": 2}, 5, 2, 0, None, ids[1])
    assert data["jobs"][0]["purged_at"].endswith("+00:00")  # UTC, said, as the queue's times
    code, out = jobs("--limit", "2", "--after", str(ids[3]), "--json")
    data = json.loads(out)
    assert [j["job_id"] for j in data["jobs"]] == ids[4:] and data["next_after"] is None
    code, out = jobs("--status", "CANCELLED", "--json")
    assert [j["job_id"] for j in json.loads(out)["jobs"]] == [ids[2], ids[4]]
    assert json.loads(out)["total"] == 2
    code, out = jobs("--limit", "2")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "history: DONE 3  CANCELLED 2"
    assert lines[1] == f"{ids[0]:>5} DONE      1/5  /nowhere/0.md"
    assert lines[-1] == f"(jobs 1-2 of 5; the next ones: --history --after {ids[1]})"
    code, out = jobs("--after", str(ids[1]), "--limit", "1")
    assert out.splitlines()[1:] == [
        f"{ids[2]:>5} CANCELLED 0/5  /nowhere/2.md  cancelled while PENDING",
        f"(the next ones: --history --after {ids[2]})"]
    # typed refusals, exit 2, as `jobs` refuses them
    for args, message in ((("--after", "x"), "'x' is not a valid integer"),
                          (("--after", str(2**64)), "--after"),
                          (("--limit", "0"), "--limit"), (("--limit", "1e9"), "--limit"),
                          (("--after", "1", "--offset", "1"), "Error: give after"),
                          (("--status", "PENDING"), "the history holds DONE and CANCELLED")):
        code, out = jobs(*args)
        assert code == 2 and message in out, (args, out)
    result = CliRunner().invoke(main, ["jobs", str(store_path), "--status", "CANCELLED"],
                                env=env)
    assert result.exit_code == 2 and "add --history" in result.output


def test_api_job_history_pages_with_after_and_a_next_after_cursor(tmp_path: Path) -> None:
    import jsonschema_rs  # schemathesis's validator (the test extra)

    store_path = tmp_path / "store"
    ids = _history_of_five(store_path)
    service = Service(open_test_store(store_path))
    try:
        client = TestClient(create_app(service), base_url="http://127.0.0.1:8765")
        first = client.get("/api/jobs/history", params={"limit": 2}).json()
        assert [j["job_id"] for j in first["jobs"]] == ids[:2]
        assert (first["total"], first["after"], first["next_after"]) == (5, None, ids[1])
        rest = client.get("/api/jobs/history",
                          params={"limit": 3, "after": first["next_after"]}).json()
        assert [j["job_id"] for j in rest["jobs"]] == ids[2:] and rest["next_after"] is None
        done = client.get("/api/jobs/history", params={"status": "DONE"}).json()
        assert [j["job_id"] for j in done["jobs"]] == [ids[0], ids[1], ids[3]]
        assert done["total"] == 3 and done["counts"] == {"DONE": 3, "CANCELLED": 2}
        # the queue's own list is left as it was: the history is not in it
        assert client.get("/api/jobs").json()["jobs"] == []
        document = client.get("/api/openapi.json").json()
        described = document["paths"]["/api/jobs/history"]["get"]
        assert [p["name"] for p in described["parameters"]] == [
            "status", "limit", "offset", "after"]
        schema = described["responses"]["200"]["content"]["application/json"]["schema"]
        jsonschema_rs.validate(schema, first)
        for params, message in (({"after": "x"}, "after must be an integer"),
                                ({"after": "1.5"}, "after must be an integer"),
                                ({"after": str(2**64)}, "after"),
                                ({"limit": "0"}, "limit"), ({"limit": "-1"}, "limit"),
                                ({"limit": "9" * 500}, "limit"),
                                ({"after": 1, "offset": 1}, "not both"),
                                ({"status": "PENDING"}, "history status 'PENDING'"),
                                ({"sort": "desc"}, "sort")):
            answer = client.get("/api/jobs/history", params=params)
            assert answer.status_code == 400, (params, answer.text)
            assert message in answer.json()["error"], (params, answer.json())
            assert answer.json()["type"] == "InvalidInputError"
    finally:
        service.stop()
    guarded = Service(open_test_store(store_path))
    try:  # the same token as every other route
        client = TestClient(create_app(guarded, token="s3cret-token-0123456789"),
                            base_url="http://127.0.0.1:8765")
        assert client.get("/api/jobs/history").status_code == 401
        bearer = {"authorization": "Bearer s3cret-token-0123456789"}
        assert client.get("/api/jobs/history", headers=bearer).json()["total"] == 5
    finally:
        guarded.stop()


def test_a_job_entering_the_history_behind_the_cursor_is_said_to_be_missed(
    tmp_path: Path,
) -> None:
    # The history pages by job id, but a job enters it when purged or cancelled, long after
    # later jobs may have: `--after`'s help, README and the OpenAPI document said the cursor
    # "stays right when jobs are purged ... between pages", and here it missed one.
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs(clock=Clock())
        ids = queue_jobs(queue, 3)
        queue.cancel(ids[1])
        queue.cancel(ids[2])
        first = queue.history_page(limit=1)
        assert [j["job_id"] for j in first.jobs] == [ids[1]]
        finish(queue, 1)
        assert queue.purge_done() == 1  # the 1st job enters the history, behind the cursor
        rest = queue.history_page(after=first.next_after)
        assert [j["job_id"] for j in rest.jobs] == [ids[2]]  # on none of the next pages
        assert sum(queue.history_counts().values()) == 3  # though total counts it
    described = "on none of the next pages"
    help_text = CliRunner().invoke(main, ["jobs", "--help"], terminal_width=400).output
    assert f"with --history: a job purged or cancelled meanwhile with a smaller id is " \
           f"{described}" in " ".join(help_text.split())
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text("utf-8").split())
    assert f"an id below `--after` is {described}, though `total` counts it" in readme
    from enginelib.web.openapi import OPENAPI

    after = [p for p in OPENAPI["paths"]["/api/jobs/history"]["get"]["parameters"]
             if p["name"] == "after"][0]
    assert described in after["description"]
