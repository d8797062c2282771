"""The loader contract and the byte-level checks every text format shares.

A loader is a function ``(path, doc_id, max_bytes) -> iterable of LoadedDocument |
SkippedInput``. Most formats yield one document; JSONL yields one per line, and a bad line
comes out as a SkippedInput so that the rest of the file still loads. A problem with the
whole file is raised as :class:`LoaderError` (the walker turns it into a SkippedInput).

Text is normalized exactly once, here (:func:`decode_text`) or on the text a format
extracted (:func:`enginelib.text.normalize_text`): the stored text is what citation
offsets refer to, so nothing may change it afterwards.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeAlias

from ..errors import LoaderError, SourceMissingError, SourceTooLargeError
from ..input_files import open_regular
from ..text import clip_words, normalize_text
from ..types import LoadedDocument, SkippedInput
from ..validation import MAX_TITLE_CHARS

# Big enough for a 50 MB text file or a long PDF; a caller raises it with max_bytes=.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

# Like git and grep: a NUL byte near the start means the file is not text.
SNIFF_BYTES = 8192
# Text files hold few C0 control characters; past this share of the sniffed sample the
# "text" is some binary format that happened to decode as UTF-8.
MAX_CONTROL_RATIO = 0.10
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
# UTF-32's marks begin like UTF-16's little-endian one: looked for first. Read as UTF-16,
# a UTF-32 file was refused as "binary file (mostly control characters)".
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")

LoadItem: TypeAlias = LoadedDocument | SkippedInput
Loader: TypeAlias = Callable[[Path, str, int], Iterable[LoadItem]]


def fail(path: str | Path, why: str) -> LoaderError:
    """A LoaderError whose message starts with the file, so a batch report names it."""
    return LoaderError(f"{path}: {why}", path=path)


def human_size(size: int) -> str:
    """"512 bytes", "1.5 MiB": sizes in messages a person reads."""
    if size < 1024:
        return f"{size} bytes"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


def too_big(path: str | Path, size: int, max_bytes: int, what: str = "file") -> LoaderError:
    return SourceTooLargeError(
        f"{path}: {what} is {human_size(size)} ({size} bytes), over the limit of "
        f"{human_size(max_bytes)} (max_bytes={max_bytes}); raise the limit to load it "
        f"(`enginelib ingest --max-file-mb {-(-size // (1024 * 1024))}`, or max_bytes= in Python)",
        path=path, size=size, limit=max_bytes,
    )


def missing(path: str | Path, why: str = "no such file") -> LoaderError:
    """The file named is not there (deleted or moved since it was named)."""
    return SourceMissingError(f"{path}: {why}", path=path)


def read_bytes(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, refusing files over ``max_bytes`` before reading them whole, and
    anything that is not a regular file (a pipe or device) before opening it."""
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise too_big(path, size, max_bytes)
            data = handle.read(max_bytes + 1)  # the file may have grown since fstat()
    except (FileNotFoundError, NotADirectoryError) as exc:  # gone since it was named
        raise missing(path) from exc
    except OSError as exc:
        raise fail(path, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise too_big(path, len(data), max_bytes)
    return data


def decode_text(data: bytes, path: str | Path, declared: str | None = None) -> str:
    """Strict text from bytes, rejecting binary data; not yet normalized.

    UTF-8 unless the bytes say otherwise: a UTF-16 byte-order mark (Windows Notepad's
    "Unicode") or a UTF-32 one, or ``declared``, the charset a format names inside the file (an HTML meta
    tag). Nothing is guessed: other bytes that are not UTF-8 are refused with a command
    that converts them.
    """
    head = data[:SNIFF_BYTES]
    marked = wide_encoding(head)
    if marked is not None:
        try:  # the mark names the encoding and its byte order: no guess
            text = data.decode(marked)
        except UnicodeDecodeError as exc:
            name = marked.upper()
            raise fail(path, f"not valid {name} at byte {exc.start} (it starts with a "
                             f"{name} byte-order mark): save it as UTF-8") from exc
        return _not_binary(text, path)
    if b"\x00" in head:
        raise fail(path, "binary file (NUL bytes): not text")
    codec = "utf-8" if declared is None else declared
    try:
        text = data.decode(codec).removeprefix("\ufeff")
    except UnicodeError as exc:  # a declared punycode or "undefined" fails without a byte
        said = "" if declared is None else " (the charset it declares)"
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        raise fail(path, f"not valid {codec.upper()}{said}{where}: "
                         f"{_convert_hint(data, path)}") from exc
    return _not_binary(text, path)


def wide_encoding(head: bytes) -> str | None:
    """"utf-32" or "utf-16" when ``head`` starts with that encoding's byte-order mark."""
    if head.startswith(_UTF32_BOMS):
        return "utf-32"
    return "utf-16" if head.startswith(_UTF16_BOMS) else None


def _convert_hint(data: bytes, path: str | Path) -> str:
    """How to make UTF-8 of it: with iconv, from Windows-1252 when its bytes decode so."""
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return "save it as UTF-8"
    return (f"it reads as Windows-1252 (Latin-1): convert it with `iconv -f WINDOWS-1252 "
            f"-t UTF-8 '{path}'` if that is what it is, or save it as UTF-8")


def _not_binary(text: str, path: str | Path) -> str:
    sample = text[:SNIFF_BYTES]
    if sample and len(_CONTROL.findall(sample)) / len(sample) > MAX_CONTROL_RATIO:
        raise fail(path, "binary file (mostly control characters): not text")
    return text


def found_title(title: str | None) -> str | None:
    """A title a loader found in the file (a Markdown heading, an HTML <title> or <h1>, a
    PDF's metadata), cut to the longest a title may be. Uncut, a heading written as one long
    line, or a page whose <h1> holds its whole text, got the document refused ("title is
    5,999 characters") for a title its author never chose; one given on purpose (front
    matter, a JSONL record's "title") is still held to the limit."""
    return None if title is None else clip_words(title, MAX_TITLE_CHARS)


def require_text(text: str, path: str | Path) -> str:
    """``text`` unless it is empty or only whitespace, which is nothing to index."""
    if not text.strip():
        raise fail(path, "empty: no text to index")
    return text


def load_text_bytes(data: bytes, path: str | Path) -> str:
    """Decode, normalize once and require content: the pipeline of every text format."""
    return require_text(normalize_text(decode_text(data, path)), path)
