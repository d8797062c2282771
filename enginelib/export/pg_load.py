"""Load a store directly into a live Postgres (psycopg COPY, batched, one transaction)."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..errors import ExportError
from ._psycopg import psycopg, sql
from .copy_text import encode_rows
from .options import ExportOptions, options_from
from .pg_schema import Names
from .plan import Copy, Statement, build_plan, copy_statement, settings_key
from .report import ExportProgress, ExportReport
from .rows import read_store

if TYPE_CHECKING:
    from ..core.store_core import StoreCore as Store

# Fault hook for the interrupted-load test: after this many chunk rows have been sent,
# flush them, touch the marker file (if given) and block until killed. Unset: no effect.
STALL_ENV = "ENGINELIB_EXPORT_STALL_AFTER_ROWS"
STALL_MARKER_ENV = "ENGINELIB_EXPORT_STALL_MARKER"


def export_postgres(
    store: Store, dsn: str, *, options: ExportOptions | None = None, progress: bool = False,
    connect_timeout: int = 10, **option_fields: Any,
) -> ExportReport:
    """Export the store into the database at ``dsn`` in one transaction; see ExportOptions.

    Re-exporting replaces changed documents' chunks and removes deleted ones; a failure
    or a kill at any point leaves the previous export untouched.
    """
    opts = options or options_from(option_fields)
    started = time.perf_counter()
    changes: dict[str, int] = {}
    doing = "connecting"
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=connect_timeout) as conn:
            with read_store(store) as reader, ExportProgress(enabled=progress) as bar:
                meta = reader.meta
                doing = "inspecting the database"
                ext = _extension_schema(conn) or opts.extension_schema
                if _unchanged(conn, opts, ext, meta):
                    changes = {"unchanged": 1}
                    return _report(opts, meta, started, changes)
                steps = build_plan(reader, opts, ext)
                with conn.transaction(), conn.cursor() as cur:
                    for step in steps:
                        if isinstance(step, Copy):
                            doing = f"copying {step.what}"
                            _copy(cur, step, opts.batch_rows, bar)
                        else:
                            doing = _describe(step)
                            cur.execute(step.sql)
                            if step.name is not None:
                                changes[step.name] = max(cur.rowcount, 0)
                    doing = "committing"
    except psycopg.Error as exc:
        message = _server_message(exc, dsn)
        if doing == "connecting":
            message += _uri_password_hint(dsn)
        error = ExportError(f"Postgres export failed while {doing}: {message}")
        # The driver's own message may quote the password: then it is not chained either.
        raise error from (None if message != _server_message(exc) else exc)
    return _report(opts, meta, started, changes)


def _report(opts: ExportOptions, meta: Any, started: float, changes: dict[str, int]) -> ExportReport:
    return ExportReport(
        target="postgres", schema=opts.schema, table_prefix=opts.table_prefix,
        documents=meta.documents, chunks=meta.chunks, versions=meta.versions,
        sources=meta.sources, embedding_dim=meta.embedding_dim,
        store_generation=meta.generation, seconds=time.perf_counter() - started,
        changes=changes,
    )


def _extension_schema(conn: psycopg.Connection[Any]) -> str | None:
    """The schema an installed pgvector lives in: the exported SQL names its type there."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_catalog.pg_extension e "
        "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    return str(row[0]) if row else None


def _unchanged(conn: psycopg.Connection[Any], opts: ExportOptions, ext: str, meta: Any) -> bool:
    """True when the latest export into this target is of this very store state with these
    options: then there is nothing to write, and nothing is locked or rewritten."""
    names = Names.of(opts, ext)
    exists = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
        [names.table("exports").as_string(), names.table("chunks").as_string()],
    ).fetchone()
    if not exists or not exists[0]:
        return False
    columns = conn.execute(
        "SELECT count(*) FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass(%s) "
        "AND attname = 'settings' AND NOT attisdropped", [names.table("exports").as_string()],
    ).fetchone()
    if not columns or not columns[0]:
        return False
    latest = conn.execute(sql.SQL(
        "SELECT store_path, embedding_model, store_generation, index_version, documents, chunks, "
        "settings FROM {} ORDER BY id DESC LIMIT 1").format(names.table("exports"))).fetchone()
    counted = conn.execute(sql.SQL("SELECT (SELECT count(*) FROM {}), (SELECT count(*) FROM {})").format(
        names.table("documents"), names.table("chunks"))).fetchone()
    expected = (meta.path, meta.embedding_model, meta.generation, meta.index_version,
                meta.documents, meta.chunks, settings_key(opts, ext))
    # The row counts guard against rows deleted on the server since.
    return latest == expected and counted == (meta.documents, meta.chunks)


