"""Dropping DLQ jobs through `serve`'s API: DELETE /api/jobs/ID and POST /api/jobs/drop-dlq,
their refusals as 4xx JSON, the shapes the OpenAPI document gives them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jsonschema_rs  # schemathesis's validator (the test extra)
import pytest
from starlette.testclient import TestClient

from enginelib.jobs import NewJob
from tests.helpers import disk_full, open_test_store
from tests.test_web import copy_of, make_client, wait_for

# build_store's jobs (tests/test_web.py): 1 is empty.md, in the DLQ; 2 is brakes.md, DONE.


@pytest.fixture()
def store_path(built_store: Path, tmp_path: Path) -> Path:
    return copy_of(built_store, tmp_path)


@pytest.fixture()
def client(store_path: Path) -> Iterator[TestClient]:
    with make_client(store_path) as test_client:
        yield test_client


def answer_schema(client: TestClient, path: str, method: str, status: str) -> dict:
    document = client.get("/api/openapi.json").json()
    schema = document["paths"][path][method]["responses"][status]["content"][
        "application/json"]["schema"]
    return document["components"]["schemas"]["Error"] if "$ref" in schema else schema


def test_a_dlq_job_is_dropped_by_id_and_the_rest_refused_with_4xx(client: TestClient) -> None:
    rows = {row["document_id"]: row for row in client.get("/api/sources").json()}
    assert (rows["empty.md"]["status"], rows["empty.md"]["job_id"]) == ("DLQ", 1)

    unknown = client.delete("/api/jobs/99")
    assert unknown.status_code == 404
    assert unknown.json()["type"] == "JobNotFoundError"
    assert unknown.json()["error"].startswith("no job with id 99 in this store's queue")
    done = client.delete("/api/jobs/2")
    assert done.status_code == 409
    assert done.json() == {"type": "JobStateError", "error": (
        "job 2 is DONE, not in the DLQ: only a job that failed for good is dropped (one still "
        "waiting or running would vanish under its worker)")}
    assert client.delete("/api/jobs/abc").status_code == 404  # no job route at all
    too_big = client.delete(f"/api/jobs/{2**63}")
    assert too_big.status_code == 400 and "job_id" in too_big.json()["error"]
    # a DELETE on the POST-only route is not taken for job "retry-dlq"
    assert client.delete("/api/jobs/retry-dlq").status_code == 405
    for response in (unknown, done, too_big):
        jsonschema_rs.validate(answer_schema(client, "/api/jobs/{job_id}", "delete", "4XX"),
                               response.json())
    assert client.get("/api/jobs").json()["counts"]["DLQ"] == 1

    dropped = client.delete("/api/jobs/1")
    assert dropped.json() == {"dropped": 1, "job_id": 1}
    jsonschema_rs.validate(answer_schema(client, "/api/jobs/{job_id}", "delete", "200"),
                           dropped.json())
    jobs = client.get("/api/jobs").json()
    assert [job["job_id"] for job in jobs["jobs"]] == [2] and jobs["counts"]["DLQ"] == 0
    assert client.delete("/api/jobs/1").status_code == 404  # gone for good


def test_drop_dlq_drops_every_dlq_job_and_its_upload_files(store_path: Path) -> None:
    upload = store_path / "uploads" / "fedcba987654" / "kept.md"
    upload.parent.mkdir(parents=True)
    upload.write_text("# Kept\n\nAn upload the disk had no room for.", encoding="utf-8")
    with open_test_store(store_path) as store:
        [job_id] = store.jobs().enqueue([NewJob(str(upload.resolve()), "kept.md", {},
                                                kind="upload", max_attempts=1)])
    with disk_full(), make_client(store_path) as client:
        wait_for(client, lambda d: d["counts"]["DLQ"] == 2, timeout=60)
    assert upload.is_file()  # kept for Retry DLQ
    with make_client(store_path) as client:
        refused = client.post("/api/jobs/drop-dlq", json={"job_id": job_id})
        assert refused.status_code == 400 and "takes no body fields" in refused.json()["error"]
        dropped = client.post("/api/jobs/drop-dlq")
        assert dropped.json() == {"dropped": 2}
        jsonschema_rs.validate(answer_schema(client, "/api/jobs/drop-dlq", "post", "200"),
                               dropped.json())
        assert not upload.parent.exists()
        counts = client.get("/api/jobs").json()["counts"]
        assert (counts["DLQ"], counts["DONE"]) == (0, 1)
        assert client.post("/api/jobs/drop-dlq").json() == {"dropped": 0}


def test_dropping_needs_the_token(store_path: Path) -> None:
    with make_client(store_path, token="s3cret") as client:
        assert client.delete("/api/jobs/1").status_code == 401
        assert client.post("/api/jobs/drop-dlq").status_code == 401
        bearer = {"authorization": "Bearer s3cret"}
        assert client.get("/api/jobs", headers=bearer).json()["counts"]["DLQ"] == 1
        assert client.delete("/api/jobs/1", headers=bearer).json() == {"dropped": 1, "job_id": 1}
