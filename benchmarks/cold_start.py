"""Cold start of the CLI and the API: process start -> first answer, on a 5k-chunk store.

The store's text is SciFact's (real chunks for Tantivy and DuckDB); its vectors are
deterministic stand-ins recorded under the model's name, because what is timed is the
process opening the store and loading the model the manifest names, not the ranking.
Each figure is the median (and the minimum) of warm runs (the OS cache holds the files: the
first run is discarded), wall and CPU (user + system) time. The bytecode cache is allowed
(PYTHONDONTWRITEBYTECODE unset): an installed package has its .pyc files, and compiling the
package's ~80 modules from source at every start would cost ~0.3 s that no user pays.
`python -m benchmarks cold-start`.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
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


def _time(command: list[str], runs: int, env: dict[str, str],
          peer_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Wall time, and the CPU time (user + system) the process used: on a shared, busy
    machine the wall time mostly measures waiting for a core, the CPU time what an idle
    machine would take for a single-threaded process. With ``peer_env`` (another checkout on
    PYTHONPATH) the same command also runs under it, alternating run by run so both see the
    same load; its figures are under "peer"."""
    envs = [env] if peer_env is None else [env, peer_env]
    samples: list[list[float]] = [[] for _ in envs]
    cpu: list[list[float]] = [[] for _ in envs]
    for n in range(runs + 1):
        for which, run_env in enumerate(envs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            # cwd = the checkout timed: `python -c`/`-m` put the cwd ahead of PYTHONPATH.
            out = subprocess.run(command, capture_output=True, text=True, env=run_env,
                                 cwd=run_env["PYTHONPATH"], check=False)
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if out.returncode not in (0, 1):
                raise RuntimeError(f"{command} failed: {out.stderr[-800:]}")
            if n:  # run 0 warms the OS cache (and writes the bytecode cache)
                samples[which].append(elapsed)
                cpu[which].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    figures = [{"median_s": round(statistics.median(w), 3), "min_s": round(min(w), 3),
                "cpu_median_s": round(statistics.median(c), 3), "cpu_min_s": round(min(c), 3),
                "runs": runs, "load_average_1m": round(os.getloadavg()[0], 1)}
               for w, c in zip(samples, cpu, strict=True)]
    result: dict[str, Any] = figures[0]
    if peer_env is not None:
        result["peer"] = figures[1]
    return result


def measure(models: Sequence[str] = ("e5-small", "all-MiniLM-L6-v2"), runs: int = 5,
            peer: Path | None = None) -> dict[str, Any]:
    """Time the commands on this checkout (and on ``peer``, another checkout, in the same runs).
    Models not measured keep their previous figures in the JSON."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ENGINELIB_EMBEDDER", "PYTHONDONTWRITEBYTECODE")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    peer_env = None if peer is None else {**env, "PYTHONPATH": str(peer.resolve())}
    out_path = RESULTS / "embedders" / "cold_start.json"
    previous = json.loads(out_path.read_text()) if out_path.exists() else {}
    result: dict[str, Any] = {"question": QUESTION, "python": sys.executable,
                              "peer": None if peer is None else str(peer),
                              "models": dict(previous.get("models", {}))}
    result["import_enginelib"] = _time([sys.executable, "-c", "import enginelib"], runs, env,
                                       peer_env)
    result["cli_help"] = _time([sys.executable, "-m", "enginelib.cli.main", "--help"], runs, env,
                               peer_env)
    for model in models:
        path = WORK / "cold-start" / model
        chunks = build(path, model)
        cli = [sys.executable, "-m", "enginelib.cli.main", "search", QUESTION, "--store", str(path),
               "--limit", "3", "--json"]
        # The API process gets what the CLI sets for one query: one engine thread.
        env["ENGINELIB_EMBED_THREADS"] = "1"
        if peer_env is not None:
            peer_env["ENGINELIB_EMBED_THREADS"] = "1"
        figures = {
            "chunks": chunks,
            "cli_first_answer": _time(cli, runs, env, peer_env),
            "cli_fulltext_first_answer": _time([*cli, "--strategy", "fulltext"], runs, env, peer_env),
            "api_first_answer": _time([sys.executable, "-c", _API, str(path), QUESTION], runs, env,
                                      peer_env),
        }
        probe = subprocess.run([sys.executable, "-c", "import sys, enginelib; s = enginelib.open("
                                f"{str(path)!r}, read_only=True); s.search({QUESTION!r}); "
                                "print('torch' in sys.modules)"],
                               capture_output=True, text=True, env=env, check=True)
        figures["imports_torch"] = probe.stdout.strip().splitlines()[-1] == "True"
        figures["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        result["models"][model] = figures
        log(f"cold start {model}: {figures}")
    (RESULTS / "embedders").mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    return result
