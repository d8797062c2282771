"""enginelib.columns: Python rows into DuckDB as numpy columns and back, against a real DuckDB."""

from __future__ import annotations

from datetime import datetime

import duckdb
import numpy as np
import pytest

from enginelib import columns as cols

_TABLE = """
CREATE TABLE t (label BIGINT, page INTEGER, title VARCHAR, tags VARCHAR[], seen_at TIMESTAMP,
                flag BOOLEAN, embedding FLOAT[3])
"""


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(":memory:")
    connection.execute(_TABLE)
    return connection


def test_rows_round_trip_with_nulls_lists_and_vectors(con: duckdb.DuckDBPyConnection) -> None:
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0.5, 0.5, 0.25]], dtype=np.float32)
    at = datetime(2026, 11, 23, 12, 30, 0, 123456)
    data = {
        "label": cols.ints([3, 1, 2]),
        "page": cols.ints([None, 7, None], np.int32),
        "title": cols.objects(["a", None, "c"]),
        "tags": cols.objects([["x", "y"], [], None]),
        "seen_at": cols.objects([at, None, at]),
        "flag": cols.objects([True, False, None]),
        "embedding": cols.vectors(vectors),
    }
    with cols.registered(con, "_new", data):
        con.execute("INSERT INTO t BY NAME SELECT * FROM _new")
    assert con.execute("SELECT * FROM t ORDER BY label").fetchall() == [
        (1, 7, None, [], None, False, (0.0, 1.0, 0.0)),
        (2, None, "c", None, at, None, (0.5, 0.5, 0.25)),
        (3, None, "a", ["x", "y"], at, True, (1.0, 0.0, 0.0)),
    ]
    with pytest.raises(duckdb.CatalogException):  # registered only inside the block
        con.execute("SELECT * FROM _new")
    found = con.execute("SELECT label, page, title, embedding FROM t ORDER BY label").fetchnumpy()
    np.testing.assert_array_equal(cols.matrix(found["embedding"], 3), vectors[[1, 2, 0]])
    assert cols.python_values(found["page"]) == [7, None, None]
    assert cols.python_values(found["title"]) == [None, "c", "a"]
    assert all(type(v) is int for v in cols.python_values(found["label"]))


def test_empty_columns_insert_nothing(con: duckdb.DuckDBPyConnection) -> None:
    data = {"label": cols.ints([]), "tags": cols.objects([]),
            "embedding": cols.vectors(np.zeros((0, 3), dtype=np.float32))}
    with cols.registered(con, "_new", data):
        con.execute("INSERT INTO t (label, tags, embedding) SELECT label, tags, embedding FROM _new")
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(0,)]
    assert cols.matrix(np.array([], dtype=object), 3).shape == (0, 3)


def test_a_vector_of_the_wrong_length_is_refused(con: duckdb.DuckDBPyConnection) -> None:
    data = {"label": cols.ints([1]), "embedding": cols.vectors(np.ones((1, 4), np.float32))}
    with cols.registered(con, "_new", data), pytest.raises(duckdb.Error):
        con.execute("INSERT INTO t (label, embedding) SELECT label, embedding FROM _new")
