"""A catalog block torn by a killed checkpoint: rebuilt on purpose, mended by `repair`.

DuckDB writes its metadata block back over itself at every checkpoint; a kill inside that
write leaves the block part new, part old, and its checksum wrong (the kill loop's rare
"Corrupt database file ... in block at location 12288"). These tests make that file
exactly: the bytes before a checkpoint, with the first pages of the block as the
checkpoint wrote them, and the WAL of the commit the checkpoint was folding in.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import enginelib
from enginelib import HashingEmbedder
from enginelib.catalog_mend import PENDING_NAME, active_header, block_checksum, open_failure
from enginelib.maintenance import repair
from tests.helpers import doc

REPO = Path(__file__).resolve().parent.parent
PAGE = 4096
LATE = "torque wrench calibration " * 20


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "enginelib.cli.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def _open(path: Path) -> enginelib.Store:
    return enginelib.open(path, embedder=HashingEmbedder(16))


def torn_store(path: Path, tear: str) -> tuple[bytes, int]:
    """A store whose writer was killed after committing document "late" and whose next
    checkpoint was killed inside its write of the metadata block: after the block's first
    page (``tear="first"``), or before the last page the checkpoint changed
    (``tear="last"``). Returns the damaged catalog's bytes and the block's location."""
    with _open(path) as store:
        store.ingest_documents([doc(f"d{i}", f"brake pads rotor {i} " * 30) for i in range(3)])
    code = ("import sys, enginelib; from enginelib import HashingEmbedder, LoadedDocument; "
            "s = enginelib.open(sys.argv[1], embedder=HashingEmbedder(16)); "
            f"s.ingest_documents([LoadedDocument(id='late', text={LATE!r})])")
    killed = subprocess.run([sys.executable, "-c", code, str(path)], cwd=REPO, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO),
                                 "ENGINELIB_CRASH_AT": "after_catalog_commit"})
    assert killed.returncode == -9
    catalog = path / "catalog.duckdb"
    assert catalog.with_name("catalog.duckdb.wal").exists()  # the commit lives in the WAL
    before = catalog.read_bytes()
    header = active_header(catalog)
    assert header is not None
    kept = path.parent / "kept"
    shutil.copytree(path, kept)
    with _open(path):  # replays the WAL and checkpoints: the write a kill tears
        pass
    after = catalog.read_bytes()
    location = header.metadata_location
    changed = [page for page in range(header.block_size // PAGE)
               if after[location + page * PAGE:location + (page + 1) * PAGE]
               != before[location + page * PAGE:location + (page + 1) * PAGE]]
    assert changed and changed[0] == 0  # the checksum, at least
    pages = 1 if tear == "first" else changed[-1]
    shutil.rmtree(path)
    shutil.copytree(kept, path)
    shutil.rmtree(kept)
    torn = bytearray(before)
    torn[location:location + pages * PAGE] = after[location:location + pages * PAGE]
    catalog.write_bytes(bytes(torn))
    return bytes(torn), location


def _assert_whole(path: Path) -> None:
    with _open(path) as store:
        assert store.check().ok, store.check().problems
        assert {d["document_id"] for d in store.list_documents()} == {"d0", "d1", "d2", "late"}
        top = store.search("torque wrench", strategy="fulltext", answerability_threshold=None)
        assert top.hits[0].document_id == "late"
        store.ingest_documents([doc("after", "caliper piston seal " * 20)])
    with _open(path) as store:
        assert "after" in {d["document_id"] for d in store.list_documents()}


def test_block_checksum_is_duckdbs(tmp_path: Path) -> None:
    """Every block and header of a real catalog carries the checksum we compute: the mend
    writes nothing DuckDB would not have written itself."""
    path = tmp_path / "s"
    with _open(path) as store:
        store.ingest_documents([doc(f"d{i}", f"brake pads rotor {i} " * 300) for i in range(40)])
    data = (path / "catalog.duckdb").read_bytes()
    header = active_header(path / "catalog.duckdb")
    assert header is not None and header.block_size == 262144
    offsets = [4096, 8192, *range(12288, len(data), header.block_size)]
    assert len(offsets) > 3
    for offset in offsets:
        size = PAGE if offset < 12288 else header.block_size
        stored = int.from_bytes(data[offset:offset + 8], "little")
        if offset < 12288 and stored == 0:
            continue  # a header slot never written yet
        assert block_checksum(data[offset + 8:offset + size]) == stored, offset


@pytest.mark.parametrize("tear", ["first", "last"])
def test_a_checkpoint_torn_by_a_kill_is_mended_by_repair_and_loses_nothing(tmp_path: Path,
                                                                           tear: str) -> None:
    path = tmp_path / "s"
    damaged, location = torn_store(path, tear)
    with pytest.raises(enginelib.CorruptStoreError, match="enginelib repair") as info:
        enginelib.open(path, embedder=HashingEmbedder(16), read_only=True)  # a reader cannot write
    assert f"location {location}" in str(info.value)
    out = _cli("repair", "--store", str(path))
    assert out.returncode == 0, out.stderr
    assert "mended the catalog: 1 block(s)" in out.stdout
    records = list(path.glob("catalog.mended-*.json"))
    assert len(records) == 1 and records[0].name in out.stdout
    (patch,) = json.loads(records[0].read_text())["patches"]
    assert patch["location"] == location
    assert patch["stored"] == int.from_bytes(damaged[location:location + 8], "little")
    assert not (path / PENDING_NAME).exists()
    _assert_whole(path)


def test_the_next_writer_mends_a_torn_checkpoint_on_its_own(tmp_path: Path) -> None:
    """The promise of every write: a killed process leaves a store that opens."""
    path = tmp_path / "s"
    torn_store(path, "last")
    with pytest.warns(RuntimeWarning, match="mended, nothing lost"):
        store = _open(path)
    store.close()
    assert len(list(path.glob("catalog.mended-*.json"))) == 1
    _assert_whole(path)
    out = _cli("search", "torque wrench", "--store", str(path), "--strategy", "fulltext")
    assert out.returncode == 0 and "late" in out.stdout, out.stderr


def test_the_cli_says_in_one_line_that_it_mended(tmp_path: Path) -> None:
    path = tmp_path / "s"
    torn_store(path, "first")
    source = tmp_path / "new.txt"
    source.write_text("caliper piston seal " * 20, encoding="utf-8")
    out = _cli("ingest", str(source), "--store", str(path), "--no-progress")
    assert out.returncode == 0, out.stderr
    warning = [line for line in out.stderr.splitlines() if "mended" in line]
    assert len(warning) == 1 and warning[0].startswith("Warning: enginelib: the catalog")
    assert "store_core.py" not in out.stderr
    with _open(path) as store:
        assert {"late", "new.txt"} <= {d["document_id"] for d in store.list_documents()}


def _noise_over_the_torn_block(path: Path) -> bytes:
    """A torn store whose metadata block is then noise (fixed seed): live metadata gone, not
    torn. Returns the catalog's bytes."""
    _damaged, location = torn_store(path, "last")
    catalog = path / "catalog.duckdb"
    data = bytearray(catalog.read_bytes())
    data[location + 8:location + 262144] = random.Random(7).randbytes(262144 - 8)
    catalog.write_bytes(data)
    return bytes(data)


