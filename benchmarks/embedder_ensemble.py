"""Two embedders in one vector: would multilingual-e5-small joined with all-MiniLM-L6-v2 close
the NFCorpus gap of issue 10 without costing French?

e5-small (the default: torch-free, multilingual) is 0.015 nDCG@10 below the landed
MiniLM configuration on NFCorpus test, and no fusion change closed it (benchmarks/RESULTS.md).
Retrieval ensembles of unlike models are known to beat each alone, so this measures the
built-in ``e5-minilm`` (enginelib/embedders/joined.py: both unit vectors side by side, the
cosine of two joined vectors the mean of both models', MiniLM's half only where the text is
English) beside e5-small and the landed MiniLM configuration, on BEIR (nDCG@10, paired
tests) and the regulatory question sets (top-3); ``--mixed`` asks a store holding the English
corpus and the French text together.

Part vectors come from each model's content cache (``benchmarks/.cache/vectors``); the joined
stores live under ``benchmarks/.cache/ensemble``. Only the ranking is measured here; the
gate's figures come from ``python -m benchmarks.regulatory_eval --embedder e5-minilm``.

    python -m benchmarks.embedder_ensemble            # writes results/embedder_ensemble.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.embedders.joined import E5_MINILM, JoinedEmbedder
from enginelib.embedders.registry import make_embedder

from . import regulatory_eval as R
from .vector_cache import DEFAULT_CACHE, CachingEmbedder, VectorCache

HERE = Path(__file__).resolve().parent
WORK = HERE / ".cache" / "ensemble"
OUT = HERE / "results" / "embedder_ensemble.json"
# (dataset, split): the test split is the figure; train/dev are the splits a choice
# would be made on.
BEIR_RUNS = (("scifact", "test"), ("scifact", "train"), ("nfcorpus", "test"), ("nfcorpus", "dev"))


def cached(name: str) -> CachingEmbedder:
    model = make_embedder(name)
    return CachingEmbedder(model, VectorCache.for_embedder(DEFAULT_CACHE, model))


def beir_runs(models: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dataset, split in BEIR_RUNS:
        runs = {}
        for label, model in models.items():
            # The single models use the shared caches; the joined vectors their own.
            where: dict[str, Any] = ({"stores": WORK / "stores", "vectors_root": WORK / "vectors"}
                     if isinstance(model, JoinedEmbedder) else {})
            if label == "landed MiniLM":
                with R.landed_fusion():
                    result = R.beir_eval(model, dataset, split, **where)
            else:
                result = R.beir_eval(model, dataset, split, **where)
            runs[label] = result["per_query"]
            print(f"{dataset} {split} {label}: nDCG@10 {np.mean(list(result['per_query'].values())):.4f}",
                  flush=True)
        out[f"{dataset}/{split}"] = runs
    return out


def regulatory_runs(models: dict[str, Any], split: str) -> dict[str, Any]:
    """Top-3 per group of the regulatory question sets, default configuration."""
    saved = (R.CACHE, R.DEFAULT_CACHE, R.CONFIGS)
    R.CONFIGS = {"default": {}}
    try:
        out = {}
        for label, model in models.items():
            if label == "landed MiniLM":
                continue
            # the single models use the shared caches, the joined vectors their own
            R.CACHE, R.DEFAULT_CACHE = ((WORK / "regulatory", WORK / "vectors")
                                        if isinstance(model, JoinedEmbedder) else saved[:2])
            results = R.regulatory(model, split)
            out[label] = {key.split("/")[1]: {o.qid: R.in_top(o) for o in value["in"]}
                          for key, value in results.items()}
            print(label, {g: f"{R.share(list(v.values())):.1%}" for g, v in out[label].items()}, flush=True)
        return out
    finally:
        R.CACHE, R.DEFAULT_CACHE, R.CONFIGS = saved


def mixed_store_runs(names: Sequence[str] = ("e5-small", "e5-minilm")) -> dict[str, Any]:
    """One store holding the English corpus and the French text (French ids prefixed "fr:"),
    asked the English and French questions of the held-out splits (test, fresh); either
    language's unit counts as the expected one. Built-in embedders through the harness's caches."""
    import dataclasses

    def documents() -> list[Any]:
        french = [dataclasses.replace(d, id="fr:" + d.id) for d in R.french_units()]
        return R.english_units() + french

    out: dict[str, Any] = {}
    for name in names:
        model = R.harness_embedder(name)
        cached_model = CachingEmbedder(model, VectorCache.for_embedder(DEFAULT_CACHE, model))
        store = R._build(WORK / "mixed" / name, cached_model, documents)
        for group, questions in (("EN", "regulatory_en"), ("FR", "regulatory_fr")):
            asked = [dict(q, expected=[*q["expected"], *("fr:" + e for e in q["expected"])])
                     for q in R.load_questions(questions) if q["split"] in ("test", "fresh")]
            outcomes = R.run_questions(store, model, asked, {})
            own = [o.top[0].startswith("fr:") == (group == "FR") for o in outcomes if o.top]
            out[f"{name}/{group}"] = {"questions": len(outcomes),
                                      "top3": R.share([R.in_top(o) for o in outcomes]),
                                      "first_in_own_language": R.share(own)}
            print(name, group, out[f"{name}/{group}"], flush=True)
        store.close()
    return out


def report(data: dict[str, Any]) -> str:
    lines = ["| dataset / split | e5-small (default) | MiniLM, landed fusion | joined | joined - e5 (p) | "
             "joined - landed (p) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for key, runs in data["beir"].items():
        e5, landed, joined = runs["e5-small"], runs["landed MiniLM"], runs["joined"]
        mean = lambda run: float(np.mean(list(run.values())))  # noqa: E731
        cells = [key, f"{mean(e5):.4f}", f"{mean(landed):.4f}", f"{mean(joined):.4f}"]
        for base in (e5, landed):
            diffs = [joined[q] - base[q] for q in sorted(joined)]
            cells.append(f"{np.mean(diffs):+.4f} ({R.randomisation_p(diffs):.3f})")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| regulatory (" + data["split"] + ") | " + " | ".join(data["regulatory"]) + " |",
              "| --- |" + " ---: |" * len(data["regulatory"])]
    groups = next(iter(data["regulatory"].values()))
    for group in groups:
        lines.append(f"| {group} top-3 | " + " | ".join(
            f"{R.share(list(v[group].values())):.1%}" for v in data["regulatory"].values()) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["train", "test", "fresh"], default="test",
                        help="split of the regulatory question sets")
    parser.add_argument("--report", action="store_true", help="print the table of the last run")
    parser.add_argument("--mixed", action="store_true",
                        help="only the store mixing English and French (results/embedder_mixed.json)")
    args = parser.parse_args(argv)
    if args.mixed:
        target = OUT.with_name("embedder_mixed.json")
        target.write_text(json.dumps(mixed_store_runs(), indent=1))
        return 0
    if not args.report:
        models = {"e5-small": cached("e5-small"), "landed MiniLM": cached("all-MiniLM-L6-v2"),
                  "joined": R.harness_embedder(E5_MINILM)}
        data = {"split": args.split, "beir": beir_runs(models),
                "regulatory": regulatory_runs(models, args.split)}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(data, indent=1))
    print(report(json.loads(OUT.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
