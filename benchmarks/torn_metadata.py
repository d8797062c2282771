"""A checkpoint torn at every page: how often the catalog fails, and whether repair mends it.

``python -m benchmarks.torn_metadata --rounds 30``

Each round: a writer (a subprocess) commits a random ingest, update or delete and is
SIGKILLed after its catalog commit (before its connection closes), so the commit lives in DuckDB's WAL; the next
open replays the WAL and checkpoints, rewriting the metadata block in place. The benchmark
then rebuilds, for every page that checkpoint changed, the file a kill inside that write
would leave (the old file with the block's first pages new), and asks: does DuckDB open
it, does ``repair`` mend it, is every committed document there and does ``check`` pass.
(A writer's open mends the same way; ``repair`` is timed here because it reports.)
Writes ``benchmarks/results/torn_metadata.json``.

``--real`` (needs a C compiler) tears DuckDB's own write instead of rebuilding the file:
``tests/torn_pwrite.c``, preloaded into the process whose open replays the WAL and checkpoints,
writes the first N pages of the metadata block's ``pwrite`` and SIGKILLs the process, as a
kill inside that write does. Writes ``benchmarks/results/torn_metadata_real.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import enginelib
from enginelib import HashingEmbedder, LoadedDocument
from enginelib.catalog_mend import active_header, open_failure
from enginelib.core import layout
from enginelib.errors import CorruptStoreError
from enginelib.maintenance import repair

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "torn_metadata.json"
REAL_RESULTS = RESULTS.with_name("torn_metadata_real.json")
SHIM = REPO / "tests" / "torn_pwrite.c"  # the tests use it too
REAL_PAGES = (1, 2, 3, 5, 8, 13, 21, 34, 55, 63)
OPENER = """
import sys, enginelib
from enginelib import HashingEmbedder
enginelib.open(sys.argv[1], embedder=HashingEmbedder(16)).close()
"""
PAGE = 4096
WORDS = ("pads rotor caliper fluid torque piston wear noise consent controller processing "
         "erasure transfer portability").split()
WRITER = """
import json, sys, enginelib
from enginelib import HashingEmbedder, LoadedDocument
op = json.loads(sys.argv[2])
store = enginelib.open(sys.argv[1], embedder=HashingEmbedder(16))
if op["kind"] == "delete":
    store.delete_document(op["id"])
else:
    store.ingest_documents([LoadedDocument(id=d["id"], text=d["text"]) for d in op["docs"]])