def test_garbage_in_the_block_is_not_mended_and_the_file_stays_as_it_was(tmp_path: Path) -> None:
    """A block that is garbage, not torn: a checksum written over it would make DuckDB read
    nonsense, so the mend must find out and put every byte back."""
    path = tmp_path / "s"
    catalog = path / "catalog.duckdb"
    data = _noise_over_the_torn_block(path)
    with pytest.raises(enginelib.CorruptStoreError, match="cannot be mended") as info:
        repair(path)
    assert "snapshot restore NAME" in str(info.value)
    assert catalog.read_bytes() == data
    assert not (path / PENDING_NAME).exists() and not list(path.glob("catalog.mended-*"))
    with pytest.raises(enginelib.CorruptStoreError, match="cannot be mended"):
        _open(path)  # a writer's open tries too, and says the same
    assert catalog.read_bytes() == data
    out = _cli("repair", "--store", str(path))
    assert out.returncode == 2 and "cannot be mended" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_mend_killed_after_its_write_is_finished_by_the_next_repair(tmp_path: Path) -> None:
    path = tmp_path / "s"
    torn_store(path, "last")
    killed = _cli("repair", "--store", str(path), env={"ENGINELIB_CRASH_AT": "mend_after_patch"})
    assert killed.returncode == -9, killed.stderr
    assert (path / PENDING_NAME).exists()  # the record of what changed came first
    checked = _cli("check", "--store", str(path))
    assert checked.returncode == 1 and "mend of the catalog was interrupted" in checked.stdout
    out = _cli("repair", "--store", str(path))
    assert out.returncode == 0, out.stderr
    assert not (path / PENDING_NAME).exists() and len(list(path.glob("catalog.mended-*.json"))) == 1
    _assert_whole(path)


