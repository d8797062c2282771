"""The edge of the Python API: each public Store method checks its arguments, maps
dependency errors, and (read-only stores) lets go of the catalog file when it returns.

Installed once on ``StoreCore`` and once on the ``Store`` facade (see the end of
core/store_core.py and store.py) so the methods themselves stay about
what they do. Why release after every read-only call: DuckDB lets one process hold a file
for writing or several hold it for reading, never both; a reader whose last call was
``get_document`` used to keep the file open and make the writer wait for its lock timeout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from .edge import guard
from .errors import InvalidInputError, InvalidQueryError, NestedWriteError
from .validation import (
    MAX_KEEP,
    MAX_LIMIT,
    MAX_NAME_CHARS,
    check_bool,
    check_document_id,
    check_embedder,
    check_float,
    check_globs,
    check_index_options,
    check_int,
    check_metadata,
    check_name,
    check_query,
    check_search_options,
    check_store_path,
    check_text,
)

MAX_BATCH_SIZE = 100_000
MAX_LOGGED_ROWS = 100_000
MAX_FILE_BYTES = 1 << 40


def _search(query: Any, **options: Any) -> None:
    check_query(query)
    check_search_options(options)


def _search_batch(queries: Any, **options: Any) -> None:
    if isinstance(queries, str) or not isinstance(queries, Sequence):
        raise InvalidQueryError(
            f"search_batch takes a list of query strings, got {type(queries).__name__}"
        )
    if len(queries) > MAX_LIMIT * 10:
        raise InvalidInputError(f"search_batch got {len(queries):,} queries; the maximum per "
                                f"call is {MAX_LIMIT * 10:,}")
    for query in queries:
        check_query(query)
    check_search_options(options)


def _document(document_id: Any) -> None:
    check_document_id(document_id)


def _update_document(document_id: Any, *, truth_level: Any = None, tags: Any = None,
                     metadata: Any = None) -> None:
    check_document_id(document_id)


def _list_documents(**filters: Any) -> None:
    """The names alone (the values are checked where they are used): a misspelt filter
    (truth_level=) is named with the closest one, in the words serve's API uses."""
    from .documents import LIST_FILTERS
    from .search.request import unknown_options_error

    unknown = set(filters) - set(LIST_FILTERS)
    if unknown:
        raise unknown_options_error(unknown, LIST_FILTERS, "document list parameter")


def _present_documents(document_ids: Any) -> None:
    if isinstance(document_ids, (str, bytes)):  # its characters would be the ids
        raise InvalidInputError("present_documents() takes a list of document ids, not one "
                                "string")
    if not isinstance(document_ids, Iterable):
        raise InvalidInputError(f"present_documents() takes a list of document ids, got "
                                f"{type(document_ids).__name__}")


def _version_text(document_id: Any, version: Any) -> None:
    check_document_id(document_id)
    check_text("version", version, max_chars=MAX_NAME_CHARS, empty=False)


def _source(source_id: Any, **fields: Any) -> None:
    from .sources import check_source_fields

    check_document_id(source_id, "source id")
    check_metadata(fields, "source fields")
    check_source_fields(fields)


def _preset(name: Any, **values: Any) -> None:
    check_text("preset name", name, max_chars=MAX_NAME_CHARS, empty=False)
    check_metadata(values, "preset values")


def _preset_name(name: Any) -> None:
    check_text("preset name", name, max_chars=MAX_NAME_CHARS, empty=False)


def _logged(*, limit: Any = 100, zero_results: Any = False) -> None:
    check_int("limit", limit, minimum=1, maximum=MAX_LOGGED_ROWS)
    check_bool("zero_results", zero_results)


def _create_snapshot(name: Any = None, *, keep: Any = None, pin: Any = False) -> None:
    if name is not None:
        check_name("snapshot", name)
    if keep is not None:
        check_int("keep", keep, minimum=0, maximum=MAX_KEEP)
    check_bool("pin", pin)


def _snapshot(name: Any) -> None:
    check_name("snapshot", name)


def _pin(name: Any, pinned: Any = True) -> None:
    check_name("snapshot", name)
    check_bool("pinned", pinned)


def _diff(a: Any, b: Any = "live") -> None:
    check_text("snapshot name", a, max_chars=MAX_NAME_CHARS, empty=False)
    check_text("snapshot name", b, max_chars=MAX_NAME_CHARS, empty=False)


def _ingest_documents(documents: Any, *, progress: Any = False, batch_size: Any = 256,
                      **options: Any) -> None:
    if isinstance(documents, (str, bytes)):
        raise InvalidInputError("ingest_documents takes LoadedDocument objects; use "
                                "ingest_path for files")
    check_bool("progress", progress)
    check_int("batch_size", batch_size, minimum=1, maximum=MAX_BATCH_SIZE)


