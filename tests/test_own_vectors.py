"""Vectors the user brings: records' own embeddings, stores without a model, and the CLI
(`init --vector-dim`, JSONL `vector` fields, `search --vector-file`)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import enginelib
from enginelib import HashingEmbedder, InvalidVectorError
from enginelib.cli.main import main
from enginelib.cli.vector_input import MAX_VECTOR_FILE_BYTES
from enginelib.errors import EmbeddingError
from enginelib.own_vectors import ExternalVectors

DIM = 8
TEXTS = {
    "pads": "Replace the brake pads when they are thinner than 3 mm.",
    "fluid": "Brake fluid absorbs water: change it every two years.",
    "gdpr": "Personal data shall be processed lawfully and fairly.",
    "bolts": "Torque the caliper bolts to 30 Nm.",
}
NO_GATE = {"answerability_threshold": None}


def _vectors() -> dict[str, list[float]]:
    rng = np.random.default_rng(7)
    return {key: rng.normal(size=DIM).round(5).tolist() for key in TEXTS}


def _records(field: str = "vector") -> list[dict]:
    vectors = _vectors()
    return [{"id": k, "text": t, "truth_level": "L1", field: vectors[k]} for k, t in TEXTS.items()]


def test_a_store_without_a_model_searches_by_given_vectors(tmp_path):
    vectors = _vectors()
    with enginelib.open(tmp_path / "s", embedder=ExternalVectors(DIM)) as store:
        report = store.ingest_documents(
            [enginelib.LoadedDocument(id=k, text=t, vectors=np.array(vectors[k]))
             for k, t in TEXTS.items()], truth_level="L1")
        assert report.chunks_embedded == 0 and report.chunks_written == 4
    # Reopened with no embedder: the manifest says there is no model, none is loaded.
    with enginelib.open(tmp_path / "s", read_only=True) as store:
        assert store.embedder.name == f"external-{DIM}"
        for key in TEXTS:
            hits = store.search("ignored", strategy="vector", query_vector=vectors[key], **NO_GATE).hits
            assert hits[0].document_id == key
            assert hits[0].scores.similarity == pytest.approx(1.0, abs=1e-5)
        hybrid = store.search("brake fluid", query_vector=vectors["fluid"], **NO_GATE)
        assert hybrid.hits[0].document_id == "fluid"
        assert store.search("caliper bolts", strategy="fulltext").hits[0].document_id == "bolts"
        with pytest.raises(EmbeddingError, match="no embedding model .* --vector-file"):
            store.search("brake fluid")


@pytest.mark.parametrize("field", ["vector", "embedding", "vectors"])
def test_records_carry_their_vectors_in_any_spelling(field):
    records = _records(field)
    if field == "vectors":
        for record in records:
            record["vectors"] = [record["vectors"]]
    with enginelib.memory(records, embedder=ExternalVectors(DIM)) as store:
        query = _vectors()["gdpr"]
        assert store.search("q", strategy="vector", query_vector=query, **NO_GATE).hits[0].document_id == "gdpr"
        assert field not in store.get_document("gdpr")["custom"]


def test_own_vectors_win_over_the_model_of_the_same_size():
    vectors = {k: HashingEmbedder(DIM).embed(["unrelated words"])[0].tolist() for k in TEXTS}
    vectors["bolts"] = HashingEmbedder(DIM).embed(["brake pads thinner"])[0].tolist()
    records = [{"id": k, "text": t, "vector": vectors[k]} for k, t in TEXTS.items()]
    with enginelib.memory(records, embedder=HashingEmbedder(DIM)) as store:
        hits = store.search("brake pads thinner", strategy="vector", **NO_GATE).hits
        assert hits[0].document_id == "bolts"


def test_new_vectors_for_the_same_text_replace_the_old_ones():
    records = _records()
    with enginelib.memory(records, embedder=ExternalVectors(DIM)) as store:
        same = store.ingest_documents(
            [enginelib.LoadedDocument(id="pads", text=TEXTS["pads"], vectors=np.array(records[0]["vector"]))],
            truth_level="L1")
        assert same.unchanged == ("pads",)
        moved = store.ingest_documents(
            [enginelib.LoadedDocument(id="pads", text=TEXTS["pads"], vectors=np.array(_vectors()["gdpr"]))],
            truth_level="L1")
        assert moved.updated == ("pads",)
        hits = store.search("q", strategy="vector", query_vector=_vectors()["gdpr"], limit=2, **NO_GATE).hits
        assert {h.document_id for h in hits} == {"pads", "gdpr"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.update(vector=[1.0, 2.0]), "brings vectors of 2 dimensions; this store takes 8"),
        (lambda r: r.update(text=" ".join(["long text"] * 400)), "makes 2 chunks"),
        (lambda r: r.update(vector=[0.0] * DIM), "all-zero vector"),
    ],
)
def test_bad_own_vectors_are_refused(change, message):
    records = _records()
    change(records[1])
    with pytest.raises(InvalidVectorError, match=message):
        enginelib.memory(records, embedder=ExternalVectors(DIM))


@pytest.mark.parametrize(
    ("value", "message"),
    [("nope", "must be a list of numbers"), ([1.0, float("nan")], "NaN"), ([], "non-empty"),
     ([[1.0], [2.0]], "one list of numbers"),
     # beyond float32: refused by name, with no numpy overflow warning (an error here)
     ([1e39] + [0.0] * (DIM - 1), "beyond float32's range"),
     # numpy parsed text and took true as 1 (ingested); an integer past float's range was a
     # bare OverflowError that stopped the whole ingest
     (["0.5"] * DIM, "'vector' must be real numbers .*got text"),
     ([True] * DIM, "got booleans"), (5, "must be a list of numbers, got int"),
     ([10**400] + [0] * (DIM - 1), "beyond float32's range")],
)
def test_bad_vector_fields_name_the_record(value, message):
    records = _records()
    records[2]["vector"] = value
    with pytest.raises(enginelib.InvalidInputError, match=f"record 3: .*{message}"):
        enginelib.memory(records, embedder=ExternalVectors(DIM))


@pytest.mark.parametrize("scale", [1e20, 3e37, 1e-25, 1e-40])
def test_own_vectors_of_any_finite_scale_are_stored_as_their_direction(tmp_path, scale):
    # Normalized in float32, the squares of components past ~2e18 overflowed (the vector
    # became zeros, refused as "vectors contain an all-zero vector" with numpy's overflow
    # warning, an error where warnings are) and those under ~1e-23 underflowed (refused as
    # "brings an all-zero vector"): the whole ingest failed. Cosine does not depend on scale.
    vectors = _vectors()
    records = [{**record, "vector": [v * scale for v in record["vector"]]} for record in _records()]
    corpus = tmp_path / "records.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    with enginelib.open(tmp_path / "s", embedder=ExternalVectors(DIM)) as store:
        report = store.ingest_path(corpus)
        assert sorted(report.added) == sorted(TEXTS) and report.skipped == ()
        direct = store.ingest_documents([enginelib.LoadedDocument(
            id="given", text="Check the pads.", vectors=np.array(vectors["gdpr"]) * scale)])
        assert direct.added == ("given",)
        for key in TEXTS:
            hits = store.search("", strategy="vector", query_vector=vectors[key], limit=2, **NO_GATE).hits
            assert hits[0].document_id in ({key, "given"} if key == "gdpr" else {key})
            assert hits[0].scores.similarity == pytest.approx(1.0, abs=1e-5)


def test_a_jsonl_record_whose_vector_is_not_real_numbers_is_skipped_the_rest_ingested(tmp_path):
    # A JSON integer of 400 digits stopped the whole ingest_path with numpy's bare
    # "OverflowError: int too large to convert to float"; strings and booleans were read as
    # numbers and ingested.
    records = _records()
    records[0]["vector"] = [10**400] + [0] * (DIM - 1)
    records[1]["vector"] = [str(v) for v in records[1]["vector"]]
    records[2]["vector"] = [v > 0 for v in records[2]["vector"]]
    corpus = tmp_path / "records.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    with enginelib.open(tmp_path / "s", embedder=ExternalVectors(DIM)) as store:
        report = store.ingest_path(corpus)
        assert report.added == ("bolts",)
        reasons = [skipped.reason for skipped in report.skipped]
        assert [r.split(": ", 1)[1] for r in reasons] == [
            "'vector' contains NaN or infinite values (or numbers beyond float32's range, about 3.4e38)",
            "'vector' must be real numbers (floats or integers), got text",
            "'vector' must be real numbers (floats or integers), got booleans"]


NOT_REAL = [(["0.5"] * DIM, "text"), ([True] * DIM, "booleans"),
            (np.ones(DIM, dtype=np.complex64), "complex numbers"),
            (np.array(["2024-01-01"] * DIM, dtype="datetime64[D]"), "dates")]


@pytest.mark.parametrize(("vectors", "what"), NOT_REAL, ids=[what for _, what in NOT_REAL])
def test_a_document_whose_vectors_are_not_real_numbers_is_skipped_by_name(tmp_path, vectors, what):
    # numpy converted each to float32 and the document was ingested: text parsed, True as 1,
    # a complex number without its imaginary part (and a ComplexWarning), a date as its days
    with enginelib.open(tmp_path / "s", embedder=ExternalVectors(DIM)) as store:
        report = store.ingest_documents([
            enginelib.LoadedDocument(id="x", text="brake pads", vectors=vectors),
            enginelib.LoadedDocument(id="y", text="brake fluid", vectors=_vectors()["pads"])])
        assert report.added == ("y",)
        assert [(s.path, s.reason) for s in report.skipped] == [("x", (
            f"document 'x': vectors must be real numbers (floats or integers), got {what}: "
            "give a float array with one row per chunk"))]


def test_a_document_with_an_integer_past_floats_range_is_refused_by_name(tmp_path):
    # numpy's bare "OverflowError: int too large to convert to float" out of ingest_documents
    with enginelib.open(tmp_path / "s", embedder=ExternalVectors(DIM)) as store:
        with pytest.raises(InvalidVectorError, match="beyond float32's range"):
            store.ingest_documents([enginelib.LoadedDocument(
                id="x", text="brake pads", vectors=[10**400] + [0] * (DIM - 1))])
        assert store.list_documents() == []


def test_bad_dimension_for_external_store():
    with pytest.raises(enginelib.InvalidInputError, match="positive integer"):
        ExternalVectors(0)


# -- the command line -----------------------------------------------------------------------


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.delenv("ENGINELIB_EMBEDDER", raising=False)
    monkeypatch.delenv("ENGINELIB_STORE", raising=False)
    return CliRunner()


@pytest.fixture
def store_path(runner, tmp_path) -> Path:
    corpus = tmp_path / "records.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in _records()) + "\n", encoding="utf-8")
    path = tmp_path / "store"
    result = runner.invoke(main, ["init", "--store", str(path), "--vector-dim", str(DIM)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["ingest", "--store", str(path), str(corpus), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["added"], report["chunks_embedded"]) == (4, 0)
    return path


def test_cli_search_with_a_json_or_npy_vector(runner, store_path, tmp_path):
    query = tmp_path / "q.json"
    query.write_text(json.dumps(_vectors()["fluid"]))
    npy = tmp_path / "q.npy"
    np.save(npy, np.array([_vectors()["gdpr"]], dtype=np.float32))
    result = runner.invoke(main, ["search", "--store", str(store_path), "--vector-file", str(query),
                                  "--strategy", "vector", "--no-gate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["hits"][0]["document_id"] == "fluid" and data["strategy_used"] == "vector"
    assert data["hits"][0]["citation"]["quote"] == TEXTS["fluid"]
    result = runner.invoke(main, ["search", "personal data", "--store", str(store_path),
                                  "--vector-file", str(npy), "--no-gate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["hits"][0]["document_id"] == "gdpr" and data["strategy_used"] == "hybrid"


def test_cli_wrong_dimension_is_a_clear_error(runner, store_path, tmp_path):
    query = tmp_path / "q.json"
    query.write_text("[0.1, 0.2, 0.3]")
    result = runner.invoke(main, ["search", "brakes", "--store", str(store_path),
                                  "--vector-file", str(query)])
    assert result.exit_code == 2  # a library error, as grep has it
    assert result.output == (
        f"Error: --vector-file {query} holds 3 numbers; this store takes vectors of {DIM} "
        f"(external-{DIM}): embed the query with the model the store's vectors came from\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "cannot read a vector"), ('{"a": 1}', "expected a list of numbers"),
     ("[[1, 2], [3, 4]]", "expected one vector")],
)
def test_cli_unreadable_vector_file(runner, store_path, tmp_path, content, message):
    query = tmp_path / "q.json"
    query.write_text(content)
    result = runner.invoke(main, ["search", "x", "--store", str(store_path), "--vector-file", str(query)])
    assert result.exit_code == 2 and message in result.output


def test_cli_without_a_model_needs_a_vector_or_fulltext(runner, store_path):
    result = runner.invoke(main, ["search", "brake fluid", "--store", str(store_path)])
    assert result.exit_code == 2 and "--vector-file" in result.output
    result = runner.invoke(main, ["search", "brake fluid", "--store", str(store_path),
                                  "--strategy", "fulltext", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["hits"][0]["document_id"] == "fluid"
    result = runner.invoke(main, ["search", "--store", str(store_path)])
    assert result.exit_code == 2 and "give a QUERY, or --vector-file" in result.output
    stats = json.loads(runner.invoke(main, ["stats", "--store", str(store_path), "--json"]).output)
    assert stats["embedding_model"] == f"external-{DIM}" and stats["documents"] == 4


def test_cli_refuses_a_memory_store(runner):
    result = runner.invoke(main, ["search", "x", "--store", ":memory:"])
    assert result.exit_code == 2 and "needs a store folder" in result.output
    assert not Path(":memory:").exists()


def test_a_document_with_vectors_beyond_float32_is_refused_by_name(tmp_path):
    with enginelib.open(tmp_path / "s", embedder=ExternalVectors(DIM)) as store:
        huge = np.array([[1e39] + [0.0] * (DIM - 1)])  # float64: fine; float32: inf
        with pytest.raises(InvalidVectorError, match="beyond float32's range"):
            store.ingest_documents([enginelib.LoadedDocument(id="x", text="brake pads", vectors=huge)])
        assert store.list_documents() == []


def test_cli_search_by_a_vector_alone_has_no_words_and_keeps_the_gate(runner, tmp_path):
    # Without QUERY the CLI searched the label "vector from q.json": the gate and the quotes
    # read it as the user's words (a near-exact match was refused, "missing: vector, json").
    # Now the query is empty: the gate weighs the similarity alone, in the default setup.
    dim = 64  # random vectors of 8 dims lie so close that an exact match is no outlier
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(40, dim)).round(5)
    records = [{"id": f"r{i}", "text": f"Record {i} about the vector of a json file, part {i}.",
                "truth_level": "L1", "vector": vectors[i].tolist()} for i in range(40)]
    corpus = tmp_path / "records.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    path = tmp_path / "store"
    assert runner.invoke(main, ["init", "--store", str(path), "--vector-dim", str(dim)]).exit_code == 0
    assert runner.invoke(main, ["ingest", "--store", str(path), str(corpus)]).exit_code == 0
    query = tmp_path / "q.json"
    query.write_text(json.dumps(vectors[17].tolist()))
    result = runner.invoke(main, ["search", "--store", str(path), "--vector-file", str(query),
                                  "--strategy", "vector", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["query"] == "" and data["hits"][0]["document_id"] == "r17"
    assert data["gate"]["evidence"]["content_words"] == []
    assert data["hits"][0]["citation"]["quote"] == records[17]["text"]


def test_an_empty_query_needs_a_vector_and_the_vector_strategy(tmp_path):
    vectors = _vectors()
    with enginelib.memory(_records(), embedder=ExternalVectors(DIM)) as store:
        assert store.search("", query_vector=vectors["bolts"], strategy="vector",
                            **NO_GATE).hits[0].document_id == "bolts"
        for options in ({"query_vector": vectors["bolts"]}, {"strategy": "vector"},
                        {"query_vector": vectors["bolts"], "strategy": "fulltext"}):
            with pytest.raises(enginelib.InvalidQueryError, match="the query is empty"):
                store.search("  ", **options)


ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, stdin: bytes | int) -> subprocess.CompletedProcess[bytes]:
    """The CLI in its own process, ``stdin`` piped in (bytes) or a descriptor (a terminal)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ENGINELIB_EMBEDDER", "ENGINELIB_STORE")}
    env["PYTHONPATH"] = str(ROOT)
    piped = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "enginelib.cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, timeout=120, **piped)  # type: ignore[call-overload]


