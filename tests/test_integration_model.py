"""With the real all-MiniLM-L6-v2 model (pinned: the gate's threshold is calibrated on it):
part numbers need hybrid, and the demo corpus answers; and the CLI and README on the default."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main
from enginelib.embedder import SentenceTransformerEmbedder
from tests.helpers import DATASETS, doc

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_default_model_is_offline_384_normalized(model: SentenceTransformerEmbedder) -> None:
    vectors = model.embed(["plaquettes de frein", "brake pads", "GDPR right to erasure"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Meaning, not just hashing: the two brake phrases are closer than brake vs GDPR.
    assert vectors[0] @ vectors[1] > vectors[1] @ vectors[2]


PARTS = {
    "pads-front": "Front brake pads for the Golf VI: part 1K0615301M, ventilated disc 288 mm.",
    "pads-rear": "Rear brake pads for the Golf VI: part 1K0615601AD, solid disc 253 mm.",
    "pads-sport": "Sport front brake pads: part 1K0615301AA for the 312 mm disc upgrade.",
    "rotor": "Front brake disc 5Q0615301F, replace together with the pads when worn.",
    "caliper": "Front brake caliper carrier 1K0615125D, torque the bolts to 200 Nm.",
    "engine": "The 3512C marine engine service interval is 250 hours for oil and filters.",
    "jwt": "Read JWT_token from the environment in development only; rotate keys every 90 days.",
}


@pytest.fixture(scope="module")
def parts_store(tmp_path_factory: pytest.TempPathFactory, model: SentenceTransformerEmbedder):
    store = enginelib.open(tmp_path_factory.mktemp("parts") / "s", embedder=model)
    filler = " Brake pads wear with use; check the friction material thickness regularly."
    store.ingest_documents([doc(k, v + filler, title="Brake parts catalogue") for k, v in PARTS.items()])
    yield store
    store.close()


@pytest.mark.parametrize("query, expected", [
    ("1K0615301M", "pads-front"), ("3512C", "engine"), ("JWT_token", "jwt"),
])
def test_hybrid_ranks_exact_part_numbers_first(parts_store, query: str, expected: str) -> None:
    hybrid = parts_store.search(query, strategy="hybrid", limit=3, answerability_threshold=None)
    assert hybrid.hits[0].document_id == expected
    assert hybrid.hits[0].scores.bm25_rank == 1


def test_auto_sends_short_code_queries_to_fulltext(parts_store) -> None:
    # Plain RRF ignores how far ahead BM25's exact match is when the other words match every
    # document; auto routes short queries with a code to full-text, where the code wins.
    auto = parts_store.search("brake pads 1K0615601AD", strategy="auto", limit=3,
                              answerability_threshold=None)
    assert auto.strategy_used == "fulltext"
    assert auto.hits[0].document_id == "pads-rear"


def test_vector_only_misses_the_part_number_that_hybrid_finds(parts_store) -> None:
    vector = parts_store.search("1K0615301M", strategy="vector", limit=7, answerability_threshold=None)
    hybrid = parts_store.search("1K0615301M", strategy="hybrid", limit=7, answerability_threshold=None)
    assert vector.hits[0].document_id != "pads-front"
    assert hybrid.hits[0].document_id == "pads-front"
    auto = parts_store.search("1K0615301M", strategy="auto", limit=1, answerability_threshold=None)
    assert auto.strategy_used == "fulltext" and auto.hits[0].document_id == "pads-front"


def test_demo_corpus_answers_with_a_cited_article(tmp_path: Path, model) -> None:
    store = enginelib.open(tmp_path / "demo", embedder=model)
    report = store.ingest_path(REPO / "demo", truth_level="L1")
    assert len(report.added) == 3 and not report.skipped
    response = store.search("When must personal data be erased without undue delay?", limit=3)
    assert response.ok, response.reason
    top = response.hits[0]
    assert "Article 17" in top.heading_path or "Article 17" in top.content
    text = store.get_document(top.document_id)["content"]
    assert text[top.start_offset : top.end_offset] == top.content
    unrelated = store.search("recipe for chocolate cake with strawberries", limit=3)
    assert unrelated.status == enginelib.NO_RELEVANT_SOURCES
    store.close()


def test_cli_ingests_beir_jsonl_with_the_real_model_and_reruns_embed_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENGINELIB_EMBEDDER", raising=False)  # the default model (e5-small)
    corpus = tmp_path / "scifact-50.jsonl.gz"
    with gzip.open(DATASETS / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as src, \
            gzip.open(corpus, "wt", encoding="utf-8") as out:
        for _, line in zip(range(50), src, strict=False):
            out.write(line)
    store = str(tmp_path / "s")
    runner = CliRunner()
    first = runner.invoke(main, ["ingest", str(corpus), "--store", store])
    assert first.exit_code == 0, first.output
    assert "added 50," in first.output and "embedded, 0 from cache" in first.output
    assert "embedding chunks" in first.output  # the progress bar (rich, on stderr)
    again = runner.invoke(main, ["ingest", str(corpus), "--store", store, "--json"])
    assert again.exit_code == 0, again.output
    report = json.loads(again.output)
    assert report["unchanged"] == 50 and report["chunks_embedded"] == 0
    hit = runner.invoke(main, ["search", "vitamin D deficiency", "--store", store,
                               "--truth-level", "L1,L2", "--json", "--no-gate"])
    assert hit.exit_code == 0 and json.loads(hit.output)["hits"]


def test_the_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import shutil

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = re.search(r"## Using it\n\n```python\n(.*?)```", readme, re.DOTALL)
    assert example is not None, "README lost its Python example"
    shutil.copytree(REPO / "demo", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(example.group(1), "README.md", "exec"), namespace)  # noqa: S102
    response, parts = namespace["response"], namespace["parts"]
    assert response.ok and response.hits[0].document_id == "gdpr_selected_articles.md"  # type: ignore[attr-defined]
    assert parts.strategy_used == "fulltext"  # type: ignore[attr-defined]
    assert parts.hits[0].document_id == "plaquettes_frein.md"  # type: ignore[attr-defined]
    with enginelib.open("mystore", read_only=True) as reopened:
        assert len(reopened.list_snapshots()) == 1
