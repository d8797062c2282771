"""Search filters: validated, then compiled to a parameterized WHERE clause over documents.

Accepted shapes (field -> value):
    truth_level, domain, source_type, document_type, author, language, tenant_id
    (alias: namespace), source_id, document_id:   "x" or ["x", "y"]       (any of)
    tags:                                          ["a", "b"]  (any)  or {"any": [...]} / {"all": [...]}
    created_at, updated_at, validated_at:          {"gte"|"gt"|"lte"|"lt": "2024-01-01"}
                                                   (a date alone is its whole day: "lte" it
                                                   includes it, "gt" starts after it; a
                                                   bound with an offset, "...T10:00+02:00",
                                                   is that instant in UTC; one without is UTC)
    metadata.<key> (alias custom.<key>):           scalar or [scalars] (compared as text; a
                                                   number also meets a stored number of
                                                   the same value: 5 matches 5.0, 1e20 1e+20)
Field names and metadata keys never reach SQL as text: columns come from a fixed map and a
metadata key becomes a JSON path *parameter*.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from ..errors import InvalidFilterError
from ..text import excerpt
from ..types import DEFAULT_SEARCH_TRUTH_LEVELS, validate_truth_level
from ..utc import naive_utc

_SCALAR_FIELDS = {
    "truth_level": "d.truth_level",
    "domain": "d.domain",
    "source_type": "d.source_type",
    "document_type": "d.document_type",
    "author": "d.author",
    "language": "d.language",
    "tenant_id": "d.tenant_id",
    "namespace": "d.tenant_id",
    "source_id": "d.source_id",
    "document_id": "d.document_id",
}
_DATE_FIELDS = {"created_at": "d.created_at", "updated_at": "d.updated_at",
                "validated_at": "d.validated_at"}
DATE_FILTER_FIELDS: tuple[str, ...] = tuple(_DATE_FIELDS)
_DATE_OPS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<", "from": ">=", "to": "<="}
_METADATA_PREFIXES = ("metadata.", "custom.")
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,128}$")

FILTER_FIELDS: tuple[str, ...] = tuple(_SCALAR_FIELDS) + ("tags",) + tuple(_DATE_FIELDS) + (
    "metadata.<key>",
)


@dataclass(frozen=True)
class CompiledFilter:
    where: str  # "" when there is nothing to filter
    params: tuple[Any, ...]
    key: str  # canonical JSON of the filter, for caching allowed label sets


def compile_filters(filters: Mapping[str, Any] | None) -> CompiledFilter:
    if filters is None:
        return CompiledFilter("", (), "{}")
    if not isinstance(filters, Mapping):
        raise InvalidFilterError(
            f"filters must be a mapping of field -> value, got {type(filters).__name__}"
        )
    clauses: list[str] = []
    params: list[Any] = []
    for field, value in sorted(filters.items()):
        if not isinstance(field, str):
            raise InvalidFilterError(f"filter field names must be strings, got {excerpt(field)}")
        if field in _SCALAR_FIELDS:
            values = _string_list(field, value)
            if field == "truth_level":
                values = [validate_truth_level(v) for v in values]
            clauses.append(f"{_SCALAR_FIELDS[field]} IN (SELECT unnest(?::VARCHAR[]))")
            params.append(values)
        elif field == "tags":
            mode, tags = _tags(value)
            function = "list_has_all" if mode == "all" else "list_has_any"
            clauses.append(f"{function}(coalesce(d.tags, []::VARCHAR[]), ?::VARCHAR[])")
            params.append(tags)
        elif field in _DATE_FIELDS:
            for op, bound in _date_bounds(field, value):
                clauses.append(f"{_DATE_FIELDS[field]} {op} ?")
                params.append(bound)
        elif field.startswith(_METADATA_PREFIXES):
            key = field.split(".", 1)[1]
            if not _METADATA_KEY.match(key):
                raise InvalidFilterError(
                    f"metadata key {key!r} may only contain letters, digits, '_' and '-'",
                    field=field,
                )
            given = value if isinstance(value, list) else [value]
            values = [_scalar_text(field, v) for v in given]
            if not values:
                raise InvalidFilterError(f"filter {field!r} has an empty list", field=field)
            clause, clause_params = _metadata_clause(f'$."{key}"', values, given)
            clauses.append(clause)
            params.extend(clause_params)
        else:
            raise InvalidFilterError(
                f"unknown filter field {field!r}; filterable fields are: {', '.join(FILTER_FIELDS)}",
                field=field,
            )
    key = json.dumps(filters, sort_keys=True, default=str)
    return CompiledFilter(" AND ".join(clauses), tuple(params), key)


def truth_level_conflict(filters: Mapping[str, Any] | None, searched: tuple[str, ...]) -> str | None:
    """Why nothing can match, when the ``truth_level`` filter names only levels outside the
    truth levels searched (the two narrow each other): ``filters={"truth_level": "L3"}``
    under the default L1 + L2 came back as "no chunk matches the truth levels and filters",
    with no word of the default or of how to widen it. None when they meet (or the filter
    names no level); ``filters`` were compiled before, so they are valid."""
    given = (filters or {}).get("truth_level")
    if given is None:
        return None
    levels = [validate_truth_level(v) for v in (given if isinstance(given, (list, tuple)) else [given])]
    if set(levels) & set(searched):
        return None
    wanted = list(dict.fromkeys(levels))
    default = ", the default" if tuple(searched) == DEFAULT_SEARCH_TRUTH_LEVELS else ""
    return (f"the filter truth_level {', '.join(wanted)} lies outside the truth levels searched "
            f"({', '.join(searched)}{default}), so nothing can match: search those levels with "
            f"truth_levels={wanted!r} (--truth-level {','.join(wanted)} on the command line, "
            f"truth_levels={','.join(wanted)} in serve's query string)")


def _string_list(field: str, value: Any) -> list[str]:
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise InvalidFilterError(f"filter {field!r} has an empty list: nothing could match", field=field)
    for v in values:
        if not isinstance(v, str) or not v:
            raise InvalidFilterError(
                f"filter {field!r} expects a string or a list of strings, got {excerpt(v)}",
                field=field,
            )
    return list(values)


def _tags(value: Any) -> tuple[str, list[str]]:
    if isinstance(value, Mapping):
        if set(value) - {"any", "all"} or len(value) != 1:
            raise InvalidFilterError(
                "tags filter takes a list, or {'any': [...]} or {'all': [...]}", field="tags"
            )
        mode = next(iter(value))
        return mode, _string_list("tags", value[mode])
    return "any", _string_list("tags", value)


def _date_bounds(field: str, value: Any) -> list[tuple[str, datetime]]:
    if not isinstance(value, Mapping) or not value:
        raise InvalidFilterError(
            f"filter {field!r} expects a range like {{'gte': '2024-01-01', 'lt': '2025-01-01'}}",
            field=field,
        )
    bounds = []
    for op, raw in value.items():
        if op not in _DATE_OPS:
            raise InvalidFilterError(
                f"filter {field!r}: unknown operator {op!r}; use one of {sorted(_DATE_OPS)}",
                field=field,
            )
        bound = _as_datetime(field, raw)
        if _whole_day(raw) and op in THROUGH_THE_DAY:
            # "lte 2024-06-30" meant midnight, and dropped the documents of June 30 itself
            if bound.date() < date.max:
                bounds.append((THROUGH_THE_DAY[op], bound + timedelta(days=1)))
            else:
                # 9999-12-31, an open end written as a date, has no next day (that was an
                # OverflowError): its last instant, with the operator as given
                bounds.append((_DATE_OPS[op], datetime.combine(date.max, time.max)))
        else:
            bounds.append((_DATE_OPS[op], bound))
    return bounds


# A bound given as a date alone covers that whole day: "lte"/"to" it ends with the day,
# "gt" it starts after the day (as a calendar reads it); "gte", "from" and "lt" already
# fall on its first instant.
# The export's SQL functions read both (export/pg_functions.py): one rule on either side.
THROUGH_THE_DAY = {"lte": "<", "to": "<", "gt": ">="}
DATE_ONLY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"  # the same regex in Python and Postgres
_DATE_ONLY = re.compile(DATE_ONLY_PATTERN)
# The bounds written as text that both sides take: ISO 8601's extended form. Python also
# reads "20240630" and "2024-W26-7", which the server refused, and which the rule above did
# not see as a date alone: "lte 20240630" ended at midnight and dropped June 30's documents.
ISO_DATETIME_PATTERN = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
                        r"([T ][0-9]{2}(:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,6})?)?)?"
                        r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)?)?$")
_ISO_DATETIME = re.compile(ISO_DATETIME_PATTERN)


def _whole_day(raw: Any) -> bool:
    if isinstance(raw, datetime):
        return False
    return isinstance(raw, date) or (isinstance(raw, str) and bool(_DATE_ONLY.match(raw)))


def _as_datetime(field: str, raw: Any) -> datetime:
    """The bound as the catalog keeps times, naive UTC: a bound with an offset went to DuckDB
    as a TIMESTAMPTZ, and the stored times were read in the server's zone to meet it (on a
    server in New York, ``gte 10:00+02:00`` let through a document of 05:00 UTC)."""
    if isinstance(raw, datetime):
        return naive_utc(raw)
    if isinstance(raw, date):
        return datetime(raw.year, raw.month, raw.day)
    if isinstance(raw, str) and _ISO_DATETIME.fullmatch(raw):
        try:
            return naive_utc(datetime.fromisoformat(raw))
        except ValueError:
            pass
    raise InvalidFilterError(f"filter {field!r}: {excerpt(raw)} is not an ISO date or datetime "
                             "such as 2024-06-30 or 2024-06-30T08:00:00+02:00", field=field)


# A stored number and a number in the filter are compared as numbers, not only as text:
# str(1e20) is "1e+20" where DuckDB writes the stored 1e20 as "100000000000000000000.0", and
# str(5.0) is "5.0" where a stored 5 reads "5", so a filter with the very value a document
# was ingested with matched nothing. A number stored in digits alone (an integer, of any
# width) meets the integral values written as integers, exactly; one written with a fraction
# or an exponent meets the values a double holds exactly, as doubles (as doubles, 2**64 + 1
# would equal 2**64).
_METADATA_TEXT = "json_extract_string(d.custom, ?) IN (SELECT unnest(?::VARCHAR[]))"
_METADATA_INTEGER = ("(json_type(d.custom, ?) IN ('UBIGINT', 'BIGINT', 'DOUBLE') AND "
                     "json_extract_string(d.custom, ?) IN (SELECT unnest(?::VARCHAR[])))")
_METADATA_DOUBLE = ("(json_type(d.custom, ?) = 'DOUBLE' AND NOT regexp_full_match("
                    "json_extract_string(d.custom, ?), '-?[0-9]+') AND TRY_CAST("
                    "json_extract_string(d.custom, ?) AS DOUBLE) IN (SELECT unnest(?::DOUBLE[])))")


def _metadata_clause(path: str, texts: list[str], given: list[Any]) -> tuple[str, list[Any]]:
    """The WHERE part of one metadata.<key> filter: its values as text, and its numbers as
    numbers (see above)."""
    # NaN and infinity are refused before, by check_filters; an int is never tested with
    # math.isfinite, which raised a bare OverflowError for one past a double's range (10**400)
    numbers = [v for v in given if (isinstance(v, int) and not isinstance(v, bool))
               or (isinstance(v, float) and math.isfinite(v))]
    integers = sorted({int(v) for v in numbers if v == int(v)})
    doubles = sorted({d for d in map(_exact_double, numbers) if d is not None})
    clauses: list[str] = [_METADATA_TEXT]
    params: list[Any] = [path, texts]
    if integers:
        clauses.append(_METADATA_INTEGER)
        params += [path, path, [str(i) for i in integers]]
    if doubles:
        clauses.append(_METADATA_DOUBLE)
        params += [path, path, path, doubles]
    if len(clauses) == 1:
        return clauses[0], params
    return "(" + " OR ".join(clauses) + ")", params


def _exact_double(number: float) -> float | None:
    """``number`` as a double if a double holds it exactly (an int past 2**53 may not)."""
    if isinstance(number, float):
        return number
    try:
        as_double = float(number)
    except OverflowError:  # an int of 309+ digits
        return None
    return as_double if int(as_double) == number else None


def _scalar_text(field: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise InvalidFilterError(
        f"filter {field!r} expects a string, number or boolean, got {type(value).__name__}",
        field=field,
    )
