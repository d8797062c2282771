"""What `serve` does, apart from HTTP: one writable store kept warm, its worker in a thread.

Every use of the store goes through one lock: the Store object is not thread-safe, and
the worker (a thread) and the request handlers (a thread pool) share it. The worker holds
it for one job at a time, but not while the model embeds the job's passages, most of a
job's time: searches and every other read go on meanwhile (their query waits for one turn
of the model, embedders/sharing.py). A request that changes documents (a delete) also
takes ``write_lock``, which the worker holds for the whole job, so it waits for the job
(that one only: the worker asks for the lock again behind it).

The catalog file stays open while requests keep coming (reopening DuckDB costs 50-90 ms)
and is released after ``RELEASE_AFTER_S`` without one, so that `enginelib jobs` or a
search in another process gets its turn.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core import layout
from ..core.folders import require_folder
from ..documents import LIST_FILTERS
from ..edge import os_error
from ..errors import (
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    PayloadTooLargeError,
    QueueFullError,
    SnapshotError,
    SourceTooLargeError,
    StorageError,
)
from ..fair_lock import FairRLock
from ..jobs import DEFAULT_MAX_ATTEMPTS, JobQueue, NewJob, Worker
from ..jobs import table as job_table
from ..jobs.queue import DEFAULT_LISTED, MAX_POLL_S, Retention
from ..jobs.times import with_utc_times
from ..jobs.worker import UPLOAD
from ..search import check_answer_citations
from ..search.request import (
    INTEGER_TEXT,
    NUMBER_TEXT,
    OPTIONS,
    from_text,
    is_flag,
    option_spec,
    unknown_options_error,
)
from ..store import Store
from ..validation import check_float, check_int, check_text, too_long_number
from .claims import claim_map
from .public import Paths
from .spaced_offsets import plus_for_space

UPLOAD_DIR = layout.UPLOADS_DIR
# Each upload gets a folder of this many hex digits; the sweep at start removes no other.
UPLOAD_FOLDER_CHARS = 12
_UPLOAD_FOLDER = re.compile(f"[0-9a-f]{{{UPLOAD_FOLDER_CHARS}}}")
RELEASE_AFTER_S = 2.0
DEFAULT_MAX_UPLOAD_BYTES = 20 * 1024 * 1024
# Uploads waiting for the worker, and their bytes: each is a file in the store until its job
# is done, so a client sending faster than the worker ingests filled the disk (and the store
# with it: every write then failed). Past either, an upload is refused (429) until it catches up.
DEFAULT_MAX_WAITING_UPLOADS = 1000
DEFAULT_MAX_WAITING_UPLOAD_BYTES = 1024 * 1024 * 1024

# The API's search parameters: the request's options that have an API name (search/
# request.py), plus the query and the snapshot to read.
API_OPTIONS: dict[str, str] = {
    api: name for name in OPTIONS if (api := option_spec(name).api) is not None
}
SEARCH_OPTIONS = ("query", *API_OPTIONS, "snapshot")
DOCUMENT_LIST_PARAMS = LIST_FILTERS
JOB_LIST_PARAMS = ("status", "limit", "offset", "after")
# The console's sources table: documents, then jobs not done, each up to this many.
MAX_SOURCE_ROWS = 10_000
# Documents one upload may hold (a JSONL file has one per line): the worker ingests them as one
# job, holding the store's writers (a delete) meanwhile. A corpus goes through `enginelib ingest`.
MAX_UPLOAD_DOCUMENTS = 10_000
# About 50,000 words: far beyond an LLM's answer, well within what one check does in ~0.3 s.
MAX_ANSWER_CHARS = 200_000


class Service:
    def __init__(
        self, store: Store, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS, poll_s: float = 0.5,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES, time_unit: float = 1.0,
        lease_s: float = 300.0, retention: Retention | None = None,
        max_waiting_uploads: int = DEFAULT_MAX_WAITING_UPLOADS,
        max_waiting_upload_bytes: int = DEFAULT_MAX_WAITING_UPLOAD_BYTES,
    ) -> None:
        self.store = store
        self.max_waiting_uploads = check_int("max_waiting_uploads", max_waiting_uploads,
                                             minimum=1, maximum=2**31 - 1)
        self.max_waiting_upload_bytes = check_int(
            "max_waiting_upload_bytes", max_waiting_upload_bytes, minimum=1, maximum=2**50)
        self.paths = Paths(store.path)  # what the API shows of the server's paths
        self.lock = threading.RLock()
        # Always taken before ``lock``: no cycle. Fair: a delete waits for the job in
        # progress, not for the worker's queue to empty (fair_lock.py).
        self.write_lock = FairRLock()
        self.max_upload_bytes = check_int("max_upload_bytes", max_upload_bytes, minimum=1,
                                          maximum=2**40)
        self.poll_s = check_float("poll_s", poll_s, minimum=1e-6, maximum=MAX_POLL_S)
        with self.lock:
            self.queue = JobQueue(store.catalog, max_attempts=max_attempts, time_unit=time_unit,
                                  lease_s=lease_s, retention=retention)
            if not store.read_only:
                sweep_uploads(store.path / UPLOAD_DIR, self.queue.upload_sources_in_use())
            store.catalog.release()
        self.worker = Worker(store, self.queue, lock=self.lock, write_lock=self.write_lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_use = time.monotonic()
        self._snapshots: dict[str, Store] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def warm(self) -> None:
        """Load the model and the chunk view now, so the first search is not the slow one."""
        with self.lock:
            self.store.embedder.embed(["warm up"])
            self.store.view()

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.worker.run_forever, args=(self._stop, self.poll_s, self._release_idle),
            name="enginelib-worker", daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.worker.wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        # The write lock too: a job still embedding (its window open) is not closed under.
        with self.write_lock, self.lock:
            for snapshot in self._snapshots.values():
                snapshot.close()
            self.store.close()

    def _locked(self, action: Callable[[], Any]) -> Any:
        with self.lock:
            try:
                return action()
            finally:
                self._last_use = time.monotonic()

    def _writing(self, action: Callable[[], Any]) -> Any:
        """``action`` changes documents: it waits for the job in progress."""
        with self.write_lock:
            return self._locked(action)

    def _release_idle(self) -> None:
        if time.monotonic() - self._last_use >= RELEASE_AFTER_S:
            with self.lock:
                self.store.catalog.release()

    # -- search ----------------------------------------------------------------------------

    def _target(self, snapshot: str | None) -> Store:
        """The live store, or a snapshot of it (opened once, read-only, same warm model)."""
        if not snapshot:
            return self.store
        if snapshot not in self._snapshots:
            from ..snapshots import snapshot_folder, snapshot_manifest, validate_name
            from ..store import open_snapshot

            # The library's error names the store's folder and a CLI command: neither is for
            # an HTTP client, who gets the names it may send instead.
            known = sorted(info.name for info in self.store.list_snapshots())
            if validate_name(snapshot) not in known:
                raise SnapshotError(f"no snapshot {snapshot!r} in this store; " + (
                    f"its snapshots: {', '.join(known)}" if known else "it has none"))
            # A snapshot taken before a reindex to another model is searched with the model
            # it recorded, loaded once, as `enginelib search --snapshot` does: given the warm
            # one, it was refused 400 "open it with embedder= that model", advice for Python.
            recorded = snapshot_manifest(snapshot_folder(self.store.path, snapshot))
            live = self.store.embedder
            same = (recorded.embedding_model, recorded.embedding_dim) == (live.name, int(live.dim))
            self._snapshots[snapshot] = open_snapshot(self.store.path, snapshot,
                                                      embedder=live if same else None)
        return self._snapshots[snapshot]

    def search(self, params: dict[str, Any], *, text: bool = False) -> dict[str, Any]:
        """``params``: a JSON body's values, or (``text``) a query string's."""
        query, options = search_options(params, text=text)
        snapshot = options.pop("snapshot", None)

        def run() -> tuple[Any, dict[str, dict[str, Any]]]:
            target = self._target(snapshot)
            found = target.search(query, **options)
            return found, _authority(target, [h.document_id for h in found])

        response, authority = self._locked(run)
        data = response.to_dict()
        data["snapshot"] = snapshot
        for hit in data["hits"]:
            hit["authority"] = authority.get(hit["document_id"], {})
            hit["document_url"] = document_url(hit["document_id"], hit["start_offset"],
                                               hit["end_offset"])
        # the gate's numbers as `enginelib search --json` has them (and the status, as before)
        data["gate"] = {**response.gate_summary(), "status": response.status}
        return data

    def check_answer(self, params: dict[str, Any]) -> dict[str, Any]:
        answer = params.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            raise InvalidInputError("answer must be a non-empty string")
        # Its sentences come back in the reply: a lone surrogate cannot be written as UTF-8.
        check_text("answer", answer)
        if len(answer) > MAX_ANSWER_CHARS:
            # Each sentence becomes a claim in the reply: a body at the JSON cap held a server
            # thread for a minute and answered megabytes.
            raise InvalidInputError(
                f"answer is {len(answer):,} characters, over the {MAX_ANSWER_CHARS:,} an answer "
                "check takes: check it in parts (each with the search it was written from)")
        search = params.get("search")
        if not isinstance(search, dict):
            raise InvalidInputError("search must be the search request the answer was written from")
        query, options = search_options(search)
        snapshot = options.pop("snapshot", None)
        response = self._locked(lambda: self._target(snapshot).search(query, **options))
        citations = [hit.citation for hit in response.hits]
        check = check_answer_citations(answer, citations)
        return {
            "ok": check.ok, "cited": list(check.cited), "supported": list(check.supported),
            "fabricated": list(check.unsupported),
            "unsupported_sentences": list(check.uncited_sentences),
            "claims": claim_map(answer, citations),
        }

    # -- documents -------------------------------------------------------------------------

    def documents(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        # A misspelt filter (?truth_level=L1) left out would list every document as if it were
        # the filtered answer.
        check_known(params, DOCUMENT_LIST_PARAMS, "document list parameter")
        levels = params.get("truth_levels")
        # An empty value is a filter left out, as in a search's query string and for
        # truth_levels, prefix, limit and offset here: ?tag= (a form's blank field) filtered on
        # the tag "" and listed no document.
        filters: dict[str, Any] = {
            "truth_levels": [v for v in levels.split(",") if v] if levels else None,
            "domain": params.get("domain") or None,
            "source_type": params.get("source_type") or None,
            "tag": params.get("tag") or None, "prefix": params.get("prefix"),
            "limit": _int_param(params, "limit", 1000), "offset": _int_param(params, "offset", 0),
        }
        return self._locked(lambda: self.store.list_documents(**filters))  # type: ignore[no-any-return]

    def document(self, document_id: str) -> dict[str, Any]:
        return self._locked(lambda: self.store.show(document_id))  # type: ignore[no-any-return]

    def delete(self, document_id: str) -> None:
        self._writing(lambda: self.store.delete_document(document_id))

    # -- jobs and sources ------------------------------------------------------------------

    def upload(self, name: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
        from ..ingest import IngestOptions
        from ..loaders import loader_for

        loader_for(Path(name))  # UnsupportedFormatError now, not in the worker
        if not data.strip():  # the worker's job would fail on every attempt, into the DLQ
            raise InvalidInputError(f"upload {name!r} is empty: there is no text to index")
        IngestOptions.build(**dict(options))
        if not self.store.path.is_dir():
            raise StorageError(
                f"the store's folder {self.store.path} is gone since serve opened it (moved or "
                "deleted): put it back, or restart serve where it is now", path=self.store.path)
        # A file where the uploads folder belongs: refused naming it, not "Not a directory".
        uploads = require_folder(self.store.path, UPLOAD_DIR)
        folder = (uploads / uuid.uuid4().hex[:UPLOAD_FOLDER_CHARS]).resolve()
        target = folder / name
        # The name was checked to be plain; this makes sure the file lands in its own folder.
        # Not "inside the store's path": with uploads/ a link to a bigger disk (which the
        # sweep and the worker's discard allow for), every upload was refused as leaving it.
        if Path(os.path.normpath(target)).parent != folder:
            raise InvalidInputError(f"upload name {name!r} would leave its upload folder")
        try:
            # Not parents=True: with the store's folder moved or deleted while serving, that
            # made it again at the old path (an empty folder where the user would move it back).
            uploads.mkdir(exist_ok=True)
            folder.mkdir()
            target.write_bytes(data)
            _require_loadable(target, name)

            def enqueue() -> list[int]:
                self._require_room(len(data))  # under the lock: uploads in parallel count
                return self.queue.enqueue([NewJob(str(target), name, options, kind=UPLOAD)])

            ids = self._locked(enqueue)
        except BaseException as exc:
            # Not queued: a half-written file would lie in the store with no job to take it.
            shutil.rmtree(folder, ignore_errors=True)
            if isinstance(exc, OSError):
                raise os_error(exc, f"upload of {name!r}", folder) from exc
            raise
        self.worker.wake.set()
        return {"job_id": ids[0], "document_id": name, "bytes": len(data)}

    def _require_room(self, size: int) -> None:
        """Refuse an upload of ``size`` bytes while the waiting ones are at either limit."""
        waiting = self.queue.waiting_uploads()
        if len(waiting) >= self.max_waiting_uploads:
            raise QueueFullError(
                f"{len(waiting):,} uploads are waiting for the worker, the most this server "
                f"takes (serve --max-waiting-uploads {self.max_waiting_uploads}): send it again "
                "once they are ingested (GET /api/jobs counts them)")
        held = sum(_size(source) for source in waiting)
        if held + size > self.max_waiting_upload_bytes:
            raise QueueFullError(
                f"the uploads waiting for the worker hold {held:,} bytes; this one's {size:,} "
                f"would pass the {self.max_waiting_upload_bytes:,} this server takes (serve "
                "--max-waiting-upload-mb): send it again once they are ingested")

    def jobs(self, status: str | None = None, limit: int = DEFAULT_LISTED,
             offset: int = 0, after: int | None = None) -> dict[str, Any]:
        """The counts and a page of the jobs; ``total`` is how many jobs the page is taken
        from, ``next_after`` the ``after`` of the next page (null: this was the last)."""
        def read() -> dict[str, Any]:
            counts = self.queue.counts()
            page = self.queue.page(status=status, limit=limit, offset=offset, after=after)
            return {"counts": counts, "history": self.queue.history_count(),
                    "active": self.queue.active(), "worker_error": self.worker.last_error,
                    "total": counts[status] if status else sum(counts.values()),
                    "limit": limit, "offset": offset, "after": after,
                    "next_after": page.next_after,
                    "jobs": [with_utc_times(job) for job in page.jobs]}

        return self._locked(read)  # type: ignore[no-any-return]

    def jobs_page(self, params: dict[str, Any]) -> dict[str, Any]:
        """``jobs`` for a query string's parameters."""
        check_known(params, JOB_LIST_PARAMS, "job list parameter")
        after = params.get("after")
        return self.jobs(params.get("status") or None, _int_param(params, "limit", DEFAULT_LISTED),
                         _int_param(params, "offset", 0),
                         None if after in (None, "") else _as_int("after", after, text=True))

    def job_history(self, params: dict[str, Any]) -> dict[str, Any]:
        """The history's counts (DONE, CANCELLED) and a page of it, for a query string's
        parameters, paged as ``jobs_page`` pages the queue; ``total`` is how many rows the
        page is taken from."""
        check_known(params, JOB_LIST_PARAMS, "job history parameter")
        status = params.get("status") or None
        limit = _int_param(params, "limit", DEFAULT_LISTED)
        offset = _int_param(params, "offset", 0)
        after_text = params.get("after")
        after = None if after_text in (None, "") else _as_int("after", after_text, text=True)

        def read() -> dict[str, Any]:
            counts = self.queue.history_counts()
            page = self.queue.history_page(status=status, limit=limit, offset=offset,
                                           after=after)
            return {"counts": counts,
                    "total": counts[status] if status else sum(counts.values()),
                    "limit": limit, "offset": offset, "after": after,
                    "next_after": page.next_after,
                    "jobs": [with_utc_times(job) for job in page.jobs]}

        return self._locked(read)  # type: ignore[no-any-return]

    def retry_dlq(self) -> int:
        retried: int = self._locked(self.queue.retry_dlq)
        self.worker.wake.set()
        return retried

    def purge_done(self) -> int:
        return self._locked(self.queue.purge_done)  # type: ignore[no-any-return]

    def drop_job(self, job_id: int) -> int:
        """Drop DLQ job ``job_id`` for good (404 unknown, 409 not in the DLQ)."""
        return self._locked(lambda: self.queue.drop(job_id))  # type: ignore[no-any-return]

    def drop_dlq(self) -> int:
        return self._locked(self.queue.drop_dlq)  # type: ignore[no-any-return]

    def cancel_job(self, job_id: int) -> int:
        """Cancel job ``job_id`` before it runs (404 unknown, 409 running, done or in the DLQ).
        Not behind the write lock: it changes no document, and the job the worker holds is
        RUNNING, which the cancel refuses."""
        return self._locked(lambda: self.queue.cancel(job_id))  # type: ignore[no-any-return]

    def sources(self) -> list[dict[str, Any]]:
        """One row per source: documents as INDEXED, then every job not DONE yet."""
        def read() -> list[dict[str, Any]]:
            rows = []
            for doc in self.store.list_documents(limit=MAX_SOURCE_ROWS):
                rows.append({
                    "source": doc["source_url"] or doc["source_path"] or doc["document_id"],
                    "document_id": doc["document_id"], "status": "INDEXED",
                    "truth_level": doc["truth_level"], "tier": doc["tier"],
                    "word_count": doc["word_count"], "authority_score": doc["authority_score"],
                    "evidence_level": doc["evidence_level"], "last_ingested": doc["ingested_at"],
                    "error": None,
                })
            # Only the jobs not done: the first 1000 of all jobs, DONE ones among them, hid
            # a failed upload queued after them.
            waiting = [s for s in job_table.STATUSES if s != job_table.DONE]
            for job in self.queue.jobs(statuses=waiting, limit=MAX_SOURCE_ROWS):
                rows.append({
                    "source": job["source"], "document_id": job["document_id"],
                    "job_id": job["job_id"],  # the console's Drop (DLQ) and Cancel (waiting)
                    "status": job["status"], "truth_level": _truth_level(job["options"]),
                    "tier": None, "word_count": None, "authority_score": None,
                    "evidence_level": None, "last_ingested": None, "error": job["last_error"],
                    "attempts": job["attempts"], "next_attempt_at": job["next_attempt_at"],
                })
            return [with_utc_times(row) for row in rows]

        return self._locked(read)  # type: ignore[no-any-return]

    def stats(self) -> dict[str, Any]:
        return self._locked(self.store.stats)  # type: ignore[no-any-return]

    def presets(self) -> list[str]:
        return list(self._locked(self.store.search_presets))


