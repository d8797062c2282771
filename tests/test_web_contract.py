"""The `serve` API against what its OpenAPI document promises, and the defects a schema-driven
sweep (schemathesis, against /api/openapi.json) found: each request a client could send gets
the status and body the document lists, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.test_web import build_store, make_client

BIG = "1" + "0" * 400  # a JSON integer no float holds


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contract")
    build_store(root / "store", root / "src")
    return root / "store"


@pytest.fixture()
def client(store_path: Path) -> Iterator[TestClient]:
    with make_client(store_path, max_upload_bytes=4096) as test_client:
        yield test_client


def post_json(client: TestClient, path: str, raw: str) -> object:
    return client.post(path, content=raw.encode(),
                       headers={"content-type": "application/json"})


@pytest.mark.parametrize("raw", [
    f'{{"query": "erasure", "min_score": {BIG}}}',
    f'{{"query": "erasure", "mmr_lambda": -{BIG}}}',
    f'{{"query": "erasure", "weights": [{BIG}, 1]}}',
    f'{{"query": "erasure", "weights": {{"vector": {BIG}}}}}',
])
def test_a_number_too_large_for_a_float_is_400(client: TestClient, raw: str) -> None:
    # was a 500 "internal error (OverflowError)": float() of a 400-digit JSON integer
    response = post_json(client, "/api/search", raw)
    assert response.status_code == 400, response.text
    assert "must be a finite number" in response.json()["error"]


@pytest.mark.parametrize(("answer", "words"), [
    ("\\ud800", "lone surrogate"), ("Erasure applies [\\udfff].", "lone surrogate"),
    ("Erasure\\u0000 applies [1].", "NUL"),
])
def test_an_answer_that_is_not_valid_text_is_400(
    client: TestClient, answer: str, words: str
) -> None:
    # a lone surrogate was a 500 (UnicodeEncodeError writing the claim back as UTF-8)
    raw = f'{{"answer": "{answer}", "search": {{"query": "erasure", "no_gate": true}}}}'
    response = post_json(client, "/api/check-answer", raw)
    assert response.status_code == 400, response.text
    assert words in response.json()["error"] and "answer" in response.json()["error"]


@pytest.mark.parametrize("method", ["PUT", "PATCH", "OPTIONS", "POST"])
def test_a_method_a_document_does_not_take_is_405_listing_delete_too(
    client: TestClient, method: str
) -> None:
    # 'PUT is not allowed on /api/documents/x: it takes GET, HEAD' and 'Allow: GET, HEAD',
    # while DELETE works there: a client reading Allow would never find the delete
    response = client.request(method, "/api/documents/gdpr-17")
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD", "DELETE"}
    assert "DELETE" in response.json()["error"]
    assert client.get("/api/documents/gdpr-17").status_code == 200
    assert client.head("/api/documents/gdpr-17").status_code == 200


@pytest.mark.parametrize(("body", "words"), [
    ({"limit": "10"}, 'limit must be an integer, got "10": send the JSON number 10'),
    ({"offset": "3"}, 'offset must be an integer, got "3"'),
    ({"min_score": "0.5"}, 'min_score must be a number, got "0.5"'),
    ({"mmr_lambda": "0.5"}, "mmr_lambda must be a number"),
    ({"limit": ""}, 'limit must be an integer, got ""'),
    ({"boost": "false"}, 'boost is a switch: send JSON true or false, got "false"'),
    ({"no_gate": 1}, "no_gate is a switch: send JSON true or false, got 1"),
    ({"diversify": 0}, "diversify is a switch"),
    ({"strategy": ""}, "strategy '' is not one of"),
    ({"snapshot": 5}, "snapshot must be a snapshot's name (a string), got 5"),
    ({"snapshot": True}, "snapshot must be a snapshot's name (a string), got true"),
])
def test_a_json_body_value_of_the_wrong_type_is_refused(
    client: TestClient, body: dict, words: str
) -> None:
    """The document says integer, number, boolean; the API read "10" as 10, "false" as on
    (any non-empty string), 1 as true and the number 5 as the snapshot named '5'. A client
    with its types wrong got an answer to some other request; now it gets a 400 saying so."""
    response = client.post("/api/search", json={"query": "erasure", **body})
    assert response.status_code == 400, response.text
    assert response.json()["type"] == "InvalidInputError"
    assert words in response.json()["error"]
    checked = client.post("/api/check-answer", json={"answer": "Erasure [1].",
                                                     "search": {"query": "erasure", **body}})
    assert checked.status_code == 400 and words in checked.json()["error"]


def test_json_values_of_the_documented_types_are_taken(client: TestClient) -> None:
    body = {"query": "erasure", "limit": 2, "offset": 0.0, "min_score": -1, "mmr_lambda": 0.5,
            "boost": False, "no_gate": True, "diversify": True, "strategy": "hybrid",
            "truth_levels": "L1,L2", "weights": {"vector": 0.7, "bm25": 0.3}, "fusion": "weighted",
            "filters": '{"domain": "privacy"}', "preset": None, "snapshot": "", "rrf_k": None}
    response = client.post("/api/search", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["limit"] == 2
    listed = client.post("/api/search", json={**body, "truth_levels": ["L1"], "weights": [1, 0],
                                              "filters": {}})
    assert listed.status_code == 200, listed.text


@pytest.mark.parametrize("query", [
    "limit=1_0", "limit=%D9%A3", "limit=%EF%BC%95", "offset=1%200", "rrf_k=6_0",
    "min_score=1_0", "mmr_lambda=%D9%A3", "weights=1_0,1", "weights=%D9%A3,1",
])
def test_a_query_string_number_is_ascii_digits(client: TestClient, query: str) -> None:
    # int()/float() read '1_0' as 10 and Arabic-Indic or full-width digits as numbers
    response = client.get(f"/api/search?q=erasure&{query}")
    assert response.status_code == 400, response.text
    assert "digits 0-9" in response.json()["error"] or "weights must be two numbers" in (
        response.json()["error"])
    listing = client.get("/api/documents?limit=1_0")
    assert listing.status_code == 400 and "digits 0-9" in listing.json()["error"]
    fine = client.get("/api/search?q=erasure&limit=+3&offset=0&min_score=-1.5e0&weights=.5,1")
    assert fine.status_code == 200 and fine.json()["limit"] == 3


@pytest.mark.parametrize(("method", "path", "body", "words"), [
    ("post", "/api/search?limit=3", {"query": "erasure"},
     "POST /api/search takes no query parameters (send every option in the JSON body); "
     "got ['limit']"),
    ("post", "/api/jobs/retry-dlq", {"job_id": 1},
     "POST /api/jobs/retry-dlq takes no body fields; got ['job_id']"),
    # {"job_id": 1} to drop-dlq would have dropped every DLQ job, not the one named
    ("post", "/api/jobs/drop-dlq", {"job_id": 1},
     "POST /api/jobs/drop-dlq takes no body fields; got ['job_id']"),
    ("delete", "/api/jobs/1?force=yes", None,
     "DELETE /api/jobs/1 takes no query parameters; got ['force']"),
    ("post", "/api/jobs/purge-done?status=DONE", None,
     "POST /api/jobs/purge-done takes no query parameters; got ['status']"),
    ("post", "/api/check-answer", {"answer": "Erasure [1].", "search": {"query": "erasure"},
                                   "limit": 3}, "unknown /api/check-answer field(s) ['limit']"),
    ("get", "/api/sources?status=DLQ", None, "GET /api/sources takes no query parameters"),
    ("get", "/api/stats?x=1", None, "GET /api/stats takes no query parameters"),
    ("get", "/api/documents/gdpr-17?version=1.0.0", None, "takes no query parameters"),
])
def test_a_parameter_a_route_does_not_read_is_refused(
    store_path: Path, method: str, path: str, body: object, words: str
) -> None:
    """POST /api/search?limit=3 searched with limit 10; {"job_id": 1} to retry-dlq retried every
    DLQ job; ?status=DLQ on /api/sources listed every source: each answered 200 as if the
    parameter had been applied."""
    with make_client(store_path) as client:
        before = client.get("/api/jobs").json()["counts"]
        kwargs = {"json": body} if body is not None else {}
        response = client.request(method, path, **kwargs)
        assert response.status_code == 400, response.text
        assert words in response.json()["error"]
        assert client.get("/api/jobs").json()["counts"] == before
        assert client.post("/api/jobs/retry-dlq?token=").status_code == 200
        assert client.get("/api/stats").status_code == 200


TOKEN = "contract-token-0123456789abcdef"


def test_the_document_lists_a_token_only_where_the_server_asks_for_one(store_path: Path) -> None:
    """Every operation was documented as needing a bearer token, which a server started
    without --token never asks for; with one, the header, ?token= and cookie ways that work
    were missing."""
    with make_client(store_path) as client:
        assert "security" not in client.get("/api/openapi.json").json()
    with make_client(store_path, token=TOKEN) as client:
        assert client.get("/api/openapi.json").status_code == 401
        ways = {"bearer": {"headers": {"authorization": f"Bearer {TOKEN}"}},
                "header": {"headers": {"x-enginelib-token": TOKEN}},
                "query": {"params": {"token": TOKEN}},
                "cookie": {"headers": {"cookie": f"enginelib_token={TOKEN}"}}}
        document = client.get("/api/openapi.json", **ways["bearer"]).json()
        assert document["security"] == [{name: []} for name in ways]
        for name, way in ways.items():
            client.cookies.clear()
            scheme = document["components"]["securitySchemes"][name]
            assert scheme.get("name", "authorization").lower() in str(way).lower(), name
            assert client.get("/api/health", **way).json() == {"ok": True}, name


def _schema(document: dict, path: str, method: str, status: str) -> dict:
    responses = document["paths"][path][method]["responses"]
    schema = responses[status]["content"]["application/json"]["schema"]
    return document["components"]["schemas"]["Error"] if "$ref" in schema else schema


@pytest.mark.parametrize(("method", "path", "status", "kwargs"), [
    ("get", "/api/documents", "200", {}),
    ("get", "/api/documents/{document_id}", "200", {}),
    ("get", "/api/sources", "200", {}),
    ("get", "/api/presets", "200", {}),
    ("get", "/api/stats", "200", {}),
    ("get", "/api/jobs", "200", {}),
    ("get", "/api/jobs/history", "200", {}),
    ("get", "/api/health", "200", {}),
    ("get", "/api/openapi.json", "200", {}),
    ("get", "/api/search", "200", {"params": {"q": "erasure", "no_gate": "yes"}}),
    ("post", "/api/search", "200", {"json": {"query": "erasure"}}),
    ("post", "/api/check-answer", "200",
     {"json": {"answer": "Erasure [1]. Robots [4].", "search": {"query": "erasure"}}}),
    ("post", "/api/search", "4XX", {"json": {"query": "erasure", "limit": 0}}),
    ("get", "/api/documents/{document_id}", "4XX", {"path": "/api/documents/nope"}),
    ("delete", "/api/jobs/{job_id}", "4XX", {"path": "/api/jobs/99"}),
])
def test_each_answer_has_the_documented_shape(
    client: TestClient, method: str, path: str, status: str, kwargs: dict
) -> None:
    # /api/documents, /api/sources and /api/presets answer lists; the document said object
    import jsonschema_rs  # schemathesis's validator (the test extra)

    document = client.get("/api/openapi.json").json()
    url = kwargs.pop("path", path.replace("{document_id}", "gdpr-17"))
    response = client.request(method, url, **kwargs)
    assert str(response.status_code)[0] == status[0], response.text
    jsonschema_rs.validate(_schema(document, path, method, status), response.json())


def _post_search_properties(client: TestClient) -> dict:
    document = client.get("/api/openapi.json").json()
    body = document["paths"]["/api/search"]["post"]["requestBody"]["content"]
    return body["application/json"]["schema"]["properties"]  # type: ignore[no-any-return]


def test_the_documented_bounds_are_the_ones_the_server_applies(client: TestClient) -> None:
    # limit, offset, candidates...: the document gave no bounds, so a generated limit of 0
    # was "valid" and refused; each bound is now the server's own
    bounded = {name: schema for name, schema in _post_search_properties(client).items()
               if "maximum" in schema}
    assert {"limit", "offset", "candidates", "rrf_k", "min_score", "mmr_lambda"} <= set(bounded)
    for name, schema in bounded.items():
        for value, ok in [(schema["minimum"], True), (schema["maximum"], True),
                          (schema["minimum"] - 1, False), (schema["maximum"] + 1, False)]:
            response = client.post("/api/search", json={"query": "erasure", name: value})
            assert (response.status_code == 200) is ok, (name, value, response.text)


def test_an_unknown_snapshot_is_named_without_the_servers_paths(
    client: TestClient, store_path: Path
) -> None:
    # was "no snapshot 'nope' in /srv/.../store: `enginelib snapshot list --store /srv/...`"
    for path, kwargs in [("/api/search", {"json": {"query": "erasure", "snapshot": "nope"}}),
                         ("/api/search", {"params": {"q": "erasure", "snapshot": "nope"}}),
                         ("/api/check-answer", {"json": {"answer": "Erasure [1].", "search": {
                             "query": "erasure", "snapshot": "nope"}}})]:
        response = client.request("post" if "json" in kwargs else "get", path, **kwargs)
        assert response.status_code == 400 and response.json()["type"] == "SnapshotError"
        assert response.json()["error"] == (
            "no snapshot 'nope' in this store; its snapshots: before-brakes")
        assert str(store_path.parent) not in response.text
    found = client.post("/api/search", json={"query": "erasure", "snapshot": "before-brakes"})
    assert found.status_code == 200 and found.json()["snapshot"] == "before-brakes"


def test_a_get_search_with_the_longest_query_gets_a_json_answer(tmp_path: Path) -> None:
    """A GET search whose query is long and not ASCII (each character up to 12 bytes in the
    URL) got uvicorn's plain-text 400 'Invalid HTTP request received.' (h11 takes a 16 KiB
    request head by default), not the API's JSON answer."""
    import urllib.error
    import urllib.parse
    import urllib.request

    from enginelib.validation import MAX_QUERY_CHARS
    from enginelib.web import Service, create_app
    from tests.helpers import open_test_store, serve_in_thread

    service = Service(open_test_store(tmp_path / "store"), poll_s=0.05)
    server, thread, base = serve_in_thread(create_app(service))
    try:
        words = ("données " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
        for query, status in [(words, 200), ("\U0001f600" * MAX_QUERY_CHARS, 400),
                              ("\U0001f600" * (MAX_QUERY_CHARS + 1), 400)]:
            url = f"{base}/api/search?" + urllib.parse.urlencode({"q": query, "lenient": "1"})
            try:
                with urllib.request.urlopen(url, timeout=60) as response:
                    got, kind = response.status, response.headers["content-type"]
            except urllib.error.HTTPError as exc:
                got, kind = exc.code, exc.headers["content-type"]
            assert (got, kind) == (status, "application/json"), (len(url), got, kind)
    finally:
        server.should_exit = True  # type: ignore[attr-defined]
        thread.join(timeout=60)  # type: ignore[attr-defined]
