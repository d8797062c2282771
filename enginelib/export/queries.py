"""Query samples and filters for the parity check (`enginelib export verify`)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..catalog_export import sample_contents
from ..errors import InvalidFilterError, InvalidInputError
from ..input_files import open_regular

if TYPE_CHECKING:
    from ..core.store_core import StoreCore as Store


def read_queries(path: Path, limit: int) -> list[str]:
    """Queries from a text file (one per line) or a BEIR queries.jsonl ("text" field)."""
    queries: list[str] = []
    try:
        handle = io.TextIOWrapper(open_regular(path), encoding="utf-8")
    except OSError as exc:  # a pipe or device is refused unopened: it could wait forever
        raise InvalidInputError(f"cannot read the queries file {path}: "
                                f"{exc.strerror or exc}") from exc
    with handle:
        for number, line in _lines(handle, path):
            line = line.strip()
            if not line:
                continue
            if path.suffix == ".jsonl":
                try:
                    text = json.loads(line)["text"]
                except (ValueError, KeyError, TypeError, RecursionError) as exc:
                    raise InvalidInputError(f"{path}:{number}: expected a JSON object with a \"text\" field") from exc
                queries.append(str(text))
            else:
                queries.append(line)
            if len(queries) >= limit:
                break
    if not queries:
        raise InvalidInputError(f"{path} holds no queries")
    return queries


def _lines(handle: TextIO, path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file; other bytes are an InvalidInputError, not
    a UnicodeDecodeError out of the command."""
    try:
        yield from enumerate(handle, 1)
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not UTF-8 text ({exc.reason}): save the queries "
                                "file as UTF-8") from exc


def sample_queries(store: Store, limit: int) -> list[str]:
    """The first words of chunks spread over the store: queries that have answers."""
    queries = [" ".join(text.split()[:12]) for text in sample_contents(store._catalog, limit)]
    if not queries:
        raise InvalidInputError("the store has no chunks to sample queries from; pass --queries")
    return queries


def parse_filter(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply ([[[[...)
        raise InvalidFilterError(f"--filter {text[:80]!r} is not JSON that Python reads: "
                                 f"{exc}") from exc
    if not isinstance(value, dict):
        raise InvalidFilterError(f"--filter {text!r} must be a JSON object")
    return value
