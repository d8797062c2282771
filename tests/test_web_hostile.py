"""The `serve` app against a hostile client: odd ids, parameters and bodies get a 4xx that says
what to do, never a 500, and nothing sent is silently ignored or left unprocessed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from enginelib.errors import CorruptStoreError
from tests.helpers import open_test_store
from tests.test_web import build_store, copy_of, make_client, wait_for


@pytest.fixture()
def store_path(built_store: Path, tmp_path: Path) -> Path:
    return copy_of(built_store, tmp_path)


@pytest.fixture()
def client(store_path: Path) -> Iterator[TestClient]:
    with make_client(store_path, max_upload_bytes=4096) as test_client:
        yield test_client


def test_uploads_that_arrive_together_are_all_ingested(client: TestClient) -> None:
    """Several uploads queued while the worker was busy woke it once: it took one job, then
    slept for good with the rest PENDING (20 parallel uploads to `serve`: 2 were ingested)."""
    first = client.post("/api/upload", files={"file": ("first.md", b"# First\n\nbrake pads")})
    wait_for(client, lambda d: any(j["job_id"] == first.json()["job_id"] and j["status"] == "DONE"
                                   for j in d["jobs"]))
    service = client.app.state.service  # type: ignore[attr-defined]
    with service.lock:  # the worker cannot take a job until all three are queued
        ids = [service.upload(f"doc{i}.md", f"# Doc {i}\n\nrotor wear {i}".encode(),
                              {"truth_level": "L2"})["job_id"] for i in range(3)]
    wait_for(client, lambda d: all(j["status"] == "DONE" for j in d["jobs"] if j["job_id"] in ids),
             timeout=10)


@pytest.mark.parametrize(("document_id", "words"), [
    ("", "document id is empty"), ("%00", "NUL"), ("x" * 2000, "maximum is 1,024")])
def test_the_document_page_refuses_a_malformed_id_with_400(
    client: TestClient, document_id: str, words: str
) -> None:
    # was a 500 "internal error (InvalidInputError): this is a bug in enginelib"
    response = client.get(f"/documents/{document_id}")
    assert response.status_code == 400 and "text/html" in response.headers["content-type"]
    assert words in response.text and "<title>Bad request" in response.text
    assert "<title>Not found" in client.get("/documents/no-such-doc").text


@pytest.mark.parametrize("value", ["9" * 5000, "%C2%B2", "%D9%A3"])
def test_the_document_page_ignores_an_offset_that_is_not_a_plain_number(
    client: TestClient, value: str
) -> None:
    # '²' passes str.isdigit but not int(); 5,000 digits exceed int()'s limit: both were 500s
    response = client.get(f"/documents/gdpr-17?start={value}&end=20")
    assert response.status_code == 200 and "Right to erasure" in response.text
    assert "cited span" not in response.text


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 100_000])
def test_a_json_body_nested_too_deeply_is_400(client: TestClient, body: bytes) -> None:
    # was a 500 "internal error (RecursionError)"
    response = client.post("/api/search", content=body,
                           headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert "nested too deeply" in response.json()["error"]


DEEP_FILTERS = "[" * 3_000 + "]" * 3_000
LONG_NUMBER = '{"metadata.year": ' + "1" * 5_000 + "}"


@pytest.mark.parametrize(("send", "says"), [
    (lambda c: c.get("/api/search", params={"q": "brakes", "filters": DEEP_FILTERS}),
     "filters are nested too deeply to parse"),
    (lambda c: c.post("/api/search", json={"query": "brakes", "filters": DEEP_FILTERS}),
     "filters are nested too deeply to parse"),
    (lambda c: c.get("/api/search", params={"q": "brakes", "filters": LONG_NUMBER}),
     "filters: an integer of over 4,300 digits, more than Python reads: send it as a string"),
    (lambda c: c.post("/api/check-answer", json={
        "answer": "Brakes.", "search": {"query": "brakes", "filters": LONG_NUMBER}}),
     "filters: an integer of over 4,300 digits"),
])
def test_filters_text_json_cannot_parse_is_a_filter_error(
        client: TestClient, send: object, says: str) -> None:
    # ?filters= of 3,000 nested brackets was an unhandled RecursionError (a 500 with no JSON
    # body), a 5,000-digit number a 500 {"type": "ValueError", "error": "Exceeds the limit
    # (4300 digits) ...; use sys.set_int_max_str_digits() to increase the limit"}
    response = send(client)  # type: ignore[operator]
    assert response.status_code == 400, response.text[:300]
    assert response.json()["type"] == "InvalidFilterError"
    assert says in response.json()["error"]


def test_a_json_body_with_a_number_python_cannot_read_says_what_to_send(
        client: TestClient) -> None:
    # was "request body is not valid JSON: Exceeds the limit (4300 digits) for integer string
    # conversion ...; use sys.set_int_max_str_digits() to increase the limit": the server's
    # setting, no use to a client
    response = client.post("/api/search", content=b'{"query": "brakes", "limit": '
                           + b"1" * 5_000 + b"}", headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text[:300]
    assert response.json()["error"] == (
        "request body: an integer of over 4,300 digits, more than Python reads: send it as a "
        "string")


@pytest.mark.parametrize(("content_type", "body"), [
    ("multipart/form-data", b"--x\r\n"),  # no boundary
    ("multipart/form-data; boundary=y", b"--x\r\nContent-Disposition: form-data; "
     b'name="file"; filename="a.md"\r\n\r\nhi\r\n--x--\r\n'),  # not the boundary declared
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Type: text/plain\r\n\r\nhi\r\n--x--\r\n"),
])
def test_a_malformed_multipart_upload_is_a_clear_400(
    client: TestClient, content_type: str, body: bytes
) -> None:
    # was {"error": "Invalid multipart data.", "type": "NotFound"}: the parser's words
    response = client.post("/api/upload", content=body, headers={"content-type": content_type})
    assert response.status_code == 400
    assert response.json()["type"] == "InvalidInputError"
    assert "not a valid multipart/form-data body" in response.json()["error"]
    assert "'file' field" in response.json()["error"]


@pytest.mark.parametrize(("path", "fields"), [
    ("/api/search", {"query": "brakes"}),  # was "no query given"
    ("/api/check-answer", {"answer": "Pads wear [1]."}),  # was "answer must be a non-empty string"
    ("/api/jobs/retry-dlq", {"job_id": "1"}),  # was done, the field dropped unseen
])
def test_a_form_posted_to_a_json_route_is_refused_saying_send_json(
        client: TestClient, path: str, fields: dict) -> None:
    before = client.get("/api/jobs").json()["counts"]
    response = client.post(path, data=fields, files={"extra": ("a.txt", b"x")})
    assert response.status_code == 400, response.text
    assert f"POST {path} takes a JSON object, not a multipart form" in response.json()["error"]
    assert "Content-Type: application/json" in response.json()["error"]
    assert client.get("/api/jobs").json()["counts"] == before  # the DLQ job is still there
    # `curl -d` sends its JSON as a form's type: read as JSON; name=value says what to send
    assert client.post("/api/search", content=b'{"query": "brakes"}', headers={
        "content-type": "application/x-www-form-urlencoded"}).status_code == 200
    response = client.post("/api/search", data={"query": "brakes"})
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]
    assert "Content-Type: application/json" in response.json()["error"]


@pytest.mark.parametrize("url", [
    "/api/search?q=brakes%FF", "/api/documents/gdpr-17%C3", "/api/documents?prefix=%ED%A0%80",
    "/documents/gdpr-17%FF?start=0&end=5"])
def test_a_url_that_is_not_utf8_is_refused_not_read_as_replacement_characters(
        client: TestClient, url: str) -> None:
    # ?q=brakes%FF searched "brakes\ufffd" (200) and /api/documents/x%FF named "x\ufffd"
    response = client.get(url)
    assert response.status_code == 400, response.text
    assert response.json()["type"] == "InvalidInputError"
    assert "is not UTF-8 text" in response.json()["error"]
    assert "percent-encode" in response.json()["error"]


def test_a_delete_whose_id_is_not_utf8_deletes_no_document_named_with_u_fffd(
        store_path: Path) -> None:
    from tests.helpers import doc

    with open_test_store(store_path) as store:  # an id that holds U+FFFD (a garbled file name)
        store.ingest_documents([doc("caf\ufffd.md", "Cafe brakes and pads.")])
    with make_client(store_path) as client:
        assert client.delete("/api/documents/caf%FF.md").status_code == 400  # Latin-1 'ÿ'
        assert client.get("/api/documents/caf%EF%BF%BD.md").status_code == 200


def test_an_upload_of_two_files_says_send_one(client: TestClient) -> None:
    response = client.post("/api/upload", files=[("file", ("a.md", b"# A\n\na")),
                                                 ("file", ("b.md", b"# B\n\nb"))])
    assert response.status_code == 400 and response.json()["type"] == "InvalidInputError"
    assert "one file" in response.json()["error"]


@pytest.mark.parametrize(("query", "words"), [
    ("truth_level=L1", "did you mean 'truth_levels'?"), ("tags=x", "did you mean 'tag'?")])
def test_the_document_list_refuses_a_parameter_it_does_not_know(
    client: TestClient, query: str, words: str
) -> None:
    # ?truth_level=L1 (the search filter's name) listed every document, L2 included
    response = client.get(f"/api/documents?{query}")
    assert response.status_code == 400 and words in response.json()["error"]
    assert client.get("/api/documents?truth_levels=L1&token=").status_code == 200
    jobs = client.get("/api/jobs?state=DLQ")  # listed every job
    assert jobs.status_code == 400 and "did you mean 'status'?" in jobs.json()["error"]


def test_the_document_list_takes_an_empty_filter_as_left_out(client: TestClient) -> None:
    # ?domain=, ?source_type= and ?tag= (a form's blank fields) listed no document, while an
    # empty truth_levels, prefix, limit or offset was left out, as in a search's query string
    every = client.get("/api/documents").json()
    assert len(every) == 3
    for blank in ("domain=", "source_type=", "tag=",
                  "domain=&tag=&source_type=&truth_levels=&prefix=&limit=&offset="):
        assert client.get(f"/api/documents?{blank}").json() == every, blank
    assert client.get("/api/documents?tag=nothing-has-it").json() == []  # a value still filters


def test_an_upload_refuses_a_form_field_it_does_not_know(client: TestClient) -> None:
    # 'truthlevel=L1' was dropped: the document was ingested as L2 and the answer was 202
    response = client.post("/api/upload", files={"file": ("a.md", b"# A\n\ntext")},
                           data={"truthlevel": "L1"})
    assert response.status_code == 400
    assert "did you mean 'truth_level'?" in response.json()["error"]
    assert not client.get("/api/jobs").json()["counts"]["PENDING"]


@pytest.mark.parametrize(("fields", "named"), [
    ({"tags": ["gdpr", "erasure"]}, "['tags']"),
    ({"truth_level": ["L1", "L3"], "domain": ["a", "b"]}, "['domain', 'truth_level']"),
])
def test_an_upload_refuses_a_form_field_given_twice(
        client: TestClient, fields: dict, named: str) -> None:
    # `curl -F tags=gdpr -F tags=erasure` was taken (202) and the document filed with the last
    # value alone: tags ['erasure'], truth level L3
    before = client.get("/api/jobs").json()["counts"]
    response = client.post("/api/upload", files={"file": ("a.md", b"# A\n\nbrake pads")},
                           data=fields)
    assert response.status_code == 400, response.text
    assert f"upload field(s) {named} given more than once" in response.json()["error"]
    assert "tags=gdpr,erasure" in response.json()["error"]
    assert client.get("/api/jobs").json()["counts"] == before


def test_an_empty_upload_is_refused_before_it_is_queued(client: TestClient) -> None:
    # accepted with 202, then failed in the worker, retry after retry, into the DLQ
    before = client.get("/api/jobs").json()["counts"]
    response = client.post("/api/upload", files={"file": ("empty.md", b" \n")})
    assert response.status_code == 400 and "empty" in response.json()["error"]
    assert client.get("/api/jobs").json()["counts"] == before


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("PUT", "/api/health", "GET"), ("GET", "/api/upload", "POST"), ("PATCH", "/", "GET")])
def test_a_method_a_route_does_not_take_is_405_with_the_ones_it_does(
    client: TestClient, method: str, path: str, allow: str
) -> None:
    # was 405 with no Allow header, and 'no API route PUT /api/health' as if there were none
    response = client.request(method, path)
    assert response.status_code == 405 and allow in response.headers["allow"]
    if path.startswith("/api/"):
        assert f"{method} is not allowed on {path}: it takes" in response.json()["error"]


@pytest.mark.parametrize(("query", "words"), [
    ("/api/search?q=brakes&q=tyres", "['q'] given more than once"),
    ("/api/search?q=brakes&query=tyres", "not both"),
    ("/api/documents?limit=10&limit=1", "['limit'] given more than once"),
    ("/api/jobs?status=DONE&status=DLQ", "['status'] given more than once")])
def test_a_query_parameter_given_twice_is_refused(
    client: TestClient, query: str, words: str
) -> None:
    # q=brakes&q=tyres searched 'tyres' alone; q=brakes&query=tyres searched 'brakes' alone
    response = client.get(query)
    assert response.status_code == 400 and words in response.json()["error"]


@pytest.mark.parametrize(("path", "body", "words"), [
    ("/api/search", b'{"query": "brakes", "limit": 2, "limit": 50}',
     "request body: 'limit' is given more than once"),
    ("/api/search", b'{"query": "brakes", "filters": {"domain": "a", "domain": "b"}}',
     "request body: 'domain' is given more than once"),
    ("/api/check-answer", b'{"answer": "Pads wear [1].", "answer": "Rotors warp.", '
     b'"search": {"query": "brakes"}}', "request body: 'answer' is given more than once"),
    ("/api/search?q=brakes&filters=%7B%22domain%22%3A%22a%22%2C%22domain%22%3A%22b%22%7D",
     None, "filters: 'domain' is given more than once"),
])
def test_a_json_key_given_twice_is_refused(
    client: TestClient, path: str, body: bytes | None, words: str
) -> None:
    # {"limit": 2, "limit": 50} searched with limit 50; two answers checked the second alone
    response = (client.get(path) if body is None else client.post(
        path, content=body, headers={"content-type": "application/json"}))
    assert response.status_code == 400, response.text
    assert words in response.json()["error"]


def asgi_get(app: object, path: str, query: str) -> tuple[int, dict]:
    """GET through the ASGI app itself: a query string longer than the test client sends."""
    import asyncio

    replies: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        replies.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(),
             "query_string": query.encode(), "scheme": "http", "server": ("127.0.0.1", 8765),
             "client": ("127.0.0.1", 5000), "http_version": "1.1", "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8765")]}
    asyncio.run(app(scope, receive, send))  # type: ignore[operator]
    return replies[0]["status"], json.loads(b"".join(m.get("body", b"") for m in replies[1:]))


@pytest.mark.parametrize(("path", "query", "words"), [
    ("/api/stats", "", "takes no query parameters; got ['p0', 'p1', 'p10', "),
    ("/api/search", "q=brakes&", "unknown search parameter(s) ['p0', 'p1', 'p10', "),
    ("/api/documents", "", "unknown document list parameter(s) ['p0', 'p1', 'p10', "),
    ("/api/jobs", "", "unknown job list parameter(s) ['p0', 'p1', 'p10', "),
])
def test_a_query_string_of_many_parameters_is_answered_in_a_few_lines(
        client: TestClient, path: str, query: str, words: str) -> None:
    """40,000 made-up parameters, what the request head takes: each name was counted against
    every other on the server's event loop (8.5 s for 30,000, every other request waiting),
    then each was looked up for a close match and all were listed, a 290 KB answer."""
    many = "&".join(f"p{i}=" for i in range(40_000))
    status, body = asgi_get(client.app, path, query + many)
    assert status == 400 and words in body["error"] and "and 39,990 more" in body["error"]
    assert len(body["error"]) < 1000
    status, body = asgi_get(client.app, "/api/stats", many + "&" + many)
    assert status == 400 and "and 39,990 more given more than once" in body["error"]
    assert len(body["error"]) < 1000


def test_an_answer_check_over_its_cap_is_refused_with_the_way_out(client: TestClient) -> None:
    """A 1.5 MB answer of short sentences held a server thread ~6 s and answered one claim per
    sentence (at the 16 MB body cap about a minute)."""
    from enginelib.web.service import MAX_ANSWER_CHARS

    search = {"query": "right to erasure", "no_gate": True}
    big = client.post("/api/check-answer",
                      json={"answer": "a. " * (MAX_ANSWER_CHARS // 3 + 1), "search": search})
    assert big.status_code == 400 and "check it in parts" in big.json()["error"]
    fits = client.post("/api/check-answer",
                       json={"answer": "Data can be erased [1]. " * 1000, "search": search})
    assert fits.status_code == 200 and len(fits.json()["claims"]) >= 1


@pytest.mark.parametrize(("path", "content_type", "body"), [
    ("/api/upload", "multipart/form-data; boundary=B",
     b'--B\r\nContent-Disposition: form-data; name="file"; filename="cut.md"\r\n\r\nbrake '),
    ("/api/search", "application/json", b'{"query": "bra'),
], ids=["upload", "json"])
def test_a_client_gone_mid_body_is_no_server_error(
    store_path: Path, path: str, content_type: str, body: bytes
) -> None:
    """A client that hangs up halfway through its body (a closed laptop, a cancelled upload)
    raised ClientDisconnect out of the app: uvicorn logged 'Exception in ASGI application' with
    a traceback for each. It is the client's doing: nothing is queued, nothing kept, no error."""
    import anyio

    client = make_client(store_path)  # not entered: no lifespan, no worker
    service = client.app.state.service  # type: ignore[attr-defined]
    before = service.jobs()["counts"]
    messages = iter([{"type": "http.request", "body": body, "more_body": True},
                     {"type": "http.disconnect"}])
    sent: list[dict] = []

    async def receive() -> dict:
        return next(messages, {"type": "http.disconnect"})

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": path,
             "raw_path": path.encode(), "query_string": b"", "root_path": "", "scheme": "http",
             "server": ("127.0.0.1", 8765), "client": ("127.0.0.1", 50000),
             "headers": [(b"host", b"127.0.0.1:8765"), (b"content-type", content_type.encode()),
                         (b"content-length", str(len(body) * 4).encode())]}
    anyio.run(client.app, scope, receive, send)
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] != [500]
    assert service.jobs()["counts"] == before
    assert not list((store_path / "uploads").glob("*/cut.md"))
    service.stop()


