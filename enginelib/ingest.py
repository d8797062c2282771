"""Ingestion: chunk, embed (with a content-hash cache), and commit documents batch by batch."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from . import faults
from .acronyms import catalog_rows as acronym_rows
from .catalog import ChunkRow, utcnow
from .embedders import passage_text, vectors_with_cache
from .embedders.sharing import also_released
from .errors import IngestError, InvalidInputError
from .indexes.base import TextDocument
from .keywords import DEFAULT_KEYWORDS, top_keywords
from .language import detect_language
from .manifest import next_index_version
from .own_vectors import own_vectors, vectors_digest
from .progress import IngestProgress
from .text import content_hash
from .types import ChunkSpan, IngestReport, LoadedDocument, SkippedInput, validate_truth_level
from .validation import TEXT_COLUMNS as _TEXT_KEYS
from .validation import as_str_tuple, check_ingest_options, check_new_document_id, check_record

if TYPE_CHECKING:
    from .core.store_core import StoreCore as Store

FIRST_VERSION = "1.0.0"

# Keys a document's own metadata may set as columns (they win over call-level options).
LIFTED_KEYS = (
    "truth_level", "domain", "source_type", "author", "language", "tenant_id", "source_id",
    "document_type", "validated_by", "parent_document_id", "created_at", "tags", "entities",
)


@dataclass(frozen=True)
class IngestOptions:
    truth_level: str = "L2"
    domain: str | None = None
    source_type: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    author: str | None = None
    language: str | None = None
    tenant_id: str | None = None
    source_id: str | None = None
    validated_by: str | None = None
    parent_document_id: str | None = None
    entities: tuple[str, ...] = ()
    keywords_limit: int = DEFAULT_KEYWORDS

    @classmethod
    def build(cls, **options: Any) -> IngestOptions:
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidInputError(
                f"unknown ingest option(s) {sorted(unknown)}; expected some of "
                f"{sorted(cls.__dataclass_fields__)}"
            )
        check_ingest_options(options)
        if "truth_level" in options and options["truth_level"] is not None:
            options["truth_level"] = validate_truth_level(options["truth_level"])
        elif "truth_level" in options:
            del options["truth_level"]
        for key in ("tags", "entities"):
            if key in options:
                options[key] = as_str_tuple(options[key], key)
        if "metadata" in options:
            if options["metadata"] is None:
                options["metadata"] = {}
            if not isinstance(options["metadata"], dict):
                raise InvalidInputError("metadata must be a dict of JSON-serializable values")
        return cls(**options)


@dataclass
class _Prepared:
    document: LoadedDocument
    row: dict[str, Any]
    spans: list[ChunkSpan]
    embed_texts: list[str]
    vectors: np.ndarray | None = None
    status: str = "added"  # added | updated
    content_changed: bool = True
    # what the fingerprint hashes: compared again with the stored path's spelling
    fingerprint_fields: dict[str, Any] = field(default_factory=dict)

    def same_file_spelled_otherwise(self, stored_path: str | None, stored_fingerprint: str) -> bool:
        """Whether this document differs from the stored one only in how its file's path is
        written. A store ingested before source paths were absolute recorded "docs/a.md";
        the first re-ingest after that change rewrote every document as a metadata change
        (a new version each, its chunks rewritten) for the very same files."""
        new_path = self.row["source_path"]
        if not stored_path or not new_path or stored_path == new_path:
            return False
        if os.path.realpath(stored_path) != os.path.realpath(new_path):
            return False
        as_stored = {**self.fingerprint_fields, "source_path": stored_path,
                     "file_path": stored_path}
        return fingerprint(as_stored) == stored_fingerprint


def fingerprint(fields: dict[str, Any]) -> str:
    """What a re-ingest compares: every field a document brings, its dates of ingest aside."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode("utf-8")).hexdigest()