def test_a_killed_mend_of_garbage_is_undone_by_the_next_repair(tmp_path: Path) -> None:
    path = tmp_path / "s"
    catalog = path / "catalog.duckdb"
    data = _noise_over_the_torn_block(path)
    killed = _cli("repair", "--store", str(path), env={"ENGINELIB_CRASH_AT": "mend_after_patch"})
    assert killed.returncode == -9, killed.stderr
    assert catalog.read_bytes() != data  # killed with the new checksum in place
    out = _cli("repair", "--store", str(path))
    assert out.returncode == 2 and "cannot be mended" in out.stderr
    assert catalog.read_bytes() == data and not (path / PENDING_NAME).exists()


def _shim(tmp_path: Path) -> Path:
    """tests/torn_pwrite.c built into ``tmp_path`` (once per test)."""
    shim = tmp_path / "torn_pwrite.so"
    if not shim.exists():
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(shim),
                        str(REPO / "tests" / "torn_pwrite.c"), "-ldl"], check=True)
    return shim


def _tear_next_checkpoint(tmp_path: Path, path: Path, pages: int, *, raw: bool = False) -> None:
    """Open the store in a process whose checkpoint write of the metadata block is cut after
    ``pages`` pages by a SIGKILL (tests/torn_pwrite.c, preloaded); ``raw`` opens the catalog
    with DuckDB alone, so nothing of enginelib's own recovery runs first."""
    shim = _shim(tmp_path)
    header = active_header(path / "catalog.duckdb")
    assert header is not None
    opener = ("import sys, duckdb; duckdb.connect(sys.argv[1] + '/catalog.duckdb').close()" if raw
              else "import sys, enginelib; from enginelib import HashingEmbedder; "
                   "enginelib.open(sys.argv[1], embedder=HashingEmbedder(16)).close()")
    torn = subprocess.run([sys.executable, "-c", opener, str(path)], cwd=REPO, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": str(shim),
                               "TORN_PAGES": str(pages),
                               "TORN_OFFSET": str(header.metadata_location),
                               "TORN_BYTES": str(header.block_size),
                               "TORN_SUFFIX": "/catalog.duckdb"})
    assert torn.returncode == -9  # killed inside the checkpoint's write of that block
    assert "checksum" in (open_failure(path / "catalog.duckdb") or "")  # the kill loop's failure


def _killed_after_commit(path: Path, code: str, step: str) -> None:
    killed = subprocess.run([sys.executable, "-c", code, str(path)], cwd=REPO, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO), "ENGINELIB_CRASH_AT": step})
    assert killed.returncode == -9


# Skipped only off CI: there gcc is installed, and a missing one must fail, not hide the tests.
NEEDS_GCC = pytest.mark.skipif(shutil.which("gcc") is None and not os.environ.get("CI"),
                               reason="the write-tearing shim needs gcc")


