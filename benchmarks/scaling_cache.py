"""Built synthetic indexes kept under ``benchmarks/.cache/scaling`` so reruns skip the builds.

The 1M-chunk hnsw graph takes minutes on two cores: it is built once, saved with the index's
own ``save`` (so a later run opens it exactly as a store would), and reused while the corpus
recipe and the graph parameters stay the same. ``meta.json`` records what was built, with
its build times, and is written last: a folder without it is an interrupted build.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.indexes import HnswVectorIndex, TantivyTextIndex
from enginelib.indexes.base import TextDocument

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "scaling"
RECIPE = 1  # bump when scaling.synthetic changes what it generates


def corpus(n: int) -> tuple[np.ndarray, list[str]]:
    """The synthetic vectors and texts of size ``n``, generated once and then read back."""
    from .scaling import synthetic

    folder = CACHE / f"corpus-{n}-r{RECIPE}"
    vectors_file, texts_file = folder / "vectors.npy", folder / "texts.txt"
    if not texts_file.exists():
        vectors, texts = synthetic(n)
        tmp = CACHE / f".tmp-corpus-{n}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        np.save(tmp / "vectors.npy", vectors)
        (tmp / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        return vectors, texts
    vectors = np.load(vectors_file)
    texts = texts_file.read_text(encoding="utf-8").splitlines()
    return vectors, texts


def built(n: int, *, threads: int = 2, M: int = 16, ef_construction: int = 200) -> tuple[Path, dict[str, Any]]:
    """The folder holding ``vectors/`` (hnsw) and ``text/`` (tantivy) for size ``n``, built
    if missing; and its meta (build times)."""
    folder = CACHE / f"idx-{n}-r{RECIPE}-M{M}-efc{ef_construction}"
    meta_file = folder / "meta.json"
    if meta_file.exists():
        _stamp_label_order(folder / "text")
        return folder, json.loads(meta_file.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    vectors, texts = corpus(n)
    labels = np.arange(n, dtype=np.int64)
    index = HnswVectorIndex(folder / "vectors", vectors.shape[1], M=M,
                            ef_construction=ef_construction, num_threads=threads)
    started = time.perf_counter()
    index.add(labels, vectors)
    hnsw_s = time.perf_counter() - started
    index.save(1)
    del index
    text = TantivyTextIndex(folder / "text")
    started = time.perf_counter()
    step = 50_000
    for start in range(0, n, step):
        text.add([TextDocument(i, texts[i], "", "", "en") for i in range(start, min(n, start + step))])
    text.save(1)
    tantivy_s = time.perf_counter() - started
    del text
    meta = {"chunks": n, "hnsw_build_s": round(hnsw_s, 1), "hnsw_build_threads": threads,
            "tantivy_build_s": round(tantivy_s, 1), "M": M, "ef_construction": ef_construction,
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "load_at_build": open("/proc/loadavg").read().split()[:3]}
    meta_file.write_text(json.dumps(meta, indent=1) + "\n")
    return folder, meta


def _stamp_label_order(folder: Path) -> None:
    """A text index saved before its stamp recorded ``label_order``: save it once more (no
    content change) so the check runs and the stamp says it."""
    stamp = json.loads((folder / "stamp.json").read_text())
    if "label_order" not in stamp or stamp["label_order"] is None:
        index = TantivyTextIndex(folder)
        index.save(int(stamp["generation"]))
        del index


if __name__ == "__main__":
    import sys

    for size in [int(s) for s in sys.argv[1].split(",")]:
        print(size, built(size)[1], flush=True)
