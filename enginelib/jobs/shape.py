"""The job tables' layout: find job tables that are not the ones this enginelib writes (a
hand edit, a damaged catalog, another version's layout), and mend them keeping their rows.

The queue's statements name their columns, so a table with a column lacking, or of another
type, failed each of them with a DuckDB binder error. ``check`` reports such a table, the
queue refuses to open on it (saying to run ``repair``), and ``repair`` sets it aside under a
dated name, creates the right layout and copies back what the old rows still hold.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ..errors import IntegrityError
from ..text import shell_word
from . import table as t
from .backoff import DEFAULT_MAX_ATTEMPTS

TABLES: tuple[str, ...] = ("jobs", "job_attempts", "jobs_history")
SEQUENCE = "jobs_id_seq"
ASIDE_MARK = "_damaged_"


@dataclass(frozen=True)
class Column:
    type: str
    required: bool  # NOT NULL without a default: every insert must give it


@dataclass(frozen=True)
class Found:
    """One job table (or a view of that name) as the catalog has it."""

    kind: str  # 'BASE TABLE' | 'VIEW'
    columns: Mapping[str, Column]


def quote_ident(name: str) -> str:
    """A DuckDB identifier, quoted: the one way a table or column name reaches SQL here."""
    return '"' + name.replace('"', '""') + '"'


_LAYOUT = (
    "SELECT c.table_name, tb.table_type, c.column_name, c.data_type, c.is_nullable, "
    "c.column_default FROM information_schema.columns c JOIN information_schema.tables tb "
    "ON tb.table_catalog = c.table_catalog AND tb.table_schema = c.table_schema "
    "AND tb.table_name = c.table_name "
    "WHERE c.table_catalog = current_database() AND c.table_schema = 'main' "
    "AND c.table_name IN (SELECT unnest(?::VARCHAR[])) ORDER BY c.table_name, c.ordinal_position"
)
_SEQUENCE = (
    "SELECT start_value, last_value, increment_by FROM duckdb_sequences() "
    "WHERE database_name = current_database() AND schema_name = 'main' AND sequence_name = ?"
)


def _layout(con: duckdb.DuckDBPyConnection, names: tuple[str, ...] = TABLES) -> dict[str, Found]:
    tables: dict[str, tuple[str, dict[str, Column]]] = {}
    for name, kind, column, data_type, nullable, default in con.execute(
            _LAYOUT, [list(names)]).fetchall():
        columns = tables.setdefault(name, (kind, {}))[1]
        columns[column] = Column(str(data_type), nullable == "NO" and default is None)
    return {name: Found(kind, columns) for name, (kind, columns) in tables.items()}


@functools.cache
def expected() -> dict[str, Found]:
    """The layout ``table.DDL`` creates, read back from an empty database: one truth."""
    con = duckdb.connect(":memory:")
    try:
        t.create_tables(con)
        return _layout(con)
    finally:
        con.close()


def _table_problem(name: str, found: Found) -> str | None:
    """What is wrong with one job table, in words; None when the queue can use it."""
    want = expected()[name].columns
    if found.kind != "BASE TABLE":
        return "is a view, not a table"
    parts = []
    lacking = [column for column in want if column not in found.columns]
    if lacking:
        parts.append(f"lacks column(s) {', '.join(lacking)}")
    retyped = [f"{column} is {found.columns[column].type}, not {kind.type}"
               for column, kind in want.items()
               if column in found.columns and found.columns[column].type != kind.type]
    parts += retyped
    # A column this enginelib does not write is harmless unless every insert must fill it.
    required = [column for column, kind in found.columns.items()
                if column not in want and kind.required]
    if required:
        parts.append(f"has column(s) {', '.join(required)} that every row must fill, which "
                     "this enginelib does not write")
    return "; ".join(parts) or None


def _next_id(con: duckdb.DuckDBPyConnection) -> int | None:
    """The id the sequence hands out next; None when there is no sequence."""
    rows = con.execute(_SEQUENCE, [SEQUENCE]).fetchall()
    if not rows:
        return None
    start, last, step = rows[0]
    return int(start) if last is None else int(last) + int(step)


def _highest_id(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Found]) -> int:
    """The highest job id any job table (or table set aside) holds; 0 when none."""
    highest = 0
    for name, found in tables.items():
        if "job_id" not in found.columns:
            continue
        rows = con.execute(
            f"SELECT max(TRY_CAST({quote_ident('job_id')} AS BIGINT)) FROM {quote_ident(name)}"
        ).fetchall()
        if rows and rows[0][0] is not None:
            highest = max(highest, int(rows[0][0]))
    return highest


def problems(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Each way the catalog's job tables differ from the layout the queue runs on. A catalog
    that never queued a job has none of them: nothing to say then."""
    found = _layout(con)
    if not found:
        return []
    out = [f"job table {name} is missing" for name in TABLES if name not in found]
    out += [f"job table {name} {problem}" for name, table in found.items()
            if (problem := _table_problem(name, table)) is not None]
    if not out and (behind := _sequence_problem(con, found)) is not None:
        out.append(behind)
    if not out and (repeated := _repeated(con)):
        out.append(_repeated_problem(repeated))
    if not out and (twice := _twice(con)):
        out.append(_twice_problem(twice))
    return out


