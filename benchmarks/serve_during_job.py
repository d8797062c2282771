"""Search latency through `serve` while its worker ingests a job, with and without sharing.

    python -m benchmarks.serve_during_job [--kb 40] [--out benchmarks/results]

The store is the regulatory eval's English store (GDPR and AI Act units, e5-small, built
by ``benchmarks.regulatory_eval`` if missing), copied for each run. Each run queues one
file (the first ``--kb`` KB of the AI Act's recitals, text the store has never embedded)
and, from when the worker claims it until it completes, sends searches back to back from a client thread, each a new
query (so each needs the model). Two runs in one process:

- ``held``: the worker holds the store for the whole job (how it was before sharing);
- ``shared``: the store is let go while the model embeds the job's passages
  (embedders/sharing.py), so a search waits at most for one turn of the model.

Writes results/serve_during_job.json and results/serve_during_job.png.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .regulatory_eval import CACHE, harness_embedder, open_store
from .serve_latency import QUERIES, _datasets
from .timing import machine, percentiles

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def held_for_the_whole_job() -> Iterator[None]:
    """The worker as it was: no window for readers while it embeds."""
    from enginelib.jobs import worker

    kept = worker.readers_admitted
    worker.readers_admitted = lambda _window: contextlib.nullcontext()  # type: ignore[assignment]
    try:
        yield
    finally:
        worker.readers_admitted = kept


def _watch(queue: Any) -> tuple[threading.Event, threading.Event]:
    """Events set when the worker claims the job and when it completes it (the queue's own
    methods, wrapped on this one object): the searches start once the job runs, and stop
    when it is done, whether or not the job holds the store meanwhile."""
    claimed, done = threading.Event(), threading.Event()
    claim, complete, fail = queue.claim, queue.complete, queue.fail

    def claiming(*args: Any, **kwargs: Any) -> Any:
        job = claim(*args, **kwargs)
        if job is not None:
            claimed.set()
        return job

    def completing(*args: Any, **kwargs: Any) -> Any:
        try:
            return complete(*args, **kwargs)
        finally:
            done.set()

    def failing(*args: Any, **kwargs: Any) -> Any:  # recorded as it would be; the run says so
        try:
            return fail(*args, **kwargs)
        finally:
            done.failed = True  # type: ignore[attr-defined]
            done.set()

    queue.claim, queue.complete, queue.fail = claiming, completing, failing
    return claimed, done


def one_run(label: str, template: Path, source: Path, embedder: Any) -> dict[str, Any]:
    import enginelib
    from enginelib.jobs import NewJob
    from enginelib.web.service import Service

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "store"
        shutil.copytree(template, path)
        service = Service(enginelib.open(path, embedder=embedder), poll_s=0.05)
        try:
            service.warm()
            idle = []  # the same kind of search with no job running, for scale
            for i in range(10):
                sent = time.perf_counter()
                service.search({"query": f"{QUERIES[i]} idle", "limit": 10})
                idle.append((time.perf_counter() - sent) * 1000)
            claimed, done = _watch(service.queue)
            with service.lock:
                service.queue.enqueue([NewJob(str(source), source.name, {})])
            started = time.perf_counter()
            service.start()
            service.worker.wake.set()
            claimed.wait(60)
            samples: list[tuple[float, float]] = []  # (seconds since the job was queued, ms)
            count = 0
            while not done.is_set():
                query = f"{QUERIES[count % len(QUERIES)]} {count}"  # new text: the model runs
                count += 1
                sent = time.perf_counter()
                service.search({"query": query, "limit": 10})
                samples.append((sent - started, (time.perf_counter() - sent) * 1000))
            done.wait()
            if getattr(done, "failed", False):
                raise SystemExit(f"{label}: the job failed: {service.jobs()['jobs']}")
            job_s = time.perf_counter() - started
        finally:
            service.stop()
    latencies = [ms for _, ms in samples]
    print(f"{label}: job {job_s:.1f} s, {len(samples)} searches meanwhile, "
          f"p50 {percentiles(latencies)['p50']:.0f} ms, max {max(latencies):.0f} ms "
          f"(idle p50 {percentiles(idle)['p50']:.0f} ms)")
    return {"label": label, "job_s": round(job_s, 2), "searches": len(samples),
            "search_ms": {**percentiles(latencies), "max": round(max(latencies), 1)},
            "idle_search_ms": percentiles(idle),
            "samples": [[round(t, 3), round(ms, 2)] for t, ms in samples]}


def plot(result: dict[str, Any], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for run in result["runs"]:
        times, ms = zip(*run["samples"], strict=True)
        ax.plot(times, ms, marker="o", markersize=3, linewidth=1,
                label=f"{run['label']} (job {run['job_s']:.0f} s, {run['searches']} searches)")
    ax.set_yscale("log")
    ax.set_xlabel("seconds since the job was queued (a point per search, at its start)")
    ax.set_ylabel("search latency, ms (log)")
    ax.set_title(f"serve: searches during a {result['kb']} KB job, e5-small, 2 cores")
    ax.legend()
    fig.tight_layout()
    fig.savefig(target, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=int, default=40, help="size of the queued file")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    embedder = harness_embedder("e5-small")
    open_store(embedder, "en").close()  # built once, then copied per run
    template = CACHE / embedder.name / "en"
    text = (_datasets() / "regulatory" / "eu_ai_act_recitals.md").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "ai_act_recitals_part.md"
        source.write_text(text[: args.kb * 1024], encoding="utf-8")
        with held_for_the_whole_job():
            held = one_run("held (before)", template, source, embedder)
        shared = one_run("shared (now)", template, source, embedder)
    result = {"kb": args.kb, "embedder": embedder.name, "runs": [held, shared],
              "machine": machine()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "serve_during_job.json").write_text(json.dumps(result, indent=1))
    plot(result, args.out / "serve_during_job.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