class Ingestor:
    """Runs one ingest call: documents -> prepared batches -> one transaction per batch."""

    def __init__(
        self, store: Store, options: IngestOptions, *, batch_size: int = 64, strict: bool = False
    ) -> None:
        self.store = store
        # strict: the first bad input raises before anything is written (all-or-nothing
        # needs one batch: see run_ingest).
        self.strict = strict
        self.options = options
        self.batch_size = max(1, batch_size)
        self.added: list[str] = []
        self.updated: list[str] = []
        self.unchanged: list[str] = []
        self.skipped: list[SkippedInput] = []
        self.chunks_written = 0
        self.embedded = 0
        self.cached = 0
        # id -> the file it came from in this call: two files sharing an id (x.md under two
        # folders given together) would otherwise replace one another without a word
        self._origin: dict[str, str | None] = {}

    def run(
        self, items: Iterable[LoadedDocument | SkippedInput], *, progress: bool = False
    ) -> IngestReport:
        with IngestProgress(enabled=progress) as bar:
            for batch in self._batches(items):
                self._commit(batch, bar)
        return self.report()

    def report(self) -> IngestReport:
        """What this ingest has committed so far (exactly: a batch counts once committed)."""
        return IngestReport(
            added=tuple(self.added),
            updated=tuple(self.updated),
            unchanged=tuple(self.unchanged),
            skipped=tuple(self.skipped),
            chunks_written=self.chunks_written,
            chunks_embedded=self.embedded,
            chunks_from_cache=self.cached,
        )

    def _batches(
        self, items: Iterable[LoadedDocument | SkippedInput]
    ) -> Iterator[list[LoadedDocument]]:
        batch: dict[str, LoadedDocument] = {}
        for number, item in enumerate(items, start=1):
            if isinstance(item, SkippedInput):
                self._skip(item)
                continue
            if not isinstance(item, LoadedDocument):
                # a dict, the shape memory() and JSONL lines take, failed further down as
                # "'dict' object has no attribute 'id'"
                raise InvalidInputError(
                    f"document {number} is a {type(item).__name__}, not a LoadedDocument: give "
                    "LoadedDocument(id=..., text=..., metadata={...}) objects (dicts shaped "
                    "like JSONL lines go to enginelib.memory(records) or a .jsonl file)")
            try:
                check_new_document_id(item.id)
            except InvalidInputError as exc:
                self._skip(SkippedInput(str(item.source_path or ascii(item.id)),
                                        f"document {ascii(item.id)}: {exc}"))
                continue
            first = self._origin.setdefault(item.id, item.source_path)
            if first != item.source_path and first is not None and item.source_path is not None:
                self._skip(SkippedInput(item.source_path, (
                    f"document id {item.id!r} is also {first}'s in this ingest: two files "
                    "cannot share an id (a file's id is its path under the folder given); "
                    "ingest their common parent folder so that their ids differ")))
                continue
            if item.id in batch:  # the later copy of an id replaces the earlier one
                yield list(batch.values())
                batch = {}
            batch[item.id] = item
            if len(batch) >= self.batch_size:
                yield list(batch.values())
                batch = {}
        if batch:
            yield list(batch.values())

    def _skip(self, item: SkippedInput) -> None:
        if self.strict:
            raise IngestError(
                f"{item.path}: {item.reason}; nothing was ingested (strict: fix the input, "
                "or ingest without strict to skip bad records)", path=item.path,
                reason=item.reason,
            )
        self.skipped.append(item)

    # -- one batch -------------------------------------------------------------------------

    def _commit(self, documents: list[LoadedDocument], bar: IngestProgress) -> None:
        catalog = self.store._catalog
        states = catalog.document_states([d.id for d in documents])
        # A new version comes after every version the id had (kept in its history), never
        # one it had: an id deleted and ingested again restarted at "1.0.0", so a citation
        # named two texts and the next archive of that version was dropped. Counting from the
        # history's highest keeps versions unique whatever brought a document back.
        history = catalog.archived_versions([d.id for d in documents])
        prepared: list[_Prepared] = []
        for document in documents:
            try:
                item = self._prepare(document)
            except (IngestError, InvalidInputError) as exc:
                # One bad record is reported with its id and skipped; the batch goes on.
                self._skip(SkippedInput(
                    document.source_path or str(document.id), f"document {document.id!r}: {exc}"
                ))
                bar.advance_documents(1)
                continue
            state = states.get(document.id)
            if state is not None:
                if (state[2] == item.row["fingerprint"]
                        or item.same_file_spelled_otherwise(state[3], state[2])):
                    self.unchanged.append(document.id)
                    bar.advance_documents(1)
                    continue
                item.status = "updated"
                item.content_changed = state[0] != item.row["content_hash"]
                latest = latest_version([state[1], *history.get(document.id, [])])
                item.row["version"] = _bump(latest, major=False, content=item.content_changed)
            elif document.id in history:
                item.row["version"] = _bump(latest_version(history[document.id]), major=False, content=True)
            prepared.append(item)
        if not prepared:
            return
        self._embed(prepared, bar)
        self._write(prepared)
        # Let reader processes in between batches: they need the file only briefly.
        catalog.release()
        bar.advance_documents(len(prepared))

    def _prepare(self, document: LoadedDocument) -> _Prepared:
        check_loaded(document)
        spans = self.store.chunker.chunk(document.text)
        row, fields = self._row(document, spans)
        title = document.title or ""
        embed_texts = [passage_text(title, span.heading_path, span.content) for span in spans]
        return _Prepared(document, row, spans, embed_texts, fingerprint_fields=fields)

    def _row(self, document: LoadedDocument,
             spans: list[ChunkSpan]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The document's catalog row, and the fields its fingerprint hashes."""
        opts = self.options
        meta = dict(opts.metadata)
        meta.update(document.metadata)
        lifted = {k: meta.pop(k) for k in LIFTED_KEYS if k in meta}
        for key in _TEXT_KEYS:  # a number where a short text belongs (domain 7) is its text
            if isinstance(lifted.get(key), int) and not isinstance(lifted[key], bool):
                lifted[key] = str(lifted[key])
        truth_level = validate_truth_level(lifted.get("truth_level", opts.truth_level))
        tags = as_str_tuple(lifted.get("tags", ()), "tags") or opts.tags
        entities = as_str_tuple(lifted.get("entities", ()), "entities") or opts.entities
        language = lifted.get("language") or document.language or opts.language
        language = language or detect_language(document.text)
        now = utcnow()
        validated_by = lifted.get("validated_by", opts.validated_by)
        row: dict[str, Any] = {
            "document_id": document.id,
            "title": document.title,
            "content": document.text,
            "content_hash": content_hash(document.text),
            "source_type": lifted.get("source_type", opts.source_type),
            "source_path": document.source_path,
            "source_url": document.source_url,
            "source_id": lifted.get("source_id", opts.source_id),
            "truth_level": truth_level,
            "validated_by": validated_by,
            "validated_at": now if validated_by else None,
            "version": FIRST_VERSION,
            "domain": lifted.get("domain", opts.domain),
            "entities": list(entities),
            "keywords": top_keywords([s.content for s in spans], opts.keywords_limit),
            "language": str(language),
            "total_chunks": len(spans),
            "parent_document_id": lifted.get("parent_document_id", opts.parent_document_id),
            "author": lifted.get("author", opts.author),
            "created_at": _as_datetime(lifted.get("created_at")) or now,
            "updated_at": now,
            "document_type": lifted.get("document_type") or document.document_type,
            "tags": list(tags),
            "file_path": document.source_path,
            "file_extension": document.file_extension,
            "tenant_id": lifted.get("tenant_id", opts.tenant_id),
            "custom": meta,
            "pages": [list(p) for p in document.pages] or None,
        }
        fingerprint_source = dict(row)
        row["ingested_at"] = now
        fingerprint_fields = {
            k: v for k, v in fingerprint_source.items()
            if k not in ("validated_at", "created_at", "updated_at", "version")
        }
        fingerprint_fields["created_at"] = lifted.get("created_at")
        if document.vectors is not None:  # new own vectors for the same text: not unchanged
            fingerprint_fields["own_vectors"] = vectors_digest(document)
        row["fingerprint"] = fingerprint(fingerprint_fields)
        return row, fingerprint_fields

    def _embed(self, prepared: list[_Prepared], bar: IngestProgress) -> None:
        store = self.store
        for item in prepared:  # vectors the caller brought: checked, never re-embedded
            if item.document.vectors is not None:
                item.vectors = own_vectors(item.document, len(item.spans), store.manifest.embedding_dim)
        prepared = [item for item in prepared if item.vectors is None]
        if not prepared:
            return
        texts = [t for item in prepared for t in item.embed_texts]

        def before_embedding(count: int) -> None:
            store._catalog.release()  # embedding is the slow part: don't hold the file meanwhile
            bar.start_embedding(count)

        # A writer that lets readers in while the model runs (serve's worker) gets this
        # store's own call lock let go too: it is what a concurrent search waits on.
        with also_released(getattr(store, "_edge_lock", None)):
            vectors, fresh = vectors_with_cache(
                store.embedder, texts, store._catalog.cached_embeddings,
                before_embedding=before_embedding, progress=bar.advance_chunks)
        if fresh:
            store._catalog.cache_embeddings(list(fresh), np.vstack(list(fresh.values())))
        self.embedded += len(fresh)
        self.cached += len(texts) - len(fresh)
        start = 0
        for item in prepared:
            item.vectors = vectors[start : start + len(item.embed_texts)]
            start += len(item.embed_texts)

    def _write(self, prepared: list[_Prepared]) -> None:
        """One transaction for the whole batch: a handful of statements, not a few per
        document (each DuckDB statement costs about a millisecond)."""
        store = self.store
        catalog = store._catalog
        updated = [item.document.id for item in prepared if item.status == "updated"]
        changed = [item.document.id for item in prepared
                   if item.status == "updated" and item.content_changed]
        # A re-ingest that changes only metadata (a tag, the truth level) makes a new version
        # too: its predecessor is archived as `update` archives it, or a citation naming it
        # could no longer be read back (`history --text` said no such version).
        relabelled = sorted(set(updated) - set(changed))
        with catalog.transaction():
            generation = catalog.bump_generation()
            index_version = next_index_version(catalog.get_meta("index_version"))
            catalog.set_meta("index_version", index_version)
            created = catalog.created_at_of(updated)
            catalog.archive_documents(changed, "content changed", generation)
            catalog.archive_documents(relabelled, "metadata changed", generation)
            removed = catalog.delete_documents(updated, generation)
            rows = []
            for item in prepared:
                row = {**item.row, "index_version": index_version, "generation": generation}
                if item.document.id in created:
                    row["created_at"] = created[item.document.id]
                rows.append(row)
            catalog.insert_documents(rows)
            labels = catalog.allocate_labels(sum(len(item.spans) for item in prepared))
            bounds = np.cumsum([0] + [len(item.spans) for item in prepared])
            doc_ids: list[str] = []
            new_chunks: list[ChunkRow] = []
            for item in prepared:
                doc_ids.extend([item.document.id] * len(item.spans))
                new_chunks.extend(chunk_rows(item.spans, item.document.pages))
            vectors = np.vstack([item.vectors for item in prepared if item.vectors is not None])
            catalog.insert_chunks(doc_ids, labels, new_chunks, vectors, generation)
            catalog.insert_acronyms([row for item in prepared
                                     for row in acronym_rows(item.document.id, item.document.text)])
            faults.crash_point("before_catalog_commit")
        # Committed: count it now, so a failure after this point reports it as committed.
        for item in prepared:
            (self.updated if item.status == "updated" else self.added).append(item.document.id)
            self.chunks_written += len(item.spans)
        with store._indexes_follow():
            faults.crash_point("after_catalog_commit")
            store._committed()
            added: list[tuple[np.ndarray, np.ndarray, list[TextDocument]]] = []
            for item, row, lo, hi in zip(prepared, rows, bounds[:-1], bounds[1:], strict=True):
                texts = [
                    TextDocument(int(lb), span.content, span.heading_path,
                                 item.document.title or "", row["language"])
                    for lb, span in zip(labels[lo:hi], item.spans, strict=True)
                ]
                assert item.vectors is not None
                added.append((labels[lo:hi], item.vectors, texts))
            store._apply_commit(removed, added)


def chunk_rows(spans: list[ChunkSpan], pages: tuple[tuple[int, int], ...]) -> list[ChunkRow]:
    page_starts = [start for _, start in pages]
    page_numbers = [number for number, _ in pages]

    def page_at(offset: int) -> int | None:
        if not pages:
            return None
        idx = int(np.searchsorted(page_starts, offset, side="right")) - 1
        return page_numbers[max(idx, 0)]

    return [
        ChunkRow(
            chunk_index=s.chunk_index,
            content=s.content,
            heading_path=s.heading_path,
            start_offset=s.start_offset,
            end_offset=s.end_offset,
            token_count=s.token_count,
            page_start=page_at(s.start_offset),
            page_end=page_at(max(s.start_offset, s.end_offset - 1)),
            content_hash=content_hash(s.content),
        )
        for s in spans
    ]


def latest_version(versions: list[str]) -> str:
    """The highest semver among ``versions`` (one that does not parse counts lowest)."""
    def key(version: str) -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in version.split("."))
        except ValueError:
            return (-1,)
    return max(versions, key=key)


