"""Job times in JSON carry their UTC offset, in `jobs --json` and the API alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner
from starlette.testclient import TestClient

from enginelib.cli.main import main
from enginelib.jobs import NewJob
from enginelib.web.app import create_app
from enginelib.web.service import Service
from tests.helpers import open_test_store

QUEUED = datetime(2026, 3, 29, 1, 30, 5, 250000)  # naive UTC, as the catalog keeps it
SAID = "2026-03-29T01:30:05.250000+00:00"


def queued_store(tmp_path: Path) -> Path:
    store_path = tmp_path / "store"
    with open_test_store(store_path) as store:
        store.jobs(clock=lambda: QUEUED).enqueue([NewJob("/nowhere/a.md", "a.md", {})])
    return store_path


def test_cli_and_api_say_job_times_in_utc_in_one_format(tmp_path: Path) -> None:
    store_path = queued_store(tmp_path)
    result = CliRunner().invoke(main, ["jobs", str(store_path), "--json"],
                                env={"ENGINELIB_EMBEDDER": "hashing-64"})
    cli_job = json.loads(result.output)["jobs"][0]
    # was "2026-03-29T01:30:05.250000": read as local time by whoever parsed it
    assert cli_job["created_at"] == cli_job["next_attempt_at"] == SAID
    assert datetime.fromisoformat(cli_job["updated_at"]) == QUEUED.replace(tzinfo=UTC)
    assert cli_job["started_at"] is None
    service = Service(open_test_store(store_path))
    try:
        client = TestClient(create_app(service), base_url="http://127.0.0.1:8765")
        api_job = client.get("/api/jobs").json()["jobs"][0]
        source = next(r for r in client.get("/api/sources").json() if r["status"] == "PENDING")
    finally:
        service.stop()
    assert {k: api_job[k] for k in cli_job if k.endswith("_at") or k == "lease_until"} == {
        k: cli_job[k] for k in cli_job if k.endswith("_at") or k == "lease_until"}
    assert source["next_attempt_at"] == SAID
