"""Paging across writes: a response names the store state it was ranked on (``ranked_at``);
passed back, the next page is a slice of that same ranking or a RankingChangedError, never a
page cut from another ranking (repeated or skipped hits). Python, HTTP and the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import enginelib
from enginelib import InvalidInputError, RankingChangedError, SearchResponse, Store
from enginelib.cli.main import main
from enginelib.search.ranked_at import TOKEN
from enginelib.web import Service, create_app
from tests.helpers import doc, open_test_store

WORDS = ["pads", "rotor", "caliper", "fluid", "torque", "piston", "wear", "noise"]
QUERY = "brake rotor caliper"
# Full text: a new document that says the query's words more often ranks first, for certain.
OPTIONS: dict[str, Any] = dict(strategy="fulltext", answerability_threshold=None, log=False)


def _docs(count: int, prefix: str = "d") -> list[enginelib.LoadedDocument]:
    return [doc(f"{prefix}{i:03d}", f"Brake note {i}: the {WORDS[i % 8]} and the "
                                    f"{WORDS[(i * 3) % 8]} of the brake system, item {i}.")
            for i in range(count)]


# Said three times over: each outranks every note above, so it pushes them a rank down.
LOUDER = [doc(f"new{i}", "brake rotor caliper " * 3 + f"bulletin {i}") for i in range(5)]


def _ranked(path: Path) -> Store:
    store = open_test_store(path)
    store.ingest_documents(_docs(120), truth_level="L1")
    return store


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with _ranked(tmp_path / "s") as opened:
        yield opened


def _ids(response: SearchResponse) -> list[str]:
    return [h.document_id for h in response.hits]


def test_every_response_names_the_state_it_was_ranked_on(store: Store) -> None:
    first = store.search(QUERY, **OPTIONS)
    assert TOKEN.fullmatch(first.ranked_at), first.ranked_at
    assert first.to_dict()["ranked_at"] == first.ranked_at
    again = store.search(QUERY, **OPTIONS)  # from the response cache: the same state
    assert again.timings.get("cached") == 1.0 and again.ranked_at == first.ranked_at
    batch = store.search_batch([QUERY, "brake pads"], **OPTIONS)
    assert {r.ranked_at for r in batch} == {first.ranked_at}
    store.ingest_documents(LOUDER[:1], truth_level="L1")
    assert store.search(QUERY, **OPTIONS).ranked_at != first.ranked_at


def test_pages_with_the_token_stitch_into_one_deep_request(store: Store) -> None:
    # candidates=10 and pages of 7: the pages cross the candidate ladder's rungs
    options = {**OPTIONS, "candidates": 10, "strategy": "hybrid"}
    first = store.search(QUERY, limit=7, **options)
    pages = _ids(first)
    for offset in range(7, 63, 7):
        page = store.search(QUERY, limit=7, offset=offset, ranked_at=first.ranked_at, **options)
        assert page.ranked_at == first.ranked_at
        pages += _ids(page)
    deep = store.search(QUERY, limit=63, **options)
    assert pages == _ids(deep) and len(set(pages)) == 63


@pytest.mark.parametrize("write", ["ingest", "delete", "update"])
def test_a_write_between_pages_refuses_the_next_page(store: Store, write: str) -> None:
    first = store.search(QUERY, limit=5, **OPTIONS)
    if write == "ingest":
        store.ingest_documents(LOUDER, truth_level="L1")
    elif write == "delete":
        store.delete_document(_ids(first)[0])
    else:
        store.update_document(_ids(first)[0], truth_level="L3")
    with pytest.raises(RankingChangedError) as raised:
        store.search(QUERY, limit=5, offset=5, ranked_at=first.ranked_at, **OPTIONS)
    error = raised.value
    assert error.given == first.ranked_at and error.current != first.ranked_at
    assert error.current == store.search(QUERY, **OPTIONS).ranked_at
    assert "offset 0" in str(error) and "snapshot" in str(error)
    # search_batch checks its token the same way
    with pytest.raises(RankingChangedError):
        store.search_batch([QUERY], ranked_at=first.ranked_at, **OPTIONS)


def test_without_the_token_the_next_page_is_cut_from_the_new_ranking(store: Store) -> None:
    # The behaviour ranked_at exists for, kept for callers that do not pass it: five
    # documents ranked first since page 1 push page 1's hits onto page 2, read again.
    first = store.search(QUERY, limit=5, **OPTIONS)
    store.ingest_documents(LOUDER, truth_level="L1")
    second = store.search(QUERY, limit=5, offset=5, **OPTIONS)
    assert _ids(second) == _ids(first)


def test_a_snapshot_never_moves_so_its_pages_outlive_writes(store: Store) -> None:
    store.create_snapshot("before")
    live_first = store.search(QUERY, limit=5, **OPTIONS)
    with enginelib.open(store.path, snapshot="before", embedder=store.embedder) as snapshot:
        first = snapshot.search(QUERY, limit=5, **OPTIONS)
        store.ingest_documents(LOUDER, truth_level="L1")
        second = snapshot.search(QUERY, limit=5, offset=5, ranked_at=first.ranked_at, **OPTIONS)
        assert _ids(first) + _ids(second) == _ids(snapshot.search(QUERY, limit=10, **OPTIONS))
        # the live store's token, now behind it, names another state than the snapshot's
        store.ingest_documents(_docs(1, "more"), truth_level="L1")
        moved = store.search(QUERY, **OPTIONS).ranked_at
        with pytest.raises(RankingChangedError, match="snapshot 'before'"):
            snapshot.search(QUERY, ranked_at=moved, **OPTIONS)
    assert live_first.ranked_at == first.ranked_at  # taken in that state: the same one


@pytest.mark.parametrize("token", ["", "latest", "g-1-2026.11.0", "g12", "g1-2026 11", "g01-x",
                                   "g1-" + "9" * 200, 12, ["g1-"]])
def test_a_malformed_token_is_an_input_error(store: Store, token: Any) -> None:
    with pytest.raises(InvalidInputError, match="ranked_at"):
        store.search(QUERY, ranked_at=token, **OPTIONS)


def test_an_in_memory_store_names_its_state_too() -> None:
    with enginelib.open(":memory:", embedder=enginelib.HashingEmbedder(64)) as memory:
        memory.ingest_documents(_docs(3), truth_level="L1")
        first = memory.search(QUERY, limit=1, **OPTIONS)
        assert memory.search(QUERY, limit=1, offset=1, ranked_at=first.ranked_at,
                             **OPTIONS).ranked_at == first.ranked_at


# -- HTTP ----------------------------------------------------------------------------------


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    _ranked(tmp_path / "s").close()
    service = Service(open_test_store(tmp_path / "s"), poll_s=0.05, time_unit=0.001)
    with TestClient(create_app(service, worker=False),  # type: ignore[arg-type]
                    base_url="http://127.0.0.1:8765") as test_client:
        yield test_client


def _hit_ids(data: dict[str, Any]) -> list[str]:
    return [h["document_id"] for h in data["hits"]]


def test_the_api_pages_over_one_ranking_or_answers_409(client: TestClient) -> None:
    params = {"q": QUERY, "strategy": "fulltext", "no_gate": "1", "limit": "5"}
    first = client.get("/api/search", params=params).json()
    token = first["ranked_at"]
    assert TOKEN.fullmatch(token)
    second = client.get("/api/search", params={**params, "offset": "5", "ranked_at": token})
    assert second.status_code == 200, second.text
    deep = client.get("/api/search", params={**params, "limit": "10"}).json()
    assert _hit_ids(first) + _hit_ids(second.json()) == _hit_ids(deep)
    # a write through the API itself, then the next page in each of the API's two forms
    assert client.delete(f"/api/documents/{_hit_ids(first)[0]}").status_code == 200
    typed = client.get("/api/search", params={**params, "offset": "10", "ranked_at": token})
    body = client.post("/api/search", json={"query": QUERY, "strategy": "fulltext",
                                            "no_gate": True, "offset": 10, "ranked_at": token})
    for answer in (typed, body):
        assert answer.status_code == 409, answer.text
        assert answer.json()["type"] == "RankingChangedError"
        assert "offset 0" in answer.json()["error"]
    bad = client.get("/api/search", params={**params, "ranked_at": "latest"})
    assert (bad.status_code, bad.json()["type"]) == (400, "InvalidInputError")


# -- the command line ------------------------------------------------------------------------


def test_the_command_line_pages_over_one_ranking_or_exits_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    path = tmp_path / "s"
    _ranked(path).close()
    runner = CliRunner()
    search = ["search", QUERY, "--store", str(path), "--strategy", "fulltext", "--no-gate",
              "--no-log", "--limit", "5", "--json"]
    first = json.loads(runner.invoke(main, search).output)
    token = first["ranked_at"]
    paged = runner.invoke(main, [*search, "--offset", "5", "--ranked-at", token])
    assert paged.exit_code == 0, paged.output
    deep = json.loads(runner.invoke(main, [*search, "--limit", "10"]).output)
    assert _hit_ids(first) + _hit_ids(json.loads(paged.output)) == _hit_ids(deep)
    with open_test_store(path) as store:
        store.ingest_documents(LOUDER, truth_level="L1")
    moved = runner.invoke(main, [*search, "--offset", "5", "--ranked-at", token])
    assert moved.exit_code == 2, moved.output
    assert moved.output.startswith("Error: the store has changed since the ranking ranked_at "
                                   f"'{token}' names"), moved.output
    bad = runner.invoke(main, [*search, "--ranked-at", "latest"])
    assert bad.exit_code == 2 and bad.output.startswith("Error: ranked_at 'latest' is not"), \
        bad.output