def test_a_document_deleted_after_its_new_upload_was_queued_stays_deleted(
    client: TestClient,
) -> None:
    """An upload queued, then the document deleted before the worker took the job: the job
    ran after the delete and brought the document back (a team member's delete undone by a
    colleague's upload seconds earlier). The waiting job now goes to the DLQ saying why."""
    service = client.app.state.service  # type: ignore[attr-defined]
    with service.lock:  # the worker cannot take the job before the delete
        job = service.upload("brakes.md", b"# Brakes\n\nnew rotor text",
                             {"truth_level": "L2"})["job_id"]
        service.delete("brakes.md")
    data = wait_for(client, lambda d: any(j["job_id"] == job and j["status"] in ("DONE", "DLQ")
                                          for j in d["jobs"]))
    assert client.get("/api/documents/brakes.md").status_code == 404
    cancelled = next(j for j in data["jobs"] if j["job_id"] == job)
    assert cancelled["status"] == "DLQ" and "deleted" in cancelled["last_error"]
    assert "Retry DLQ" in cancelled["last_error"]


def _many_jobs(path: Path, count: int, done: int) -> None:
    """``count`` jobs of files that are not there, the first ``done`` of them DONE."""
    from enginelib.jobs import NewJob
    from tests.helpers import open_test_store

    with open_test_store(path) as store:
        ids = store.jobs().enqueue([NewJob(str(path / f"gone-{i}.md"), f"gone-{i}.md", {})
                                    for i in range(count)])
        with store.catalog.transaction() as con:  # as a worker leaves them, minus the ingests
            con.execute("UPDATE jobs SET status = 'DONE' WHERE job_id <= ?", [ids[done - 1]])