def _ingest_path(*paths: Any, include: Any = (), exclude: Any = (), max_bytes: Any = None,
                 progress: Any = False, prune: Any = False, **options: Any) -> None:
    _paths_and_globs("ingest_path", paths, include, exclude)
    if max_bytes is not None:
        check_int("max_bytes", max_bytes, minimum=1, maximum=MAX_FILE_BYTES)
    check_bool("progress", progress)
    check_bool("prune", prune)


def _enqueue_paths(*paths: Any, include: Any = (), exclude: Any = (), max_attempts: Any = None,
                   **options: Any) -> None:
    # unchecked, "" queued every file under the current folder (Path("") is "."), and None,
    # 3 or a list were bare TypeErrors from pathlib
    _paths_and_globs("enqueue_paths", paths, include, exclude)


def _paths_and_globs(method: str, paths: tuple[Any, ...], include: Any, exclude: Any) -> None:
    if not paths:
        raise InvalidInputError(f"{method} needs at least one file or folder")
    for path in paths:
        _path("path", path)
    check_globs("include", include)
    check_globs("exclude", exclude)


def _path(name: str, value: Any) -> None:
    if not isinstance(value, (str, Path)):
        raise InvalidInputError(f"{name} must be a str or Path, got {type(value).__name__}")
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # a name's bytes that are not UTF-8, kept as lone surrogates: check_text's advice to
        # "decode the source as UTF-8" is for text, and a file's name is fixed by renaming it
        # (what a walk's skip of such a file already says)
        raise InvalidInputError(
            f"{name} {text!r} is not valid UTF-8 (a name written in another encoding, such "
            "as Latin-1): rename it") from None
    check_text(name, text, empty=False)


def _export(dsn: Any, **options: Any) -> None:
    check_text("dsn", dsn, empty=False)


def _to_sql(path: Any, **options: Any) -> None:
    _path("path", path)
    target = Path(path)
    try:
        other = target.exists() and not target.is_file()
    except OSError as exc:  # a name too long, a loop of links: before any row is read
        raise InvalidInputError(f"cannot write the .sql file at the path given ({len(str(target))} "
                                f"characters): {exc.strerror}") from exc
    # The file is written beside the target and renamed over it: over a device (/dev/full)
    # or a folder that would replace the thing itself, so refuse anything but a file.
    if other:
        raise InvalidInputError(
            f"{target} exists and is not a regular file (a device, folder or pipe): "
            "export to a .sql file path"
        )


# A lock wait past a day is a hung process, not a wait.
MAX_LOCK_TIMEOUT_S = 86_400.0


def check_model_options(embedder: Any = None, chunking: Any = None) -> None:
    """The embedder (an object with name, dim and embed, or a built-in name) and chunking
    (a ChunkingConfig) a store is opened or reindexed with; a wrong kind failed deep inside
    the open with an AttributeError."""
    from .chunker import ChunkingConfig

    check_embedder(embedder)
    if chunking is not None and not isinstance(chunking, ChunkingConfig):
        raise InvalidInputError(
            f"chunking must be a ChunkingConfig, got {type(chunking).__name__}")


def _open_options(embedder: Any = None, chunking: Any = None, create: Any = True,
                  read_only: Any = False, lock_timeout: Any = 0.0, **_others: Any) -> None:
    check_model_options(embedder, chunking)
    check_bool("create", create)
    check_bool("read_only", read_only)
    check_float("lock_timeout", lock_timeout, minimum=0.0, maximum=MAX_LOCK_TIMEOUT_S)


def _reindex(embedder: Any = None, chunking: Any = None, progress: Any = False) -> None:
    check_model_options(embedder, chunking)
    check_bool("progress", progress)


# Public method -> its argument check (None: no arguments to check).
CHECKS: dict[str, Callable[..., None] | None] = {
    "search": _search,
    "search_batch": _search_batch,
    "get_document": _document,
    "present_documents": _present_documents,
    "show": _document,
    "history": _document,
    "version_text": _version_text,
    "delete_document": _document,
    "update_document": _update_document,
    "list_documents": _list_documents,
    "add_source": _source,
    "save_search_preset": _preset,
    "set_default_search_preset": _preset_name,
    "search_presets": None,
    "default_search_preset": None,
    "logged_queries": _logged,
    "stats": None,
    "create_snapshot": _create_snapshot,
    "list_snapshots": None,
    "restore_snapshot": _snapshot,
    "delete_snapshot": _snapshot,
    "pin_snapshot": _pin,
    "diff": _diff,
    "check": None,
    "repair": None,
    "reindex": _reindex,
    "rebuild_indexes": None,
    "ingest_documents": _ingest_documents,
    "ingest_path": _ingest_path,
    "enqueue_paths": _enqueue_paths,
    "export_postgres": _export,
    "to_sql": _to_sql,
    "persist": None,
    "refresh": None,
    "view": None,
    "close": None,
}