@NEEDS_GCC
@pytest.mark.parametrize("pages", [1, 3])
def test_duckdbs_own_checkpoint_killed_inside_its_write_is_mended(tmp_path: Path,
                                                                  pages: int) -> None:
    """Not a rebuilt file: DuckDB's checkpoint itself, its metadata block's pwrite cut after
    ``pages`` pages by a SIGKILL, then the next open."""
    path = tmp_path / "s"
    with _open(path) as store:
        store.ingest_documents([doc(f"d{i}", f"brake pads rotor {i} " * 30) for i in range(3)])
    _killed_after_commit(path, (
        "import sys, enginelib; from enginelib import HashingEmbedder, LoadedDocument; "
        "s = enginelib.open(sys.argv[1], embedder=HashingEmbedder(16)); "
        f"s.ingest_documents([LoadedDocument(id='late', text={LATE!r})])"), "after_catalog_commit")
    _tear_next_checkpoint(tmp_path, path, pages)
    with pytest.warns(RuntimeWarning, match="mended, nothing lost"):
        _open(path).close()
    _assert_whole(path)


@NEEDS_GCC
def test_a_torn_checkpoint_under_a_killed_reindex_is_mended_and_the_reindex_finished(
        tmp_path: Path) -> None:
    """A reindex killed after its catalog commit leaves a marker the next open reads from
    the catalog before anything else; a checkpoint torn while the marker is there (here
    DuckDB's own open folding the reindex's WAL in) must be mended before that read."""
    path = tmp_path / "s"
    with _open(path) as store:
        store.ingest_documents([doc(f"d{i}", f"brake pads rotor {i} " * 30) for i in range(3)])
        store.ingest_documents([doc("late", LATE)])
    _killed_after_commit(path, (
        "import sys, enginelib; from enginelib import HashingEmbedder, ChunkingConfig; "
        "s = enginelib.open(sys.argv[1], embedder=HashingEmbedder(16)); "
        "s.reindex(chunking=ChunkingConfig(max_tokens=40, overlap_tokens=4, min_tokens=10))"),
        "reindex_after_catalog_commit")
    assert (path / ".reindex.json").exists()
    _tear_next_checkpoint(tmp_path, path, 2, raw=True)
    assert (path / ".reindex.json").exists()
    with pytest.warns(RuntimeWarning, match="mended, nothing lost"):
        store = _open(path)
    with store:
        assert store.manifest.chunking["max_tokens"] == 40  # the killed reindex, finished
    _assert_whole(path)


def test_a_restore_over_a_torn_checkpoint_mends_it_and_restores_plainly(tmp_path: Path) -> None:
    """`snapshot restore` on a torn catalog must not set the file aside as damaged: it is
    mended (nothing lost), and the restore is the ordinary one."""
    path = tmp_path / "s"
    with _open(path) as store:
        store.ingest_documents([doc("early", "caliper piston seal " * 20)])
        name = store.create_snapshot().name
    torn_store(path, "first")
    out = _cli("snapshot", "restore", name, "--store", str(path))
    assert out.returncode == 0, out.stderr
    assert "mended" in out.stderr and not list(path.glob("catalog.damaged-*"))
    assert len(list(path.glob("catalog.mended-*.json"))) == 1
    with _open(path) as store:
        assert {d["document_id"] for d in store.list_documents()} == {"early"}
        assert store.check().ok


@NEEDS_GCC
def test_a_store_creation_killed_in_duckdbs_first_write_opens_next_time(tmp_path: Path) -> None:
    """SIGKILLed inside DuckDB's first header write, a new store is a manifest beside an
    empty catalog file (seen: 0 bytes); that wedged every later open."""
    shim = _shim(tmp_path)
    path = tmp_path / "s"
    init = _cli("init", "--store", str(path), env={
        "ENGINELIB_EMBEDDER": "hashing-16", "LD_PRELOAD": str(shim), "TORN_PAGES": "0",
        "TORN_OFFSET": "0", "TORN_BYTES": "4096", "TORN_SUFFIX": "/catalog.duckdb"})
    assert init.returncode == -9
    assert (path / "manifest.json").exists() and (path / "catalog.duckdb").stat().st_size == 0
    with _open(path) as store:
        store.ingest_documents([doc("d", "brake pads rotor " * 20)])
    with _open(path) as store:
        assert [d["document_id"] for d in store.list_documents()] == ["d"] and store.check().ok
