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