# A job id both queued and in the history (a hand edit of both tables, or a sequence that
# restarted behind the ids): the purge of that job failed on the history's key, and with it
# every purge of DONE jobs.
_IN_BOTH = ("SELECT h.job_id FROM jobs_history h JOIN jobs j ON j.job_id = h.job_id "
            "ORDER BY h.job_id")
# Each side of one such id: what the job is (kind, source, document, when it was queued) and
# how far it got.
_BOTH_SIDES = (
    "SELECT j.kind, j.source, j.document_id, j.created_at, j.status, h.kind, h.source, "
    "h.document_id, h.created_at FROM jobs j JOIN jobs_history h ON h.job_id = j.job_id "
    "WHERE j.job_id = ?"
)
# The history's copy takes a new id: the queued job keeps the id its enqueue's caller knows.
_RENUMBER_HISTORY_ROW = (
    f"UPDATE jobs_history SET job_id = nextval('{SEQUENCE}') WHERE job_id = ? RETURNING job_id"
)
_DROP_HISTORY_ROW = "DELETE FROM jobs_history WHERE job_id = ?"
# Attempts rows carry only the id: those of another job that had it are told by their time.
_MOVE_ATTEMPTS_BEFORE = (
    "UPDATE job_attempts SET job_id = ? WHERE job_id = ? AND started_at < ?"
)
_MOVE_ATTEMPTS_FROM = (
    "UPDATE job_attempts SET job_id = ? WHERE job_id = ? AND started_at >= ?"
)
# A job id held by more than one row of jobs (a table rebuilt by hand, without its key): a
# claim took every row of it at once, and the purge of them failed on the history's key.
_REPEATED = "SELECT job_id FROM jobs GROUP BY job_id HAVING count(*) > 1 ORDER BY job_id"
ALREADY_DONE = (
    "not run again: the history holds this job (same file, queued at the same time) as DONE "
    "under job {done} (`enginelib repair` found both under one id); Retry DLQ runs it again"
)


def _twice(con: duckdb.DuckDBPyConnection) -> list[int]:
    return [int(row[0]) for row in con.execute(_IN_BOTH).fetchall()]


def _repeated(con: duckdb.DuckDBPyConnection) -> list[int]:
    return [int(row[0]) for row in con.execute(_REPEATED).fetchall()]