# The methods that change the documents, the indexes or the model, or end the store: each
# waits for the job a worker is running (which lets other calls in while it embeds) and
# keeps the next one out till it returns. A delete that got in while a job embedded its
# document's new text was undone by the job's write, the job marked "not ingested"; a close
# left the job RUNNING for the next open to take back. A method that is not one never calls
# one (it would take the two locks the other way round): ``_require_lock_order`` refuses it.
WRITERS = frozenset({
    "ingest_documents", "ingest_path", "delete_document", "update_document", "restore_snapshot",
    "reindex", "repair", "rebuild_indexes", "close",
})


# The outermost call on each store this thread is inside, to name it when a writer is refused
# there. Per thread: while a worker's job embeds, a search on another thread is inside the
# store too (``_edge_depth`` counts both).
_CALLS: ContextVar[tuple[tuple[Any, str], ...]] = ContextVar("enginelib_store_calls", default=())


def _require_lock_order(store: Any, name: str, write_lock: Any) -> None:
    """Refuse writer ``name`` to a thread that holds ``store``'s call lock but not its write
    lock. It would ask for the write lock holding the call lock, where every other taker
    (a writer, a worker) goes write lock first: against a worker that holds the write lock
    over a job and asks for the call lock once its embedding is done, each waited for the
    other for good. Raised at once, whether a worker runs or not."""
    calls = getattr(store, "_edge_lock", None)
    # RLock's own test of its holder (Condition uses it): no other says "this thread".
    if calls is None or not calls._is_owned() or write_lock.held_by_me():
        return
    outer = next((call for of, call in _CALLS.get() if of is store), None)
    if outer is not None:
        raise NestedWriteError(
            f"{name}() was called inside {outer}() on the same store (from a hook it runs, "
            "such as a rewriter or a reranker): a writer waits there for a worker's job while "
            f"holding the lock that job waits for, a deadlock. Call {name}() after {outer}() "
            "has returned (if none of your code ran inside it, report this enginelib bug)")
    raise NestedWriteError(
        f"{name}() was called while this thread holds the store's call lock "
        "(store.catalog.calls, held by each JobQueue call too) and not its write lock "
        "(store.catalog.writes): against a worker's job that is a deadlock. Call it once the "
        "call lock is let go, or take the write lock first")


def _wrap(name: str, method: Callable[..., Any], check: Callable[..., None] | None) -> Callable[..., Any]:
    operation = name.replace("_", " ")
    writes = name in WRITERS

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if check is not None:
            try:
                check(*args, **kwargs)
            except TypeError as exc:  # wrong arguments for the signature
                raise InvalidInputError(f"{name}(): {exc}") from exc
        # One call at a time per store object: its DuckDB connection refuses a second
        # concurrent call ("connection is busy") and the view and indexes are shared state,
        # so a web app's thread pool failed a quarter of its searches. Re-entrant: a method,
        # or a hook it runs, may call another (a writer only from a writer: see above).
        write_lock = getattr(self, "_write_lock", None) if writes else None
        if write_lock is not None:
            _require_lock_order(self, name, write_lock)
        with write_lock or nullcontext(), getattr(self, "_edge_lock", None) or nullcontext():
            depth = getattr(self, "_edge_depth", 0)
            self._edge_depth = depth + 1
            outer = any(of is self for of, _call in _CALLS.get())
            token = None if outer else _CALLS.set((*_CALLS.get(), (self, name)))
            try:
                with guard(operation, getattr(self, "path", None)):
                    return method(self, *args, **kwargs)
            finally:
                if token is not None:
                    _CALLS.reset(token)
                self._edge_depth = depth
                if depth == 0 and self.read_only and name != "close":
                    # The outermost call of a reader lets go of the catalog (see module doc).
                    self._catalog.release()

    return wrapper


def _wrap_open(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def open_store(cls: Any, path: Any, **kwargs: Any) -> Any:
        root = check_store_path(path)
        check_index_options(kwargs.get("index_options"))
        _open_options(**kwargs)
        with guard("open store", root):
            return method(cls, root, **kwargs)

    return open_store


def _wrap_maintenance_open(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def open_store(cls: Any, path: Any, *, lock_timeout: Any = 0.0) -> Any:
        root = check_store_path(path)
        check_float("lock_timeout", lock_timeout, minimum=0.0, maximum=MAX_LOCK_TIMEOUT_S)
        with guard("open store", root):
            return method(cls, root, lock_timeout=lock_timeout)

    return open_store


def install(store_class: type) -> None:
    """Wrap the public methods ``store_class`` itself defines (idempotent per class): the
    store core's and the facade's are each installed once, subclasses inherit them."""
    if store_class.__dict__.get("_edge_installed", False):
        return
    for name, check in CHECKS.items():
        method = store_class.__dict__.get(name)
        if method is not None:
            setattr(store_class, name, _wrap(name, method, check))
    for name, wrap in (("open", _wrap_open), ("open_for_maintenance", _wrap_maintenance_open)):
        opener = store_class.__dict__.get(name)
        if opener is not None:
            setattr(store_class, name, classmethod(wrap(opener.__func__)))
    store_class._edge_installed = True  # type: ignore[attr-defined]
