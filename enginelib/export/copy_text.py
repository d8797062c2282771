"""Encode rows for ``COPY ... FROM STDIN`` in text format (shared by the .sql file and the live load).

One encoder for both outputs, so a file loaded by psql and a direct load write the same
bytes. Text format rules: columns split by tab, rows by newline, NULL is ``\\N``, and
backslash, tab, newline and carriage return inside a value are backslash-escaped.
"""

from __future__ import annotations

import json
import re
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
# What jsonb refuses in JSON text that Python's json reads: a \u0000 escape (Postgres text
# has no NUL; DuckDB's JSON type already refuses a lone surrogate). Only a prefilter: an
# escaped backslash before "u0000" matches too, so the parsed strings decide.
_JSON_NUL = re.compile(r"\\u0000")


def _text(value: Any) -> str:
    text = str(value)
    if "\x00" in text:
        # Postgres text cannot hold NUL; say which value rather than fail mid-COPY.
        raise ExportError(f"value {text[:60]!r}... contains a NUL character, which Postgres text cannot store")
    return text


def _unstorable(text: str) -> str | None:
    """What of a JSON string Postgres cannot store, or None."""
    if "\x00" in text:
        return "a NUL character (\\u0000), which Postgres text and jsonb cannot store"
    return None


def _check_json_strings(value: Any, path: str) -> None:
    """Raise naming the first key or string inside ``value`` that jsonb would refuse."""
    if isinstance(value, dict):
        for key, item in value.items():
            if problem := _unstorable(key):
                where = f" in {path}" if path else ""
                raise ExportError(f"key {key[:60]!r}{where} contains {problem}")
            _check_json_strings(item, f"{path}[{key[:60]!r}]")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json_strings(item, f"{path}[{i}]")
    elif isinstance(value, str) and (problem := _unstorable(value)):
        raise ExportError(f"value at {path or 'the top level'} ({value[:60]!r}) contains {problem}")


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
        text = _text(value)
    else:
        text = _text(json.dumps(value, ensure_ascii=False, allow_nan=False))
    # A catalog written before ingest refused them may hold escapes jsonb rejects; the
    # server's error would name neither the row nor the key (and a .sql file fail at load).
    if _JSON_NUL.search(text):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None  # not JSON at all: the server's own error says so
        _check_json_strings(parsed, "")
    return text


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


def encoder(columns: Sequence[Column], what: str = "rows") -> Callable[[Sequence[Any]], str]:
    """A function turning one row (values in ``columns`` order) into one COPY text line.
    A value Postgres cannot store is an ExportError naming ``what`` (the table), the row's
    key and the column."""
    encoders = [_ENCODERS[kind] for _, _, kind in columns]
    names = [name for name, _, _ in columns]
    keys = [i for i, name in enumerate(names) if i == 0 or name == "document_id"]

    def encode(row: Sequence[Any]) -> str:
        if len(row) != len(encoders):
            raise ExportError(f"row has {len(row)} values for {len(encoders)} columns")
        out = []
        for i, (enc, value) in enumerate(zip(encoders, row, strict=True)):
            try:
                out.append(NULL if value is None else enc(value).translate(_ESCAPES))
            except ExportError as exc:
                row_key = ", ".join(f"{names[k]} {row[k]!r}" for k in keys)
                raise ExportError(
                    f"cannot export {what} row {row_key}: column {names[i]}: {exc}; nothing was "
                    "written. Remove it from the store (re-ingest the document without it)"
                ) from None
        return "\t".join(out) + "\n"

    return encode


def encode_rows(columns: Sequence[Column], rows: Iterable[Sequence[Any]],
                what: str = "rows") -> Iterator[str]:
    encode = encoder(columns, what)
    for row in rows:
        yield encode(row)