def test_the_job_list_says_how_many_jobs_there_are_and_pages_through_them(tmp_path: Path) -> None:
    """/api/jobs listed the first 1000 jobs and nothing said there were more."""
    from enginelib.web import Service, create_app
    from tests.helpers import open_test_store

    _many_jobs(tmp_path / "s", 1002, done=1001)
    service = Service(open_test_store(tmp_path / "s"))
    with TestClient(create_app(service, worker=False), base_url="http://127.0.0.1") as client:
        first = client.get("/api/jobs").json()
        assert (first["total"], first["limit"], first["offset"], len(first["jobs"])) == (
            1002, 1000, 0, 1000)
        rest = client.get("/api/jobs", params={"offset": 1000}).json()
        assert [j["job_id"] for j in rest["jobs"]] == [1001, 1002]
        pending = client.get("/api/jobs", params={"status": "PENDING", "limit": 5}).json()
        assert (pending["total"], [j["job_id"] for j in pending["jobs"]]) == (1, [1002])
        # the console's table: the job not done, queued after 1000 done ones, was left out
        waiting = [row for row in client.get("/api/sources").json() if row["status"] != "INDEXED"]
        assert [(row["document_id"], row["status"]) for row in waiting] == [("gone-1001.md",
                                                                            "PENDING")]
        for query, word in (({"limit": 0}, "limit"), ({"offset": -1}, "offset"),
                            ({"limit": "ten"}, "limit"), ({"limit": 10**7}, "limit")):
            refused = client.get("/api/jobs", params=query)
            assert refused.status_code == 400 and word in refused.json()["error"], query


