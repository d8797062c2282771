"""Types and bounds for everything a caller passes in, checked at the edge (Store, CLI).

Every public entry point runs its arguments through these checks before DuckDB, Tantivy
or hnswlib sees them: an out-of-range number there is not an error but a process abort
(``offset=10**9`` asks numpy for gigabytes, ``10**18`` panics inside Tantivy). The
bounds are named once here so that every layer (search request, pagination, CLI help)
uses the same figures.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InvalidFilterError, InvalidInputError, InvalidQueryError, InvalidVectorError
from .text import excerpt

# -- documented maxima -------------------------------------------------------------------

# Hits per page: a page is read by a person or put in a prompt; 1,000 is far past both.
MAX_LIMIT = 1_000
# Deepest page start: paging further than this is a crawl, use export instead.
MAX_OFFSET = 10_000
# Candidates each retriever returns. The retrieval depth is max(candidates, offset +
# limit), so it never exceeds MAX_DEPTH.
MAX_CANDIDATES = 10_000
MAX_DEPTH = max(MAX_CANDIDATES, MAX_OFFSET + MAX_LIMIT)
# hnswlib's search breadth: its cost grows linearly, 10,000 is exhaustive for our sizes.
MAX_EF = 10_000
MAX_RERANK_TOP = 1_000
MAX_RRF_K = 1_000_000
# Query text (characters); the request module refuses longer queries with a hint.
MAX_QUERY_CHARS = 20_000
# Ids, names and metadata keys become SQL values, folder names and Postgres columns.
MAX_ID_CHARS = 1_024
# A document's title: a line or two of text, not a paragraph.
MAX_TITLE_CHARS = MAX_ID_CHARS * 4
# A page of a list (documents, jobs), and how far it may skip: DuckDB's LIMIT/OFFSET are
# 64-bit, and a million rows is already more than a caller can use in one answer.
MAX_LISTED = 1_000_000
MAX_LIST_OFFSET = 1_000_000_000
MAX_NAME_CHARS = 100
MAX_KEY_CHARS = 256
# Tags of one document (or one ingest call, one upload, one update), each up to MAX_ID_CHARS:
# every tag is stored with the document and in each job's options, and an upload with
# 20,000 of them was taken.
MAX_TAGS = 100
# Fields one filter may name: the dozen built-in ones and metadata.<key>s. 50,000 keys cost
# the exported hybrid_search about 3 s of server CPU per call, for any API caller.
MAX_FILTER_FIELDS = 64
MAX_THREADS = 256
# Snapshots kept by retention (the create call's keep= and the stored setting alike).
MAX_KEEP = 100_000
# Widest embedding a store takes: the widest models give 4,096-8,192 dims, and DuckDB's ARRAY
# type stops at 100,000 (beyond it a new store failed inside the catalog).
MAX_DIM = 16_384

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
# fullmatch, never match + "$": "$" also matches before a trailing newline.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")


# -- scalars -------------------------------------------------------------------------------


def check_int(name: str, value: Any, *, minimum: int, maximum: int) -> int:
    """An int (not a bool) within ``minimum..maximum``; the error names the bound."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidInputError(f"{name} must be an integer, got {show_value(value)}")
    number = int(value)
    if not minimum <= number <= maximum:
        raise InvalidInputError(
            f"{name} must be within {minimum}..{maximum} (the documented maximum is "
            f"{maximum:,}), got {show_value(number)}"
        )
    return number


def check_float(name: str, value: Any, *, minimum: float, maximum: float) -> float:
    """A finite real number within ``minimum..maximum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidInputError(f"{name} must be a number, got {show_value(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int of ~309+ digits (JSON has no size limit on numbers)
        number = math.inf if value > 0 else -math.inf
    if not math.isfinite(number) or not minimum <= number <= maximum:
        raise InvalidInputError(f"{name} must be a finite number within {minimum}..{maximum}, "
                                f"got {show_value(value)}")
    return number


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name} must be True or False, got {show_value(value)}")
    return bool(value)


# -- text ----------------------------------------------------------------------------------


def check_text(name: str, value: Any, *, max_chars: int | None = None, empty: bool = True) -> str:
    """A str without NUL or lone surrogates: both are stored silently by DuckDB and then
    break Postgres (NUL) or every UTF-8 encoder (surrogates) far from where they came in."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInputError(f"{name} contains a NUL character (\\x00): remove it")
    match = _LONE_SURROGATE.search(value)
    if match is not None:
        raise InvalidInputError(
            f"{name} contains a lone surrogate {match.group()!r} at position {match.start()}: "
            "it is not valid Unicode text (decode the source as UTF-8)"
        )
    if not empty and not value.strip():
        raise InvalidInputError(f"{name} is empty")
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInputError(f"{name} is {len(value):,} characters; the maximum is {max_chars:,}")
    return value


