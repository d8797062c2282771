"""The benchmark harness on a tiny BEIR folder: JSON shape, metrics plumbing, reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchmarks.run as benchmarks_run  # the test extra installs what it imports
from enginelib.embedder import HashingEmbedder

DOCS = [
    ("d1", "Brake pads", "Replace brake pads 1K0615301M when thinner than 2 mm."),
    ("d2", "Erasure", "The data subject has the right to erasure of personal data."),
    ("d3", "Torque", "Caliper bolts are tightened to 28 Nm."),
    ("d4", "Coffee", "Espresso is brewed by forcing hot water through ground coffee."),
]


@pytest.fixture()
def tiny_beir(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in DOCS) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps({"_id": q, "text": t}) for q, t in [
        ("q1", "brake pads"), ("q2", "personal data erasure"), ("q3", "espresso"),
        ("q9", "not judged"),
    ]) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\nq3\td4\t1\n")
    return folder


def test_run_dataset_writes_json_and_reports(tiny_beir: Path, tmp_path: Path) -> None:
    from benchmarks.report import write_reports

    results = tmp_path / "results"
    result = benchmarks_run.run_dataset(
        str(tiny_beir), peers=("exact-numpy",), passes=1, results_dir=results,
        work_dir=tmp_path / "work", cache_dir=tmp_path / "cache", embedder=HashingEmbedder(64),
    )
    saved = json.loads((results / "tiny.json").read_text())
    assert saved["corpus"] == {"documents": 4, "queries": 3, "judgments": 4, "chunks": 4}
    names = [s["name"] for s in saved["systems"]]
    assert names == ["enginelib-vector", "enginelib-fulltext", "enginelib-hybrid-rrf",
                     "enginelib-hybrid-weighted", "exact-numpy"]
    fulltext = saved["systems"][1]
    assert fulltext["quality"]["mrr@10"] == 1.0
    assert fulltext["latency_ms"]["n"] == 3
    assert saved["systems"][0]["recall@10_vs_exact"] == 1.0
    assert result["ingest"]["chunks_embedded_now"] == 4
    assert "error" not in saved["cold_open"], saved["cold_open"]

    # A rerun takes every vector from the on-disk cache.
    again = benchmarks_run.run_dataset(
        str(tiny_beir), peers=(), passes=1, results_dir=results, work_dir=tmp_path / "work",
        cache_dir=tmp_path / "cache", embedder=HashingEmbedder(64),
    )
    assert again["ingest"]["chunks_embedded_now"] == 0
    assert again["ingest"]["chunks_from_vector_cache"] == 4

    md = write_reports(results, tmp_path / "RESULTS.md")
    text = md.read_text()
    assert "| **enginelib-hybrid-rrf** | hybrid |" in text
    assert (results / "tiny.md").exists()