@pytest.mark.parametrize("options", ["null", "[1, 2]", '"L1"'])
def test_a_job_row_whose_options_are_not_an_object_is_listed_and_fails_with_the_fix(
    tmp_path: Path, options: str
) -> None:
    """Options of another JSON type in a job row (edited by hand) answered /api/sources with
    500 and failed the job on "argument after ** must be a mapping"."""
    from enginelib.jobs import DLQ, NewJob, Worker
    from enginelib.web import Service, create_app
    from tests.helpers import open_test_store, paragraphs

    (source := tmp_path / "brakes.md").write_text(paragraphs(2), encoding="utf-8")
    store = open_test_store(tmp_path / "s")
    queue = store.jobs(max_attempts=1)
    queue.enqueue([NewJob(str(source), "brakes.md", {})])
    with store.catalog.transaction() as con:
        con.execute("UPDATE jobs SET options = ?", [options])
    outcome = Worker(store, queue).run_once()
    assert outcome is not None and outcome.status == DLQ
    assert "not an object" in (outcome.error or "") and "ingest --queue" in (outcome.error or "")
    with TestClient(create_app(Service(store), worker=False),
                    base_url="http://127.0.0.1") as client:
        answer = client.get("/api/sources")
        assert answer.status_code == 200
        assert [(r["document_id"], r["status"], r["truth_level"]) for r in answer.json()] == [
            ("brakes.md", DLQ, None)]


