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
