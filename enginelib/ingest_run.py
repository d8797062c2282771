"""An ingest call from start to finish: strict or skipping, and always an exact report.

The report counts exactly what was committed. When a batch fails (disk full, a dependency
error), the error carries ``.report`` with the batches committed before it and says so;
when only saving the derived indexes fails after the catalog commits, the documents are
in the store (the indexes replay from the catalog at the next open) and the error says
that too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .edge import as_interrupt, interrupted, map_error
from .errors import EngineError
from .ingest import IngestOptions, Ingestor
from .types import IngestReport, LoadedDocument, SkippedInput

if TYPE_CHECKING:
    from .core.store_core import StoreCore as Store


def run_ingest(
    store: Store,
    items: Iterable[LoadedDocument | SkippedInput],
    options: dict[str, Any],
    *,
    batch_size: int,
    progress: bool,
) -> IngestReport:
    if isinstance(items, (str, bytes, LoadedDocument)) or not isinstance(items, Iterable):
        from .errors import InvalidInputError

        raise InvalidInputError(
            f"documents must be a list (or iterable) of LoadedDocument, got "
            f"{type(items).__name__}: wrap one document in a list")
    strict = options.pop("strict", False)
    if not isinstance(strict, bool):
        from .errors import InvalidInputError

        raise InvalidInputError(f"strict must be True or False, got {strict!r}")
    ingestor = Ingestor(store, IngestOptions.build(**options), batch_size=batch_size,
                        strict=strict)
    if strict:
        # All-or-nothing is one catalog transaction: one batch, the later copy of an id
        # replacing the earlier one as the batched path does.
        unique: dict[str, LoadedDocument | SkippedInput] = {}
        for n, item in enumerate(items):
            key = item.id if isinstance(item, LoadedDocument) and isinstance(item.id, str) else f"\0{n}"
            unique.pop(key, None)
            unique[key] = item
        items = list(unique.values())
        ingestor.batch_size = max(1, len(items))
    try:
        report = ingestor.run(items, progress=progress)
    except BaseException as exc:
        committed = ingestor.report()
        _persist_quietly(store)
        _raise_with_report(exc, committed, "ingest", store, saved=False)
        raise
    try:
        store.persist()
    except BaseException as exc:
        _raise_with_report(exc, report, "ingest", store, saved=True)
        raise
    return report


def _persist_quietly(store: Store) -> None:
    # Save what the committed batches put in the indexes; if even that fails the indexes
    # replay from the catalog at the next open, so the first error is the one to report.
    try:
        store.persist()
    except Exception:
        pass


def _raise_with_report(
    exc: BaseException, report: IngestReport, operation: str, store: Store, *, saved: bool
) -> None:
    if isinstance(exc, (SystemExit, GeneratorExit)):
        return
    committed = len(report.added) + len(report.updated)
    error = None
    stopped = interrupted(exc)
    # DuckDB's words for a Ctrl-C: raised as the KeyboardInterrupt it stands for, noted
    made = as_interrupt(exc) if stopped and not isinstance(exc, KeyboardInterrupt) else None
    if made is not None:
        exc, duckdb_words = made, exc
    if not stopped:
        error = exc if isinstance(exc, EngineError) else map_error(exc, operation, store.path)
    if error is None:
        # not ours (the caller's generator raised, Ctrl-C): it goes up as it is, with a note
        # of what is already in the store, which the caller cannot see otherwise
        exc.add_note(f"enginelib: {committed} document(s) of this {operation} were committed "
                     "before it stopped (the batch being read was not; `.report` on this "
                     f"exception lists them): {_some_ids(report)}")
        try:
            exc.report = report  # type: ignore[attr-defined]
        except AttributeError:  # an exception type without a __dict__
            pass
        if made is not None:
            raise made from duckdb_words
        return
    if saved:
        note = (f"; the {committed} document(s) of this call ARE committed (the catalog is "
                "the truth): the search indexes could not be saved and will be rebuilt from "
                "the catalog at the next writable open")
    elif committed:
        note = (f"; {committed} document(s) from earlier batches were committed before the "
                "failure (error.report lists them), the failing batch was not")
    else:
        note = "; nothing from this call was committed"
    if error is exc:
        exc.args = (f"{exc.args[0] if exc.args else exc}{note}", *exc.args[1:])
        exc.report = report
        return
    error.args = (f"{error.args[0]}{note}", *error.args[1:])
    error.report = report
    raise error from exc


def _some_ids(report: IngestReport, most: int = 10) -> str:
    ids = [*report.added, *report.updated]
    shown = ", ".join(repr(i) for i in ids[:most])
    return (shown or "none") + (f" (+{len(ids) - most} more)" if len(ids) > most else "")