def _bump(version: str, *, major: bool, content: bool) -> str:
    """Semver: a content change bumps minor, a metadata-only change bumps patch."""
    try:
        ma, mi, pa = (int(x) for x in version.split("."))
    except ValueError:
        return FIRST_VERSION
    if major:
        return f"{ma + 1}.0.0"
    return f"{ma}.{mi + 1}.0" if content else f"{ma}.{mi}.{pa + 1}"




def check_loaded(document: LoadedDocument) -> None:
    """Raise what an ingest would skip ``document`` for, before a chunk or a vector is made:
    its id, text and fields (``check_record``), a blank text, and the values its metadata sets
    as columns (truth level, tags, entities, created_at). One place for both the ingest and
    serve's check of an upload before it is queued, so they cannot drift apart."""
    if not isinstance(document.id, str) or not document.id.strip():
        raise IngestError("document has an empty id", path=document.source_path)
    check_record(document)
    if not document.text.strip():
        raise IngestError(
            f"document {document.id!r} has no text: nothing to index", path=document.source_path
        )
    metadata = document.metadata
    if "truth_level" in metadata:
        validate_truth_level(metadata["truth_level"])
    for key in ("tags", "entities"):
        as_str_tuple(metadata.get(key, ()), key)
    _as_datetime(metadata.get("created_at"))


def _as_datetime(value: Any) -> datetime | None:
    """A document's ``created_at`` as the catalog keeps times: naive UTC. One with an offset
    went into DuckDB's TIMESTAMP in the server's own zone (10:00+02:00 kept as 03:00 in New
    York), then was shown as UTC; one without is taken as UTC."""
    if value is None:
        return None
    try:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise InvalidInputError(f"created_at {value!r} is not an ISO date/time") from exc
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
        except OverflowError as exc:
            # Unlike a filter bound (utc.naive_utc clamps it to the nearest end, which orders
            # the same), a stored time clamped would be a date the caller never gave.
            raise InvalidInputError(
                f"created_at {value!r} falls outside years 1 to 9999 once converted to UTC; "
                "give a time within them, or one without an offset (read as UTC)"
            ) from exc
    return moment
