"""The `serve` app in process (Starlette's TestClient): API answers, 4xx messages, token."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from enginelib.jobs import NewJob
from enginelib.web import Service, create_app
from tests.helpers import disk_full, doc, open_test_store, paragraphs

ROOT = Path(__file__).resolve().parents[1]
GDPR = ("Article 17. Right to erasure. The data subject shall have the right to obtain from "
        "the controller the erasure of personal data concerning him or her without undue "
        "delay where the personal data are no longer necessary.")


def build_store(path: Path, src: Path) -> None:
    """Three documents (one with a gold source), one DONE job and one DLQ job."""
    src.mkdir()
    (src / "empty.md").write_text("", encoding="utf-8")
    (src / "brakes.md").write_text("# Brakes\n\n" + paragraphs(4), encoding="utf-8")
    with open_test_store(path) as store:
        store.add_source("eur-lex", name="EUR-Lex", tier="gold", evidence_level="regulation",
                         authority_score=95)
        store.ingest_documents([
            doc("gdpr-17", GDPR, title="GDPR Article 17",
                metadata={"source_id": "eur-lex"}),
            doc("tyres", paragraphs(3, "tyres"), title="Tyres"),
        ], truth_level="L1")
        store.create_snapshot("before-brakes")
        store.enqueue_paths(src / "empty.md", max_attempts=1)
        store.enqueue_paths(src / "brakes.md")
        from enginelib.jobs import Worker

        Worker(store, store.jobs()).run_until_idle()


def copy_of(built: Path, tmp_path: Path) -> Path:
    """A test's own copy of the built store: a store folder is whole when copied closed."""
    shutil.copytree(built, tmp_path / "store")
    return tmp_path / "store"


@pytest.fixture()
def store_path(built_store: Path, tmp_path: Path) -> Path:
    return copy_of(built_store, tmp_path)


def make_client(store_path: Path, **options: object) -> TestClient:
    token = options.pop("token", None)
    service = Service(open_test_store(store_path), poll_s=0.05, time_unit=0.001,
                      **options)  # type: ignore[arg-type]
    # TestClient's default Host, "testserver", is not this machine: the app refuses it.
    return TestClient(create_app(service, token=token),  # type: ignore[arg-type]
                      base_url="http://127.0.0.1:8765")


@pytest.fixture()
def client(store_path: Path) -> Iterator[TestClient]:
    with make_client(store_path, max_upload_bytes=4096) as test_client:
        yield test_client