def _require_loadable(target: Path, name: str) -> None:
    """Refuse an upload its loader cannot read (binary, not UTF-8, a broken PDF or JSONL line):
    accepted with 202, its job failed the same way on every attempt, into the DLQ minutes
    later, where the one who uploaded it no longer looked. Read outside the store's lock, one
    document at a time, and bounded: a gzipped JSONL of 200 KB inflating to 68 MB held its
    1.3 million records in memory here (15 s), then the worker held serve's lock ingesting
    them; 20 MB of gzip can hold 20 GB."""
    from ..errors import LoaderError
    from ..loaders import DEFAULT_MAX_BYTES, loader_for
    from ..types import SkippedInput

    try:
        _require_inflated_within(target, name, DEFAULT_MAX_BYTES)
        for count, item in enumerate(loader_for(target)(target, name, DEFAULT_MAX_BYTES), 1):
            if isinstance(item, SkippedInput):
                raise LoaderError(item.reason, path=target)
            if count > MAX_UPLOAD_DOCUMENTS:
                raise PayloadTooLargeError(
                    f"upload {name} holds more than {MAX_UPLOAD_DOCUMENTS:,} documents, the most "
                    "one upload may: split it, or ingest the corpus with `enginelib ingest` on "
                    "the server")
            _require_ingestible(item, count, name)
    except LoaderError as exc:
        # the loader names the file by its path inside the store: the client sent a name
        reason = str(exc).replace(str(target), name)
        if isinstance(exc, SourceTooLargeError):
            raise PayloadTooLargeError(f"upload cannot be indexed, not queued: {reason}") from exc
        raise InvalidInputError(f"upload cannot be indexed, not queued: {reason}") from exc
    except OSError as exc:  # a gzip stream that is not one
        raise InvalidInputError(f"upload {name} cannot be read as gzip: {exc}") from exc


