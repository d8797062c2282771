"""Rows handed to DuckDB as numpy columns, and FLOAT[dim] columns read back, without pyarrow.

DuckDB scans a dict of 1-D numpy arrays like a table (``con.register(name, {...})``). Object
columns are typed by DuckDB from their values (str -> VARCHAR, list -> LIST, datetime ->
TIMESTAMP, bool -> BOOLEAN; None is NULL; an all-None column is NULL-typed and casts to the
target column on INSERT). Integers that may be None go through a masked array, so a column
of page numbers keeps its type. Why not pyarrow: it is 170 MB of the base install for what
these few helpers do (see benchmarks/RESULTS.md, "Base install").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import duckdb
import numpy as np


def objects(values: Iterable[Any]) -> np.ndarray:
    """A 1-D object column (strings, lists, timestamps, bools, None)."""
    items = list(values)
    # fromiter keeps each list as one element; np.array would make a 2-D array of lists.
    return np.fromiter(items, dtype=object, count=len(items))


def ints(values: Iterable[int | None], dtype: type[np.integer[Any]] = np.int64) -> np.ndarray:
    """An integer column; None becomes NULL through the mask of a masked array."""
    items = list(values)
    mask = np.fromiter((v is None for v in items), dtype=bool, count=len(items))
    data = np.fromiter((0 if v is None else v for v in items), dtype=dtype, count=len(items))
    return np.ma.masked_array(data, mask=mask) if mask.any() else data


def vectors(matrix: np.ndarray) -> np.ndarray:
    """The rows of a float32 matrix as one column DuckDB reads as FLOAT[] (an INSERT into a
    FLOAT[dim] column casts it, and rejects a row of the wrong length)."""
    rows = np.ascontiguousarray(matrix, dtype=np.float32)
    out = np.empty(len(rows), dtype=object)
    for i, row in enumerate(rows):
        out[i] = row
    return out


def matrix(column: np.ndarray, dim: int) -> np.ndarray:
    """A FLOAT[dim] column from ``fetchnumpy`` (an object array of rows) as an (n, dim) matrix."""
    if len(column) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.asarray(np.stack(list(column)), dtype=np.float32).reshape(len(column), dim)


def python_values(column: np.ndarray) -> list[Any]:
    """A column from ``fetchnumpy`` as Python values (int, str, None...), as JSON wants them."""
    if isinstance(column, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(column)
        return [None if masked else value
                for value, masked in zip(column.data.tolist(), mask.tolist(), strict=True)]
    return list(column.tolist())


@contextmanager
def registered(
    con: duckdb.DuckDBPyConnection, name: str, columns: Mapping[str, np.ndarray]
) -> Iterator[None]:
    """``columns`` visible to SQL on ``con`` as the table ``name`` for the ``with`` block."""
    con.register(name, dict(columns))
    try:
        yield
    except BaseException:
        # A statement that failed aborted the open transaction, and DuckDB then refuses the
        # unregister too ("Current transaction is aborted"): raised from here, that hid the
        # real error (a duplicate key read as "a write began while another was open"). The
        # view was made inside the transaction, so its rollback drops it.
        try:
            con.unregister(name)
        except duckdb.TransactionException:
            pass
        raise
    con.unregister(name)