def wait_for(client: TestClient, predicate: object, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        data = client.get("/api/jobs").json()
        if predicate(data):  # type: ignore[operator]
            return data  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, data
        time.sleep(0.05)


def test_search_gives_scores_authority_and_the_gate(client: TestClient) -> None:
    body = {"query": "right to erasure of personal data", "truth_levels": "L1,L2",
            "no_gate": True, "limit": 5}
    data = client.post("/api/search", json=body).json()
    top = data["hits"][0]
    assert top["document_id"] == "gdpr-17"
    assert set(top["scores"]) >= {"fused", "vector_rank", "vector_score", "bm25_rank",
                                  "bm25_score", "similarity"}
    assert top["authority"] == {"tier": "gold", "evidence_level": "regulation",
                                "authority_score": 95.0, "source_id": "eur-lex"}
    assert top["document_url"] == (f"/documents/gdpr-17?start={top['start_offset']}"
                                   f"&end={top['end_offset']}")
    assert {h["term"].lower() for h in top["highlights"]} >= {"erasure"}
    assert data["gate"]["decision"] == "answer"
    same = client.get("/api/search", params={"q": body["query"], "truth_levels": "L1,L2",
                                             "no_gate": "true", "limit": 5}).json()
    assert [h["scores"] for h in same["hits"]] == [h["scores"] for h in data["hits"]]
    refused = client.post("/api/search", json={"query": "quantum chromodynamics lattice"}).json()
    assert refused["gate"]["decision"] == "refuse" and refused["gate"]["reason"]


def test_search_a_snapshot_through_the_api(client: TestClient) -> None:
    body = {"query": "brake pads caliper", "truth_levels": "L1,L2", "no_gate": True}
    live = client.post("/api/search", json=body).json()
    assert "brakes.md" in {h["document_id"] for h in live["hits"]}
    old = client.post("/api/search", json={**body, "snapshot": "before-brakes"}).json()
    assert old["snapshot"] == "before-brakes"
    assert "brakes.md" not in {h["document_id"] for h in old["hits"]} and old["hits"]
    for name in ("nope", "../../etc"):
        bad = client.post("/api/search", json={**body, "snapshot": name})
        assert bad.status_code == 400 and "snapshot" in bad.json()["error"], name


def test_a_snapshot_taken_before_a_reindex_to_another_model_is_searched_with_its_own(
        store_path: Path) -> None:
    """serve opened every snapshot with its warm model: one taken before a reindex to another
    model answered 400 "open it with embedder= that model", advice for a Python caller."""
    from enginelib import HashingEmbedder

    with open_test_store(store_path) as store:
        store.reindex(embedder=HashingEmbedder(32))
    store = open_test_store(store_path, dim=32)
    body = {"query": "right to erasure", "no_gate": True, "snapshot": "before-brakes"}
    with TestClient(create_app(Service(store, poll_s=0.05)),
                    base_url="http://127.0.0.1:8765") as client:
        old = client.post("/api/search", json=body)
        assert old.status_code == 200, old.text
        assert old.json()["hits"][0]["document_id"] == "gdpr-17"
        live = client.post("/api/search", json={**body, "snapshot": None}).json()
        assert "gdpr-17" in {h["document_id"] for h in live["hits"]}


def test_a_damaged_snapshot_is_the_servers_problem_not_the_requests(
        client: TestClient, store_path: Path) -> None:
    # a snapshot table damaged on the server's disk answered 400, "your request is wrong"
    table = store_path / "snapshots" / "before-brakes" / "tables" / "chunks.parquet"
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0x01
    table.write_bytes(bytes(data))
    body = {"query": "brake pads caliper", "no_gate": True, "snapshot": "before-brakes"}
    reply = client.post("/api/search", json=body)
    assert reply.status_code == 503, reply.text
    assert reply.json()["type"] == "DamagedSnapshotError"
    assert "chunks.parquet" in reply.json()["error"]


def test_check_answer_flags_a_fabricated_reference(client: TestClient) -> None:
    search = {"query": "right to erasure of personal data", "no_gate": True, "limit": 3}
    answer = ("The data subject may obtain erasure without undue delay [1]. "
              "Erasure is also guaranteed for robots [9]. Nobody disputes it.")
    data = client.post("/api/check-answer", json={"answer": answer, "search": search}).json()
    assert data["fabricated"] == ["[9]"] and data["supported"] == ["[1]"]
    assert [c["verdict"] for c in data["claims"]] == ["supported", "fabricated", "unsupported"]
    assert data["claims"][0]["references"][0]["citation"]["document_id"] == "gdpr-17"


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), [
    ("get", "/api/documents/nope", None, 404, "no document with id 'nope'"),
    ("delete", "/api/documents/nope", None, 404, "no document with id 'nope'"),
    ("post", "/api/search", {"query": "x", "filters": "{domain: privacy"}, 400,
     "filters is not valid JSON"),
    ("post", "/api/search", {"query": "x", "filters": {"colour": "red"}}, 400, "colour"),
    ("post", "/api/search", {"query": "x", "fuzzy": True}, 400, "unknown search parameter"),
    ("post", "/api/search", {"query": "  "}, 400, "the query is empty: type some words"),
    ("post", "/api/search", {"limit": 3}, 400, "no query given: send the words to search for"),
    ("post", "/api/search", {"query": 7}, 400, "a query must be a string, got int"),
    ("post", "/api/search", {"query": "x", "limit": "ten"}, 400, "limit must be an integer"),
    ("post", "/api/search", {"query": "x", "truth_levels": "L7"}, 400, "L7"),
    ("get", "/api/jobs?status=LOST", None, 400, "job status 'LOST'"),
    ("get", "/api/nothing-here", None, 404, "no API route GET /api/nothing-here"),
    ("post", "/api/check-answer", {"answer": "x [1]."}, 400, "search must be"),
])
def test_bad_requests_get_4xx_with_a_clear_message(
    client: TestClient, method: str, path: str, body: object, status: int, message: str
) -> None:
    kwargs = {"json": body} if body is not None else {}
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code == status
    assert message in response.json()["error"]


