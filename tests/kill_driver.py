"""Kill-during-write loop: SIGKILL writers doing ingest, delete, snapshot and reindex at
named crash points and at random moments, then check the store after every kill.

Run by tests/test_faults_hardening.py as ``python -m tests.kill_driver STORE KILLS SEED``
in a fresh interpreter: this process imports enginelib once and forks a child per
operation and per check (fork keeps each run to a fraction of a second; the parent never
opens the store, so no library state is shared across a fork). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import enginelib
from enginelib import ChunkingConfig, HashingEmbedder, LoadedDocument
from enginelib.faults import COMMIT_STEPS, ENV_VAR

DIM = 16
KEEP_VAR = "ENGINELIB_KILL_KEEP"  # a folder: a store the check could not open is copied there
CHUNKINGS = (ChunkingConfig(max_tokens=60, overlap_tokens=6, min_tokens=15),
             ChunkingConfig(max_tokens=80, overlap_tokens=8, min_tokens=15))
CRASH_POINTS: dict[str, tuple[str, ...]] = {
    "ingest": COMMIT_STEPS,
    "delete": tuple(s for s in COMMIT_STEPS if "catalog" not in s),
    "snapshot": ("snapshot_before_rename",),
    "reindex": ("reindex_before_catalog_commit", "reindex_after_catalog_commit", "mid_vector_save",
                "after_vector_save", "mid_text_save", "after_text_save", "before_manifest_rename"),
}
WORDS = ["pads", "rotor", "caliper", "fluid", "torque", "piston", "wear", "noise", "consent",
         "controller", "processing", "erasure"]


def text(rng: random.Random, paragraphs: int) -> str:
    return "\n\n".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 45))) + "."
        for _ in range(paragraphs)
    )


def open_store(path: Path) -> enginelib.Store:
    return enginelib.open(path, embedder=HashingEmbedder(DIM), lock_timeout=5.0)


def ledger_append(ledger: Path, line: dict[str, Any]) -> None:
    with open(ledger, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_ledger(ledger: Path) -> tuple[set[str], set[str]]:
    """(documents that must be there, documents that may or may not be there)."""
    present: set[str] = set()
    unsure: set[str] = set()
    if not ledger.exists():
        return present, unsure
    for line in ledger.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        ids = set(entry["ids"])
        if entry["event"] == "ingest-intent":
            unsure |= ids - present
        elif entry["event"] == "ingested":
            present |= ids
            unsure -= ids
        elif entry["event"] == "delete-intent":
            present -= ids
            unsure |= ids
        elif entry["event"] == "deleted":
            unsure -= ids
    return present, unsure


def run_operation(path: Path, ledger: Path, op: str, seed: int) -> None:
    """The child: one write operation on the store, recorded in the ledger when it returns."""
    rng = random.Random(seed)
    store = open_store(path)
    if op == "ingest":
        docs = [LoadedDocument(id=f"doc{rng.randint(0, 30)}", text=text(rng, rng.randint(1, 3)))
                for _ in range(rng.randint(1, 5))]
        ids = sorted({d.id for d in docs})
        ledger_append(ledger, {"event": "ingest-intent", "ids": ids})
        report = store.ingest_documents(docs, batch_size=rng.choice([1, 3, 256]))
        ledger_append(ledger, {"event": "ingested",
                               "ids": sorted(set(report.added) | set(report.updated)
                                             | set(report.unchanged))})
    elif op == "delete":
        existing = [d["document_id"] for d in store._catalog.list_documents()]
        if existing:
            victim = rng.choice(existing)
            ledger_append(ledger, {"event": "delete-intent", "ids": [victim]})
            store.delete_document(victim)
            ledger_append(ledger, {"event": "deleted", "ids": [victim]})
    elif op == "snapshot":
        store.create_snapshot(keep=2)
    elif op == "reindex":
        store.reindex(embedder=HashingEmbedder(DIM), chunking=rng.choice(CHUNKINGS))
    store.close()


def verify(path: Path, ledger: Path, result_file: Path) -> None:
    """The checking child: the store opens (or repairs), loses nothing, passes check."""
    result: dict[str, Any] = {"opened": False, "repaired": False, "lost": [], "problems": [],
                              "raw": None}
    try:
        try:
            store = open_store(path)
            result["opened"] = True
        except enginelib.EngineError as exc:
            result["open_error"] = str(exc)
            from enginelib.maintenance import repair

            repair(path)
            result["repaired"] = True
            store = open_store(path)
        must, _unsure = read_ledger(ledger)
        documents = {d["document_id"] for d in store._catalog.list_documents()}
        result["lost"] = sorted(must - documents)
        report = store.check()
        result["problems"] = list(report.problems)
        for document_id in sorted(documents)[:3]:  # whole documents, searchable
            document = store.get_document(document_id)
            chunks = store._catalog.chunks_of(document_id)
            if len(chunks) != document["total_chunks"]:
                result["problems"].append(f"{document_id}: chunk count")
        response = store.search("pads rotor", strategy="fulltext", answerability_threshold=None,
                                limit=5)
        if not {h.document_id for h in response.hits} <= documents:
            result["problems"].append("search returned a document the catalog lacks")
        store.close()
    except BaseException as exc:  # noqa: BLE001 - reported to the test, which fails on it
        result["raw"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
    result_file.write_text(json.dumps(result), encoding="utf-8")


def fork(func: Any, *args: Any, env: dict[str, str] | None = None) -> int:
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            if env:
                os.environ.update(env)
            func(*args)
        except BaseException:  # noqa: BLE001 - the child reports by exit status only
            traceback.print_exc()
            code = 3
        finally:
            os._exit(code)
    return pid


def warm_up() -> None:
    """Load what every child needs once, before forking (the tokenizer alone takes ~1 s)."""
    import enginelib.maintenance
    import enginelib.search.engine
    import enginelib.snapshots  # noqa: F401
    from enginelib.chunker import get_encoding

    get_encoding()


def main() -> None:
    path, kills_wanted, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    warm_up()
    rng = random.Random(seed)
    ledger = path.parent / "ledger.jsonl"
    ledger.unlink(missing_ok=True)  # a ledger of an earlier run beside it is not this store's
    result_file = path.parent / "verify.json"
    # A starting store with a few documents.
    pid = fork(run_operation, path, ledger, "ingest", seed)
    os.waitpid(pid, 0)
    counts: dict[str, Any] = {"kills": 0, "runs": 0, "by_op": {}, "crash_point_kills": 0,
                              "random_kills": 0, "failed_ops": 0, "stores_unopenable": 0,
                              "repaired": 0, "documents_lost": 0, "problems": [], "raw": []}
    durations: dict[str, float] = {}
    ops = ("ingest", "delete", "snapshot", "reindex")
    while counts["kills"] < kills_wanted and counts["runs"] < kills_wanted * 4:
        op = ops[counts["runs"] % len(ops)]
        counts["runs"] += 1
        env: dict[str, str] = {}
        timed = rng.random() < 0.5 and op in durations
        if not timed:
            step = rng.choice(CRASH_POINTS[op])
            env[ENV_VAR] = f"{step}:{rng.randint(1, 2)}"
        started = time.monotonic()
        pid = fork(run_operation, path, ledger, op, rng.randrange(10**9), env=env)
        if timed:
            time.sleep(rng.uniform(0.0, durations[op]))
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
        if not timed and not os.WIFSIGNALED(status):
            durations[op] = max(durations.get(op, 0.0), time.monotonic() - started)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
            counts["kills"] += 1
            counts["by_op"][op] = counts["by_op"].get(op, 0) + 1
            counts["random_kills" if timed else "crash_point_kills"] += 1
        elif os.WEXITSTATUS(status) != 0:
            counts["failed_ops"] += 1
        else:
            continue  # a completed run is checked by the next run, which opens the store
        # Check the store after every kill (and every failed run).
        result_file.unlink(missing_ok=True)
        pid = fork(verify, path, ledger, result_file)
        os.waitpid(pid, 0)
        result = json.loads(result_file.read_text(encoding="utf-8"))
        if result["raw"]:
            how = "a random moment" if timed else f"crash point {env[ENV_VAR]}"
            counts["raw"].append(f"after a kill of {op} at {how}: {result['raw']}")
            keep = os.environ.get(KEEP_VAR)
            if keep:  # the broken store, for whoever investigates
                shutil.copytree(path, Path(keep) / f"store-seed{seed}-run{counts['runs']}")
            break
        if not result["opened"]:
            counts["repaired" if result["repaired"] else "stores_unopenable"] += 1
        counts["documents_lost"] += len(result["lost"])
        counts["problems"].extend(f"{op}: {p}" for p in result["problems"])
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