def _shown(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def _repeated_problem(ids: list[int]) -> str:
    return (f"job id(s) {_shown(ids)} are each held by more than one row of jobs (a table "
            "without its primary key): a worker takes such rows as one job, and the purge of "
            "DONE jobs fails on the history's key")


def _twice_problem(ids: list[int]) -> str:
    return (f"job id(s) {_shown(ids)} are both in jobs and in jobs_history: the purge of DONE "
            "jobs fails on the history's key")


def _sequence_problem(con: duckdb.DuckDBPyConnection, found: Mapping[str, Found]) -> str | None:
    highest, following = _highest_id(con, found), _next_id(con)
    if following is None:
        return f"the job id sequence {SEQUENCE} is missing"
    if following <= highest:
        return (f"the job id sequence {SEQUENCE} would hand out {following}, but job ids run "
                f"up to {highest}: a job queued later would take an id in use (its enqueue or "
                "its purge would then fail)")
    return None


def require_sound(con: duckdb.DuckDBPyConnection, store: object | None) -> None:
    """Refuse a queue over job tables it cannot run on, saying how to mend them."""
    found = problems(con)
    if not found:
        return
    where = f" --store {shell_word(store)}" if store is not None else ""
    raise IntegrityError(
        f"the job queue cannot run on this catalog: {'; '.join(found)} (a hand edit, a damaged "
        f"catalog or another enginelib's layout): run `enginelib repair{where}`, which sets a "
        "damaged job table aside under a dated name and keeps the rows it can",
        path=None if store is None else str(store))


# -- mending -----------------------------------------------------------------------------------

LOST_STATUS = (
    "its status was lost when `enginelib repair` mended the jobs table: "
    "`enginelib jobs --retry-dlq` runs it again"
)
_KEYS: dict[str, tuple[str, ...]] = {
    "jobs": ("source", "document_id"), "job_attempts": ("job_id", "seq"),
    "jobs_history": ("job_id",),
}
_UNIQUE: dict[str, tuple[str, ...]] = {"job_attempts": ("job_id", "seq"),
                                       "jobs_history": ("job_id",)}


def _defaults(name: str, now: datetime) -> dict[str, tuple[str, list[Any]]]:
    """What a required column of a copied row gets when the old table lost it (or held no
    value of its type there)."""
    if name == "jobs":
        return {"kind": ("'file'", []), "options": ("'{}'", []), "attempts": ("0", []),
                "max_attempts": ("?", [DEFAULT_MAX_ATTEMPTS]), "next_attempt_at": ("?", [now]),
                "created_at": ("?", [now]), "updated_at": ("?", [now])}
    if name == "job_attempts":
        return {"attempt": ("0", []), "started_at": ("?", [now])}
    return {"purged_at": ("?", [now])}


def _job_columns(values: Mapping[str, str]) -> dict[str, tuple[str, list[Any]]]:
    """The jobs table's own rules: an unknown status is the DLQ (with the reason), an id
    lost or repeated is drawn anew, and fewer than one attempt allowed is the default."""
    status, valid = values["status"], "(SELECT unnest(?::VARCHAR[]))"
    statuses = list(t.STATUSES)
    job_id = values["job_id"]
    return {
        "status": (f"CASE WHEN {status} IN {valid} THEN {status} ELSE 'DLQ' END", [statuses]),
        "last_error": (f"CASE WHEN {status} IN {valid} THEN {values['last_error']} ELSE ? END",
                       [statuses, LOST_STATUS]),
        # Of distinct jobs sharing an id, the one queued first keeps it (its attempts
        # rows are told apart by their time: see _move_attempts).
        "job_id": (f"CASE WHEN {job_id} IS NULL OR row_number() OVER (PARTITION BY {job_id} "
                   f"ORDER BY {values['created_at']} NULLS LAST, {values['document_id']}, "
                   f"{values['source']}) > 1 THEN nextval('{SEQUENCE}') ELSE {job_id} END", []),
        "max_attempts": (f"CASE WHEN {values['max_attempts']} >= 1 THEN "
                         f"{values['max_attempts']} ELSE ? END", [DEFAULT_MAX_ATTEMPTS]),
    }


def _copy_sql(name: str, aside: str, old: Found, now: datetime) -> tuple[str, list[Any]]:
    """The INSERT that fills the rebuilt ``name`` from the table set aside."""
    want = expected()[name].columns
    # Each column as the old table holds it, cast to the new type (NULL where it cannot be).
    values = {column: "NULL" if column not in old.columns
              else quote_ident(column) if old.columns[column].type == kind.type
              else f"TRY_CAST({quote_ident(column)} AS {kind.type})"
              for column, kind in want.items()}
    rules = _job_columns(values) if name == "jobs" else {}
    defaults = _defaults(name, now)
    targets, exprs, params = [], [], []
    for column in want:
        if column in rules:
            expr, more = rules[column]
        elif column in defaults:
            fallback, more = defaults[column]
            expr = f"coalesce({values[column]}, {fallback})"
        else:
            expr, more = values[column], []
        targets.append(quote_ident(column))
        exprs.append(expr)
        params += more
    keys = _KEYS[name]
    # A row that cannot say what it is about (which file, which job) cannot be kept.
    keep = ("FALSE" if any(k not in old.columns for k in keys)
            else " AND ".join(f"{values[k]} IS NOT NULL" for k in keys))
    dedupe = ""
    if (unique := _UNIQUE.get(name)) and all(k in old.columns for k in unique):
        key_list = ", ".join(values[k] for k in unique)
        dedupe = f" QUALIFY row_number() OVER (PARTITION BY {key_list} ORDER BY {key_list}) = 1"
    source = quote_ident(aside)
    if name == "jobs":
        source = f"({_one_row_per_job(aside, values)}) AS copies"
    sql = (f"INSERT INTO {quote_ident(name)} ({', '.join(targets)}) SELECT {', '.join(exprs)} "
           f"FROM {source} WHERE {keep}{dedupe}")
    return sql, params


# How far a job got, best first: of two rows of one job, the one that got further is kept (a
# DONE copy beside a PENDING one ran both: the ingest twice, its purge failing).
_PROGRESS = ("CASE {status} WHEN 'DONE' THEN 0 WHEN 'DLQ' THEN 1 WHEN 'RUNNING' THEN 2 "
             "WHEN 'FAILED' THEN 3 ELSE 4 END")
# What makes two rows one job: its id, kind, file, document and when it was queued.
_IDENTITY = ("job_id", "kind", "source", "document_id", "created_at")


def _one_row_per_job(aside: str, values: Mapping[str, str]) -> str:
    """The rows of the table set aside, one per job: copies of one job (a row inserted twice)
    collapse into the one furthest along, the most attempts and latest change among equals."""
    same = ", ".join(values[column] for column in _IDENTITY)
    progress = _PROGRESS.format(status=values["status"])
    return (f"SELECT * FROM {quote_ident(aside)} QUALIFY row_number() OVER (PARTITION BY {same} "
            f"ORDER BY {progress}, {values['attempts']} DESC NULLS LAST, "
            f"{values['updated_at']} DESC NULLS LAST) = 1")


def _renumbered_sql(aside: str, values: Mapping[str, str]) -> str:
    """(old id, new id, queued at) of each job the copy gave a new id: a job that shared its
    id with another, older one."""
    old = {column: values[column] for column in _IDENTITY}
    return (
        f"SELECT DISTINCT o.old_id, j.job_id, j.created_at FROM jobs j JOIN (SELECT "
        f"{old['job_id']} AS old_id, {old['kind']} AS kind, {old['source']} AS source, "
        f"{old['document_id']} AS document_id, {old['created_at']} AS created_at FROM "
        f"{quote_ident(aside)}) o ON o.source = j.source AND o.document_id = j.document_id "
        "AND o.kind IS NOT DISTINCT FROM j.kind AND o.created_at IS NOT DISTINCT FROM "
        "j.created_at WHERE o.old_id IS NOT NULL AND o.old_id <> j.job_id "
        "ORDER BY j.created_at DESC")


def _move_attempts(con: duckdb.DuckDBPyConnection, aside: str, old: Found) -> int:
    """Give each job the copy renumbered the attempts rows that are its own: those that
    started once it was queued (the job that kept the id was queued before it)."""
    if "job_attempts" not in _layout(con, ("job_attempts",)):
        return 0
    want = expected()["jobs"].columns
    values = {column: "NULL" if column not in old.columns
              else quote_ident(column) if old.columns[column].type == kind.type
              else f"TRY_CAST({quote_ident(column)} AS {kind.type})"
              for column, kind in want.items()}
    moved = 0
    for old_id, new_id, queued in con.execute(_renumbered_sql(aside, values)).fetchall():
        if queued is None:
            continue
        rows = con.execute(_MOVE_ATTEMPTS_FROM + " RETURNING seq", [new_id, old_id, queued])
        moved += len(rows.fetchall())
    return moved


def _aside_name(con: duckdb.DuckDBPyConnection, name: str, now: datetime) -> str:
    base = f"{name}{ASIDE_MARK}{now:%Y%m%d_%H%M%S}"
    taken = {row[0] for row in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = "
        "current_database() AND table_schema = 'main' AND starts_with(table_name, ?)",
        [base]).fetchall()}
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def _count(con: duckdb.DuckDBPyConnection, name: str) -> int:
    rows = con.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchall()
    return int(rows[0][0]) if rows else 0