def test_the_upload_sweep_at_start_removes_only_folders_an_upload_made(store_path: Path,
                                                                       tmp_path: Path) -> None:
    """uploads/ linked to a folder of other things (a bigger disk): serve's start removed
    every folder there that no job named."""
    elsewhere = tmp_path / "big-disk"
    (elsewhere / "photos").mkdir(parents=True)
    (elsewhere / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    (elsewhere / "0123456789ab").mkdir()  # what an upload left: swept
    (store_path / "uploads").symlink_to(elsewhere, target_is_directory=True)
    with make_client(store_path):
        pass
    assert sorted(p.name for p in elsewhere.iterdir()) == ["photos"]
    assert (elsewhere / "photos" / "cat.jpg").is_file()


def test_uploads_to_an_uploads_folder_linked_to_another_disk_are_ingested(
        store_path: Path, tmp_path: Path) -> None:
    """The containment check compared the file's resolved path with the store's: with
    uploads/ a link to a bigger disk, as the sweep above allows, every upload was refused
    400 "upload name 'notes.md' would leave the store"."""
    elsewhere = tmp_path / "big-disk"
    elsewhere.mkdir()
    (store_path / "uploads").symlink_to(elsewhere, target_is_directory=True)
    with make_client(store_path) as client:
        answer = client.post("/api/upload", files={"file": ("notes.md", b"# Notes\n\nPads.")})
        assert answer.status_code == 202, answer.text
        wait_for(client, lambda d: d["counts"]["DONE"] == 2)
        assert client.get("/api/documents/notes.md").json()["document"]["text"] == (
            "# Notes\n\nPads.")
        for name in ("../x.md", "a/b.md"):  # the check still keeps a name in its folder
            upload = client.app.state.service.upload  # type: ignore[attr-defined]
            with pytest.raises(ValueError, match="would leave its upload folder"):
                upload(name, b"text", {"truth_level": "L2"})
    assert not [p for p in elsewhere.rglob("*") if p.is_file()]  # done: its file removed


@pytest.mark.parametrize(("sent", "stored"), [
    ("Übersicht.md", "Übersicht.md"),
    ("re\u0301sume\u0301 (v2).md", "résumé (v2).md"),  # a Mac's decomposed name, composed
    ("資料.txt", "資料.txt"),
])
def test_an_upload_named_in_another_script_is_queued_under_that_name(
    tmp_path: Path, sent: str, stored: str,
) -> None:
    # only ASCII letters were taken: "Übersicht.md" was "not a plain file name"
    build_store(tmp_path / "store", tmp_path / "src")
    with make_client(tmp_path / "store", max_upload_bytes=4096) as client:
        response = client.post("/api/upload", files={"file": (sent, b"# Bremsen\n\nBelag")})
        assert response.status_code == 202, response.text
        assert response.json()["document_id"] == stored
    assert [p.name for p in (tmp_path / "store" / "uploads").glob("*/*")] in ([stored], [])


@pytest.mark.parametrize("name", [
    "a\u202egpj.md",  # right-to-left override: shows as another name
    "a\u200bb.md",  # zero-width space
    "é" * 130 + ".md",  # 263 bytes: more than a file system takes for one name
    "_x.md", "a..b.md", "a\tb.md",
])
def test_an_upload_name_with_invisible_characters_or_too_long_is_refused(
    client: TestClient, name: str,
) -> None:
    response = client.post("/api/upload", files={"file": (name, b"# A\n\ntext")})
    assert response.status_code == 400 and "not a plain file name" in response.json()["error"]


@pytest.mark.parametrize(("name", "data", "reason"), [
    ("bin.md", b"\x00\x01\x02binary", "bin.md: binary file (NUL bytes)"),
    ("latin.txt", "Bremsbel\xe4ge".encode("latin-1"),
     "latin.txt: not valid UTF-8 at byte 8: it reads as Windows-1252 (Latin-1): convert it "
     "with `iconv -f WINDOWS-1252 -t UTF-8 'latin.txt'`"),
    ("bad.pdf", b"%PDF-1.4 garbage", "bad.pdf: cannot read PDF"),
    ("x.jsonl", b"not json\n", "x.jsonl line 1: invalid JSON"),
])
def test_an_upload_its_loader_cannot_read_is_refused_before_it_is_queued(
    client: TestClient, store_path: Path, name: str, data: bytes, reason: str,
) -> None:
    # accepted with 202, then failed the same way on each attempt, into the DLQ minutes later
    before = client.get("/api/jobs").json()["counts"]
    response = client.post("/api/upload", files={"file": (name, data)})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error.startswith(f"upload cannot be indexed, not queued: {reason}")
    assert str(store_path) not in error  # the server's own paths stay on the server
    assert client.get("/api/jobs").json()["counts"] == before
    assert not list((store_path / "uploads").glob(f"*/{name}"))


def test_a_store_moved_or_deleted_while_served_is_not_started_again_empty(
        store_path: Path) -> None:
    """serve lets go of the catalog file when idle; the next request opened it again by path,
    and DuckDB started an empty catalog there: with the store's folder moved away, an upload
    made the folder again (uploads/ and a new catalog.duckdb) and got a 500; with the file
    deleted, every request was a "damaged catalog", and the next open took the empty file
    for a store that had never committed: its documents gone, without an error."""
    moved = store_path.with_name("moved")
    with make_client(store_path) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        with service.lock:
            service.store.catalog.release()  # as after RELEASE_AFTER_S without a request
            store_path.rename(moved)
        for response in (client.get("/api/stats"), client.get("/api/search?q=brakes"),
                         client.post("/api/upload", files={"file": ("n.md", b"brake pads")})):
            assert response.status_code == 503, response.text
            assert response.json()["type"] == "StorageError"
            assert "is gone since" in response.json()["error"]
        assert not store_path.exists()  # nothing made again at the old path
        moved.rename(store_path)  # put back: served again as it was
        assert len(client.get("/api/documents").json()) == 3
        with service.lock:
            service.store.catalog.release()
            (store_path / "catalog.duckdb").unlink()
        response = client.get("/api/stats")
        assert response.status_code == 503 and "is gone since" in response.json()["error"]
        assert not (store_path / "catalog.duckdb").exists()
    with pytest.raises(CorruptStoreError, match="missing"):  # never an empty store
        open_test_store(store_path)


def test_an_upload_body_longer_than_its_content_length_is_not_read_on(store_path: Path) -> None:
    """With Transfer-Encoding: chunked beside a small Content-Length, the server reads the
    chunks: the upload passed the length check, and the form parser spooled the whole body
    to disk (100 MB through a real serve, then a 413), whatever its size."""
    import asyncio

    from enginelib.web import Service, create_app

    service = Service(open_test_store(store_path))
    app = create_app(service, worker=False)
    head = b'--B\r\nContent-Disposition: form-data; name="file"; filename="big.md"\r\n\r\n'
    chunk = b"brake pads " * 10_000
    pulled = 0
    replies: list[dict] = []

    async def receive() -> dict:
        nonlocal pulled
        pulled += 1
        if pulled > 1000:  # ~110 MB: the whole body
            return {"type": "http.request", "body": b"\r\n--B--\r\n", "more_body": False}
        return {"type": "http.request", "body": head if pulled == 1 else chunk,
                "more_body": True}

    async def send(message: dict) -> None:
        replies.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/upload", "raw_path": b"/api/upload",
             "query_string": b"", "scheme": "http", "server": ("127.0.0.1", 8765),
             "client": ("127.0.0.1", 5000), "http_version": "1.1", "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8765"), (b"content-length", b"1000"),
                         (b"transfer-encoding", b"chunked"),
                         (b"content-type", b"multipart/form-data; boundary=B")]}
    try:
        asyncio.run(app(scope, receive, send))
    finally:
        service.stop()
    assert replies[0]["status"] == 400
    body = json.loads(b"".join(m.get("body", b"") for m in replies[1:]))
    assert "longer than its Content-Length (1,000 bytes)" in body["error"]
    assert pulled <= 2  # stopped at the first chunk past the length said
    assert not (store_path / "uploads").exists() or not any((store_path / "uploads").iterdir())