def _require_ingestible(document: Any, number: int, name: str) -> None:
    """The ingest's own checks of a record (a JSONL line's id, truth level, tags, dates):
    passed by the loader, such a record was accepted with 202, then failed its job for good
    after the records before it were committed, its file removed."""
    from ..errors import IngestError
    from ..ingest import check_loaded

    try:
        check_loaded(document)
    except (IngestError, InvalidInputError) as exc:
        raise InvalidInputError(f"upload cannot be indexed, not queued: {name} document "
                                f"{number}: {exc}") from exc


def _require_inflated_within(target: Path, name: str, limit: int) -> None:
    """A gzipped upload inflates to at most ``limit`` bytes (read and dropped, 1 MiB at a
    time): its loader bounds each record, not the file."""
    import gzip

    from ..loaders.base import human_size

    if not target.name.lower().endswith(".gz"):
        return
    total = 0
    with gzip.open(target, "rb") as stream:
        while chunk := stream.read(1024 * 1024):
            total += len(chunk)
            if total > limit:
                raise PayloadTooLargeError(
                    f"upload {name} inflates past {human_size(limit)}, the most an upload may "
                    "hold: split it, or ingest the corpus with `enginelib ingest` on the server")


def _size(source: str) -> int:
    """An upload's bytes on disk; 0 once it is gone (its job will say so)."""
    try:
        return os.stat(source).st_size
    except OSError:
        return 0


