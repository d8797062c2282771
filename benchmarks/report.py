"""Turn results/<dataset>.json into markdown tables, a quality-vs-latency PNG and RESULTS.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RESULTS_MD = HERE / "RESULTS.md"
START, END = "<!-- generated:start -->", "<!-- generated:end -->"
DATASET_ORDER = ("scifact", "nfcorpus")


def load_results(folder: Path = RESULTS) -> list[dict[str, Any]]:
    found = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if "systems" in data and "dataset" in data:
            found.append(data)
    order = {name: i for i, name in enumerate(DATASET_ORDER)}
    return sorted(found, key=lambda d: (order.get(d["dataset"], 99), d["dataset"]))


def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def systems_table(result: dict[str, Any]) -> str:
    embed = result["query_embedding_ms"]
    lines = [
        "| system | kind | nDCG@10 | Recall@100 | MRR@10 | retrieval p50 ms | p95 | p99 | "
        "+ query embedding p50 ms | QPS (1 thread, retrieval) | recall@10 vs exact |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in result["systems"]:
        q, lat = s["quality"], s["latency_ms"]
        needs_embedding = s["kind"] in ("vector", "hybrid")
        total = lat["p50"] + embed["p50"] if needs_embedding else lat["p50"]
        name = f"**{s['name']}**" if s["ours"] else s["name"]
        lines.append(
            f"| {name} | {s['kind']} | {q['ndcg@10']:.4f} | {q['recall@100']:.4f} | "
            f"{q['mrr@10']:.4f} | {_f(lat['p50'])} | {_f(lat['p95'])} | {_f(lat['p99'])} | "
            f"{_f(total, 2)} | {_f(s['qps_single_thread'], 0)} | {_f(s.get('recall@10_vs_exact'), 4)} |"
        )
    return "\n".join(lines)


def costs_table(result: dict[str, Any]) -> str:
    ingest, build, cold = result["ingest"], result["index_build"], result["cold_open"]
    mb = 2**20
    rows = [
        ("documents / chunks", f"{result['corpus']['documents']} / {ingest['chunks']}"),
        ("ingest, with embedding", f"{ingest['seconds_with_embedding']:.1f} s "
         f"({ingest['chunks_per_s_with_embedding']} chunks/s)"),
        ("ingest, vectors from cache", f"{ingest['seconds_without_embedding']:.1f} s "
         f"({ingest['chunks_per_s_without_embedding']} chunks/s)"),
        ("index build from the catalog", f"hnsw {build['hnsw_seconds']:.2f} s, "
         f"tantivy {build['tantivy_seconds']:.2f} s"),
        ("store on disk", f"{ingest['disk_bytes'] / mb:.1f} MiB (hnsw {build['hnsw_bytes'] / mb:.1f}, "
         f"tantivy {build['tantivy_bytes'] / mb:.1f})"),
        ("peak RSS, bench process", f"{result['peak_rss_mb']:.0f} MiB (model, store and all peers)"),
        ("cold open (new process)", _cold(cold)),
        ("query embedding (MiniLM, CPU)", f"p50 {result['query_embedding_ms']['p50']:.2f} ms, "
         f"p95 {result['query_embedding_ms']['p95']:.2f} ms, p99 {result['query_embedding_ms']['p99']:.2f} ms"),
    ]
    return "\n".join(["| measure | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows])


def _cold(cold: dict[str, Any]) -> str:
    if "error" in cold:
        return f"failed: {cold['error'][:120]}"
    return (f"open {cold['open_s'] * 1000:.0f} ms + first search {cold['first_search_s'] * 1000:.0f} ms "
            f"(import {cold['import_s']:.2f} s; reader peak RSS {cold['peak_rss_mb']:.0f} MiB)")


def dataset_markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    return "\n\n".join([
        f"### {result['dataset']} ({result['split']} split: {result['corpus']['queries']} queries)",
        f"Run {result['started_at']} (git {result['git']}) on {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gib']} GiB; `{result['command']}`.",
        systems_table(result),
        costs_table(result),
    ])


def plot(results: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return None
    colors = {"vector": "tab:blue", "fulltext": "tab:orange", "hybrid": "tab:green"}
    fig, axes = plt.subplots(1, len(results), figsize=(6.2 * len(results), 5.0), squeeze=False)
    for ax, result in zip(axes[0], results, strict=True):
        embed = result["query_embedding_ms"]["p50"]
        for s in result["systems"]:
            x = s["latency_ms"]["p50"]
            y = s["quality"]["ndcg@10"]
            marker = "*" if s["ours"] else "o"
            size = 220 if s["ours"] else 70
            ax.scatter([x], [y], marker=marker, s=size, color=colors.get(s["kind"], "gray"),
                       edgecolor="black", linewidth=0.6, zorder=3)
            ax.annotate(s["name"].replace("enginelib-", "ours: "), (x, y), textcoords="offset points",
                        xytext=(6, 4), fontsize=8)
        ax.axvline(embed, color="gray", linestyle=":", linewidth=1)
        ax.text(embed, ax.get_ylim()[0], f" query embedding p50 {embed:.1f} ms", rotation=90,
                va="bottom", ha="right", fontsize=7, color="gray")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("retrieval p50 latency per query, ms (log; excludes query embedding)")
        ax.set_ylabel("nDCG@10 (test qrels)")
        ax.set_title(f"{result['dataset']}: quality vs latency (stars: enginelib)")
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def write_reports(folder: Path = RESULTS, results_md: Path = RESULTS_MD) -> Path:
    results = load_results(folder)
    if not results:
        raise SystemExit(f"no results/*.json in {folder}: run `python -m benchmarks run` first")
    for result in results:
        (folder / f"{result['dataset']}.md").write_text(dataset_markdown(result) + "\n")
    image = plot(results, folder / "quality_vs_latency.png")
    generated = [START, "", "## Latest results (generated by `python -m benchmarks report`)", ""]
    if image is not None:
        generated += [f"![quality vs latency](results/{image.name})", ""]
    generated += ["\n\n".join(dataset_markdown(r) for r in results), "", END]
    block = "\n".join(generated)
    if results_md.exists() and START in results_md.read_text():
        text = results_md.read_text()
        head, rest = text.split(START, 1)
        tail = rest.split(END, 1)[1] if END in rest else ""
        results_md.write_text(head + block + tail)
    else:
        results_md.write_text("# enginelib benchmarks\n\n" + block + "\n")
    return results_md