def _copy(cur: psycopg.Cursor[Any], step: Copy, batch_rows: int, bar: ExportProgress) -> None:
    bar.start(step.what, step.total)
    stall_after = int(os.environ.get(STALL_ENV, "0") or 0) if step.what == "chunks" else 0
    sent = 0
    with cur.copy(copy_statement(step)) as copy:
        batch: list[str] = []
        for line in encode_rows(step.columns, step.rows(), step.what):
            batch.append(line)
            if len(batch) >= batch_rows:
                copy.write("".join(batch))
                sent += len(batch)
                bar.advance(len(batch))
                batch.clear()
                if stall_after and sent >= stall_after:
                    _stall(cur)
        if batch:
            copy.write("".join(batch))
            bar.advance(len(batch))


def _stall(cur: psycopg.Cursor[Any]) -> None:
    # Push what libpq still buffers, so the server really holds a half-done COPY.
    while cur.connection.pgconn.flush() == 1:
        time.sleep(0.01)
    marker = os.environ.get(STALL_MARKER_ENV)
    if marker:
        Path(marker).write_text(str(os.getpid()), encoding="utf-8")
    print("enginelib export: stalled mid-COPY for a fault-injection test", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


def _describe(step: Statement) -> str:
    text = step.sql.as_string().split("\n", 1)[0]
    return f"running {text[:100]!r}"


_INSUFFICIENT_PRIVILEGE = "42501"
_PRIVILEGE_HINT = (
    "what to do: export as the database owner (Supabase: the postgres role), or grant this "
    "role CREATE on the database (it creates the target schema and, when missing, the "
    "vector and pg_trgm extensions' schema) and CREATE on an existing target schema"
)


# libpq quotes the pieces of a connection string it cannot read: a URI password holding a
# raw '@' shows its tail as the host ("failed to resolve host 'Tail@db.example.com'"), a
# bad percent-escape the whole password ('invalid percent-encoded token: "..."'), a
# key=value password with a space its second word ('missing "=" after "..."').
_KV_PASSWORD = re.compile(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'?|.*?)(?=\s+[A-Za-z_]+\s*=|$)", re.S)
_URI_PASSWORD = re.compile(r"[?&]password=([^&#]*)")
_SECRET_PIECES = re.compile(r"[\s@/?#:&'\\\[\]]+")
# Pieces shorter than this are left: they give nothing away and would garble the message.
_MIN_SECRET_PIECE = 3


def _uri_userinfo(dsn: str) -> str | None:
    scheme, sep, rest = dsn.partition("://")
    if not sep or scheme.lower() not in ("postgres", "postgresql"):
        return None
    # The last '@': a raw '@' inside the password is the usual slip.
    return rest.rpartition("@")[0]


def dsn_secrets(dsn: str) -> list[str]:
    """What of ``dsn`` may be its password, whole and in the pieces a libpq message quotes,
    longest first."""
    found: list[str] = []
    userinfo = _uri_userinfo(dsn)
    if userinfo is not None:
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
        found += [m.group(1) for m in _URI_PASSWORD.finditer(dsn)]
    else:
        found += [m.group(1).strip("'") for m in _KV_PASSWORD.finditer(dsn)]
    pieces: set[str] = set()
    for secret in found:
        for form in (secret, unquote(secret)):
            pieces.add(form)
            pieces.update(_SECRET_PIECES.split(form))
    return sorted((p for p in pieces if len(p) >= _MIN_SECRET_PIECE), key=len, reverse=True)


def _redact(message: str, dsn: str | None) -> str:
    for secret in dsn_secrets(dsn) if dsn else []:
        message = message.replace(secret, "***")
    return message


def _uri_password_hint(dsn: str) -> str:
    userinfo = _uri_userinfo(dsn)
    password = userinfo.split(":", 1)[1] if userinfo and ":" in userinfo else ""
    if re.search(r"[@/?#\[\] ]|%(?![0-9A-Fa-f]{2})", password):
        return ("; what to do: percent-encode the password in a postgresql:// URI ('@' as %40, "
                "'/' as %2F, '?' as %3F, '#' as %23, '%' as %25, a space as %20)")
    return ""


def _server_message(exc: psycopg.Error, dsn: str | None = None) -> str:
    """The server's (or libpq's) message, with any piece of the password in ``dsn`` masked."""
    return _redact(_message(exc), dsn)


def _message(exc: psycopg.Error) -> str:
    diag = exc.diag
    if diag.message_primary:
        parts = [diag.message_primary]
        if diag.message_detail:
            parts.append(f"detail: {diag.message_detail}")
        if diag.message_hint:
            parts.append(f"hint: {diag.message_hint}")
        if diag.sqlstate:
            parts.append(f"(SQLSTATE {diag.sqlstate})")
        if diag.sqlstate == _INSUFFICIENT_PRIVILEGE:
            parts.append(_PRIVILEGE_HINT)
        return "; ".join(parts)
    return str(exc).strip() or type(exc).__name__
