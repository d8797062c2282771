"""Encode rows for ``COPY ... FROM STDIN`` in text format (shared by the .sql file and the live load).

One encoder for both outputs, so a file loaded by psql and a direct load write the same
bytes. Text format rules: columns split by tab, rows by newline, NULL is ``\\N``, and
backslash, tab, newline and carriage return inside a value are backslash-escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np

from ..errors import ExportError
from .pg_schema import Column

NULL = "\\N"
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
# Inside an array literal, element quotes and backslashes are escaped first.
_ARRAY_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"'})
# 9 significant digits round-trip every float32 exactly (FLT_DECIMAL_DIG).
_FLOAT32 = "%.9g"


def _text(value: Any) -> str:
    text = str(value)
    if "\x00" in text:
        # Postgres text cannot hold NUL; say which value rather than fail mid-COPY.
        raise ExportError(f"value {text[:60]!r}... contains a NUL character, which Postgres text cannot store")
    return text


def _timestamp(value: Any) -> str:
    if isinstance(value, datetime):
        # The catalog stores naive UTC; say so, so the session time zone cannot shift it.
        return value.isoformat(sep=" ") + ("" if value.tzinfo else "+00")
    if isinstance(value, date):
        return value.isoformat()
    return _text(value)


def _array(value: Any) -> str:
    items = []
    for item in value:
        if item is None:
            items.append("NULL")
        else:
            items.append('"' + _text(item).translate(_ARRAY_ESCAPES) + '"')
    return "{" + ",".join(items) + "}"


def _json(value: Any) -> str:
    if isinstance(value, str):  # already JSON text, as the catalog stores it
        return _text(value)
    return _text(json.dumps(value, ensure_ascii=False, allow_nan=False))


def _vector(value: Any) -> str:
    array = np.asarray(value, dtype=np.float32).reshape(-1)
    if not np.isfinite(array).all():
        raise ExportError("an embedding contains NaN or infinite values; pgvector rejects them")
    return "[" + ",".join([_FLOAT32] * len(array)) % tuple(array.tolist()) + "]"


_ENCODERS: dict[str, Callable[[Any], str]] = {
    "text": _text,
    "int": lambda v: str(int(v)),
    "float": lambda v: repr(float(v)),
    "bool": lambda v: "t" if v else "f",
    "ts": _timestamp,
    "text[]": _array,
    "jsonb": _json,
    "vector": _vector,
}


def encoder(columns: Sequence[Column]) -> Callable[[Sequence[Any]], str]:
    """A function turning one row (values in ``columns`` order) into one COPY text line."""
    encoders = [_ENCODERS[kind] for _, _, kind in columns]

    def encode(row: Sequence[Any]) -> str:
        if len(row) != len(encoders):
            raise ExportError(f"row has {len(row)} values for {len(encoders)} columns")
        return "\t".join(
            NULL if value is None else enc(value).translate(_ESCAPES)
            for enc, value in zip(encoders, row, strict=True)
        ) + "\n"

    return encode


def encode_rows(columns: Sequence[Column], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    encode = encoder(columns)
    for row in rows:
        yield encode(row)