def check_document_id(value: Any, name: str = "document id") -> str:
    return check_text(name, value, max_chars=MAX_ID_CHARS, empty=False)


# C0 and C1 control characters: a new id refuses them, the CLI prints them escaped.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_new_document_id(value: Any, name: str = "document id") -> str:
    """An id a document is about to get: besides ``check_document_id``, no control
    characters. A file named "a<newline>b.md" printed as two lines in every listing, a script
    reading them line by line saw two documents, and an escape sequence rewrites the
    terminal. Lookups keep the looser check, so an id stored before still opens."""
    check_document_id(value, name)
    match = CONTROL_CHARS.search(value)
    if match is not None:
        raise InvalidInputError(
            f"{name} contains a control character ({match.group()!r} at position "
            f"{match.start()}): rename the file, or give the record another id"
        )
    return str(value)


def check_name(what: str, value: Any) -> str:
    """A snapshot or preset name: it becomes a folder name or a key, so no separators, no
    whitespace (a trailing newline would make two names that print alike), no dot start."""
    check_text(f"{what} name", value)
    if not _NAME.fullmatch(value):
        raise InvalidInputError(
            f"{what} name {excerpt(value)} is not allowed: use letters, digits, '.', '_' or '-' "
            f"(up to {MAX_NAME_CHARS} characters, not starting with '.' or '-')"
        )
    return str(value)


def check_metadata(value: Any, name: str = "metadata") -> dict[str, Any]:
    """A JSON-like mapping: str keys, values of JSON types, no NUL / lone surrogates."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping of str keys, got {type(value).__name__}")
    for key, item in value.items():
        check_text(f"{name} key", key, max_chars=MAX_KEY_CHARS, empty=False)
        check_json_value(f"{name}[{key!r}]", item)
    return dict(value)


def as_str_tuple(value: Any, what: str) -> tuple[str, ...]:
    """Tags and the like: a list of strings, or one string of comma-separated ones (never
    its characters one by one). A control character is refused as in a new id: a tag
    "a<newline>b" printed as two lines in `list` and `show`, and a script reading them saw a
    tag that no document has."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise InvalidInputError(f"{what} must be a list of strings, got {type(value).__name__}")
    items = tuple(str(v) for v in value if str(v).strip())
    check_tag_count(what, len(items))
    for item in items:
        check_text(f"a value of {what}", item, max_chars=MAX_ID_CHARS)
        match = CONTROL_CHARS.search(item)
        if match is not None:
            raise InvalidInputError(
                f"a value of {what} ({show_value(item)}) contains a control character "
                f"({match.group()!r} at position {match.start()}): remove it")
    return items


def check_tag_count(what: str, count: int) -> None:
    """At most MAX_TAGS tags (other lists, such as entities, are not counted here)."""
    if what == "tags" and count > MAX_TAGS:
        raise InvalidInputError(
            f"{count:,} tags given; a document takes at most {MAX_TAGS} (each up to "
            f"{MAX_ID_CHARS:,} characters): keep the ones searches filter on")


def too_long_number(what: str) -> str:
    """The refusal of JSON text holding an integer longer than Python reads: json.loads
    raises a bare ValueError advising ``sys.set_int_max_str_digits()``, the server's to set."""
    return (f"{what}: an integer of over {sys.get_int_max_str_digits():,} digits, more than "
            "Python reads: send it as a string")