@pytest.mark.slow
def test_serve_stops_on_sigterm_while_a_client_stalls_mid_upload(tmp_path: Path) -> None:
    """uvicorn waits for the requests in progress without a bound: an upload whose body
    stopped coming kept serve running after SIGTERM for as long as its client held on."""
    import os
    import re
    import signal
    import socket
    import subprocess
    import sys

    from enginelib.web.app import GRACEFUL_SHUTDOWN_S

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing", "PYTHONPATH": str(root)}
    process = subprocess.Popen(
        [sys.executable, "-m", "enginelib.cli.main", "serve", str(tmp_path / "s"), "--port", "0"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        match = re.search(r"at http://127\.0\.0\.1:(\d+)/", process.stdout.readline())
        assert match, process.stderr.read() if process.stderr else ""
        port = int(match.group(1))
        with socket.create_connection(("127.0.0.1", port)) as stalled:
            part = (b'--B\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\n'
                    b"\r\n# Slow\n\nbrake")
            stalled.sendall(
                f"POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
                "multipart/form-data; boundary=B\r\nContent-Length: 1000\r\n\r\n".encode() + part)
            with socket.create_connection(("127.0.0.1", port)) as probe:  # the upload is in
                probe.sendall(f"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                              "Connection: close\r\n\r\n".encode())
                assert b'{"ok": true}' in b"".join(iter(lambda: probe.recv(4096), b""))
            process.terminate()
            # the client still holds its half-sent upload open
            # (uvicorn raises the signal again once stopped: the exit status says SIGTERM)
            assert process.wait(timeout=GRACEFUL_SHUTDOWN_S + 50) == -signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)
    assert not (tmp_path / "s" / ".writer.holder.json").exists()  # cleared at shutdown
    with open_test_store(tmp_path / "s", chunking=None) as store:  # nothing half-uploaded queued
        assert store.jobs().counts()["PENDING"] == 0


@pytest.mark.parametrize("token", ["sécrét-tökén-0123456789", " padded-Token-0123456789 ",
                                   "пароль-0123456789"])
def test_a_token_no_http_header_can_carry_is_refused_at_start(
        store_path: Path, tmp_path: Path, token: str) -> None:
    """serve took a token with "é": curl's 'Authorization: Bearer ...' (UTF-8 bytes, read as
    Latin-1) answered 401 for ever, Python's clients refused to send it, only ?token= worked."""
    from click.testing import CliRunner

    from enginelib.cli.main import main
    from enginelib.errors import InvalidInputError
    from enginelib.web import Service, create_app

    service = Service(open_test_store(store_path))
    try:
        with pytest.raises(InvalidInputError, match="visible ASCII only.*token_urlsafe"):
            create_app(service, token=token)
    finally:
        service.stop()
    result = CliRunner(env={"ENGINELIB_EMBEDDER": "hashing"}).invoke(
        main, ["serve", str(tmp_path / "s"), "--port", "0", "--token", token])
    assert result.exit_code == 2 and "visible ASCII only" in result.output, result.output
    assert not (tmp_path / "s").exists()  # refused before anything was made
    # an ASCII token goes in every way
    with make_client(store_path, token="Zq8-xT3 pL0vW9mK2rN5~!") as client:
        auth = {"authorization": "Bearer Zq8-xT3 pL0vW9mK2rN5~!"}
        assert client.get("/api/health", headers=auth).status_code == 200


def test_a_store_replaced_while_served_is_refused_not_mixed_with_the_one_served(
        store_path: Path) -> None:
    """With the store moved away and another made at its path, serve reopened the new catalog
    beside the old store's indexes in memory: searches answered the old documents, the list
    the new ones, and an upload got a 500 (CatalogException: no jobs table)."""
    from tests.helpers import doc

    with make_client(store_path) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        with service.lock:
            service.store.catalog.release()  # as after RELEASE_AFTER_S without a request
            store_path.rename(store_path.with_name("served"))
            with open_test_store(store_path) as other:
                other.ingest_documents([doc("other", "Tyres and wheels. " * 20, title="Other")])
        for response in (client.get("/api/documents"), client.get("/api/search?q=brakes"),
                         client.post("/api/upload", files={"file": ("n.md", b"brake pads")})):
            assert response.status_code == 503, response.text
            assert "is not the file this process opened" in response.json()["error"]
    with open_test_store(store_path) as other:  # the store put there was left as it was
        assert [d["document_id"] for d in other.list_documents()] == ["other"]
        assert other.jobs().counts()["PENDING"] == 0
    with open_test_store(store_path.with_name("served")) as served:
        assert len(served.list_documents()) == 3


@pytest.mark.parametrize(("path", "content_type", "first"), [
    ("/api/upload", b"multipart/form-data; boundary=B",
     b'--B\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\n\r\n# A\n\nbr'),
    ("/api/search", b"application/json", b'{"query": "bra'),
])
def test_a_body_that_stops_coming_is_answered_408_not_waited_for(
        store_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, content_type: bytes,
        first: bytes) -> None:
    """A client that sent fewer bytes than its Content-Length said held the request, and its
    connection, for ever: no answer, nothing logged (reproduced on a real serve)."""
    import asyncio

    from enginelib.web import Service, api, create_app

    monkeypatch.setattr(api, "BODY_IDLE_S", 0.2)
    service = Service(open_test_store(store_path))
    app = create_app(service, worker=False)
    replies: list[dict] = []
    pulled = 0

    async def receive() -> dict:
        nonlocal pulled
        pulled += 1
        if pulled == 1:
            return {"type": "http.request", "body": first, "more_body": True}
        await asyncio.Event().wait()  # the rest never comes (wait_for below: the test's own end)
        raise AssertionError("unreachable")

    async def send(message: dict) -> None:
        replies.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(),
             "query_string": b"", "scheme": "http", "server": ("127.0.0.1", 8765),
             "client": ("127.0.0.1", 5000), "http_version": "1.1", "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8765"), (b"content-length", b"500"),
                         (b"content-type", content_type)]}
    try:
        asyncio.run(asyncio.wait_for(app(scope, receive, send), 20))
    finally:
        service.stop()
    assert replies[0]["status"] == 408
    body = json.loads(b"".join(m.get("body", b"") for m in replies[1:]))
    assert body["type"] == "SlowBodyError" and "no part of the request's body came" in body["error"]