def _truth_level(options: Any) -> Any:
    # A job row edited by hand may hold options of another JSON type: its row is still listed
    # (an AttributeError here answered /api/sources with 500, and the console showed nothing).
    return options.get("truth_level") if isinstance(options, dict) else None


def search_options(params: dict[str, Any], *, text: bool = False) -> tuple[str, dict[str, Any]]:
    """The API's search parameters as Store.search arguments: JSON values, each of the type
    the OpenAPI document gives it, or (``text``) a query string's text. A parameter left
    out, null, or empty text is not passed: the request's default, or for fusion settings
    the preset's, applies."""
    check_known(params, SEARCH_OPTIONS, "search parameter")
    query = params.get("query")
    if query is None:
        raise InvalidQueryError("no query given: send the words to search for as query (q in "
                                "a query string)")
    if not isinstance(query, str):
        raise InvalidQueryError(f"a query must be a string, got {type(query).__name__}")
    # An empty one is refused by the search itself, with the words Python and the CLI give.
    options: dict[str, Any] = {}
    for api_name, name in API_OPTIONS.items():
        value = params.get(api_name)
        spec = option_spec(name)
        # In JSON, "" for a number, a switch or a choice is a wrong value, not a left-out one
        # (a form's empty field, or the page's unchecked truth levels, send "" for the rest).
        if value is None or (value == "" and (text or spec.kind is str and not spec.choices)):
            continue
        if name == "filters":
            options[name] = _filters_param(value, text=text)
        elif is_flag(name):
            if _switched_on(api_name, value, text=text):
                options[name] = spec.flag
        elif text or (isinstance(value, str) and spec.kind is str):
            options[name] = from_text(name, value)
        elif spec.kind is int:
            options[name] = _as_int(name, value, text=False)
        elif spec.kind is float:
            options[name] = _json_number(name, value)
        else:
            options[name] = value
    snapshot = params.get("snapshot")
    if snapshot is not None and not isinstance(snapshot, str):
        # str() of 5 or true named a snapshot '5' or 'True'
        raise InvalidInputError(f"snapshot must be a snapshot's name (a string), got "
                                f"{json.dumps(snapshot)[:60]}")
    if snapshot:
        options["snapshot"] = snapshot
    return query, options


