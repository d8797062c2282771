"""JSONL / NDJSON (optionally gzipped): one document per line, streamed.

A line is a JSON object with the text in ``text`` (or ``content``), the id in ``id`` (or
``_id``) and an optional ``title``, so BEIR corpus lines (``{"_id", "title", "text",
"metadata"}``) load as they are. Every other field, and the ``metadata`` object merged over
them, becomes the document's metadata (where ``truth_level``, ``domain``, ``tags``,
``created_at``... become columns at ingest). ``source_url`` or ``url`` sets the source URL.
``vector``/``embedding`` (one chunk) or ``vectors`` (one per chunk) carry the record's own
embedding, used instead of the store's model.
A line without an id gets ``<file id>#<line number>``.

A bad line (invalid JSON, not an object, no text) is yielded as a SkippedInput naming the
file and line, and the file goes on. ``max_bytes`` bounds each line (one document), not the
file: a corpus may be far bigger than any of its documents. The file is read line by line,
so memory stays flat whatever its size.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from ..errors import InvalidVectorError, LoaderError
from ..input_files import open_regular
from ..text import normalize_text
from ..types import LoadedDocument, SkippedInput
from ..validation import real_array
from .base import SNIFF_BYTES, LoadItem, fail, missing, too_big, wide_encoding

TEXT_FIELDS = ("text", "content")
ID_FIELDS = ("id", "_id")
# A record's own embedding (stores that take vectors the user brings).
VECTOR_FIELDS = ("vector", "embedding", "vectors")
# Bounded reads while skipping the rest of an oversized line.
_DRAIN_BYTES = 1 << 20


class BadRecord(Exception):
    """A line or record that cannot be a document; its message is the reason."""


_BadLine = BadRecord


@contextmanager
def _open(path: Path) -> Iterator[IO[bytes]]:
    """The file's lines as bytes, gunzipped for ``.gz``; a pipe or device is refused unread."""
    try:
        raw = open_regular(path)
    except (FileNotFoundError, NotADirectoryError) as exc:  # gone since it was named
        raise missing(path) from exc
    except OSError as exc:
        raise fail(path, f"cannot read: {exc.strerror or exc}") from exc
    with raw:
        if path.name.lower().endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                yield cast(IO[bytes], unzipped)
        else:
            yield raw


def _extension(path: Path) -> str:
    name = path.name.lower()
    return ".".join(["", *name.split(".")[-2:]]) if name.endswith(".gz") else path.suffix.lower()


def _pick(obj: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        if obj.get(name) is not None:
            return name, obj[name]
    return None, None


def parse_line(
    raw: bytes, *, path: Path, line_no: int, base_id: str, extension: str
) -> LoadedDocument:
    """One JSONL line as a document; raises _BadLine with the reason when it is not one."""
    try:
        line = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise _BadLine(f"not valid UTF-8 at byte {exc.start} of the line") from exc
    try:
        obj = json.loads(line.removeprefix("\ufeff") if line_no == 1 else line)
    except json.JSONDecodeError as exc:
        raise _BadLine(f"invalid JSON: {exc.msg} (column {exc.colno})") from exc
    except ValueError as exc:
        # an integer longer than Python converts: a bare ValueError stopped the whole ingest
        raise _BadLine(
            f"a number has more than {sys.get_int_max_str_digits():,} digits, more than "
            "Python reads: write it as a string") from exc
    except RecursionError as exc:
        raise _BadLine("invalid JSON: nested too deeply") from exc
    if not isinstance(obj, dict):
        raise _BadLine(f"expected a JSON object, got {type(obj).__name__}")
    document = parse_record(obj, base_id=base_id, line_no=line_no)
    return replace(document, source_path=str(path), file_extension=extension,
                   document_type="jsonl")


def parse_record(obj: dict[str, Any], *, base_id: str, line_no: int) -> LoadedDocument:
    """One record (a JSONL line's object, or a dict given in Python) as a document; raises
    BadRecord with the reason when it is not one."""
    text_key, text = _pick(obj, TEXT_FIELDS)
    if text_key is None:
        raise _BadLine("no 'text' (or 'content') field")
    if not isinstance(text, str):
        raise _BadLine(f"'{text_key}' must be a string, got {type(text).__name__}")
    text = normalize_text(text)
    if not text.strip():
        raise _BadLine(f"'{text_key}' is empty: no text to index")
    id_key, raw_id = _pick(obj, ID_FIELDS)
    if id_key is None:
        doc_id = f"{base_id}#{line_no}"
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) and str(raw_id).strip():
        doc_id = str(raw_id).strip()
    else:
        raise _BadLine(f"'{id_key}' must be a non-empty string or integer, got {raw_id!r}")
    title = obj.get("title")
    if title is not None and not isinstance(title, str):
        raise _BadLine(f"'title' must be a string, got {type(title).__name__}")
    nested = obj.get("metadata")
    if nested is not None and not isinstance(nested, dict):
        raise _BadLine(f"'metadata' must be an object, got {type(nested).__name__}")
    unused_nulls = {k for k in (*TEXT_FIELDS, *ID_FIELDS) if k in obj and obj[k] is None}
    taken = {text_key, id_key, "title", "metadata", *unused_nulls}
    metadata = {k: v for k, v in obj.items() if k not in taken}
    metadata.update(nested or {})
    vectors = own_vectors(metadata)
    url = metadata.pop("source_url", None) or metadata.get("url")
    return LoadedDocument(
        id=doc_id, text=text, title=(normalize_text(title).strip() or None) if title else None,
        source_url=url if isinstance(url, str) else None, metadata=metadata, vectors=vectors,
    )