@pytest.mark.parametrize("field", ["limit", "offset", "candidates", "rrf_k"])
@pytest.mark.parametrize("raw", ["1e309", "-Infinity", "NaN", "10.7", "true"])
def test_a_whole_number_parameter_refuses_what_is_not_one(
    client: TestClient, field: str, raw: str
) -> None:
    # JSON as clients write it (1e309 parses to an infinity); never a 500, never truncated
    body = f'{{"query": "erasure", "{field}": {raw}}}'.encode()
    response = client.post("/api/search", content=body,
                           headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert f"{field} must be an integer" in response.json()["error"]


@pytest.mark.parametrize("value", ["tru", {"x": 1}, 2, [True]])
def test_a_switch_refuses_what_is_neither_on_nor_off(client: TestClient, value: object) -> None:
    response = client.post("/api/search", json={"query": "erasure", "boost": value})
    assert response.status_code == 400 and "boost is a switch" in response.json()["error"]


def test_a_switch_reads_on_and_off_words_from_a_query_string(client: TestClient) -> None:
    # "erasre" is corrected to "erasure" unless rewriting is switched off
    on = client.get("/api/search?query=erasre&no_rewrite=yes").json()
    off = client.get("/api/search?query=erasre&no_rewrite=off").json()
    assert on["corrections"] == {} and off["corrections"] == {"erasre": "erasure"}


def test_a_json_body_beyond_the_cap_is_413_whether_or_not_its_length_is_declared(
    client: TestClient
) -> None:
    from enginelib.web.api import MAX_JSON_BYTES

    big = b'{"query": "erasure", "pad": "' + b"x" * MAX_JSON_BYTES + b'"}'
    declared = client.post("/api/search", content=big, headers={"content-type": "application/json"})
    assert declared.status_code == 413 and "exceeds the limit" in declared.json()["error"]

    def chunked() -> Iterator[bytes]:  # no Content-Length: read until the cap, then refused
        for start in range(0, len(big), 1 << 20):
            yield big[start:start + (1 << 20)]

    streamed = client.post("/api/search", content=chunked(),
                           headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert client.post("/api/search", json={"query": "erasure"}).status_code == 200


def test_a_whole_number_written_as_a_float_is_accepted(client: TestClient) -> None:
    response = client.post("/api/search", content=b'{"query": "erasure", "limit": 2.0}',
                           headers={"content-type": "application/json"})
    assert response.status_code == 200 and response.json()["limit"] == 2


def test_bad_json_body(client: TestClient) -> None:
    response = client.post("/api/search", content=b"{not json",
                           headers={"content-type": "application/json"})
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]


def test_uploads_are_size_limited_plain_named_and_stay_in_the_store(
    client: TestClient, store_path: Path
) -> None:
    big = client.post("/api/upload", files={"file": ("big.md", b"x" * 5000)})
    assert big.status_code == 413 and "exceeds the limit of 4096 bytes" in big.json()["error"]
    for name in ("../escape.md", "..", "/etc/passwd", "sub/dir.md", ".hidden.md", "a\\b.md"):
        bad = client.post("/api/upload", files={"file": (name, b"# hi\n\nsome text")})
        assert bad.status_code == 400, name
        assert "not a plain file name" in bad.json()["error"]
    assert not (store_path.parent / "escape.md").exists()
    def chunks() -> Iterator[bytes]:
        yield b"--x\r\n"

    chunked = client.post("/api/upload", content=chunks(),
                          headers={"content-type": "multipart/form-data; boundary=x"})
    assert chunked.status_code == 411 and "Content-Length" in chunked.json()["error"]
    odd = client.post("/api/upload", files={"file": ("tool.exe", b"MZ")})
    assert odd.status_code == 415
    ok = client.post("/api/upload", files={"file": ("pads.md", b"# Pads\n\nBrake pads wear "
                                                     b"down and must be replaced in time.")},
                     data={"truth_level": "L1", "tags": "brakes,pads"})
    assert ok.status_code == 202
    job_id = ok.json()["job_id"]
    wait_for(client, lambda d: any(j["job_id"] == job_id and j["status"] == "DONE"
                                   for j in d["jobs"]))
    pads = client.get("/api/documents/pads.md").json()["document"]
    assert (pads["truth_level"], pads["tags"]) == ("L1", ["brakes", "pads"])
    # shown relative to the store: a client learns no path of the server
    assert pads["source_path"].startswith("uploads/") and pads["file_path"] == pads["source_path"]
    source = store_path / pads["source_path"]
    assert source.parent.parent == store_path / "uploads"
    # once DONE its text is in the catalog, and the file goes (uploads piled up for good)
    deadline = time.monotonic() + 30
    while source.parent.exists():
        assert time.monotonic() < deadline, "the upload's folder stayed"
        time.sleep(0.05)
    assert "Brake pads wear" in client.get("/api/documents/pads.md").json()["document"]["text"]


def test_serve_sweeps_the_upload_folders_no_job_needs_at_start(store_path: Path) -> None:
    """A kill between a job's DONE and its file's removal (or a store served before uploads
    were removed) left folders nobody reads; a file a job may still read stays."""
    # an upload that failed into the DLQ on a full disk: Retry DLQ may ingest it later
    kept = store_path / "uploads" / "fedcba987654" / "kept.md"
    kept.parent.mkdir(parents=True)
    kept.write_text("# Kept\n\nAn upload the disk had no room for.", encoding="utf-8")
    kept = kept.resolve()
    with open_test_store(store_path) as store:
        [job_id] = store.jobs().enqueue([NewJob(str(kept), "kept.md", {}, kind="upload",
                                                max_attempts=1)])
    with disk_full(), make_client(store_path, max_upload_bytes=4096) as client:
        wait_for(client, lambda d: any(j["job_id"] == job_id and j["status"] == "DLQ"
                                       for j in d["jobs"]), timeout=60)
    left = store_path / "uploads" / "0123456789ab"
    left.mkdir(parents=True)
    (left / "old.md").write_text("# Old\n\nA replaced upload.", encoding="utf-8")
    with make_client(store_path, max_upload_bytes=4096):
        assert not left.exists()
        assert kept.is_file()  # Retry DLQ reads it again


def test_documents_jobs_sources_and_stats(client: TestClient) -> None:
    listed = client.get("/api/documents", params={"truth_levels": "L1"}).json()
    assert [d["document_id"] for d in listed] == ["gdpr-17", "tyres"]
    shown = client.get("/api/documents/gdpr-17").json()
    assert shown["document"]["text"] == GDPR and shown["chunks"][0]["start_offset"] == 0
    jobs = client.get("/api/jobs").json()
    assert (jobs["counts"]["DONE"], jobs["counts"]["DLQ"]) == (1, 1)
    sources = client.get("/api/sources").json()
    by_status = {row["document_id"]: row["status"] for row in sources}
    assert by_status == {"brakes.md": "INDEXED", "gdpr-17": "INDEXED", "tyres": "INDEXED",
                         "empty.md": "DLQ"}
    gdpr = next(r for r in sources if r["document_id"] == "gdpr-17")
    assert (gdpr["tier"], gdpr["authority_score"], gdpr["word_count"]) == ("gold", 95.0, len(GDPR.split()))
    assert client.post("/api/jobs/purge-done").json() == {"purged": 1}
    assert client.post("/api/jobs/retry-dlq").json() == {"retried": 1}
    # The empty file fails again (max 1 attempt) and returns to the DLQ.
    wait_for(client, lambda d: d["counts"]["DLQ"] == 1 and d["history"] == 1)
    assert client.delete("/api/documents/tyres").json() == {"deleted": "tyres"}
    assert client.get("/api/stats").json()["documents"] == 2
    paths = client.get("/api/openapi.json").json()["paths"]
    assert {"/api/search", "/api/upload", "/api/jobs/retry-dlq"} <= set(paths)


def test_pages_render_and_the_document_view_marks_the_span(client: TestClient) -> None:
    assert "Retry DLQ" in client.get("/").text
    assert 'id="answer"' in client.get("/inspect").text
    page = client.get("/documents/gdpr-17", params={"start": 12, "end": 28}).text
    assert f'<mark id="cited">{GDPR[12:28]}</mark>' in page
    assert client.get("/documents/nope").status_code == 404
    for probe in ("/static/../../../../etc/passwd", "/static/%2e%2e/%2e%2e/catalog.duckdb",
                  "/no-such-page"):
        response = client.get(probe)
        # the same {error, type} as every other error the server answers
        assert response.status_code == 404, probe
        assert response.json() == {"error": "Not Found", "type": "NotFound"}, probe


def test_token_is_checked_on_every_request(store_path: Path) -> None:
    with make_client(store_path, token="s3cret") as client:
        for path in ("/api/jobs", "/", "/inspect", "/static/app.css"):
            denied = client.get(path)
            assert denied.status_code == 401 and "token" in denied.json()["error"]
        assert client.get("/api/jobs", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/api/jobs", headers={"authorization": "Bearer s3cret"}).status_code == 200
        assert client.get("/", params={"token": "s3cret"}).status_code == 200
        assert client.get("/api/jobs").status_code == 200  # the cookie set by ?token=


def test_a_page_opened_with_the_token_is_sent_again_without_it(store_path: Path) -> None:
    """The token stayed in the address bar (the history, a bookmark, a screen share): a page
    opened with a right ?token= is answered 303 to its URL less the token, with the cookie.
    An API call, read by a program, keeps its answer."""
    with make_client(store_path, token="s3cret") as client:
        for asked, location in [
            ("/inspect?token=s3cret", "/inspect"),
            ("/documents/a%2Fb%20c?start=1&token=s3cret&end=5", "/documents/a%2Fb%20c?start=1&end=5"),
            ("/?tok%65n=s3cret&x=%C3%A9+y", "/?x=%C3%A9+y"),
            ("http://127.0.0.1:8765//example.com/?token=s3cret", "/example.com/"),  # no other site
            ("/%5Cexample.com?token=s3cret", "/%5Cexample.com"),
        ]:
            response = client.get(asked, follow_redirects=False)
            assert response.status_code == 303, asked
            assert response.headers["location"] == location
            assert "enginelib_token=s3cret" in response.headers["set-cookie"]
            assert "s3cret" not in response.text
        client.cookies.clear()
        assert client.get("/inspect?token=wrong", follow_redirects=False).status_code == 401
        answer = client.get("/api/jobs?token=s3cret", follow_redirects=False)
        assert answer.status_code == 200 and "counts" in answer.json()


@pytest.mark.parametrize("host", ["rebind.test", "rebind.test:8765", "127.0.0.1.nip.io",
                                  "localhost.evil.test", "[::2]:8765", "127.0.0.1:x", ""])
def test_a_host_that_is_not_this_machine_is_refused(client: TestClient, host: str) -> None:
    """DNS rebinding: a page whose name resolves to 127.0.0.1 reads as its own origin; the
    Host header is the one thing that names it."""
    for method, path in (("GET", "/api/documents"), ("GET", "/"), ("POST", "/api/search")):
        denied = client.request(method, path, headers={"host": host},
                                json={"query": "erasure"} if method == "POST" else None)
        assert denied.status_code == 403, (method, path, denied.text)
        assert denied.json()["type"] == "Forbidden" and "--allow-host" in denied.json()["error"]
        assert "gdpr-17" not in denied.text and denied.headers["x-frame-options"] == "DENY"
    for host in ("127.0.0.1:8765", "LOCALHOST:8765", "localhost.", "[::1]:8765", "127.0.0.1"):
        assert client.get("/api/documents", headers={"host": host}).status_code == 200, host


@pytest.mark.parametrize("origin", ["http://evil.test", "http://127.0.0.1:9999",
                                    "https://127.0.0.1:8765.evil.test", "null", "file://"])
def test_a_write_from_another_origin_is_refused(client: TestClient, origin: str) -> None:
    """A browser sends a multipart or text/plain POST to any origin without asking first."""
    before = client.get("/api/jobs").json()
    writes = [("POST", "/api/upload", {"files": {"file": ("planted.md", b"# Planted")}}),
              ("POST", "/api/jobs/purge-done", {}), ("POST", "/api/jobs/retry-dlq", {}),
              ("POST", "/api/jobs/drop-dlq", {}), ("DELETE", "/api/jobs/1", {}),
              ("DELETE", "/api/documents/gdpr-17", {}),
              ("POST", "/api/search", {"content": b'{"query": "erasure"}',
                                       "headers": {"content-type": "text/plain"}})]
    for method, path, options in writes:
        headers = {"origin": origin, **options.pop("headers", {})}  # type: ignore[dict-item]
        denied = client.request(method, path, headers=headers, **options)  # type: ignore[arg-type]
        assert denied.status_code == 403, (method, path, denied.text)
        assert "refused" in denied.json()["error"] and repr(origin) in denied.json()["error"]
    after = client.get("/api/jobs").json()
    assert (after["counts"], after["jobs"]) == (before["counts"], before["jobs"])
    assert client.get("/api/documents/gdpr-17").status_code == 200
    # a cross-origin GET still answers: the browser hides it from the page, CORP blocks embeds
    answer = client.get("/api/documents", headers={"origin": origin})
    assert answer.status_code == 200 and "access-control-allow-origin" not in answer.headers
    assert answer.headers["cross-origin-resource-policy"] == "same-origin"


def test_writes_from_the_servers_own_pages_and_from_clients_that_are_not_browsers(
    client: TestClient,
) -> None:
    own = {"origin": "http://127.0.0.1:8765", "sec-fetch-site": "same-origin"}
    assert client.post("/api/jobs/purge-done", headers=own).json() == {"purged": 1}
    assert client.post("/api/jobs/retry-dlq").status_code == 200  # curl: no Origin
    planted = client.post("/api/upload", files={"file": ("x.md", b"# X")},
                          headers={"sec-fetch-site": "cross-site"})  # an old browser: no Origin
    assert planted.status_code == 403 and "another site" in planted.json()["error"]


def test_allow_host_admits_a_proxy_name_and_nothing_else(store_path: Path) -> None:
    service = Service(open_test_store(store_path), poll_s=0.05, time_unit=0.001)
    app = create_app(service, allow_hosts=["Search.Example.com."])
    with TestClient(app, base_url="https://search.example.com") as client:
        assert client.get("/api/documents").status_code == 200
        proxied = {"host": "127.0.0.1:8765", "origin": "https://search.example.com"}
        assert client.post("/api/jobs/purge-done", headers=proxied).status_code == 200
        assert client.get("/api/documents", headers={"host": "other.example.com"}
                          ).status_code == 403
        assert client.post("/api/jobs/purge-done", headers={"origin": "https://evil.test"}
                           ).status_code == 403


@pytest.mark.parametrize("name", ["*", "http://x.example", "x.example:443", "a b", "..", ""])
def test_allow_host_takes_names_only(name: str) -> None:
    from enginelib.errors import InvalidInputError
    from enginelib.web.origin_guard import check_allowed_host

    with pytest.raises(InvalidInputError, match="not a host name or an IP address"):
        check_allowed_host(name)
    assert check_allowed_host("[::1]") == "::1" and check_allowed_host("10.0.0.7") == "10.0.0.7"


def test_serve_refuses_a_bad_allow_host_before_binding(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from enginelib.cli.main import main

    result = CliRunner().invoke(main, ["serve", str(tmp_path / "s"), "--port", "0",
                                       "--allow-host", "*"])
    assert result.exit_code == 2, result.output
    assert "allowed host '*' is not a host name" in result.output
    assert not (tmp_path / "s").exists()


def test_pages_carry_a_policy_that_keeps_them_out_of_other_sites(client: TestClient) -> None:
    for path in ("/", "/inspect", "/documents/gdpr-17", "/static/app.css", "/api/jobs",
                 "/api/nope"):
        response = client.get(path)
        policy = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, path
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
    # the pages run under that policy: no inline script is left for it to block
    for path in ("/", "/inspect", "/documents/gdpr-17?start=0&end=10"):
        assert not re.search(r"<script(?![^>]*\bsrc=)", client.get(path).text), path


def test_a_token_server_checks_origin_but_not_host(store_path: Path) -> None:
    """Bound beyond this machine a token guards the store and clients may use any name for
    it; a write from a page elsewhere is refused all the same."""
    token = "Zq8-xT3_pL0vW9mK2rN5"
    with make_client(store_path, token=token) as client:
        auth = {"authorization": f"Bearer {token}", "host": "search.example.com"}
        assert client.get("/api/jobs", headers=auth).status_code == 200
        denied = client.post("/api/jobs/purge-done", headers={**auth, "origin": "http://e.test"})
        assert denied.status_code == 403
        assert client.get("/api/jobs", headers={"host": "e.test"}).status_code == 401


@pytest.mark.slow
def test_serve_refuses_a_public_bind_without_a_token(tmp_path: Path) -> None:
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT)}
    env.pop("ENGINELIB_TOKEN", None)
    result = subprocess.run(
        [sys.executable, "-m", "enginelib.cli.main", "serve", str(tmp_path / "s"), "--host",
         "0.0.0.0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2  # an error, as grep has it
    assert "binding 0.0.0.0 exposes the store" in result.stderr and "--token" in result.stderr
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(("token", "why"), [
    ("s3cret", "is 6 character(s) long"), (" " * 20 + "ab", "is 2 character(s) long"),
    ("ab" * 10, "has only 2 distinct character(s)")])
def test_a_public_bind_refuses_a_guessable_token(token: str, why: str) -> None:
    """A one-character (or all-spaces) token was accepted for 0.0.0.0."""
    from enginelib.errors import UnsafeBindError
    from enginelib.web.security import require_token_for

    with pytest.raises(UnsafeBindError, match=f"the token {re.escape(why)}.*token_urlsafe"):
        require_token_for("0.0.0.0", token)
    for loopback in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"):
        require_token_for(loopback, token)  # this machine only: the user's call
    with pytest.raises(UnsafeBindError):
        require_token_for("::", token)
    require_token_for("0.0.0.0", "Zq8-xT3_pL0vW9mK2rN5")


@pytest.mark.slow
def test_serve_on_a_port_in_use_says_so_and_creates_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT)}
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "enginelib.cli.main", "serve", str(tmp_path / "s"), "--port",
             str(port)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr and "--port" in result.stderr
    assert "serving" not in result.stdout and not (tmp_path / "s").exists()


@pytest.mark.slow
def test_serve_on_port_zero_prints_the_port_it_listens_on(tmp_path: Path) -> None:
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "enginelib.cli.main", "serve", str(tmp_path / "s"), "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        match = re.search(r"at http://127\.0\.0\.1:(\d+)/", line)
        assert match and int(match.group(1)) > 0, line + process.stderr.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{match.group(1)}/api/health", timeout=30) as r:
            assert json.loads(r.read()) == {"ok": True}
        # a CLI write meanwhile is told who holds the store and what to do instead
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "a.md").write_text("Brake pads wear.", encoding="utf-8")
        ingest = subprocess.run(
            [sys.executable, "-m", "enginelib.cli.main", "ingest", str(docs), "--store",
             str(tmp_path / "s")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert ingest.returncode == 2
        assert f"held by `enginelib serve` at http://127.0.0.1:{match.group(1)}/" in ingest.stderr
        assert "enginelib ingest --queue" in ingest.stderr
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert "created an empty one" in err  # a typo in the store path is visible
    assert not (tmp_path / "s" / ".writer.holder.json").exists()  # cleared at shutdown


def test_a_bug_reaches_the_client_as_json_saying_so(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Service) -> dict:
        raise RuntimeError("boom")

    monkeypatch.setattr(Service, "stats", broken)
    service = Service(open_test_store(store_path), poll_s=0.05, time_unit=0.001)
    with TestClient(create_app(service), raise_server_exceptions=False,
                    base_url="http://127.0.0.1:8765") as client:
        response = client.get("/api/stats")  # was a plain-text "Internal Server Error"
        assert response.status_code == 500
        assert response.json()["type"] == "InternalError"
        assert "bug in enginelib" in response.json()["error"]
        assert client.get("/api/health").json() == {"ok": True}  # the server goes on


@pytest.mark.parametrize(("error", "status"), [
    ("DiskFullError", 507), ("StorageError", 503), ("CorruptStoreError", 503),
    ("InvalidInputError", 400), ("DocumentNotFoundError", 404),
])
def test_a_server_side_failure_is_not_called_a_bad_request(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, error: str, status: int
) -> None:
    # a full disk answered 400 Bad Request: the client would "fix" a request that was fine
    import enginelib.errors as errors

    def failing(self: Service) -> dict:
        raise getattr(errors, error)("the disk is full" if error == "DiskFullError" else "x")

    monkeypatch.setattr(Service, "stats", failing)
    with make_client(store_path) as client:
        response = client.get("/api/stats")
        assert response.status_code == status and response.json()["type"] == error


@pytest.mark.parametrize(("errno_", "status", "words"), [
    (28, 507, "no space left"), (30, 503, "read-only"), (5, 503, "upload of 'a.md' failed")])
def test_an_upload_the_disk_refuses_is_a_clear_error_and_leaves_no_file(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, store_path: Path, errno_: int,
    status: int, words: str,
) -> None:
    """A full disk (or a read-only one) under the upload was a 500 "bug in enginelib", and
    a file half-written with no job to take it stayed in the store."""
    import os as os_module

    real = Path.write_bytes

    def failing(self: Path, data: bytes) -> int:
        real(self, data[: len(data) // 2])
        raise OSError(errno_, os_module.strerror(errno_), str(self))

    before = client.get("/api/jobs").json()
    monkeypatch.setattr(Path, "write_bytes", failing)
    answer = client.post("/api/upload", files={"file": ("a.md", b"# A\n\n" + b"x" * 1000)})
    monkeypatch.undo()
    assert answer.status_code == status, answer.text
    assert words in answer.json()["error"]
    assert not [p for p in (store_path / "uploads").rglob("*") if p.is_file()]
    assert client.get("/api/jobs").json()["counts"] == before["counts"]
