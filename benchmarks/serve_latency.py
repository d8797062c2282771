"""First and warm search latency through `enginelib serve`, against a CLI search per command.

    python -m benchmarks.serve_latency [--store DIR] [--warm 30]

Builds (once) a store of the GDPR and the AI Act with the default model, then measures:
the CLI's `enginelib search` (a new process: model loaded for every command), `serve`'s
start-up (model and indexes loaded once, before it answers), its first search through the
API and its warm searches. Writes results/serve_latency.json and results/serve_latency.png.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from .timing import machine, percentiles

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUERIES = [
    "right to erasure of personal data", "conditions for consent", "data protection officer tasks",
    "fines for infringements", "transfers of personal data to third countries",
    "prohibited artificial intelligence practices", "high-risk AI systems obligations",
    "transparency obligations for chatbots", "general-purpose AI models with systemic risk",
    "data breach notification deadline", "right to data portability", "processing of "
    "children's data", "profiling and automated decision-making", "records of processing "
    "activities", "conformity assessment of high-risk AI", "AI regulatory sandboxes",
    "biometric identification in public spaces", "supervisory authority powers",
    "data protection impact assessment", "penalties under the AI Act",
]


def _datasets() -> Path:
    for candidate in (os.environ.get("ENGINELIB_DATASETS"), ROOT.parent / "shared" / "datasets",
                      Path("/work/shared/datasets")):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    raise SystemExit("datasets not found: set $ENGINELIB_DATASETS")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("ENGINELIB_EMBEDDER", None)
    return subprocess.run([sys.executable, "-m", "enginelib.cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)


def _post(base: str, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
    request = urllib.request.Request(base + "/api/search", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        data = json.loads(response.read())
    return data, (time.perf_counter() - start) * 1000


def run(store: Path, warm: int) -> dict[str, Any]:
    if not (store / "manifest.json").exists():
        regulatory = _datasets() / "regulatory"
        _cli("ingest", "--store", str(store), "--no-progress", "--truth-level", "L1",
             str(regulatory / "gdpr.md"), str(regulatory / "eu_ai_act.md"))
    stats = json.loads(_cli("stats", "--store", str(store), "--json").stdout)

    cli_ms = []
    for query in QUERIES[:3]:
        start = time.perf_counter()
        _cli("search", query, "--store", str(store), "--json")
        cli_ms.append((time.perf_counter() - start) * 1000)

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("ENGINELIB_EMBEDDER", None)
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "enginelib.cli.main", "serve", str(store),
                               "--port", str(port)], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                urllib.request.urlopen(base + "/api/health", timeout=5).read()
                break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit("serve exited") from None
                time.sleep(0.1)
        startup_ms = (time.perf_counter() - started) * 1000
        first, first_ms = _post(base, {"query": QUERIES[0]})
        warm_ms, server_ms = [], []
        for i in range(warm):
            data, ms = _post(base, {"query": QUERIES[(i + 1) % len(QUERIES)]})
            warm_ms.append(ms)
            server_ms.append(data["execution_time_ms"])
    finally:
        server.terminate()
        server.wait(timeout=60)
    return {
        "store": {"documents": stats["documents"], "chunks": stats["chunks"],
                  "embedding_model": stats["embedding_model"]},
        "cli_search_ms": percentiles(cli_ms),
        "serve_startup_ms": round(startup_ms, 1),
        "api_first_search_ms": round(first_ms, 2),
        "api_first_search_server_ms": first["execution_time_ms"],
        "api_warm_search_ms": percentiles(warm_ms),
        "api_warm_search_server_ms": percentiles(server_ms),
        "machine": machine(),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["CLI search\n(new process)", "serve: first\nAPI search", "serve: warm\nAPI search p50",
              "serve: warm\nAPI search p95"]
    values = [result["cli_search_ms"]["p50"], result["api_first_search_ms"],
              result["api_warm_search_ms"]["p50"], result["api_warm_search_ms"]["p95"]]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.bar(labels, values, color=["#9ca3af", "#1d4ed8", "#15803d", "#15803d"])
    ax.set_yscale("log")
    ax.set_ylabel("ms (log scale)")
    ax.set_title(f"Search latency, {result['store']['chunks']} chunks, "
                 f"{result['store']['embedding_model']}")
    for bar, value in zip(bars, values, strict=True):
        ax.annotate(f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms",
                    (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", type=Path, default=HERE / ".cache" / "serve-latency-store")
    parser.add_argument("--warm", type=int, default=30, help="warm searches to time")
    args = parser.parse_args()
    result = run(args.store, args.warm)
    out = HERE / "results"
    (out / "serve_latency.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(result, out / "serve_latency.png")
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))


if __name__ == "__main__":
    main()
