"""One request, three surfaces: ``Store.search`` (and the document calls), ``enginelib ...
--json`` and the ``serve`` JSON API give the same answer on the same store, and refuse the
same bad request with the same error type and message (README: the search options table
promises the same options on every surface).

Each case is a row: the request as Python, HTTP and the command line spell it. The store
is searched in process: the API through Starlette's TestClient over the store the Python
calls use, the CLI through CliRunner on the same folder (read-only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from enginelib import Store
from enginelib.cli.main import main
from enginelib.errors import (
    DocumentNotFoundError,
    EngineError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    InvalidTruthLevelError,
    SnapshotError,
)
from enginelib.search.request import DEFAULTS
from enginelib.web import Service, create_app
from tests.helpers import doc, open_test_store, paragraphs

GDPR = ("Article 17. Right to erasure. The data subject shall have the right to obtain from "
        "the controller the erasure of personal data concerning him or her without undue "
        "delay where the personal data are no longer necessary.")


@dataclass
class Surfaces:
    path: Path
    store: Store
    client: TestClient
    runner: CliRunner

    def cli(self, *args: str) -> Any:
        # The serve store holds the catalog open for writing; the CLI opens it read-only,
        # which DuckDB refuses in the same process while the other connection is open.
        self.store._catalog.release()
        return self.runner.invoke(main, [*args, "--store", str(self.path)])


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surfaces]:
    path = tmp_path_factory.mktemp("parity") / "store"
    with open_test_store(path) as store:
        store.add_source("eur-lex", name="EUR-Lex", tier="gold", evidence_level="regulation",
                         authority_score=95)
        store.ingest_documents([
            doc("gdpr-17", GDPR, title="GDPR Article 17", metadata={"source_id": "eur-lex"}),
            doc("brakes", paragraphs(6), title="Brakes"),
            doc("tyres", paragraphs(3, "tyres"), title="Tyres"),
        ], truth_level="L1", tags=["manual"])
        store.create_snapshot("first")
        store.ingest_documents([doc("draft", paragraphs(2), title="Draft")],
                               truth_level="L3", domain="workshop", tags=["draft"])
        store.update_document("tyres", truth_level="L2", metadata={"reviewed": "yes"})
    service = Service(open_test_store(path), poll_s=0.05, time_unit=0.001)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
        with TestClient(create_app(service, worker=False),  # type: ignore[arg-type]
                        base_url="http://127.0.0.1:8765") as client:
            yield Surfaces(path, service.store, client, CliRunner())


# -- the same valid search gives the same response -------------------------------------------


@dataclass(frozen=True)
class Search:
    """One search as each surface spells it; ``get`` is the query-string form (None: POST
    only, the value cannot be typed in a query string the same way)."""

    id: str
    query: str
    python: dict[str, Any] = field(default_factory=dict)
    http: dict[str, Any] = field(default_factory=dict)
    cli: tuple[str, ...] = ()
    get: dict[str, str] | None = None


NO_GATE = (dict(answerability_threshold=None), dict(no_gate=True), ("--no-gate",))

SEARCHES = [
    Search("defaults", "brake pads", get={}),
    Search("answerable", "right to erasure of personal data", get={}),
    Search("refused", "quantum chromodynamics lattice", get={}),
    Search("no gate", "brake pads", *NO_GATE, get={"no_gate": "true"}),
    Search("page", "brake pads", {"limit": 2, "offset": 2, "answerability_threshold": None},
           {"limit": 2, "offset": 2, "no_gate": True}, ("--limit", "2", "--offset", "2", "--no-gate"),
           get={"limit": "2", "offset": "2", "no_gate": "1"}),
    Search("truth levels", "brake pads",
           {"truth_levels": ["L1", "L2", "L3"], "answerability_threshold": None},
           {"truth_levels": ["L1", "L2", "L3"], "no_gate": True},
           ("--truth-level", "L1,L2,L3", "--no-gate"),
           get={"truth_levels": "L1,L2,L3", "no_gate": "on"}),
    Search("fulltext", "brake pads", {"strategy": "fulltext"}, {"strategy": "fulltext"},
           ("--strategy", "fulltext"), get={"strategy": "fulltext"}),
    Search("vector exact", "brake pads",
           {"strategy": "vector", "exact": True, "answerability_threshold": None},
           {"strategy": "vector", "exact": True, "no_gate": True},
           ("--strategy", "vector", "--exact", "--no-gate")),
    Search("auto", "1K0615301M", {"strategy": "auto"}, {"strategy": "auto"},
           ("--strategy", "auto")),
    Search("weighted", "brake pads",
           {"fusion": "weighted", "weights": (0.7, 0.3), "answerability_threshold": None},
           {"fusion": "weighted", "weights": [0.7, 0.3], "no_gate": True},
           ("--fusion", "weighted", "--weights", "0.7,0.3", "--no-gate"),
           get={"fusion": "weighted", "weights": "0.7,0.3", "no_gate": "true"}),
    Search("preset", "brake pads", {"preset": "keyword"}, {"preset": "keyword"},
           ("--preset", "keyword"), get={"preset": "keyword"}),
    Search("rrf k, candidates, min score", "brake pads",
           {"rrf_k": 5, "candidates": 3, "min_score": 0.02, "answerability_threshold": None},
           {"rrf_k": 5, "candidates": 3, "min_score": 0.02, "no_gate": True},
           ("--rrf-k", "5", "--candidates", "3", "--min-score", "0.02", "--no-gate"),
           get={"rrf_k": "5", "candidates": "3", "min_score": "0.02", "no_gate": "true"}),
    Search("boost and diversify", "brake pads",
           {"boosts": True, "mmr": True, "mmr_lambda": 0.5, "answerability_threshold": None},
           {"boost": True, "diversify": True, "mmr_lambda": 0.5, "no_gate": True},
           ("--boost", "--diversify", "--mmr-lambda", "0.5", "--no-gate")),
    Search("caps", "brake pads",
           {"per_source_cap": 1, "chunks_per_doc": 2, "answerability_threshold": None},
           {"per_source_cap": 1, "chunks_per_doc": 2, "no_gate": True},
           ("--per-source-cap", "1", "--chunks-per-doc", "2", "--no-gate")),
    Search("typo corrected", "brak pads", *NO_GATE),
    Search("typo kept", "brak pads", {"rewrite": False, "answerability_threshold": None},
           {"no_rewrite": True, "no_gate": True}, ("--no-rewrite", "--no-gate")),
    Search("lenient", '"brake pads', {"lenient": True}, {"lenient": True}, ("--lenient",)),
    Search("filters", "brake pads",
           {"filters": {"domain": ["workshop"], "tags": {"all": ["draft"]}},
            "truth_levels": "L3"},
           {"filters": {"domain": ["workshop"], "tags": {"all": ["draft"]}},
            "truth_levels": "L3"},
           ("--filter", "domain=workshop", "--filter", "tags:all=draft", "--truth-level", "L3"),
           get={"filters": '{"domain": ["workshop"], "tags": {"all": ["draft"]}}',
                "truth_levels": "L3"}),
    Search("metadata filter", "brake pads",
           {"filters": {"metadata.reviewed": "yes"}, "answerability_threshold": None},
           {"filters": {"metadata.reviewed": "yes"}, "no_gate": True},
           ("--filter", "metadata.reviewed=yes", "--no-gate")),
]

# What a surface adds to the response for its own readers, beside the Python fields.
HTTP_EXTRAS = {"snapshot"}
HTTP_HIT_EXTRAS = {"authority", "document_url"}


def as_json(data: Any) -> Any:
    """``data`` as a surface writes it in JSON (dates in ISO form, times with their UTC
    offset: the catalog keeps naive UTC)."""
    from enginelib.jobs.times import utc_iso

    return json.loads(json.dumps(
        data, default=lambda v: utc_iso(v) if isinstance(v, datetime) else
        v.isoformat() if hasattr(v, "isoformat") else str(v)))


def comparable(data: dict[str, Any]) -> dict[str, Any]:
    """A response as JSON, less what differs from run to run (timings)."""
    data = as_json(data)
    data.pop("execution_time_ms")
    data.pop("timings", None)
    return data


def python_response(store: Store, query: str, options: dict[str, Any]) -> dict[str, Any]:
    return comparable(store.search(query, **options).to_dict())


def http_response(data: dict[str, Any]) -> dict[str, Any]:
    data = comparable(data)
    for name in HTTP_EXTRAS:
        data.pop(name)
    for hit in data["hits"]:
        for name in HTTP_HIT_EXTRAS:
            hit.pop(name)
    return data


@pytest.mark.parametrize("case", SEARCHES, ids=[c.id for c in SEARCHES])
def test_the_api_answers_as_python_does(surfaces: Surfaces, case: Search) -> None:
    expected = python_response(surfaces.store, case.query, case.python)
    answer = surfaces.client.post("/api/search", json={"query": case.query, **case.http})
    assert answer.status_code == 200, answer.text
    got = http_response(answer.json())
    gate = got.pop("gate")
    assert got == {k: v for k, v in expected.items() if k != "gate"}
    assert gate == {**expected["gate"], **_summary(expected), "status": expected["status"]}
    if case.get is not None:
        typed = surfaces.client.get("/api/search", params={"q": case.query, **case.get})
        assert typed.status_code == 200, typed.text
        assert http_response(typed.json()) == http_response(answer.json())


def _summary(response: dict[str, Any]) -> dict[str, Any]:
    """What the CLI and the API show beside the Python gate's numbers."""
    return {"answerable": response["status"] == "ok", "reason": response["reason"],
            "confidence": response["context"]["confidence"]}