def own_vectors(metadata: dict[str, Any]) -> np.ndarray | None:
    """A record's own embedding, taken out of its metadata: ``vector`` or ``embedding`` (one
    vector, for a text that makes one chunk) or ``vectors`` (one per chunk, in order)."""
    keys = [k for k in VECTOR_FIELDS if metadata.get(k) is not None]
    if not keys:
        return None
    if len(keys) > 1:
        raise _BadLine(f"give one of {', '.join(repr(k) for k in keys)}, not several")
    key = keys[0]
    raw = metadata.pop(key)
    if not isinstance(raw, (list, tuple, np.ndarray)):
        raise _BadLine(f"'{key}' must be a list of numbers, got {type(raw).__name__}")
    try:
        # numbers alone: numpy parsed the JSON string "0.5", took true as 1, and a JSON
        # integer past float's range was a bare OverflowError that stopped the whole ingest
        array = real_array(raw, f"'{key}'")
    except InvalidVectorError as exc:
        raise _BadLine(str(exc)) from exc
    if key != "vectors":
        array = array.reshape(1, -1) if array.ndim == 1 else array
        if array.shape[0] != 1:
            raise _BadLine(f"'{key}' must be one list of numbers; use 'vectors' for one per chunk")
    if array.ndim != 2 or array.shape[1] == 0 or array.shape[0] == 0:
        raise _BadLine(f"'{key}' must be a non-empty list of numbers (or of lists, for 'vectors')")
    if not np.isfinite(array).all():
        raise _BadLine(f"'{key}' contains NaN or infinite values (or numbers beyond float32's "
                       "range, about 3.4e38)")
    for other in VECTOR_FIELDS:
        metadata.pop(other, None)  # nulls of the other spellings
    return array


def _lines(handle: IO[bytes], path: Path, max_bytes: int) -> Iterator[tuple[int, bytes, int]]:
    """(line number, bytes, size) per line; bytes is empty for a line over ``max_bytes``,
    which is skipped without ever being held in memory whole."""
    line_no = 0
    while True:
        raw = handle.readline(max_bytes + 1)
        if not raw:
            return
        line_no += 1
        if line_no == 1:
            wide = _not_utf8(raw)
            if wide is not None:
                raise fail(path, wide)
            if b"\x00" in raw[:SNIFF_BYTES]:
                raise fail(path, "binary file (NUL bytes): not JSONL text")
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            size = len(raw)
            while raw and not raw.endswith(b"\n"):
                raw = handle.readline(_DRAIN_BYTES)
                size += len(raw)
            yield line_no, b"", size - raw.endswith(b"\n")
        else:
            yield line_no, raw, len(raw) - raw.endswith(b"\n")


def _not_utf8(first: bytes) -> str | None:
    """Why a file whose first line starts with a UTF-16 or UTF-32 byte-order mark cannot
    load (Windows PowerShell 5 writes UTF-16 with `>` and Out-File). Refused as a "binary
    file (NUL bytes)", such a corpus gave no hint of what to do; JSON Lines are UTF-8 (RFC
    8259, jsonlines.org): this says how to convert it."""
    marked = wide_encoding(first)
    if marked is None:
        return None
    name = marked.upper()
    return (f"{name} text (it starts with a {name} byte-order mark), and JSONL is read as "
            f"UTF-8: save it as UTF-8 (`iconv -f {name} -t UTF-8`, or PowerShell's "
            "`Out-File -Encoding utf8`)")


def load_jsonl(path: Path, doc_id: str, max_bytes: int) -> Iterator[LoadItem]:
    extension = _extension(path)
    line_no = 0
    produced = False
    with _open(path) as handle:
        try:
            for line_no, raw, size in _lines(handle, path, max_bytes):
                if size > max_bytes:
                    produced = True
                    error = too_big(f"{path} line {line_no}", size, max_bytes, "document")
                    yield SkippedInput(str(path), str(error))
                    continue
                if not raw.strip():
                    continue
                produced = True
                try:
                    yield parse_line(raw, path=path, line_no=line_no, base_id=doc_id,
                                     extension=extension)
                except _BadLine as exc:
                    yield SkippedInput(str(path), f"{path} line {line_no}: {exc}")
        except LoaderError:
            raise
        except (OSError, EOFError, zlib.error) as exc:  # corrupt or truncated gzip stream
            raise fail(path, f"cannot read after line {line_no}: {exc}") from exc
    if not produced:
        raise fail(path, "empty: no JSON lines")
