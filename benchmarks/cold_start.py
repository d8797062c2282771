"""Cold start of the CLI and the API: process start -> first answer, on a 5k-chunk store.

The store's text is SciFact's (real chunks for Tantivy and DuckDB); its vectors are
deterministic stand-ins recorded under the model's name, because what is timed is the
process opening the store and loading the model the manifest names, not the ranking.
Each figure is the median of warm runs (the OS cache holds the files: the first run is
discarded). `python -m benchmarks cold-start`.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import enginelib
from enginelib.embedders import normalize_rows

from . import beir
from .run import RESULTS, WORK, log

QUESTION = "Does vitamin D deficiency raise the risk of infection?"
_API = r"""
import sys, enginelib
with enginelib.open(sys.argv[1], read_only=True) as store:
    response = store.search(sys.argv[2], limit=3)
assert response.hits or response.status
"""


class StandIn:
    """Deterministic unit vectors under a real model's name (no model is run)."""

    def __init__(self, name: str, dim: int = 384) -> None:
        self.name, self.dim = name, dim

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        rows = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
                .standard_normal(self.dim) for t in texts]
        return normalize_rows(np.asarray(rows, dtype=np.float32))


def build(path: Path, model: str, chunks: int = 5000) -> int:
    if (path / "manifest.json").exists():
        with enginelib.open(path, read_only=True) as store:
            return int(store.stats()["chunks"])
    data = beir.load("scifact")
    with enginelib.open(path, embedder=StandIn(model)) as store:
        done = 0
        for start in range(0, len(data.documents), 500):
            done += store.ingest_documents(data.documents[start:start + 500]).chunks_written
            if done >= chunks:
                break
        return int(store.stats()["chunks"])


def _time(command: list[str], runs: int, env: dict[str, str]) -> dict[str, float]:
    samples = []
    for n in range(runs + 1):
        started = time.perf_counter()
        out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        elapsed = time.perf_counter() - started
        if out.returncode not in (0, 1):
            raise RuntimeError(f"{command} failed: {out.stderr[-800:]}")
        if n:  # run 0 warms the OS cache
            samples.append(elapsed)
    return {"median_s": round(statistics.median(samples), 3), "min_s": round(min(samples), 3),
            "runs": runs}


def measure(models: Sequence[str] = ("e5-small", "all-MiniLM-L6-v2"), runs: int = 5) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "ENGINELIB_EMBEDDER"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    result: dict[str, Any] = {"question": QUESTION, "python": sys.executable, "models": {}}
    result["import_enginelib"] = _time([sys.executable, "-c", "import enginelib"], runs, env)
    result["cli_help"] = _time([sys.executable, "-m", "enginelib.cli.main", "--help"], runs, env)
    for model in models:
        path = WORK / "cold-start" / model
        chunks = build(path, model)
        cli = [sys.executable, "-m", "enginelib.cli.main", "search", QUESTION, "--store", str(path),
               "--limit", "3", "--json"]
        figures = {
            "chunks": chunks,
            "cli_first_answer": _time(cli, runs, env),
            "cli_fulltext_first_answer": _time([*cli, "--strategy", "fulltext"], runs, env),
            "api_first_answer": _time([sys.executable, "-c", _API, str(path), QUESTION], runs, env),
        }
        probe = subprocess.run([sys.executable, "-c", "import sys, enginelib; s = enginelib.open("
                                f"{str(path)!r}, read_only=True); s.search({QUESTION!r}); "
                                "print('torch' in sys.modules)"],
                               capture_output=True, text=True, env=env, check=True)
        figures["imports_torch"] = probe.stdout.strip().splitlines()[-1] == "True"
        result["models"][model] = figures
        log(f"cold start {model}: {figures}")
    (RESULTS / "embedders").mkdir(parents=True, exist_ok=True)
    (RESULTS / "embedders" / "cold_start.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
