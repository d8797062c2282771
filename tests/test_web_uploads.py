"""`serve`'s upload against a hostile client: what an upload may carry is bounded, and what the
API answers about uploads and jobs names no path of the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from enginelib.cli.main import main
from enginelib.validation import MAX_TAGS
from enginelib.web.api import MAX_UPLOAD_FIELD_BYTES
from tests.test_web import make_client, wait_for

FILE = {"file": ("pads.md", b"# Pads\n\nReplace the brake pads under 3 mm.")}


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with make_client(tmp_path / "store", max_upload_bytes=4 * 1024 * 1024) as test_client:
        yield test_client


def test_upload_tags_are_bounded_in_count_and_size_naming_the_limit(client: TestClient) -> None:
    """20,000 tags were taken (and stored in the job's options and on the document)."""
    many = ",".join(f"t{i}" for i in range(MAX_TAGS + 1))
    response = client.post("/api/upload", files=FILE, data={"tags": many})
    assert response.status_code == 400
    assert response.json()["error"].startswith(f"{MAX_TAGS + 1} tags given; a document takes "
                                               f"at most {MAX_TAGS}")
    response = client.post("/api/upload", files=FILE, data={"tags": "x" * 1025})
    assert response.status_code == 400 and "the maximum is 1,024" in response.json()["error"]
    huge = "a," * MAX_UPLOAD_FIELD_BYTES  # too big to parse at all, whatever its count
    response = client.post("/api/upload", files=FILE, data={"tags": huge})
    assert response.status_code == 413
    assert f"over {MAX_UPLOAD_FIELD_BYTES:,} bytes: tags take at most {MAX_TAGS}" in (
        response.json()["error"])
    assert client.get("/api/jobs").json()["total"] == 0  # nothing was queued

    exactly = ",".join(f"t{i}" for i in range(MAX_TAGS))
    assert client.post("/api/upload", files=FILE, data={"tags": exactly}).status_code == 202
    wait_for(client, lambda d: d["counts"]["DONE"] == 1)
    [document] = client.get("/api/documents").json()
    assert len(document["tags"]) == MAX_TAGS


def test_the_tag_bound_holds_for_every_way_in(tmp_path: Path) -> None:
    source = tmp_path / "pads.md"
    source.write_text("# Pads\n\nReplace the brake pads under 3 mm.", encoding="utf-8")
    tags = [arg for i in range(MAX_TAGS + 1) for arg in ("--tag", f"t{i}")]
    for queue in ([], ["--queue"]):
        result = CliRunner().invoke(main, ["ingest", "--store", str(tmp_path / "s"), *queue,
                                           *tags, str(source)],
                                    env={"ENGINELIB_EMBEDDER": "hashing"})
        assert result.exit_code == 2
        assert f"{MAX_TAGS + 1} tags given; a document takes at most {MAX_TAGS}" in result.output


def test_no_answer_of_the_api_names_a_server_path(tmp_path: Path) -> None:
    """/api/sources, /api/jobs, the documents, the citations of a search and the stats named
    the server's absolute paths (its user's home, its store); the console showed them."""
    from tests.helpers import open_test_store

    folder = tmp_path / "private" / "docs"
    (folder / "guides").mkdir(parents=True)
    (folder / "guides" / "brakes.md").write_text("# Brakes\n\nReplace the brake pads under "
                                                 "3 mm.", encoding="utf-8")
    (gone := folder / "gone.md").write_text("# Gone\n\nbrake pads soon gone", encoding="utf-8")
    store = tmp_path / "private" / "store"
    with open_test_store(store) as opened:
        opened.ingest_path(folder)
        opened.enqueue_paths(gone)
    gone.unlink()
    with make_client(store) as client:
        assert client.post("/api/upload", files=FILE).status_code == 202
        wait_for(client, lambda d: d["counts"]["DONE"] == 1 and d["counts"]["DLQ"] == 1)
        answers = {url: client.get(url) for url in (
            "/api/sources", "/api/jobs", "/api/documents", "/api/documents/guides/brakes.md",
            "/api/search?q=brake+pads&no_gate=1", "/api/stats")}
        answers["check"] = client.post("/api/check-answer", json={
            "answer": "Replace the pads under 3 mm [1].", "search": {"query": "brake pads",
                                                                    "no_gate": True}})
        for url, answer in answers.items():
            assert answer.status_code == 200, url
            assert str(tmp_path) not in answer.text, url
        sources = {(row["document_id"], row["status"]): row for row in answers["/api/sources"].json()}
        assert sources[("guides/brakes.md", "INDEXED")]["source"] == "guides/brakes.md"
        assert sources[("pads.md", "INDEXED")]["source"].startswith("uploads/")
        assert sources[("gone.md", "DLQ")]["source"] == "gone.md"
        assert sources[("gone.md", "DLQ")]["error"].startswith("source gone.md no longer exists")
        [job] = client.get("/api/jobs", params={"status": "DLQ"}).json()["jobs"]
        assert (job["source"], job["document_id"]) == ("gone.md", "gone.md")
        assert answers["/api/stats"].json()["path"] == "<store>"
        hit = answers["/api/search?q=brake+pads&no_gate=1"].json()["hits"][0]
        assert not hit["citation"]["source_path"].startswith("/")
        page = client.get("/").text + client.get("/static/console.js").text
        assert str(tmp_path) not in page
    # The CLI is its own user's: it keeps the whole path.
    listed = CliRunner().invoke(main, ["jobs", "--store", str(store)])
    assert str(gone) in listed.output


def test_an_error_reply_and_a_running_job_name_no_server_path_host_or_pid(tmp_path: Path) -> None:
    import json

    from enginelib.errors import StorageError
    from enginelib.web.api import error_reply
    from enginelib.web.public import Paths

    store = tmp_path / "store"
    paths = Paths(store)
    answer = error_reply(StorageError(f"cannot write {store.resolve()}/catalog.duckdb: read-only "
                                      f"file system (see `enginelib repair --store {store}`)"),
                         paths)
    assert json.loads(bytes(answer.body))["error"] == (
        "cannot write <store>/catalog.duckdb: read-only file system (see `enginelib repair "
        "--store <store>`)")
    job = {"job_id": 1, "document_id": "a.md", "source": "/home/someone/a.md",
           "lease_owner": "build-host:4242:7f00.abc123", "last_error": "/home/someone/a.md: busy"}
    assert paths.view({"jobs": [job]})["jobs"][0] == {
        "job_id": 1, "document_id": "a.md", "source": "a.md", "lease_owner": "7f00.abc123",
        "last_error": "a.md: busy"}


def test_uploads_faster_than_the_worker_are_refused_past_the_waiting_limits(
    tmp_path: Path,
) -> None:
    """Each waiting upload is a file in the store: 300 uploads sent while the worker was busy
    were all taken (300 MB on disk), and more would have filled the disk and wedged the store."""
    from enginelib.web.app import create_app
    from enginelib.web.service import Service
    from tests.helpers import open_test_store

    body = b"# Pads\n\n" + b"brake pads " * 100
    service = Service(open_test_store(tmp_path / "store"), max_waiting_uploads=3,
                      max_waiting_upload_bytes=5 * len(body))
    with TestClient(create_app(service, worker=False),  # the worker far behind
                    base_url="http://127.0.0.1:8765") as client:
        codes = [client.post("/api/upload", files={"file": (f"f{i}.md", body)}).status_code
                 for i in range(3)]
        assert codes == [202, 202, 202]
        refused = client.post("/api/upload", files={"file": ("f3.md", body)})
        assert refused.status_code == 429
        assert refused.json()["error"].startswith(
            "3 uploads are waiting for the worker, the most this server takes (serve "
            "--max-waiting-uploads 3)")
        assert len(list((tmp_path / "store" / "uploads").iterdir())) == 3  # its file is gone
        assert [o.status for o in service.worker.run_until_idle()] == ["DONE"] * 3
        big = b"# Pads\n\n" + b"brake pads " * 600  # over the waiting bytes alone
        refused = client.post("/api/upload", files={"file": ("big.md", big)})
        assert refused.status_code == 429 and "would pass the" in refused.json()["error"]
        assert client.post("/api/upload", files={"file": ("f3.md", body)}).status_code == 202


def test_an_upload_that_inflates_past_the_limit_or_holds_too_many_documents_is_refused(
    client: TestClient,
) -> None:
    """A gzipped JSONL upload was read whole by the check before it is queued (every record
    held in memory), then by the worker: 20 MB of gzip can hold 20 GB of records, enough to
    kill the server. An upload now inflates to at most 64 MiB and holds at most 10,000
    documents."""
    import gzip

    from enginelib.loaders import DEFAULT_MAX_BYTES
    from enginelib.web.service import MAX_UPLOAD_DOCUMENTS

    line = b'{"text": "brake pads wear down and must be replaced"}\n'
    bomb = gzip.compress(line * (DEFAULT_MAX_BYTES // len(line) + 1), compresslevel=9)
    assert len(bomb) < 1024 * 1024
    response = client.post("/api/upload", files={"file": ("corpus.jsonl.gz", bomb)})
    assert response.status_code == 413
    assert response.json()["error"].startswith(
        "upload corpus.jsonl.gz inflates past 64.0 MiB, the most an upload may hold")
    many = gzip.compress(line * (MAX_UPLOAD_DOCUMENTS + 1))
    response = client.post("/api/upload", files={"file": ("corpus.jsonl.gz", many)})
    assert response.status_code == 413
    assert f"more than {MAX_UPLOAD_DOCUMENTS:,} documents" in response.json()["error"]
    assert client.get("/api/jobs").json()["total"] == 0
    assert not list((client.app.state.service.store.path / "uploads").iterdir())  # type: ignore[attr-defined]
    fine = gzip.compress(line * 3)
    assert client.post("/api/upload", files={"file": ("corpus.jsonl.gz", fine)}).status_code == 202


def test_an_upload_that_fails_for_good_leaves_no_file_behind(client: TestClient) -> None:
    """An upload whose records the ingest refuses (the loader reads them) went to the DLQ
    keeping its file for Retry DLQ, which could only fail the same way: a client could fill
    the disk with such uploads, none counted as waiting."""
    # vectors of another dimension than the store's: only the ingest knows the store's
    body = b'{"text": "brake pads", "vector": [1.0, 2.0]}\n' + b" " * 10_000
    for i in range(3):
        assert client.post("/api/upload",
                           files={"file": (f"c{i}.jsonl", body)}).status_code == 202
    done = wait_for(client, lambda d: d["counts"]["DLQ"] == 3)
    assert all("the uploaded file is removed: upload a corrected one" in job["last_error"]
               for job in done["jobs"])
    uploads = client.app.state.service.store.path / "uploads"  # type: ignore[attr-defined]
    assert not [p for p in uploads.rglob("*") if p.is_file()]
    assert client.post("/api/jobs/retry-dlq").json() == {"retried": 3}
    again = wait_for(client, lambda d: d["counts"]["DLQ"] == 3 and d["counts"]["PENDING"] == 0)
    assert all("no longer exists in the store: upload it again" in job["last_error"]
               for job in again["jobs"])


@pytest.mark.parametrize(("line", "reason"), [
    (b'{"id": "a\\u0000b", "text": "pads"}', "document id contains a NUL character"),
    (b'{"text": "pads", "truth_level": "L9"}', "unknown truth level 'L9'"),
    (b'{"text": "pads", "created_at": "yesterday"}', "created_at 'yesterday' is not an ISO"),
    (b'{"text": "pads", "tags": [1, 2]}', "tags must be a list of strings"),
])
def test_an_upload_with_a_record_the_ingest_refuses_is_refused_before_it_is_queued(
    client: TestClient, line: bytes, reason: str,
) -> None:
    """The loader read each line, so such an upload was accepted with 202; its job committed
    the records before the bad one, then failed for good into the DLQ, its file removed: half
    a corpus in the store, and 'upload a corrected one' far from the one who uploaded it."""
    good = b'{"id": "first", "text": "brake pads wear down"}\n'
    response = client.post("/api/upload", files={"file": ("corpus.jsonl", good + line + b"\n")})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error.startswith("upload cannot be indexed, not queued: corpus.jsonl document 2: ")
    assert reason in error
    assert client.get("/api/jobs").json()["total"] == 0
    assert client.get("/api/documents").json() == []
