"""Embedders side by side: nDCG@10 per strategy, paired tests, query latency, ingest, size.

Reads results/embedders/<dataset>-<model>.json written by
`python -m benchmarks run --dataset D --embedder NAME [--max-docs N] --peers none` and
results/embedders/cold_start.json; prints the markdown that RESULTS.md carries.
`python -m benchmarks.embedders_report [BASELINE]`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

FOLDER = Path(__file__).resolve().parent / "results" / "embedders"
SYSTEMS = ("enginelib-vector", "enginelib-fulltext", "enginelib-hybrid-rrf", "enginelib-hybrid-weighted")


def paired_randomization(a: dict[str, float], b: dict[str, float], rounds: int = 20000,
                         seed: int = 0) -> tuple[float, float]:
    """Mean difference b - a over the shared queries and its two-sided p-value by sign
    flipping (Fisher's paired randomization test, as IR evaluations use)."""
    from .regulatory_eval import randomisation_p

    diff = [b[q] - a[q] for q in sorted(set(a) & set(b))]
    if not diff:
        return 0.0, 1.0
    return float(np.mean(diff)), randomisation_p(diff, rounds, seed)


def load() -> dict[str, dict[str, dict[str, Any]]]:
    by_dataset: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(FOLDER.glob("*.json")):
        data = json.loads(path.read_text())
        if "systems" in data:
            by_dataset.setdefault(data["dataset"], {})[data["model"]] = data
    return by_dataset


def markdown(baseline: str = "all-MiniLM-L6-v2") -> str:
    lines: list[str] = []
    for dataset, models in load().items():
        any_result = next(iter(models.values()))
        corpus = any_result["corpus"]
        lines += [f"#### {dataset} ({corpus['documents']} documents, {corpus['chunks']} chunks, "
                  f"{corpus['queries']} queries)", "",
                  "| embedder | " + " | ".join(s.replace("enginelib-", "") for s in SYSTEMS)
                  + " | query embed p50 / p95 ms | model s per chunk |",
                  "|---|" + "---:|" * (len(SYSTEMS) + 2)]
        for model, result in models.items():
            systems = {s["name"]: s for s in result["systems"]}
            cells = [f"{systems[s]['quality']['ndcg@10']:.4f}" if s in systems else "-" for s in SYSTEMS]
            q = result["query_embedding_ms"]
            lines.append(f"| {model} | " + " | ".join(cells)
                         + f" | {q['p50']:.1f} / {q['p95']:.1f} | "
                         f"{result['ingest']['model_seconds_per_chunk']:.3f} |")
        lines.append("")
        if baseline in models:
            for model, result in models.items():
                if model == baseline:
                    continue
                base = {s["name"]: s for s in models[baseline]["systems"]}
                for s in result["systems"]:
                    if s["name"] not in base or "ndcg@10_per_query" not in s:
                        continue
                    delta, p = paired_randomization(base[s["name"]]["ndcg@10_per_query"],
                                                    s["ndcg@10_per_query"])
                    lines.append(f"- {s['name'].replace('enginelib-', '')}: {model} - {baseline} "
                                 f"= {delta:+.4f} nDCG@10 (paired randomization p = {p:.3f})")
            lines.append("")
    cold = FOLDER / "cold_start.json"
    if cold.exists():
        data = json.loads(cold.read_text())
        lines += ["#### Cold start (process start -> first answer, median of warm runs)", "",
                  "| store | chunks | CLI hybrid wall / CPU | CLI full-text wall / CPU | "
                  "API hybrid wall / CPU | torch imported |",
                  "|---|---:|---:|---:|---:|---|"]

        def cell(t: dict[str, Any]) -> str:
            return f"{t['median_s']:.2f} s / {t.get('cpu_median_s', float('nan')):.2f} s"

        for model, f in data["models"].items():
            lines.append(f"| {model} | {f['chunks']} | {cell(f['cli_first_answer'])} | "
                         f"{cell(f['cli_fulltext_first_answer'])} | {cell(f['api_first_answer'])} "
                         f"| {f['imports_torch']} |")
        lines += ["", f"`import enginelib`: {cell(data['import_enginelib'])}; "
                      f"`enginelib --help`: {cell(data['cli_help'])}; 1-minute load average "
                      f"during the runs: {data['cli_help'].get('load_average_1m', '?')} on 2 cores.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(*sys.argv[1:]))