def too_many_digits(value: int) -> bool:
    """An int longer than Python writes as text (4,300 digits unless set otherwise), which
    every str(), repr() and JSON dump of it refuses with a bare ValueError."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return False
    bits = value.bit_length()
    if abs(bits - limit * math.log2(10)) > 2:  # clear of the bound: no power to compute
        return bits > limit * math.log2(10)
    return abs(value) >= 10**limit


def check_json_value(name: str, value: Any, depth: int = 0) -> None:
    if depth > 32:
        raise InvalidInputError(f"{name} is nested more than 32 levels deep")
    if isinstance(value, int) and not isinstance(value, bool) and too_many_digits(value):
        raise InvalidInputError(f"{name} is an integer of over {sys.get_int_max_str_digits():,} "
                                "digits, more than Python writes as text: store it as a string")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{name} is {value}: JSON has no NaN or infinity")
        return
    if isinstance(value, str):
        check_text(name, value)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_text(f"{name} key", key, max_chars=MAX_KEY_CHARS)
            check_json_value(f"{name}[{key!r}]", item, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_json_value(f"{name}[{i}]", item, depth + 1)
        return
    if hasattr(value, "isoformat"):  # dates and datetimes are stored as text
        return
    raise InvalidInputError(f"{name} has type {type(value).__name__}; use str, number, bool, "
                            "list or mapping")


def check_embedder(value: Any) -> None:
    """None (the store's own or the default), a built-in name, or an embedder object; any
    other kind failed deep inside an open with an AttributeError."""
    if value is None or isinstance(value, str):
        return
    if not (isinstance(getattr(value, "name", None), str)
            and isinstance(getattr(value, "dim", None), int)
            and callable(getattr(value, "embed", None))):
        raise InvalidInputError(
            f"embedder must be a built-in name (e.g. 'e5-small') or an object with name, dim "
            f"and embed(texts), got {type(value).__name__}")


def check_path(value: Any, name: str = "path") -> Path:
    """A file or folder path given as a str or Path, never empty. An int was taken by open()
    as a file descriptor (``read_qrels(1)`` read, then closed, the process's stdout) and
    ``""`` as the current folder."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise InvalidInputError(f"{name} must be a str or Path, got {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise InvalidInputError(f"{name} must be a str or Path, got a bytes path")
    if not text:
        raise InvalidInputError(f"{name} is empty: give a file or folder (. for the current one)")
    if "\x00" in text:  # os.stat's "embedded null byte", a bare ValueError
        raise InvalidInputError(f"{name} contains a NUL character (\\x00): no file has one in "
                                "its name; remove it")
    return Path(text)


def check_globs(name: str, value: Any) -> tuple[str, ...]:
    """Include/exclude glob patterns: a list of strings (one string would be read as its
    characters, each a pattern)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{name} must be a list of glob patterns, got {show_value(value)}")
    patterns = tuple(check_text(f"an {name} pattern", pattern, max_chars=MAX_ID_CHARS)
                     for pattern in value)
    for pattern in patterns:
        # A pattern is matched against the path under the folder given ("guides/a.md") and
        # the file name, neither of which starts with "/", "./" or "../": such a pattern
        # matched nothing, so --exclude /abs/docs/drafts ingested the drafts without a word.
        if not pattern:
            raise InvalidInputError(f"an empty {name} pattern matches no file: leave it out")
        if pattern.split("/", 1)[0] in ("", ".", "..") or pattern.startswith(os.sep):
            raise InvalidInputError(
                f"{name} pattern {pattern!r} can never match: patterns match the path under "
                "the folder given ('guides/*.md', 'drafts') or a file name ('*.md'), which "
                "never starts with '/', './' or '../'; write it relative to that folder")
    return patterns


def check_store_path(value: Any) -> Path:
    if isinstance(value, Path):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        raise InvalidInputError(f"a store path must be a str or Path, got {type(value).__name__}")
    check_text("store path", text, empty=False)
    if "\\" in text and not _windows():
        # DuckDB reads a backslash as a folder separator on every platform: the catalog
        # would land in another folder than the indexes (two half stores).
        raise InvalidInputError(
            f"store path {text!r} contains a backslash, which DuckDB reads as a folder "
            "separator: choose a path without one"
        )
    # Absolute from here on: a store keeps this path for every later file it opens, so a
    # relative one pointed elsewhere after a chdir (pytest's monkeypatch.chdir), and the next
    # write or search said the catalog was gone. Not resolved: a link stays in the path shown.
    try:
        return Path(text).absolute()
    except OSError as exc:  # the current folder was removed: os.getcwd() fails
        raise InvalidInputError(
            f"store path {text!r} is relative, and the current folder is gone (removed while "
            "this process stood in it): give an absolute path, or change to a folder that "
            "exists") from exc


def _windows() -> bool:
    import os

    return os.name == "nt"


# -- search --------------------------------------------------------------------------------

# Options whose type and range are checked here before the request is built (the request
# module then applies its own rules, e.g. the strategy names).
_INT_OPTIONS: dict[str, tuple[int, int]] = {
    "limit": (1, MAX_LIMIT),
    "offset": (0, MAX_OFFSET),
    "candidates": (1, MAX_CANDIDATES),
    "rerank_top": (1, MAX_RERANK_TOP),
    "rrf_k": (1, MAX_RRF_K),
    "per_source_cap": (1, MAX_DEPTH),
    "chunks_per_doc": (1, MAX_DEPTH),
    "ef": (1, MAX_EF),
    "ef_search": (1, MAX_EF),
}
_FLOAT_OPTIONS: dict[str, tuple[float, float]] = {
    "min_score": (-1e9, 1e9),
    "mmr_lambda": (0.0, 1.0),
    "answerability_threshold": (-1.0, 1.0),
}
_BOOL_OPTIONS = ("boosts", "mmr", "exact", "log", "rewrite", "cache", "lenient")
_STR_OPTIONS = ("strategy", "fusion", "preset", "ranked_at")
# None means something for these (no cap, no gate, the default levels...).
_NULLABLE_OPTIONS = frozenset({"min_score", "per_source_cap", "chunks_per_doc",
                               "answerability_threshold", "truth_levels", "filters", "preset",
                               "query_vector", "query_vectors", "reranker", "rewriter",
                               "ranked_at"})


def check_query(query: Any) -> None:
    """A query string, or a non-empty sequence of them (the query and its rewrites)."""
    items = [query] if isinstance(query, str) else query
    if isinstance(items, (bytes, Mapping)) or not isinstance(items, Sequence):
        raise InvalidQueryError(
            f"a query must be a string (or a list of strings), got {type(query).__name__}"
        )
    if not items:
        raise InvalidQueryError("no query given")
    for item in items:
        if not isinstance(item, str):
            raise InvalidQueryError(f"a query must be a string, got {type(item).__name__}")
        check_text("the query", item)


def check_search_options(options: Mapping[str, Any]) -> None:
    """Types and bounds of the search options a caller passed (None means the default)."""
    for name, value in options.items():
        if not isinstance(name, str):
            raise InvalidInputError(f"search option names are strings, got {show_value(name)}")
        if value is None and name in _NULLABLE_OPTIONS:
            continue
        if value is None:
            raise InvalidInputError(f"{name} cannot be None; leave it out for the default")
        if name in _INT_OPTIONS:
            low, high = _INT_OPTIONS[name]
            check_int(name, value, minimum=low, maximum=high)
        elif name in _FLOAT_OPTIONS:
            low_f, high_f = _FLOAT_OPTIONS[name]
            check_float(name, value, minimum=low_f, maximum=high_f)
        elif name in _BOOL_OPTIONS:
            check_bool(name, value)
        elif name in _STR_OPTIONS:
            check_text(name, value, max_chars=MAX_NAME_CHARS)
        elif name == "weights":
            _check_weights(value)
        elif name == "truth_levels":
            _check_truth_levels(value)
        elif name == "filters":
            check_filters(value)
        elif name in ("query_vector", "query_vectors"):
            rows = check_vectors(value, name).shape[0]
            if name == "query_vector" and rows != 1:
                # search() read any array as one row: an (8, 8) matrix searched as 64 numbers
                raise InvalidVectorError(
                    f"query_vector is one vector (a flat list of numbers), got {rows} rows; "
                    "search several with search_batch(queries, query_vectors=...)")
        elif name == "reranker" and not callable(value):
            raise InvalidInputError(f"reranker must be callable (query, passages) -> scores, "
                                    f"got {type(value).__name__}")


def _check_weights(value: Any) -> None:
    if isinstance(value, Mapping):
        items = list(value.values())
        for key in value:
            check_text("weights key", key, max_chars=MAX_KEY_CHARS)
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise InvalidInputError(f"weights must be (vector, bm25) or a mapping, got {show_value(value)}")
    if isinstance(value, Mapping):
        keys = set(map(str, value))
        if not keys or keys - {"vector", "bm25", "fulltext"} or {"bm25", "fulltext"} <= keys:
            raise InvalidInputError(
                f"weights as a mapping take the keys 'vector' and 'bm25' ('fulltext' is the "
                f"same method), a missing one weighing 0, e.g. {{'vector': 0.7, 'bm25': 0.3}}; "
                f"got {sorted(keys)}")
        items = [*items, 0.0] if len(items) == 1 else items
    if len(items) != 2:
        raise InvalidInputError(f"weights must be two numbers (vector, bm25), got {len(items)}")
    for item in items:
        check_float("a weight", item, minimum=0.0, maximum=1e6)


def _check_truth_levels(value: Any) -> None:
    if isinstance(value, str):
        check_text("truth_levels", value, max_chars=MAX_NAME_CHARS)
        return
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise InvalidInputError(f"truth_levels must be a list like ['L1', 'L2'], got {show_value(value)}")
    if len(value) > 16:
        raise InvalidInputError(f"truth_levels lists {len(value)} levels; there are 4 (L1..L4)")
    for item in value:
        if isinstance(item, str):
            check_text("a truth level", item, max_chars=16)
        elif isinstance(item, bool) or not isinstance(item, int):
            raise InvalidInputError(f"a truth level is 'L1'..'L4' or 1..4, got {show_value(item)}")


def check_filters(value: Any) -> None:
    """Filters: a mapping of field -> value / list / operator mapping, all JSON-like."""
    if not isinstance(value, Mapping):
        raise InvalidFilterError(f"filters must be a mapping of field -> value (a JSON object), "
                                 f"such as {{'domain': 'privacy'}}, got {show_value(value)}")
    if len(value) > MAX_FILTER_FIELDS:
        raise InvalidFilterError(f"filters name {len(value):,} fields; the maximum is "
                                 f"{MAX_FILTER_FIELDS}")
    for key, item in value.items():
        check_text("a filter field", key, max_chars=MAX_KEY_CHARS, empty=False)
        check_json_value(f"filters[{key!r}]", item)
        if isinstance(item, (list, tuple)) and len(item) > MAX_CANDIDATES:
            raise InvalidInputError(f"filters[{key!r}] lists {len(item):,} values; the maximum "
                                    f"is {MAX_CANDIDATES:,}")


def as_float32(value: Any) -> np.ndarray:
    """``value`` as a float32 array. A number beyond float32's range becomes inf, which the
    caller's finiteness check refuses, without numpy's overflow warning (an error where
    warnings are errors, a stray line in the CLI)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(value, dtype=np.float32)


# What numpy makes of values that are not real numbers, as a message names them: each of
# these converted to float32 without an error (text "1.5" parsed, a date as its day count, a
# complex number without its imaginary part, True as 1) and was searched as a vector.
_NOT_REAL = {"U": "text", "S": "bytes", "b": "booleans", "c": "complex numbers",
             "M": "dates", "m": "time spans", "V": "records", "O": "values that are not numbers"}


def real_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float32 array, if it holds real numbers (ints or floats) alone; an int
    beyond float32's range becomes inf, for the caller's finiteness check to refuse."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged lists
        raise InvalidVectorError(f"{name} must be a list of numbers, or rows of numbers of one "
                                 "length") from exc
    if raw.dtype.kind == "O" and all(_real(item) for item in raw.flat):
        # Python ints past int64 (JSON has no limit), None beside numbers...: one by one
        raw = np.array([_wide_float(item) for item in raw.flat]).reshape(raw.shape)
    if raw.dtype.kind not in "iuf":
        raise InvalidVectorError(f"{name} must be real numbers (floats or integers), got "
                                 f"{_NOT_REAL.get(raw.dtype.kind, str(raw.dtype))}")
    return as_float32(raw)


def _real(item: Any) -> bool:
    return isinstance(item, (int, float, np.integer, np.floating)) and not isinstance(
        item, (bool, np.bool_))


def _wide_float(item: Any) -> float:
    try:
        return float(item)
    except OverflowError:  # an int of ~309+ digits
        return math.inf if item > 0 else -math.inf


def check_vectors(value: Any, name: str = "vectors", dim: int | None = None) -> np.ndarray:
    """A finite float matrix (a single vector becomes one row), of ``dim`` columns if given."""
    array = real_array(value, name)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.shape[1] == 0:
        raise InvalidVectorError(f"{name} must be a vector or a matrix, got shape {array.shape}")
    if dim is not None and array.shape[1] != dim:
        raise InvalidVectorError(f"{name} have {array.shape[1]} dimensions; this store needs {dim}")
    if not np.isfinite(array).all():
        raise InvalidVectorError(f"{name} contain NaN or infinite values (or numbers beyond "
                                 f"float32's range, about 3.4e38)")
    return array


def show_value(value: Any) -> str:
    """``value`` as an error message shows it: its repr, cut to 60 characters."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to write (or a container holding one)
        if isinstance(value, int):
            return "an integer too long to write"
        return f"a {type(value).__name__} holding an integer too long to write"
    return text if len(text) <= 60 else text[:57] + "..."


# -- records -------------------------------------------------------------------------------

# Columns a record's metadata may set (see ingest.LIFTED_KEYS) that hold one short text.
TEXT_COLUMNS = ("domain", "source_type", "author", "language", "tenant_id", "source_id",
                 "document_type", "validated_by", "parent_document_id")


def check_record(document: Any) -> None:
    """A loaded document before it is chunked: id, text, title and metadata are clean text.

    Raises InvalidInputError naming the field; the ingest loop reports the record as
    skipped with this reason and goes on with the next one.
    """
    check_new_document_id(document.id)
    check_text("text", document.text)
    if document.title is not None:
        check_text("title", document.title, max_chars=MAX_TITLE_CHARS)
    for name in ("source_path", "source_url"):
        value = getattr(document, name, None)
        if value is not None:
            check_text(name, value)
    metadata = check_metadata(document.metadata)
    for column in TEXT_COLUMNS:
        value = metadata.get(column)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
            raise InvalidInputError(f"{column} must be a string, got {type(value).__name__} "
                                    f"{show_value(value)}")
    for column in ("tags", "entities"):
        value = metadata.get(column)
        if value is None or isinstance(value, str):
            continue
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise InvalidInputError(f"{column} must be a list of strings, got {show_value(value)}")
    check_pages(document.pages, len(document.text))


def check_pages(pages: Any, text_chars: int) -> None:
    """``(page number from 1, start offset)`` pairs in text order: a string here stopped the
    whole ingest with a bare unpacking ValueError, and pairs out of order or past the text
    gave chunks the wrong page numbers without a word."""
    if not isinstance(pages, (list, tuple)):
        raise InvalidInputError(f"pages must be a list of (page number, start offset) pairs, "
                                f"got {show_value(pages)}")
    last = 0
    for pair in pages:
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in pair)):
            raise InvalidInputError(f"pages must be (page number, start offset) pairs of "
                                    f"integers, got {show_value(pair)}")
        number, start = pair
        if number < 1 or not last <= start <= text_chars:
            raise InvalidInputError(
                f"pages pair {show_value(pair)}: page numbers start at 1 and start offsets must rise "
                f"through the text (0..{text_chars})")
        last = start


def check_ingest_options(options: Mapping[str, Any]) -> None:
    """Call-level ingest options (applied to every document): same rules as a record's."""
    for name, value in options.items():
        if value is None:
            continue
        if name == "metadata":
            check_metadata(value)
        elif name in TEXT_COLUMNS:
            check_text(name, value, max_chars=MAX_ID_CHARS)
        elif name in ("tags", "entities"):
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, (list, tuple, set, frozenset)):
                raise InvalidInputError(f"{name} must be a list of strings, got {show_value(value)}")
            check_tag_count(name, len(items))
            for item in items:
                check_text(f"a value of {name}", item, max_chars=MAX_ID_CHARS)
        elif name == "keywords_limit":
            check_int(name, value, minimum=0, maximum=MAX_LIMIT)


# -- index options -------------------------------------------------------------------------

MAX_M = 128
MAX_EXACT_THRESHOLD = 10_000_000
_INDEX_INTS: dict[str, dict[str, tuple[int, int]]] = {
    "vector": {"ef_search": (1, MAX_EF), "ef_construction": (1, MAX_EF), "M": (2, MAX_M),
               "exact_threshold": (0, MAX_EXACT_THRESHOLD), "num_threads": (1, MAX_THREADS)},
    "text": {"heap_size": (15_000_000, 4_000_000_000)},
}


def check_index_options(options: Any) -> None:
    """``index_options={'vector': {...}, 'text': {...}}``: known numbers within bounds."""
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise InvalidInputError(f"index_options must be a mapping like {{'vector': {{...}}}}, "
                                f"got {type(options).__name__}")
    for kind, values in options.items():
        if not isinstance(values, Mapping):
            raise InvalidInputError(f"index_options[{kind!r}] must be a mapping, "
                                    f"got {type(values).__name__}")
        for name, value in values.items():
            bounds = _INDEX_INTS.get(kind, {}).get(name)
            if bounds is not None:
                check_int(f"index_options[{kind!r}][{name!r}]", value,
                          minimum=bounds[0], maximum=bounds[1])
            elif name == "lenient":
                check_bool(f"index_options[{kind!r}]['lenient']", value)