def test_cli_search_reads_the_vector_from_standard_input_given_as_dash(store_path):
    """`--vector-file -`: a vector piped in, JSON or .npy, read with a file's limits."""
    searched = _cli("search", "--store", str(store_path), "--vector-file", "-", "--strategy",
                    "vector", "--no-gate", "--json", stdin=json.dumps(_vectors()["fluid"]).encode())
    assert searched.returncode == 0, searched.stderr
    assert json.loads(searched.stdout)["hits"][0]["document_id"] == "fluid"
    npy = io.BytesIO()
    np.save(npy, np.array([_vectors()["gdpr"]], dtype=np.float32))
    searched = _cli("search", "personal data", "--store", str(store_path), "--vector-file", "-",
                    "--no-gate", "--json", stdin=npy.getvalue())
    assert searched.returncode == 0, searched.stderr
    assert json.loads(searched.stdout)["hits"][0]["document_id"] == "gdpr"

    huge = b"[" + b"0.0, " * (MAX_VECTOR_FILE_BYTES // 5) + b"0.0]"
    refused = _cli("search", "x", "--store", str(store_path), "--vector-file", "-", stdin=huge)
    assert refused.returncode == 2
    assert refused.stderr.decode().startswith(f"Error: --vector-file - is over {MAX_VECTOR_FILE_BYTES}")
    wrong = _cli("search", "x", "--store", str(store_path), "--vector-file", "-", stdin=b"[1, 2]")
    assert (wrong.returncode, wrong.stderr.decode()) == (2, (
        f"Error: --vector-file - holds 2 numbers; this store takes vectors of {DIM} "
        f"(external-{DIM}): embed the query with the model the store's vectors came from\n"))


def test_cli_vector_file_dash_on_a_terminal_is_refused_not_waited_on(store_path):
    controller, terminal = os.openpty()
    try:
        refused = _cli("search", "x", "--store", str(store_path), "--vector-file", "-",
                       stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)
    assert refused.returncode == 2
    assert "--vector-file -: standard input is a terminal: pipe the input in" in refused.stderr.decode()


def test_cli_reindex_of_a_store_without_a_model_says_what_to_do(runner, store_path):
    # It failed with the ingest's advice ("Give records a 'vector' field when ingesting,
    # and search with query_vector="), which said nothing of the reindex asked for.
    result = runner.invoke(main, ["reindex", "--store", str(store_path), "--no-progress"])
    assert result.exit_code == 2
    assert "a reindex embeds every chunk again, and this store has no model (external-8)" in (
        result.output)
    assert "`enginelib reindex --embedder e5-small`" in result.output
    switched = runner.invoke(main, ["reindex", "--store", str(store_path), "--no-progress",
                                    "--embedder", "hashing-16"])
    assert switched.exit_code == 0, switched.output
    assert "hashing-16 (16 dims)" in switched.output
