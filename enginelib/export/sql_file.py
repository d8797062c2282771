"""Write the export as one self-contained .sql file: DDL + ``COPY ... FROM STDIN`` data.

Load it with ``psql -f out.sql "$DATABASE_URL"``. The file stops at the first error
(``ON_ERROR_STOP``) and runs in one transaction, so a failed or interrupted load changes
nothing; loading it into a database that holds an older export of the same store applies
the same replace-and-archive steps as a live export.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..durable import follow_umask
from ..errors import ExportError
from .copy_text import encode_rows
from .options import ExportOptions, options_from
from .plan import Copy, build_plan, copy_statement
from .report import ExportProgress, ExportReport
from .rows import read_store

if TYPE_CHECKING:
    from ..core.store_core import StoreCore as Store


def write_sql(
    store: Store, path: str | Path, *, options: ExportOptions | None = None,
    progress: bool = False, **option_fields: Any,
) -> ExportReport:
    """Write the store as a .sql file at ``path`` (replaced atomically; a device or pipe such
    as /dev/stdout is written into); see ExportOptions."""
    opts = options or options_from(option_fields)
    target = Path(path)
    started = time.perf_counter()
    try:
        if _is_device_or_pipe(target):
            # /dev/stdout, a pipe, /dev/null: written into as it is. The rename below would
            # have put a regular file in place of the device (as root, /dev/null itself).
            with open(target, "w", encoding="utf-8", newline="\n") as out:
                meta = _write(out, store, opts, progress)
        else:  # through a link to a file, the file is replaced and the link kept
            real = target.resolve() if target.is_symlink() else target
            meta = _write_beside_and_rename(real, store, opts, progress)
    except BrokenPipeError:
        raise  # `--sql-file /dev/stdout | head`: the reader went away, as for any output
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {exc}") from exc
    return ExportReport(
        target=str(target), schema=opts.schema, table_prefix=opts.table_prefix,
        documents=meta.documents, chunks=meta.chunks, versions=meta.versions,
        sources=meta.sources, embedding_dim=meta.embedding_dim,
        store_generation=meta.generation, seconds=time.perf_counter() - started,
    )


def _is_device_or_pipe(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode  # follows links: /dev/stdout -> /proc/self/fd/1
    except FileNotFoundError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _write_beside_and_rename(target: Path, store: Store, opts: ExportOptions,
                             progress: bool) -> Any:
    """Written beside the target, fsynced and renamed, so a crash never leaves half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        follow_umask(fd)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            meta = _write(out, store, opts, progress)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return meta


def _write(out: IO[str], store: Store, opts: ExportOptions, progress: bool) -> Any:
    with read_store(store) as reader:
        meta = reader.meta
        _header(out, meta.path, meta.embedding_model, meta.embedding_dim, meta.generation)
        with ExportProgress(enabled=progress) as bar:
            for step in build_plan(reader, opts):
                if isinstance(step, Copy):
                    _write_copy(out, step, bar)
                else:
                    out.write(step.sql.as_string() + ";\n")
        out.write("COMMIT;\n")
    return meta


def _header(out: IO[str], store_path: str, model: str, dim: int, generation: int) -> None:
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    # The store path goes into a comment: newlines would end it, so they are replaced.
    safe_path = store_path.replace("\n", " ").replace("\r", " ")
    out.write(
        "-- enginelib export (Postgres + pgvector); load with: psql -f THIS_FILE \"$DATABASE_URL\"\n"
        f"-- store: {safe_path}\n-- model: {model} ({dim} dims), generation {generation}, "
        f"written {stamp}\n"
        "\\set ON_ERROR_STOP on\n"
        "SET client_encoding = 'UTF8';\n"
        "SET standard_conforming_strings = on;\n"
        "BEGIN;\n"
    )


def _write_copy(out: IO[str], step: Copy, bar: ExportProgress) -> None:
    out.write(copy_statement(step).as_string() + ";\n")
    bar.start(step.what, step.total)
    written = 0
    for line in encode_rows(step.columns, step.rows(), step.what):
        out.write(line)
        written += 1
        if written % 1000 == 0:
            bar.advance(1000)
    bar.advance(written % 1000)
    out.write("\\.\n")
