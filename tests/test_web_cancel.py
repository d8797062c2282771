"""Cancelling a waiting job through `serve`'s API: POST /api/jobs/ID/cancel while the worker
holds another job; its refusals as 4xx JSON in the shapes the OpenAPI document gives them,
the token and the origin guard as for every write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import enginelib
from enginelib.jobs import FAILED, Worker
from enginelib.web import Service, create_app
from tests.helpers import SMALL_CHUNKS, disk_full, paragraphs
from tests.test_serve_sharing import WAIT_S, HeldEmbedder
from tests.test_web import copy_of, wait_for
from tests.test_web_drop import answer_schema

# build_store's jobs (tests/test_web.py): 1 is empty.md, in the DLQ; 2 is brakes.md, DONE.
# Here 3 (first.md) is RUNNING, held in its embedding, and 4 (second.md) PENDING behind it.
ROUTE = "/api/jobs/{job_id}/cancel"


@pytest.fixture()
def held(built_store: Path, tmp_path: Path) -> Iterator[tuple[TestClient, HeldEmbedder]]:
    path = copy_of(built_store, tmp_path)
    for name in ("first", "second"):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\n" + paragraphs(2, name),
                                             encoding="utf-8")
    embedder = HeldEmbedder()
    service = Service(enginelib.open(path, embedder=embedder, chunking=SMALL_CHUNKS),
                      poll_s=0.05, time_unit=0.001)
    try:
        with TestClient(create_app(service, token=None),
                        base_url="http://127.0.0.1:8765") as client:
            embedder.armed = True  # after the app's warm-up embedding
            with service.lock:
                assert service.store.enqueue_paths(
                    tmp_path / "first.md", tmp_path / "second.md") == [3, 4]
            assert embedder.entered.wait(WAIT_S), "the worker never took job 3"
            try:
                yield client, embedder
            finally:
                embedder.release.set()
    finally:
        embedder.release.set()


def test_a_waiting_job_is_cancelled_while_the_worker_runs_another(
    held: tuple[TestClient, HeldEmbedder],
) -> None:
    client, embedder = held
    cancelled = client.post("/api/jobs/4/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json() == {"cancelled": 1, "job_id": 4}
    assert_shape(client, "200", cancelled.json())
    jobs = client.get("/api/jobs").json()
    assert (jobs["counts"]["PENDING"], jobs["counts"]["RUNNING"], jobs["history"]) == (0, 1, 1)
    assert [job["job_id"] for job in jobs["jobs"]] == [1, 2, 3]
    assert "second.md" not in {row["document_id"] for row in client.get("/api/sources").json()}

    embedder.release.set()  # job 3 ends; job 4 is never taken
    wait_for(client, lambda d: d["counts"]["DONE"] == 2 and not d["active"])
    documents = {row["document_id"] for row in client.get("/api/documents").json()}
    assert "first.md" in documents and "second.md" not in documents


def test_what_is_not_waiting_is_refused_with_4xx_and_stays(
    held: tuple[TestClient, HeldEmbedder],
) -> None:
    client, _ = held
    before = client.get("/api/jobs").json()
    refusals = {3: "job 3 is RUNNING: a worker is ingesting it now",
                2: "job 2 is DONE: it has run already",
                1: "job 1 is DLQ: in the DLQ it no longer waits to run; drop it instead"}
    answers = []
    for job_id, words in refusals.items():
        refused = client.post(f"/api/jobs/{job_id}/cancel")
        assert refused.status_code == 409, refused.text
        assert refused.json()["type"] == "JobStateError"
        assert refused.json()["error"].startswith(words), refused.json()["error"]
        answers.append(refused)
    unknown = client.post("/api/jobs/99/cancel")
    assert unknown.status_code == 404 and unknown.json()["type"] == "JobNotFoundError"
    too_big = client.post(f"/api/jobs/{2**63}/cancel")
    assert too_big.status_code == 400 and "job_id" in too_big.json()["error"]
    body = client.post("/api/jobs/4/cancel", json={"force": True})
    assert body.status_code == 400 and "takes no body fields" in body.json()["error"]
    query = client.post("/api/jobs/4/cancel?force=1")
    assert query.status_code == 400 and "takes no query parameters" in query.json()["error"]
    for response in (*answers, unknown, too_big, body, query):
        assert_shape(client, "4XX", response.json())
    assert client.get("/api/jobs/4/cancel").status_code == 405
    assert client.post("/api/jobs/abc/cancel").status_code == 404  # no job route at all
    after = client.get("/api/jobs").json()
    assert (after["counts"], after["jobs"]) == (before["counts"], before["jobs"])


def test_a_cancel_needs_the_token_and_the_servers_own_origin(built_store: Path,
                                                             tmp_path: Path) -> None:
    path = copy_of(built_store, tmp_path)
    (tmp_path / "late.md").write_text("# Late\n\n" + paragraphs(2, "late"), encoding="utf-8")
    with enginelib.open(path, embedder=HeldEmbedder(), chunking=SMALL_CHUNKS) as store:
        [job_id] = store.enqueue_paths(tmp_path / "late.md")
        with disk_full():  # its retry 15 s or more away: serve's worker leaves it waiting
            assert [o.status for o in Worker(store, store.jobs()).run_until_idle()] == [FAILED]
    service = Service(enginelib.open(path, embedder=HeldEmbedder(), chunking=SMALL_CHUNKS),
                      poll_s=0.05)
    with TestClient(create_app(service, token="s3cret"),
                    base_url="http://127.0.0.1:8765") as client:
        url = f"/api/jobs/{job_id}/cancel"
        assert client.post(url).status_code == 401
        bearer = {"authorization": "Bearer s3cret"}
        denied = client.post(url, headers={**bearer, "origin": "http://evil.test"})
        assert denied.status_code == 403 and "refused" in denied.json()["error"]
        assert client.get("/api/jobs", headers=bearer).json()["counts"]["FAILED"] == 1
        own = {**bearer, "origin": "http://127.0.0.1:8765"}
        assert client.post(url, headers=own).json() == {"cancelled": 1, "job_id": job_id}
        assert client.get("/api/jobs", headers=bearer).json()["counts"]["FAILED"] == 0


def assert_shape(client: TestClient, status: str, answer: dict) -> None:
    import jsonschema_rs  # schemathesis's validator (the test extra)

    jsonschema_rs.validate(answer_schema(client, ROUTE, "post", status), answer)
