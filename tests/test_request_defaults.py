"""Every search option's default is defined once (``SearchRequest``) and equal everywhere it
shows: ``Store.search``'s signature, the CLI's options, saved presets and the HTTP API."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import enginelib
from enginelib import InvalidInputError, Store
from enginelib import validation as v
from enginelib.cli.commands_search import search_command
from enginelib.cli.main import main
from enginelib.cli.options import given_search_options
from enginelib.search.presets import PRESET_OPTIONS, save_preset
from enginelib.search.request import (
    DEFAULTS,
    OPTIONS,
    SearchRequest,
    build_request,
    from_text,
    is_flag,
    option_spec,
)
from enginelib.web.openapi import OPENAPI
from enginelib.web.service import search_options
from tests.helpers import doc, open_test_store

NO_GATE = {"answerability_threshold": None}


def _request_of(**options: Any) -> SearchRequest:
    return build_request("brake pads", **options)


DEFAULT_REQUEST = _request_of()


def _as_given(name: str, value: Any) -> Any:
    """What ``value`` (as a surface spells it) becomes in a request: one comparable form."""
    return getattr(_request_of(**{name: value}), name)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = open_test_store(tmp_path_factory.mktemp("defaults") / "s")
    s.ingest_documents([doc("brakes", "Brake pads wear; replace them at 2 mm."),
                        doc("gdpr", "The data subject may ask for erasure of personal data.")])
    yield s
    s.close()


def test_the_options_are_the_request_fields() -> None:
    # Every field but the queries (with what the model embeds for them: the plan's) and the
    # filters as given is an option, with a help text.
    names = {f.name for f in dataclasses.fields(SearchRequest)}
    assert set(OPTIONS) == names - {"queries", "embed_texts", "raw_filters"}
    for name in OPTIONS:
        assert option_spec(name).help.strip(), f"{name} has no help text"
    # build_request with nothing given is the dataclass with its own defaults.
    assert DEFAULT_REQUEST == SearchRequest(queries=("brake pads",))
    for name in OPTIONS:
        assert getattr(DEFAULT_REQUEST, name) == _as_given(name, DEFAULTS[name]), name


@pytest.mark.parametrize("method", ["search", "search_batch"])
def test_store_signature_defaults_are_the_requests(method: str) -> None:
    params = inspect.signature(getattr(Store, method)).parameters
    options = {n: p for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    vectors = "query_vector" if method == "search" else "query_vectors"
    assert set(options) == set(OPTIONS) | {vectors}
    for name in OPTIONS:
        assert options[name].default == DEFAULTS[name], name
        assert _as_given(name, options[name].default) == getattr(DEFAULT_REQUEST, name), name


def test_store_search_without_options_uses_the_defaults(store: Store) -> None:
    response = store.search("brake pads")
    assert response.limit == DEFAULTS["limit"] and response.offset == DEFAULTS["offset"]
    assert response.truth_levels == DEFAULTS["truth_levels"]
    assert response.strategy_used == DEFAULTS["strategy"]
    assert response.gate is not None and response.gate.threshold == DEFAULTS["answerability_threshold"]


def _cli_params() -> dict[str, click.Parameter]:
    return {p.name: p for p in search_command.params if p.name in OPTIONS}


def test_cli_defaults_are_the_requests() -> None:
    params = _cli_params()
    assert set(params) == {n for n in OPTIONS if option_spec(n).cli}
    # The values the command receives when the user types no option.
    ctx = search_command.make_context("search", ["brake pads"])
    for name, param in params.items():
        spec = option_spec(name)
        assert param.opts == [spec.cli], name
        value = ctx.params[name]
        if is_flag(name):
            # Left out, the request's default applies; given, the flag's value, never the default.
            assert value is False and spec.flag != DEFAULTS[name], name
        elif spec.multiple:
            assert value == () and DEFAULTS[name] is None, name
        else:
            if spec.parse is not None:  # text the option reads its own way (weights)
                value = from_text(name, value)
            assert _as_given(name, value) == getattr(DEFAULT_REQUEST, name), name
    # ...and none of them is passed on: the request's default (or the preset's) applies.
    with ctx:
        assert given_search_options({name: ctx.params[name] for name in params}) == {}
    typed = search_command.make_context(
        "search", ["q", "--limit", "3", "--no-gate", "--weights", "0.7,0.3", "--filter", "a=b"])
    with typed:
        assert given_search_options({name: typed.params[name] for name in params}) == {
            "limit": 3, "answerability_threshold": None, "weights": (0.7, 0.3),
            "filters": ("a=b",)}


def test_cli_search_without_options_uses_the_defaults(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "brakes.md").write_text("# Brakes\n\nBrake pads wear; replace them at 2 mm.\n")
    runner = CliRunner()
    store = str(tmp_path / "s")
    assert runner.invoke(main, ["ingest", str(folder), "--store", store, "--no-progress"]).exit_code == 0
    result = runner.invoke(main, ["search", "brake pads", "--store", store, "--json"])
    data = json.loads(result.output)
    assert data["limit"] == DEFAULTS["limit"] and data["offset"] == DEFAULTS["offset"]
    assert tuple(data["truth_levels"]) == DEFAULTS["truth_levels"]
    assert data["strategy_used"] == DEFAULTS["strategy"]
    assert data["gate"]["threshold"] == DEFAULTS["answerability_threshold"]


def test_saved_presets_default_to_the_request(store: Store) -> None:
    assert set(PRESET_OPTIONS) == {"fusion", "rrf_k", "weights", "min_score"}
    params = inspect.signature(save_preset).parameters
    for name in PRESET_OPTIONS:
        assert params[name].default == DEFAULTS[name], name
    # The built-in "default" preset and one saved with no values both are the defaults.
    store.save_search_preset("plain")
    presets = store.search_presets()
    for preset in ("default", "plain"):
        options = presets[preset]["options"]
        for name in PRESET_OPTIONS:
            assert _as_given(name, options.get(name)) == getattr(DEFAULT_REQUEST, name), (preset, name)


def test_http_schema_defaults_are_the_requests() -> None:
    body = OPENAPI["paths"]["/api/search"]["post"]["requestBody"]["content"]["application/json"]
    properties = body["schema"]["properties"]
    api_names = {option_spec(n).api: n for n in OPTIONS if option_spec(n).api}
    assert set(properties) == {"query", "snapshot", *api_names}
    for api, name in api_names.items():
        schema = properties[api]
        assert schema["x-option"] == name
        if is_flag(name):
            assert schema["default"] is False and schema["x-sets"] == option_spec(name).flag
            assert schema["x-option-default"] == DEFAULTS[name]
        elif DEFAULTS[name] is None:
            assert "default" not in schema, name
        else:
            assert _as_given(name, schema["default"]) == getattr(DEFAULT_REQUEST, name), name


def test_http_parameters_left_out_are_the_defaults() -> None:
    assert search_options({"query": "brake pads"}) == ("brake pads", {})
    # A query string's text becomes the option's type; a flag sets the flag's value.
    _, options = search_options({"query": "q", "limit": "5", "weights": "0.7,0.3",
                                 "no_gate": "true", "diversify": "0", "min_score": "0.5"},
                                text=True)
    assert options == {"limit": 5, "weights": (0.7, 0.3), "answerability_threshold": None,
                       "min_score": 0.5}


def test_validation_covers_every_option() -> None:
    # Types and bounds live in validation.py; each option is checked there by its kind.
    for name in OPTIONS:
        spec = option_spec(name)
        if DEFAULTS[name] is None:
            assert name in v._NULLABLE_OPTIONS, name
        if spec.kind is bool:
            assert name in v._BOOL_OPTIONS, name
        elif spec.kind is int:
            low, high = v._INT_OPTIONS[name]
            assert DEFAULTS[name] is None or low <= DEFAULTS[name] <= high, name
        elif spec.kind is float:
            low_f, high_f = v._FLOAT_OPTIONS[name]
            assert DEFAULTS[name] is None or low_f <= DEFAULTS[name] <= high_f, name


def test_unknown_options_fail_with_a_suggestion(store: Store) -> None:
    with pytest.raises(InvalidInputError, match=r"unknown search option.*did you mean 'limit'"):
        store.search("brake pads", limt=3)
    with pytest.raises(InvalidInputError, match=r"unknown search parameter.*did you mean 'limit'"):
        search_options({"query": "q", "limt": "3"})
    assert enginelib.Store.search.__doc__


def test_postgres_functions_default_to_the_request() -> None:
    # The exported hybrid_search / match_chunks take the same defaults as a search.
    from enginelib.export.pg_functions import _hybrid_search, _match_chunks
    from enginelib.export.pg_schema import Names

    names = Names("enginelib", "")
    hybrid = _hybrid_search(names, 64).as_string(None)
    declared = dict(re.findall(r"^\s*(\w+) integer DEFAULT (\d+)", hybrid, flags=re.M))
    assert declared == {"match_count": str(DEFAULTS["limit"]), "rrf_k": str(DEFAULTS["rrf_k"]),
                        "candidate_count": str(DEFAULTS["candidates"])}
    vector_only = _match_chunks(names, 64).as_string(None)
    assert re.findall(r"match_count integer DEFAULT (\d+)", vector_only) == [str(DEFAULTS["limit"])]


def options_table() -> str:
    """README's table of search options, rendered from the request type. To refresh it:
    python -c "from tests.test_request_defaults import options_table; print(options_table())"
    """
    def shown(value: Any) -> str:
        if isinstance(value, tuple):
            return "`" + ",".join(str(v) for v in value) + "`"
        return "`None`" if value is None else f"`{value}`"

    lines = ["| option | default | CLI | HTTP | what it does |", "|---|---|---|---|---|"]
    for name in OPTIONS:
        spec = option_spec(name)
        default = shown(DEFAULTS[name]) + (" (or the preset's)" if spec.preset else "")
        cli = f"`{spec.cli}`" if spec.cli else ""
        api = f"`{spec.api}`" if spec.api else ""
        if is_flag(name):  # the flag sets this value
            cli += f" (sets {shown(spec.flag)})" if cli else ""
        what = spec.help.replace("|", "\\|")
        lines.append(f"| `{name}` | {default} | {cli} | {api} | {what} |")
    return "\n".join(lines)


def test_readme_lists_every_option_with_its_default() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert options_table() in readme, "README's search options table is stale: see options_table()"
