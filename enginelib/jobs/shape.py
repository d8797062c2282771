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
    if not out and (twice := _twice(con)):
        out.append(_twice_problem(twice))
    return out


# A job id both queued and in the history (only a hand edit of both tables makes one): the
# purge of that job failed on the history's key, and with it every purge of DONE jobs.
_IN_BOTH = ("SELECT h.job_id FROM jobs_history h JOIN jobs j ON j.job_id = h.job_id "
            "ORDER BY h.job_id")
# The history's copy takes a new id: the queued job keeps the id its attempts and its
# enqueue's caller know it by.
_RENUMBER_HISTORY = (
    f"UPDATE jobs_history SET job_id = nextval('{SEQUENCE}') "
    "WHERE job_id IN (SELECT job_id FROM jobs) RETURNING job_id"
)


def _twice(con: duckdb.DuckDBPyConnection) -> list[int]:
    return [int(row[0]) for row in con.execute(_IN_BOTH).fetchall()]


def _twice_problem(ids: list[int]) -> str:
    shown = ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return (f"job id(s) {shown} are both in jobs and in jobs_history: the purge of DONE jobs "
            "fails on the history's key")


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
        "job_id": (f"CASE WHEN {job_id} IS NULL OR row_number() OVER (PARTITION BY {job_id} "
                   f"ORDER BY {job_id}) > 1 THEN nextval('{SEQUENCE}') ELSE {job_id} END", []),
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
    sql = (f"INSERT INTO {quote_ident(name)} ({', '.join(targets)}) SELECT {', '.join(exprs)} "
           f"FROM {quote_ident(aside)} WHERE {keep}{dedupe}")
    return sql, params


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
            note += (f"; {total - kept} row(s) lacked {' or '.join(_KEYS[name])} (or repeated an "
                     "id) and stay only in the table set aside")
        notes.append(note + f" (drop {aside} once you have looked at it)")
    notes += _renumber_history(con)
    return notes


def _renumber_history(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Give the history's copy of a job id also queued a new id (the tables are sound now)."""
    twice = _twice(con)
    if not twice:
        return []
    # nextval must hand out ids no table holds: past the history's and the queue's
    _restart_sequence(con, _layout(con))
    new = sorted(int(row[0]) for row in con.execute(_RENUMBER_HISTORY).fetchall())
    return [f"{_twice_problem(twice)}: the history's rows renumbered "
            f"{', '.join(map(str, new[:10]))}{' ...' if len(new) > 10 else ''} (the queued "
            "jobs keep their ids, and the attempts listed under them)"]


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