def mend(con: duckdb.DuckDBPyConnection, now: datetime) -> list[str]:
    """Put the job tables right, inside the caller's transaction; one note per thing done.

    A table of the wrong layout is copied aside as ``<name>_damaged_<UTC time>`` (kept whole,
    for a person to look at), dropped, created again and given back every row that still
    says what it is about; columns it lost get neutral values, and a job whose status was
    lost waits in the DLQ rather than run again unasked."""
    found = _layout(con)
    if not found:
        return []
    broken = {name: problem for name, table in found.items()
              if (problem := _table_problem(name, table)) is not None}
    notes: list[str] = []
    behind = None if broken else _sequence_problem(con, found)
    if behind is None and not broken and "jobs" in found and (repeated := _repeated(con)):
        behind = _repeated_problem(repeated)
    rebuild = set(broken) | ({"jobs"} if behind and "jobs" in found else set())
    asides: dict[str, tuple[str, Found]] = {}
    for name in TABLES:
        if name not in rebuild:
            continue
        aside = _aside_name(con, name, now)
        con.execute(f"CREATE TABLE {quote_ident(aside)} AS SELECT * FROM {quote_ident(name)}")
        if found[name].kind == "VIEW":
            con.execute(f"DROP VIEW {quote_ident(name)}")
        else:
            con.execute(f"DROP TABLE {quote_ident(name)}")
        asides[name] = (aside, found[name])
    if "jobs" in rebuild or "jobs" not in found:
        standing = {name: table for name, table in found.items() if name not in asides}
        _restart_sequence(con, {**standing, **dict(asides.values())})
    missing = [name for name in TABLES if name not in found]
    t.create_tables(con)
    notes += [f"job table {name} was missing: created" for name in missing]
    for name, (aside, old) in asides.items():
        sql, params = _copy_sql(name, aside, old, now)
        con.execute(sql, params)
        total, kept = _count(con, aside), _count(con, name)
        why = broken.get(name) or behind
        lost = [c for c in expected()[name].columns if c not in old.columns]
        note = (f"job table {name} {why}: set aside as {aside} ({total} rows), created anew "
                f"with {kept} of them")
        if lost:
            note += (f"; column(s) {', '.join(lost)} could not be kept (left empty, or a default "
                     "where a job needs a value)")
        if kept < total:
            note += (f"; {total - kept} row(s) lacked {' or '.join(_KEYS[name])} (or repeated a "
                     "row of the same job) and stay only in the table set aside")
        notes.append(note + f" (drop {aside} once you have looked at it)")
    # after every copy: job_attempts, rebuilt too, is filled after jobs
    if "jobs" in asides and (moved := _move_attempts(con, *asides["jobs"])):
        notes.append(f"jobs that shared an id were given new ones: {moved} attempt row(s) "
                     "moved to the job each belongs to (those that started once it was queued)")
    notes += _renumber_history(con, now)
    return notes