@pytest.mark.parametrize(("send", "words"), [
    (lambda c: c.post("/api/search", json={"query": "brakes", "snapshot": "s" * 1_000_000}),
     "snapshot name 'ssss"),
    (lambda c: c.post("/api/search", json={"query": "brakes", "x" * 1_000_000: 1}),
     "unknown search parameter(s) ['xxxx"),
    (lambda c: c.post("/api/upload", files={"file": ("a.md", b"# A\n\nbrake pads")},
                      data={"truth_level": "L" * 60_000}), "unknown truth level 'LLLL"),
    # a filter's date bound, a filter's value, weights as text and the query a syntax error
    # names were quoted whole: a 1 MB (20,000 characters for the query) answer
    (lambda c: c.post("/api/search", json={"query": "brakes", "filters": {
        "created_at": {"gte": "2" * 1_000_000}}}), "filter 'created_at': '2222"),
    (lambda c: c.post("/api/search", json={"query": "brakes", "filters": {
        "domain": [{"a": "d" * 1_000_000}]}}), "expects a string or a list of strings, got {'a'"),
    (lambda c: c.post("/api/search", json={"query": "brakes", "weights": "1," * 500_000}),
     "weights must be two numbers VECTOR,BM25 such as 0.7,0.3, got '1,1,"),
    (lambda c: c.get("/api/search", params={"q": '"' + "q" * 19_000}),
     "unbalanced double quote in query '\"qqq"),
    (lambda c: c.get("/api/search", params={"q": "AND " * 4_000}), "AND needs a term"),
    (lambda c: c.get("/api/search", params={"q": "-y " * 6_000}),
     "only excludes terms"),
])
def test_a_refusal_quotes_an_excerpt_of_a_huge_value_not_all_of_it(
        client: TestClient, send: object, words: str) -> None:
    # a megabyte snapshot or parameter name was answered with a megabyte message
    response = send(client)  # type: ignore[operator]
    assert response.status_code == 400, response.text[:300]
    error = response.json()["error"]
    # a string quoted is cut with its length, another value's repr with "..."
    cut = " characters)" in error or "..." in error
    assert words in error and cut and len(error) < 1000, error[:300]