"""


def _text(rng: random.Random) -> str:
    return "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "."
                       for _ in range(rng.randint(1, 6)))


def _documents(root: Path) -> set[str]:
    with enginelib.open(root, embedder=HashingEmbedder(16)) as store:
        return {d["document_id"] for d in store.list_documents()}


def _killed_write(root: Path, op: dict[str, Any]) -> None:
    # the first crash point after each operation's catalog commit (a delete has no named
    # catalog steps; its index saves come after its commit)
    step = "after_vector_save" if op["kind"] == "delete" else "after_catalog_commit"
    done = subprocess.run([sys.executable, "-c", WRITER, str(root), json.dumps(op)], cwd=REPO,
                          check=False, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "ENGINELIB_CRASH_AT": step})
    if done.returncode != -9:
        raise RuntimeError(f"the writer was not killed: {done.stderr.decode()[-500:]}")


def run(rounds: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="torn-"))
    root, killed, trial = work / "s", work / "killed", work / "trial"
    with enginelib.open(root, embedder=HashingEmbedder(16)) as store:
        store.ingest_documents([LoadedDocument(id=f"d{i}", text=_text(rng)) for i in range(5)])
    counts = {"rounds": 0, "tears": 0, "refused_by_duckdb": 0, "opened_as_is": 0, "mended": 0,
              "mend_failed": 0, "documents_lost": 0, "check_failed": 0}
    mend_ms: list[float] = []
    for _ in range(rounds):
        present = sorted(_documents(root))
        if present and rng.random() < 0.25:
            op: dict[str, Any] = {"kind": "delete", "id": rng.choice(present)}
        else:
            op = {"kind": "ingest", "docs": [{"id": f"d{rng.randint(0, 40)}", "text": _text(rng)}
                                             for _ in range(rng.randint(1, 4))]}
        _killed_write(root, op)
        shutil.rmtree(killed, ignore_errors=True)
        shutil.copytree(root, killed)
        catalog = layout.catalog_path(root)
        before = catalog.read_bytes()
        header = active_header(catalog)
        assert header is not None
        expected = _documents(root)  # replays the WAL and checkpoints: the write we tear
        after = catalog.read_bytes()
        start = header.metadata_location
        changed = [p for p in range(header.block_size // PAGE)
                   if after[start + p * PAGE:start + (p + 1) * PAGE]
                   != before[start + p * PAGE:start + (p + 1) * PAGE]]
        counts["rounds"] += 1
        for pages in range(1, (changed[-1] if changed else 0) + 1):
            counts["tears"] += 1
            shutil.rmtree(trial, ignore_errors=True)
            shutil.copytree(killed, trial)
            torn = bytearray(before)
            torn[start:start + pages * PAGE] = after[start:start + pages * PAGE]
            layout.catalog_path(trial).write_bytes(bytes(torn))
            if open_failure(layout.catalog_path(trial)) is None:
                counts["opened_as_is"] += 1
            else:
                counts["refused_by_duckdb"] += 1
                began = time.perf_counter()
                try:
                    report = repair(trial)
                except CorruptStoreError:
                    counts["mend_failed"] += 1
                    continue
                mend_ms.append((time.perf_counter() - began) * 1000)
                counts["mended" if report.facts.get("mend_record") else "mend_failed"] += 1
                counts["check_failed"] += int(not report.ok)
            counts["documents_lost"] += len(expected - _documents(trial))
    shutil.rmtree(work, ignore_errors=True)
    mend_ms.sort()
    return {**counts, "seed": seed, "duckdb": _duckdb_version(),
            "repair_ms_median": round(mend_ms[len(mend_ms) // 2], 1) if mend_ms else None}


def run_real(rounds: int, seed: int) -> dict[str, Any]:
    """Tear DuckDB's own checkpoint write at REAL_PAGES pages, ``rounds`` times over."""
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="torn-real-"))
    shim = work / "torn_pwrite.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(shim), str(SHIM), "-ldl"],
                   check=True)
    root, killed, trial = work / "s", work / "killed", work / "trial"
    with enginelib.open(root, embedder=HashingEmbedder(16)) as store:
        store.ingest_documents([LoadedDocument(id=f"d{i}", text=_text(rng)) for i in range(5)])
    counts = {"rounds": 0, "tears": 0, "killed_in_the_write": 0, "refused_by_duckdb": 0,
              "opened_as_is": 0, "mended_by_the_next_open": 0, "open_failed": 0,
              "documents_lost": 0, "check_failed": 0}
    for _ in range(rounds):
        op = {"kind": "ingest", "docs": [{"id": f"d{rng.randint(0, 40)}", "text": _text(rng)}
                                         for _ in range(rng.randint(1, 4))]}
        _killed_write(root, op)
        shutil.rmtree(killed, ignore_errors=True)
        shutil.copytree(root, killed)
        header = active_header(layout.catalog_path(root))
        assert header is not None
        expected = _documents(root)
        counts["rounds"] += 1
        for pages in REAL_PAGES:
            counts["tears"] += 1
            shutil.rmtree(trial, ignore_errors=True)
            shutil.copytree(killed, trial)
            done = subprocess.run(
                [sys.executable, "-c", OPENER, str(trial)], cwd=REPO, check=False,
                capture_output=True,
                env={**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": str(shim),
                     "TORN_OFFSET": str(header.metadata_location),
                     "TORN_BYTES": str(header.block_size), "TORN_SUFFIX": "/catalog.duckdb",
                     "TORN_PAGES": str(pages)})
            counts["killed_in_the_write"] += int(done.returncode == -9)
            refused = open_failure(layout.catalog_path(trial)) is not None
            counts["refused_by_duckdb" if refused else "opened_as_is"] += 1
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    with enginelib.open(trial, embedder=HashingEmbedder(16)) as store:
                        found = {d["document_id"] for d in store.list_documents()}
                        counts["check_failed"] += int(not store.check().ok)
            except CorruptStoreError:
                counts["open_failed"] += 1
                continue
            counts["mended_by_the_next_open"] += int(any("mended" in str(w.message)
                                                         for w in caught))
            counts["documents_lost"] += len(expected - found)
    shutil.rmtree(work, ignore_errors=True)
    return {**counts, "pages": list(REAL_PAGES), "seed": seed, "duckdb": _duckdb_version()}


def _duckdb_version() -> str:
    import duckdb

    return str(duckdb.__version__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--real", action="store_true",
                        help="tear DuckDB's own write with an LD_PRELOAD shim (needs gcc)")
    args = parser.parse_args()
    result = run_real(args.rounds, args.seed) if args.real else run(args.rounds, args.seed)
    target = REAL_RESULTS if args.real else RESULTS
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