def _renumber_history(con: duckdb.DuckDBPyConnection, now: datetime) -> list[str]:
    """Part each job id both queued and in the history (the tables are sound now). The same
    job (same kind, file, document, time queued) twice: a DONE queued row is the record, and
    the history's copy goes (the next purge moves the queued one); a queued row not DONE is
    not run again unasked (to the DLQ, saying so) and the history keeps its DONE record under
    a new id. Two jobs that shared an id: the history's takes a new one, with the attempts
    that started before the queued job was queued."""
    twice = _twice(con)
    if not twice:
        return []
    # nextval must hand out ids no table holds: past the history's and the queued jobs'
    _restart_sequence(con, _layout(con))
    renumbered, dropped, held = [], [], []
    for job_id in twice:
        row = con.execute(_BOTH_SIDES, [job_id]).fetchone()
        if row is None:
            continue
        queued, history, status = row[0:4], row[5:9], row[4]
        if queued == history and status == t.DONE:
            con.execute(_DROP_HISTORY_ROW, [job_id])
            dropped.append(job_id)
            continue
        [(new_id,)] = con.execute(_RENUMBER_HISTORY_ROW, [job_id]).fetchall()
        renumbered.append(int(new_id))
        if queued == history:
            if status != t.DLQ:
                reason = ALREADY_DONE.format(done=int(new_id))
                t.hold(con, [reason, now, now, [job_id]])
                held.append(job_id)
        elif queued[3] is not None:
            con.execute(_MOVE_ATTEMPTS_BEFORE, [new_id, job_id, queued[3]])
    note = f"{_twice_problem(twice)}:"
    if dropped:
        note += (f" the history's copies of {_shown(dropped)}, the same DONE jobs as queued, "
                 "dropped (the next purge moves the queued ones);")
    if renumbered:
        note += (f" the history's rows renumbered {', '.join(map(str, renumbered[:10]))}"
                 f"{' ...' if len(renumbered) > 10 else ''} (the queued jobs keep their ids, "
                 "and the attempts that started once they were queued);")
    if held:
        note += (f" job(s) {_shown(held)}, DONE in the history already, sent to the DLQ rather "
                 "than run again;")
    return [note.rstrip(";")]


def _restart_sequence(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Found]) -> None:
    """Start the id sequence past every id any job table holds: a purged job's id reused by a
    new job failed that job's purge on the history's key. A sequence already past them is
    left as it is (a table set aside may still depend on it)."""
    following, highest = _next_id(con), _highest_id(con, tables)
    if following is not None and following > highest:
        return
    con.execute(f"DROP SEQUENCE IF EXISTS {quote_ident(SEQUENCE)}")
    # DDL takes no parameters: the start is an int computed here, formatted as one.
    con.execute(f"CREATE SEQUENCE {quote_ident(SEQUENCE)} START {int(highest) + 1}")
