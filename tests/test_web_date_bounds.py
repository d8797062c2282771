"""A date filter bound in GET /api/search's query string: its offset's unencoded '+'."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.helpers import doc, open_test_store
from tests.test_web import make_client


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """Two reports, 07:00 and 09:00 UTC on March 1 2024."""
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([
            doc("early", "Brake pads wear, early report.",
                metadata={"created_at": "2024-03-01T07:00:00Z"}),
            doc("late", "Brake pads wear, late report.",
                metadata={"created_at": "2024-03-01T09:00:00Z"}),
        ], truth_level="L1")
    with make_client(tmp_path / "store") as test_client:
        yield test_client


def _get(client: TestClient, bounds: dict[str, str]) -> tuple[int, dict]:
    # the query string written by hand, '+' left as it is: as a browser's address bar or curl
    filters = json.dumps({"created_at": bounds}, separators=(",", ":"))
    answer = client.get(f"/api/search?q=brake%20pads&strategy=fulltext&no_gate=true"
                        f"&filters={filters}")
    return answer.status_code, answer.json()


def _found(data: dict) -> set[str]:
    return {hit["document_id"] for hit in data["hits"]}


def test_an_offset_whose_plus_arrived_as_a_space_is_read_as_plus(client: TestClient) -> None:
    # 10:00+02:00 is 08:00 UTC; its '+' decoded as a space was refused: "'2024-03-01T10:00:00
    # 02:00' is not an ISO date or datetime"
    status, data = _get(client, {"gte": "2024-03-01T10:00:00+02:00"})
    assert status == 200, data
    assert _found(data) == {"late"}
    status, data = _get(client, {"lt": "2024-03-01T10:00+0200"})
    assert status == 200, data
    assert _found(data) == {"early"}


def test_an_encoded_plus_and_a_minus_need_no_reading_back(client: TestClient) -> None:
    status, data = _get(client, {"gte": "2024-03-01T10:00:00%2B02:00"})
    assert (status, _found(data)) == (200, {"late"})
    status, data = _get(client, {"lt": "2024-03-01T03:30:00-04:00"})  # 07:30 UTC
    assert (status, _found(data)) == (200, {"early"})


def test_only_a_space_that_can_have_been_an_offsets_plus_is_read_back(client: TestClient) -> None:
    status, data = _get(client, {"gte": "2024-03-01T10:00:00 banana"})
    assert status == 400
    assert "'2024-03-01T10:00:00 banana' is not an ISO date or datetime" in data["error"]
    # a JSON body never went through a query string's decoding: its space is refused as sent
    answer = client.post("/api/search", json={
        "query": "brake pads", "no_gate": True,
        "filters": {"created_at": {"gte": "2024-03-01T10:00:00 02:00"}}})
    assert answer.status_code == 400
    assert "is not an ISO date or datetime" in answer.json()["error"]
