"""What a catalog write DuckDB refused means to the user, as enginelib's own errors."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from .errors import InvalidInputError, StoreError
from .text import shell_word

_NOT_NULL = re.compile(r"NOT NULL constraint failed: (\S+)")
_DUPLICATE = re.compile(r'Duplicate key "(.*)" violates (primary key|unique) constraint')
_CHECK = re.compile(r'CHECK constraint failed on table "?([^" ]+)"? with expression (.+)')
NOTHING_COMMITTED = "nothing of this write was committed"
# DuckDB's words for a BEGIN inside an open transaction, and for the transaction it aborted
_ANOTHER_WRITE = ("within a transaction", "Current transaction is aborted")


def constraint_error(path: Path, exc: duckdb.ConstraintException) -> StoreError | InvalidInputError:
    """A write that broke a rule of the catalog's schema: a value it needs was missing
    (``None`` where a text belongs), a value out of its range, or a key it already holds.
    The transaction was rolled back, so the store is as it was before the call."""
    text = str(exc).splitlines()[0] if str(exc) else repr(exc)
    text = text.removeprefix("Constraint Error: ")
    if match := _NOT_NULL.search(text):
        return InvalidInputError(
            f"the catalog needs a value for {match.group(1)}, and this write gave none (None "
            f"or a missing field): {NOTHING_COMMITTED}; give it a value and retry")
    if match := _CHECK.search(text):
        return InvalidInputError(
            f"a value breaks the catalog's rule {match.group(2).rstrip('.')} on table "
            f"{match.group(1)}: {NOTHING_COMMITTED}; correct the value and retry")
    if match := _DUPLICATE.search(text):
        return StoreError(
            f"the catalog already holds the key {match.group(1)} that this write adds again: "
            f"{NOTHING_COMMITTED}. enginelib never hands out a key twice, so a row was added "
            f"to the catalog by hand or by another tool: run `enginelib check --store "
            f"{shell_word(path.parent)}` to see what it finds", path=path)
    return StoreError(f"the catalog refused the write ({text}): {NOTHING_COMMITTED}", path=path)


def refused_write(path: Path, exc: BaseException) -> StoreError | InvalidInputError | None:
    """The enginelib error for what DuckDB raised inside a write, or None to let it through
    (a full disk, an I/O error: the edge of the operation maps those)."""
    if isinstance(exc, duckdb.ConstraintException):
        return constraint_error(path, exc)
    if isinstance(exc, duckdb.TransactionException) and any(
            sign in str(exc) for sign in _ANOTHER_WRITE):
        return transaction_error(path, exc)  # not "Failed to commit: No space left..."
    if isinstance(exc, duckdb.InvalidInputException) and "Conversion Failure" in str(exc):
        # a text DuckDB cannot store (a lone surrogate, "\ud800", is no UTF-8)
        return InvalidInputError(
            f"a value cannot be stored in the catalog ({str(exc).splitlines()[0]}): "
            f"{NOTHING_COMMITTED}; correct the value and retry")
    return None


def transaction_error(path: Path, exc: duckdb.TransactionException) -> StoreError:
    """A write begun while another is open on the same connection. DuckDB then aborts the
    open one too: its commit would have ended without writing anything, and said nothing."""
    return StoreError(
        f"a write to the catalog {path} began while another was open on it (a write started "
        "inside another, or the catalog used directly from two threads at once: the calls of "
        "its Store, its job queue and a Worker made without a lock take turns, a catalog used "
        f"behind them does not): {NOTHING_COMMITTED}, nor of the open one. Use the catalog "
        "from one thread at a time, or through its Store and job queue, then retry "
        f"({str(exc).splitlines()[0] if str(exc) else exc!r})", path=path)
