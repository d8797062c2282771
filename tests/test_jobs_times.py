"""Job times in JSON carry their UTC offset, in `jobs --json` and the API alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
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


def _times(value: object) -> list[str]:
    """Every ISO date-time text in a JSON value."""
    import re

    if isinstance(value, dict):
        return [t for item in value.values() for t in _times(item)]
    if isinstance(value, list):
        return [t for item in value for t in _times(item)]
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d.*", value):
        return [value]
    return []


def test_every_time_the_api_answers_says_its_utc_offset(tmp_path: Path) -> None:
    """A document's times (/api/documents, a document and its versions) were naive, a job's
    carried +00:00: a client parsing both read one set as local time."""
    from tests.helpers import doc

    store_path = queued_store(tmp_path)
    with open_test_store(store_path) as store:
        store.ingest_documents([doc("pads", "# Pads\n\nReplace under 3 mm.", title="Pads")])
        store.ingest_documents([doc("pads", "# Pads\n\nReplace under 2 mm.", title="Pads")],
                               validated_by="workshop")
    service = Service(open_test_store(store_path))
    try:
        client = TestClient(create_app(service, worker=False), base_url="http://127.0.0.1:8765")
        answers = [client.get(url).json() for url in (
            "/api/documents", "/api/documents/pads", "/api/jobs", "/api/sources",
            "/api/search?q=pads&no_gate=1", "/api/stats")]
    finally:
        service.stop()
    shown = _times(answers)
    assert len(shown) >= 10
    for text in shown:
        moment = datetime.fromisoformat(text)
        assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0, text
    assert answers[1]["versions"] and answers[1]["document"]["validated_at"].endswith("+00:00")


def test_a_created_at_with_an_offset_is_kept_and_shown_in_utc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB stored an aware time in the server's own zone: 10:00+02:00 became 03:00 on a
    server in New York, then shown as 03:00 UTC."""
    import time

    from tests.helpers import doc

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        with open_test_store(tmp_path / "store") as store:
            store.ingest_documents([doc("pads", "# Pads\n\nReplace under 3 mm.",
                                        metadata={"created_at": "2024-01-01T10:00:00+02:00"})])
        service = Service(open_test_store(tmp_path / "store"))
        try:
            client = TestClient(create_app(service, worker=False),
                                base_url="http://127.0.0.1:8765")
            shown = client.get("/api/documents/pads").json()["document"]["created_at"]
        finally:
            service.stop()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert shown == "2024-01-01T08:00:00+00:00"