def check_known(params: dict[str, Any], known: tuple[str, ...], what: str) -> None:
    unknown = set(params) - set(known)
    if unknown:
        raise unknown_options_error(unknown, known, what)


class DuplicateKeyError(InvalidInputError):
    """A JSON object of the request names a key twice."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for a request's JSON: a key given twice is refused. Python's json
    (like most parsers) kept the last one, the other dropped unseen: {"limit": 2, "limit": 50}
    searched for 50, {"answer": ..., "answer": ...} checked the second answer only."""
    repeated = sorted(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    if repeated:
        raise DuplicateKeyError(f"{repeated[0]!r} is given more than once in one JSON object: "
                                "send each field once")
    return dict(pairs)


def _filters_param(filters: Any, *, text: bool = False) -> Any:
    """Filters as a JSON object, or its text (in a JSON body, or ``text``: a query string)."""
    if isinstance(filters, str):
        if not filters.strip():
            return None
        try:
            filters = json.loads(filters, object_pairs_hook=unique_keys)
        except DuplicateKeyError as exc:
            raise InvalidFilterError(f"filters: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise InvalidFilterError(
                f"filters is not valid JSON ({exc.msg} at character {exc.pos}): send an "
                'object such as {"domain": "privacy", "tags": ["gdpr"]}'
            ) from exc
        # Both were a 500: a number of 5,000 digits ("ValueError: Exceeds the limit (4300
        # digits)"), and ?filters=[[[[... 3,000 deep an unhandled RecursionError.
        except ValueError as exc:
            raise InvalidFilterError(too_long_number("filters")) from exc
        except RecursionError as exc:  # json's parser recurses once per level of nesting
            raise InvalidFilterError(
                'filters are nested too deeply to parse: send an object such as {"domain": '
                '"privacy", "tags": ["gdpr"]}') from exc
    if isinstance(filters, dict) and not filters:
        return None
    if text:  # an unencoded '+' of a date bound's offset arrived as a space
        filters = plus_for_space(filters)
    return filters  # anything but an object is refused by the search, as from Python


def sweep_uploads(folder: Path, in_use: set[str]) -> None:
    """At start, remove the upload folders no job still needs: a worker removes its upload
    once DONE, so these are what a kill left in between (or a store served before that)."""
    try:
        entries = list(folder.iterdir())
    except OSError:  # no uploads yet, or a folder we cannot list: nothing to sweep
        return
    for entry in entries:
        # Only folders an upload made: with uploads/ a link to a folder of other things (a
        # bigger disk), the sweep removed every folder there that no job named.
        if not _UPLOAD_FOLDER.fullmatch(entry.name) or not entry.is_dir() or entry.is_symlink():
            continue
        try:
            files = [str(f.resolve()) for f in entry.iterdir()]
        except OSError:
            continue
        if not any(f in in_use for f in files):
            shutil.rmtree(entry, ignore_errors=True)


def document_url(document_id: str, start: int, end: int) -> str:
    from urllib.parse import quote

    return f"/documents/{quote(document_id, safe='')}?start={start}&end={end}"


def _authority(store: Store, document_ids: list[str]) -> dict[str, dict[str, Any]]:
    from ..documents import authority_of

    return authority_of(store.catalog, document_ids)


_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


def _switched_on(name: str, value: Any, *, text: bool) -> bool:
    """A flag parameter: JSON true/false, or on/off words in a query string. Anything else is
    refused: a misspelt "tru" must not quietly mean off, nor "false" (a string) mean on."""
    if isinstance(value, bool) and not text:
        return value
    if text and isinstance(value, str) and value.strip().lower() in _ON + _OFF:
        return value.strip().lower() in _ON
    if text:
        raise InvalidInputError(f"{name} is a switch: send one of {', '.join(_ON + _OFF)}, "
                                f"got {value!r}")
    raise InvalidInputError(f"{name} is a switch: send JSON true or false, got "
                            f"{_json_text(value)}")


def _int_param(params: dict[str, Any], name: str, default: int) -> int:
    value = params.get(name, default)
    if value in (None, ""):
        return default
    return _as_int(name, value, text=True)


def _as_int(name: str, value: Any, *, text: bool) -> int:
    """A whole number: a JSON number (10, or 10.0 as some clients write it), or digits in a
    query string; never a bool, a fraction, an infinity or a JSON string ("10": a client that
    sends one has its types wrong, and the document says integer)."""
    if text and isinstance(value, str):
        return _digits(name, value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise InvalidInputError(f"{name} must be an integer, got {_json_text(value)}"
                            + _quoted_hint(value))


def _digits(name: str, value: str) -> int:
    if not INTEGER_TEXT.fullmatch(value.strip()) or len(value) > 400:
        raise InvalidInputError(f"{name} must be an integer in digits 0-9, got {value[:60]!r}")
    return int(value.strip())


def _json_number(name: str, value: Any) -> float | int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise InvalidInputError(f"{name} must be a number, got {_json_text(value)}"
                            + _quoted_hint(value))


def _quoted_hint(value: Any) -> str:
    if isinstance(value, str) and NUMBER_TEXT.fullmatch(value.strip()):
        return f": send the JSON number {value.strip()[:40]}, without quotes"
    return ""


def _json_text(value: Any) -> str:
    """A value as the client wrote it in JSON (true, "10", [1]), not as Python shows it."""
    return json.dumps(value, ensure_ascii=True)[:60]
