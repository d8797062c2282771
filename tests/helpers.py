"""Small builders shared by the tests: stores on the hashing embedder, documents, texts."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

import enginelib
from enginelib import ChunkingConfig, HashingEmbedder, Store
from enginelib.catalog import utcnow
from enginelib.chunker import Chunker
from enginelib.core import layout
from enginelib.types import LoadedDocument


def _datasets_folder() -> Path:
    """The shared datasets: $ENGINELIB_DATASETS, else ../shared/datasets beside the checkout."""
    candidates = [
        os.environ.get("ENGINELIB_DATASETS"),
        Path(__file__).resolve().parents[2] / "shared" / "datasets",
        "/work/shared/datasets",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return Path(candidates[1])  # tests that need it fail naming this path


DATASETS = _datasets_folder()

SMALL_CHUNKS = ChunkingConfig(max_tokens=60, overlap_tokens=6, min_tokens=15)


def open_test_store(path: Path, *, chunking: ChunkingConfig | None = SMALL_CHUNKS, dim: int = 64) -> Store:
    return enginelib.open(path, embedder=HashingEmbedder(dim), chunking=chunking)


def doc(doc_id: str, text: str, **fields: object) -> LoadedDocument:
    return LoadedDocument(id=doc_id, text=text, **fields)  # type: ignore[arg-type]


def paragraphs(count: int, topic: str = "brakes") -> str:
    words = ["pads", "rotor", "caliper", "fluid", "torque", "piston", "wear", "noise"]
    return "\n\n".join(
        f"Paragraph {i} on {topic}: the {words[i % 8]} and the {words[(i + 3) % 8]} "
        f"need checking every {i + 2} months, said the workshop manual in section {i}."
        for i in range(count)
    )


def text_with_chunks(target: int, config: ChunkingConfig = SMALL_CHUNKS, topic: str = "brakes") -> str:
    """A text that the chunker cuts into exactly ``target`` chunks."""
    chunker = Chunker(config)
    for count in range(1, 400):
        text = paragraphs(count, topic)
        if len(chunker.chunk(text)) == target:
            return text
    raise AssertionError(f"no paragraph count gives {target} chunks")


def serve_in_thread(app: object, config: object = None) -> tuple[object, object, str]:
    """``app`` on a real socket (uvicorn in a thread, with serve's config unless ``config``):
    (server, thread, base URL). Stop it with ``server.should_exit = True; thread.join()``."""
    import socket
    import threading
    import time

    import uvicorn

    from enginelib.web.app import server_config

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(config or server_config(app, lifespan="on"))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


class Clock:
    """A settable clock (from now on): the job schedule is checked exactly without waiting."""

    def __init__(self) -> None:
        self.now = utcnow() + timedelta(seconds=60)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@contextmanager
def disk_full() -> Iterator[None]:
    """Meanwhile every ingest's catalog commit fails on a full disk (ENOSPC, through the fault
    hook): a transient failure, which a job retries on its schedule, where a file that cannot
    be read goes to the DLQ at once."""
    from enginelib import faults

    before = os.environ.get(faults.ENOSPC_VAR)
    os.environ[faults.ENOSPC_VAR] = "before_catalog_commit"
    try:
        yield
    finally:
        if before is None:
            del os.environ[faults.ENOSPC_VAR]
        else:
            os.environ[faults.ENOSPC_VAR] = before


def catalog_rows(store: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` read from a closed store's catalog, as another process would."""
    con = duckdb.connect(str(layout.catalog_path(store)), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def write_upload(store: Path, name: str, heading: str) -> Path:
    """A file in the store's uploads folder, where serve keeps one it was sent."""
    upload = store / "uploads" / "0123456789ab" / name
    upload.parent.mkdir(parents=True)
    upload.write_text(f"# {heading}\n\n" + paragraphs(2, "tyres"), encoding="utf-8")
    return upload


def mount_tmpfs(folder: Path, size: str) -> bool:
    """A real small file system (needs root and CAP_SYS_ADMIN); False where not allowed."""
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True)
    return done.returncode == 0


def umount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@contextmanager
def read_only_copy(store: Path, media: Path) -> Iterator[tuple[Path, str, bool]]:
    """A copy of ``store`` on a read-only medium: (its path, how it was made read-only,
    whether that is enforced). A tmpfs remounted read-only where mounts are allowed, else
    chmod a-w, which root ignores (``enforced`` False)."""
    mounted = mount_tmpfs(media, "64m")
    try:
        shutil.copytree(store, media / "s", ignore=shutil.ignore_patterns(".writer.lock"))
        if mounted:
            ro = subprocess.run(["mount", "-o", "remount,ro", str(media)], capture_output=True)
            assert ro.returncode == 0, ro.stderr
            how = "a tmpfs remounted read-only"
        else:
            for entry in [media / "s", *(media / "s").rglob("*")]:
                entry.chmod(0o555 if entry.is_dir() else 0o444)
            how = "chmod a-w (mounts are not permitted here)"
        yield media / "s", how, mounted or os.geteuid() != 0
    finally:
        if mounted:
            umount(media)