@pytest.mark.parametrize("case", SEARCHES, ids=[c.id for c in SEARCHES])
def test_the_command_line_answers_as_python_does(surfaces: Surfaces, case: Search) -> None:
    expected = python_response(surfaces.store, case.query, case.python)
    result = surfaces.cli("search", case.query, *case.cli, "--json")
    assert result.exit_code == (0 if expected["status"] == "ok" else 1), result.output
    got = comparable(json.loads(result.output))
    gate = got.pop("gate")
    assert got == {k: v for k, v in expected.items() if k != "gate"}
    assert gate == {**expected["gate"], **_summary(expected)}


# -- the same bad search is refused alike ----------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """A bad search as each surface spells it, and the error all three give. ``http`` is a
    JSON object, or the raw body where JSON text is the point (NaN, a lone surrogate).
    ``cli_usage``: the command line refuses it while parsing (a click type or choice), with
    click's own words; exit 2 and ``Error:`` all the same. ``says``: the surfaces name
    things their own way (Python's option names, the API's parameters), so each message says
    this instead of all being equal."""

    id: str
    query: str
    python: dict[str, Any]
    http: dict[str, Any] | str
    cli: tuple[str, ...]
    error: type[EngineError]
    cli_usage: bool = False
    says: str | None = None


def _refusals() -> list[Refusal]:
    rows = []
    for name, flag, value in [
        ("limit", "--limit", 0), ("limit", "--limit", 1001), ("offset", "--offset", -1),
        ("offset", "--offset", 10**6), ("offset", "--offset", 10**12),
        ("candidates", "--candidates", 0), ("candidates", "--candidates", 10**5),
        ("rrf_k", "--rrf-k", 0), ("per_source_cap", "--per-source-cap", 0),
        ("chunks_per_doc", "--chunks-per-doc", 0), ("mmr_lambda", "--mmr-lambda", 1.5),
        ("min_score", "--min-score", 1e10),
    ]:
        rows.append(Refusal(f"{name}={value}", "brake pads", {name: value}, {name: value},
                            (flag, str(value)), InvalidInputError))
    for text, number in [("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf)]:
        rows.append(Refusal(f"min_score={text}", "brake pads", {"min_score": number},
                            f'{{"query": "brake pads", "min_score": {_json_number(number)}}}',
                            ("--min-score", text), InvalidInputError))
        rows.append(Refusal(f"mmr_lambda={text} (JSON)", "brake pads", {"mmr_lambda": number},
                            f'{{"query": "brake pads", "mmr_lambda": {_json_number(number)}}}',
                            ("--mmr-lambda", text), InvalidInputError))
    return rows + [
        Refusal("limit=2.5", "brake pads", {"limit": 2.5}, {"limit": 2.5}, ("--limit", "2.5"),
                InvalidInputError, cli_usage=True),
        Refusal("weights nan", "brake pads", {"weights": (math.nan, 1.0)},
                {"weights": "nan,1"}, ("--weights", "nan,1"), InvalidInputError),
        Refusal("weights three", "brake pads", {"weights": (1, 2, 3)}, {"weights": [1, 2, 3]},
                ("--weights", "1,2,3"), InvalidInputError),
        Refusal("weights zero", "brake pads", {"weights": (0, 0)}, {"weights": "0,0"},
                ("--weights", "0,0"), InvalidInputError),
        Refusal("strategy", "brake pads", {"strategy": "fuzzy"}, {"strategy": "fuzzy"},
                ("--strategy", "fuzzy"), InvalidInputError, cli_usage=True),
        Refusal("fusion", "brake pads", {"fusion": "max"}, {"fusion": "max"},
                ("--fusion", "max"), InvalidInputError, cli_usage=True),
        Refusal("truth level", "brake pads", {"truth_levels": "L9"}, {"truth_levels": "L9"},
                ("--truth-level", "L9"), InvalidTruthLevelError),
        Refusal("no truth level", "brake pads", {"truth_levels": ","},
                {"truth_levels": ","}, ("--truth-level", ","), InvalidInputError),
        Refusal("unknown preset", "brake pads", {"preset": "nope"}, {"preset": "nope"},
                ("--preset", "nope"), InvalidInputError),
        Refusal("preset name", "brake pads", {"preset": "../x"}, {"preset": "../x"},
                ("--preset", "../x"), InvalidInputError),
        Refusal("unknown option", "brake pads", {"limti": 3}, {"limti": 3}, ("--limti", "3"),
                InvalidInputError, cli_usage=True, says="(did you mean 'limit'?)"),
        Refusal("empty query", "", {}, {}, (), InvalidQueryError),
        Refusal("blank query", "  \t ", {}, {}, (), InvalidQueryError),
        Refusal("long query", "x" * 20_001, {}, {}, (), InvalidQueryError),
        Refusal("long query with a space", " " + "x" * 20_000, {}, {}, (), InvalidQueryError),
        Refusal("NUL in query", "brake\x00pads", {}, {}, (), InvalidInputError),
        Refusal("lone surrogate", "brake\ud800pads", {}, '{"query": "brake\\ud800pads"}', (),
                InvalidInputError),
        Refusal("unknown filter field", "brake pads", {"filters": {"colour": "red"}},
                {"filters": {"colour": "red"}}, ("--filter", "colour=red"),
                InvalidFilterError),
        Refusal("bad date", "brake pads", {"filters": {"created_at": {"gte": "soon"}}},
                {"filters": {"created_at": {"gte": "soon"}}},
                ("--filter", "created_at.gte=soon"), InvalidFilterError),
        Refusal("bad date operator", "brake pads", {"filters": {"created_at": {"after": "2024"}}},
                {"filters": {"created_at": {"after": "2024"}}},
                ("--filter", "created_at.after=2024"), InvalidFilterError),
        Refusal("bad truth level filter", "brake pads", {"filters": {"truth_level": "L0"}},
                {"filters": {"truth_level": "L0"}}, ("--filter", "truth_level=L0"),
                InvalidTruthLevelError),
    ]


def _json_number(number: float) -> str:
    return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"


REFUSALS = _refusals()


@pytest.mark.parametrize("case", REFUSALS, ids=[c.id for c in REFUSALS])
def test_a_bad_search_is_refused_alike(surfaces: Surfaces, case: Refusal) -> None:
    with pytest.raises(case.error) as raised:
        surfaces.store.search(case.query, **case.python)
    assert type(raised.value) is case.error
    message = str(raised.value)
    if case.says is not None:
        assert case.says in message
    if isinstance(case.http, str):
        answer = surfaces.client.post("/api/search", content=case.http.encode(),
                                      headers={"content-type": "application/json"})
    else:
        answer = surfaces.client.post("/api/search", json={"query": case.query, **case.http})
    if case.says is not None:
        assert case.says in answer.json()["error"]
        message = answer.json()["error"]
    assert (answer.status_code, answer.json()) == (
        400, {"error": message, "type": case.error.__name__})
    result = surfaces.cli("search", case.query, *case.cli, "--json")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    if case.cli_usage:
        assert "\nError: " in result.output, result.output
    else:
        assert result.output == f"Error: {message}\n"


@pytest.mark.parametrize("body", [{}, {"query": 7}, {"query": None}, {"query": {"q": "a"}}])
def test_a_missing_or_wrong_query_is_a_query_error_as_in_python(surfaces: Surfaces,
                                                                body: dict[str, Any]) -> None:
    with pytest.raises(InvalidQueryError):
        surfaces.store.search(body.get("query", 7))  # type: ignore[arg-type]
    answer = surfaces.client.post("/api/search", json=body)
    assert answer.status_code == 400 and answer.json()["type"] == "InvalidQueryError"


@pytest.mark.parametrize("value", [["domain", "workshop"], 5, True])
def test_filters_that_are_not_an_object_are_a_filter_error_alike(surfaces: Surfaces,
                                                                 value: Any) -> None:
    # The command line reads FIELD=VALUE pairs: it cannot send anything but an object; the
    # API reads a string as the object's JSON text (a query string's form).
    with pytest.raises(InvalidFilterError) as raised:
        surfaces.store.search("brake pads", filters=value)
    answer = surfaces.client.post("/api/search", json={"query": "brake pads", "filters": value})
    assert (answer.status_code, answer.json()) == (
        400, {"error": str(raised.value), "type": "InvalidFilterError"})


@pytest.mark.parametrize(("flag", "name", "text"), [
    ("--limit", "limit", "1_0"), ("--limit", "limit", "\u0661\u0660"),
    ("--offset", "offset", "\uff11"), ("--candidates", "candidates", "5_0"),
    ("--rrf-k", "rrf_k", "+6_0"), ("--per-source-cap", "per_source_cap", "\u0662"),
    ("--chunks-per-doc", "chunks_per_doc", "\u0968"), ("--min-score", "min_score", "1_0"),
    ("--min-score", "min_score", "\u0660.\u0665"), ("--mmr-lambda", "mmr_lambda", "0.\uff15"),
])
def test_a_number_typed_in_other_digits_is_refused_by_the_command_line_as_by_the_api(
        surfaces: Surfaces, flag: str, name: str, text: str) -> None:
    # click's int() and float() read '1_0' as 10 and Arabic-Indic, Devanagari or full-width
    # digits as ASCII ones: `--limit 1_0` searched for 10 hits, `--min-score \u0660.\u0665`
    # dropped hits under 0.5, where ?limit=1_0 was refused as not in digits 0-9.
    answer = surfaces.client.get("/api/search", params={"q": "brake pads", name: text})
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]
    assert message.startswith(f"{name} must be ") and "digits 0-9" in message
    result = surfaces.cli("search", "brake pads", flag, text, "--json")
    assert result.exit_code == 2, result.output
    assert result.output.endswith(f"Error: Invalid value for '{flag}': {message}\n")


@pytest.mark.parametrize(("pairs", "field"), [
    (("domain=workshop", "domain=other"), "domain"),
    (("tags:all=draft", "tags=manual"), "tags"),
    (("metadata.reviewed=yes", "metadata.reviewed=no"), "metadata.reviewed"),
    (("created_at.gte=2099-01-01", "created_at.gte=2000-01-01"), "created_at.gte"),
    (("created_at=2024", "created_at.gte=2024-01-01"), "created_at"),
    (("created_at.lt=2099-01-01", "created_at=2024"), "created_at"),
])
def test_a_filter_field_given_twice_on_the_command_line_is_refused(
        surfaces: Surfaces, pairs: tuple[str, ...], field: str) -> None:
    # The second --filter replaced the first unseen (domain=workshop then domain=other
    # searched domain=other alone), as serve's JSON kept a repeated key's last value before
    # it refused it; a date field given whole and as a bound was a raw TypeError.
    args = [arg for pair in pairs for arg in ("--filter", pair)]
    result = surfaces.cli("search", "brake pads", *args, "--json")
    assert result.exit_code == 2, result.output
    assert f"Error: Invalid value for --filter: {field!r} is given more than once" in result.output
    assert "Traceback" not in result.output and "TypeError" not in result.output


def test_a_date_fields_bounds_on_the_command_line_make_one_range(surfaces: Surfaces) -> None:
    bounds = {"created_at": {"gte": "2000-01-01", "lt": "2099-01-01"}}
    expected = python_response(surfaces.store, "brake pads", {"filters": bounds})
    result = surfaces.cli("search", "brake pads", "--filter", "created_at.gte=2000-01-01",
                          "--filter", "created_at.lt=2099-01-01", "--json")
    assert result.exit_code == 0, result.output
    assert comparable(json.loads(result.output))["hits"] == expected["hits"] != []


# -- defaults: a request that names no option ------------------------------------------------


def test_a_request_naming_no_option_has_the_same_defaults_everywhere(surfaces: Surfaces) -> None:
    python = python_response(surfaces.store, "brake pads", {})
    api = http_response(surfaces.client.get("/api/search", params={"q": "brake pads"}).json())
    cli = comparable(json.loads(surfaces.cli("search", "brake pads", "--json").output))
    for data in (python, api, cli):
        assert (data["limit"], data["offset"]) == (DEFAULTS["limit"], DEFAULTS["offset"])
        assert tuple(data["truth_levels"]) == DEFAULTS["truth_levels"]
        assert data["strategy_used"] == DEFAULTS["strategy"]
        assert data["gate"]["threshold"] == DEFAULTS["answerability_threshold"]
        assert data["hits"] == python["hits"]


# -- documents: list, show, delete -----------------------------------------------------------


LISTS = [
    ("all", {}, {}, ()),
    ("truth levels", {"truth_levels": ["L2", "L3"]}, {"truth_levels": "L2,L3"},
     ("--truth-level", "L2,L3")),
    ("domain", {"domain": "workshop"}, {"domain": "workshop"}, ("--domain", "workshop")),
    ("tag", {"tag": "manual"}, {"tag": "manual"}, ("--tag", "manual")),
    ("prefix", {"prefix": "t"}, {"prefix": "t"}, ("--prefix", "t")),
    ("page", {"limit": 2, "offset": 1}, {"limit": "2", "offset": "1"},
     ("--limit", "2", "--offset", "1")),
]


@pytest.mark.parametrize(("python", "http", "cli"), [row[1:] for row in LISTS],
                         ids=[row[0] for row in LISTS])
def test_list_gives_the_same_documents(surfaces: Surfaces, python: dict[str, Any],
                                       http: dict[str, str], cli: tuple[str, ...]) -> None:
    expected = as_json(surfaces.store.list_documents(**python))
    assert expected
    assert surfaces.client.get("/api/documents", params=http).json() == expected
    assert json.loads(surfaces.cli("list", *cli, "--json").output) == expected


BAD_LISTS = [
    ("truth level", {"truth_levels": ["L9"]}, {"truth_levels": "L9"}, ("--truth-level", "L9"),
     InvalidTruthLevelError),
    ("huge limit", {"limit": 10**9}, {"limit": str(10**9)}, ("--limit", str(10**9)),
     InvalidInputError),
    ("huge offset", {"offset": 10**12}, {"offset": str(10**12)}, ("--offset", str(10**12)),
     InvalidInputError),
    ("NUL", {"domain": "a\x00b"}, {"domain": "a\x00b"}, ("--domain", "a\x00b"),
     InvalidInputError),
    ("long prefix", {"prefix": "x" * 2000}, {"prefix": "x" * 2000}, ("--prefix", "x" * 2000),
     InvalidInputError),
]


@pytest.mark.parametrize(("python", "http", "cli", "error"), [row[1:] for row in BAD_LISTS],
                         ids=[row[0] for row in BAD_LISTS])
def test_a_bad_list_is_refused_alike(surfaces: Surfaces, python: dict[str, Any],
                                     http: dict[str, str], cli: tuple[str, ...],
                                     error: type[EngineError]) -> None:
    with pytest.raises(error) as raised:
        surfaces.store.list_documents(**python)
    answer = surfaces.client.get("/api/documents", params=http)
    assert (answer.status_code, answer.json()) == (
        400, {"error": str(raised.value), "type": error.__name__})
    result = surfaces.cli("list", *cli, "--json")
    assert (result.exit_code, result.output) == (2, f"Error: {raised.value}\n")


def test_an_unknown_list_filter_is_named_alike(surfaces: Surfaces) -> None:
    # ?truth_level=L1 left out would list every document as if it were the filtered answer
    with pytest.raises(InvalidInputError) as raised:
        surfaces.store.list_documents(truth_level="L1")
    answer = surfaces.client.get("/api/documents", params={"truth_level": "L1"})
    assert (answer.status_code, answer.json()) == (
        400, {"error": str(raised.value), "type": "InvalidInputError"})
    assert "(did you mean 'truth_levels'?)" in str(raised.value)


def test_show_gives_the_document_its_versions_and_chunk_offsets(surfaces: Surfaces) -> None:
    shown = as_json(surfaces.store.show("tyres"))
    document = dict(shown["document"])
    document["text"] = document.pop("content")
    api = surfaces.client.get("/api/documents/tyres").json()
    cli = json.loads(surfaces.cli("show", "tyres", "--json").output)
    for data in (api, cli):
        assert data["document"] == document and data["versions"] == shown["versions"]
        assert shown["versions"] and document["version"] == "1.0.1"
        # the documented subset: each chunk's place (the API leaves the text to `document`)
        for chunk, full in zip(data["chunks"], shown["chunks"], strict=True):
            assert chunk == {k: full[k] for k in chunk}


@pytest.mark.parametrize(("document_id", "error", "status"), [
    ("nope", DocumentNotFoundError, 404), ("x" * 2000, InvalidInputError, 400),
    ("a\x00b", InvalidInputError, 400)])
def test_a_missing_or_bad_document_is_refused_alike(surfaces: Surfaces, document_id: str,
                                                    error: type[EngineError],
                                                    status: int) -> None:
    for call in (surfaces.store.show, surfaces.store.history, surfaces.store.delete_document):
        with pytest.raises(error) as raised:
            call(document_id)
        assert str(raised.value) == str(error_of(surfaces.store.show, document_id))
    message = str(raised.value)
    url = "/api/documents/" + quote(document_id, safe="")
    for answer in (surfaces.client.get(url), surfaces.client.delete(url)):
        assert (answer.status_code, answer.json()) == (
            status, {"error": message, "type": error.__name__})
    if "\x00" not in document_id:  # no command line carries a NUL
        for command in ("show", "history"):
            result = surfaces.cli(command, document_id, "--json")
            assert (result.exit_code, result.output) == (2, f"Error: {message}\n")


def error_of(call: Any, *args: Any) -> Exception:
    try:
        call(*args)
    except Exception as exc:  # noqa: BLE001 - the error is the result here
        return exc
    raise AssertionError(f"{call.__name__}{args} did not fail")


@pytest.mark.parametrize("name", ["nope", "../x", "bad name"])
def test_an_unknown_or_bad_snapshot_is_refused_alike(surfaces: Surfaces, name: str) -> None:
    from enginelib import open as open_store

    with pytest.raises(EngineError) as raised:
        open_store(surfaces.path, snapshot=name)
    answer = surfaces.client.post("/api/search", json={"query": "brake pads", "snapshot": name})
    said = str(raised.value)
    if isinstance(raised.value, SnapshotError):  # to an HTTP client: no server path, no CLI
        said = answer.json()["error"]
        assert said.startswith(f"no snapshot {name!r} in this store; ")
        assert str(surfaces.path) not in said
    assert (answer.status_code, answer.json()) == (
        400, {"error": said, "type": type(raised.value).__name__})
    result = surfaces.cli("search", "brake pads", "--snapshot", name, "--json")
    assert (result.exit_code, result.output) == (2, f"Error: {raised.value}\n")
    assert type(raised.value) in (SnapshotError, InvalidInputError)
