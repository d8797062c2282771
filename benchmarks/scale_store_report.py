"""The table and plot of ``benchmarks/scale_store.py``: enginelib beside LanceDB, by size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _load(folder: Path, prefix: str) -> dict[int, dict[str, Any]]:
    out = {}
    for path in sorted(folder.glob(f"{prefix}_*.json")):
        if not path.stem[len(prefix) + 1:].isdigit():  # lance_build_N is not lance_N
            continue
        data = json.loads(path.read_text())
        out[int(data["chunks"])] = data
    return out


def _ms(data: dict[str, Any] | None, kind: str, q: str) -> str:
    if not data or kind not in data:
        return "-"
    return f"{data[kind][q]:.1f}"


def table(folder: Path) -> str:
    builds, stores, lances = _load(folder, "build"), _load(folder, "measure"), _load(folder, "lance")
    sizes = sorted(set(builds) | set(stores) | set(lances))
    lines = [
        "| chunks | engine | ingest chunks/s (peak RSS MB) | open s | RSS after open MB | "
        "vector p50 / p99 ms | BM25 p50 / p99 ms | hybrid p50 / p99 ms | recall@10 | "
        "source chunk in hybrid top 10 | add 1,000 docs s | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        b, s, lance = builds.get(n), stores.get(n), lances.get(n)
        if s or b:
            ingest = f"{b['chunks_per_s']:.0f} ({b['peak_rss_mb']:.0f})" if b else "-"
            add = s["add_1000"]["total_s"] if s else "-"
            lines.append(
                f"| {n:,} | enginelib | {ingest} | {s['open_s'] if s else '-'} | "
                f"{s['rss_after_open_mb'] if s else '-'} | {_ms(s, 'vector', 'p50')} / {_ms(s, 'vector', 'p99')} | "
                f"{_ms(s, 'fulltext', 'p50')} / {_ms(s, 'fulltext', 'p99')} | "
                f"{_ms(s, 'hybrid', 'p50')} / {_ms(s, 'hybrid', 'p99')} | "
                f"{s.get('recall@10', '-') if s else '-'} | {s.get('hybrid_source_chunk_in_top10', '-') if s else '-'} | "
                f"{add} | {s['load_average'][0]:.1f} |" if s else
                f"| {n:,} | enginelib | {ingest} | - | - | - | - | - | - | - | - | {b['load_average'][0]:.1f} |"
            )
        if lance:
            lines.append(
                f"| {n:,} | LanceDB | {lance['chunks_per_s']:.0f} ({lance.get('build_peak_rss_mb', lance['peak_rss_mb']):.0f}) | {lance['open_s']} | "
                f"{lance['rss_after_open_mb']} | {_ms(lance, 'vector', 'p50')} / {_ms(lance, 'vector', 'p99')} | "
                f"{_ms(lance, 'fulltext', 'p50')} / {_ms(lance, 'fulltext', 'p99')} | "
                f"{_ms(lance, 'hybrid', 'p50')} / {_ms(lance, 'hybrid', 'p99')} | {lance['recall@10']} | "
                f"{lance.get('hybrid_source_chunk_in_top10', '-')} | {lance['add_1000']['total_s']} | "
                f"{lance['load_average'][0]:.1f} |"
            )
    return "\n".join(lines) + "\n"


def plot(folder: Path, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stores, lances = _load(folder, "measure"), _load(folder, "lance")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, data, style in (("enginelib", stores, "-o"), ("LanceDB", lances, "--s")):
        sizes = sorted(data)
        if not sizes:
            continue
        for kind in ("hybrid", "fulltext", "vector"):
            left.plot(sizes, [data[n][kind]["p50"] for n in sizes], style,
                      label=f"{name} {'BM25' if kind == 'fulltext' else kind}")
        right.plot(sizes, [data[n]["rss_after_open_mb"] for n in sizes], style, label=f"{name} after open")
    for axis, title, label in ((left, "search p50 (store.search, limit 10)", "ms"),
                               (right, "process RSS after open", "MB")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("chunks")
        axis.set_ylabel(label)
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    fig.suptitle("Scale through the store (synthetic 384-dim clustered vectors, ~100-word chunks)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def report(folder: Path, results: Path) -> None:
    text = table(folder)
    (results / "scale_store.md").write_text(text)
    plot(folder, results / "scale_store.png")
    print(text)
