"""Property sweep of the search promises: generated corpora, generated requests, invariants.

Each example builds a small store (a few dozen documents from a word vocabulary, with
headings, truth levels L1-L4, tags, domains, sources with authority, dates, tenants,
near-duplicates and part numbers) and checks what README's search sections promise for
generated requests: filters and truth levels hold, pages are slices of one ranking, totals
are exact unless flagged, citations point into the stored text, answers are deterministic
and the same from a read-only reopen, an in-memory copy and a snapshot, and nothing
deleted or stale comes back after documents change. ``derandomize=True``: CI runs the same
examples every time.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import enginelib
from enginelib import HashingEmbedder, Store
from enginelib.memory_store import open_memory
from enginelib.search.results import OK
from tests.helpers import SMALL_CHUNKS, doc, open_test_store

VOCAB = ("brake pads rotor caliper fluid torque piston wear noise disc bleed hose sensor "
         "drum shoe spring engine oil filter valve timing belt coolant pump gearbox clutch "
         "erasure consent privacy controller processor").split()
PART_NUMBERS = ("1K0615301M", "AB-1234", "X9Z-77Q", "5Q0698151")
LEVELS = ("L1", "L2", "L3", "L4")
TAGS = ("brakes", "engine", "safety", "eu")
DOMAINS = ("auto", "legal")
SOURCES = ("src-gold", "src-silver", "src-plain")
TENANTS = ("t1", "t2")
REGIONS = ("eu", "us")
AUTHORS = ("ana", "bob")
YEARS = (2019, 2021, 2023, 2025)
PRESETS = ("default", "balanced", "semantic", "keyword")

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEWER = settings(SETTINGS, max_examples=8)  # each example builds more than one store


# -- corpora ------------------------------------------------------------------------------

words = st.sampled_from(VOCAB)


@st.composite
def sentences(draw: st.DrawFn) -> str:
    body = draw(st.lists(words, min_size=3, max_size=9))
    if draw(st.integers(0, 5)) == 0:
        body.insert(draw(st.integers(0, len(body))), draw(st.sampled_from(PART_NUMBERS)))
    return " ".join(body).capitalize() + "."


@st.composite
def texts(draw: st.DrawFn) -> str:
    sections = []
    for _ in range(draw(st.integers(1, 3))):
        paragraphs = [" ".join(draw(st.lists(sentences(), min_size=1, max_size=4)))
                      for _ in range(draw(st.integers(1, 3)))]
        heading = f"# {draw(words).title()} {draw(words)}"
        sections.append("\n\n".join([heading, *paragraphs]) if draw(st.booleans()) else
                        "\n\n".join(paragraphs))
    return "\n\n".join(sections)


@st.composite
def metadata(draw: st.DrawFn) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "truth_level": draw(st.sampled_from(LEVELS)),
        "tags": draw(st.lists(st.sampled_from(TAGS), max_size=3, unique=True)),
        "created_at": f"{draw(st.sampled_from(YEARS))}-0{draw(st.integers(1, 9))}-15",
        "language": "en",
        "region": draw(st.sampled_from(REGIONS)),
    }
    for key, choices in (("domain", DOMAINS), ("source_id", SOURCES), ("tenant_id", TENANTS),
                         ("author", AUTHORS)):
        value = draw(st.none() | st.sampled_from(choices))
        if value is not None:
            fields[key] = value
    return fields


@st.composite
def corpora(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Documents as ``{"id", "text", "title", "metadata"}``; some near-duplicates."""
    count = draw(st.integers(8, 30))
    docs: list[dict[str, Any]] = []
    for i in range(count):
        if docs and draw(st.integers(0, 4)) == 0:  # a near-duplicate of an earlier one
            original = draw(st.sampled_from(docs))["text"]
            text = original.replace(draw(words), draw(words), 1)
        else:
            text = draw(texts())
        title = draw(st.none() | st.sampled_from(("Manual", "Notes", "Guide")))
        docs.append({"id": f"doc-{i:02d}", "text": text, "title": title,
                     "metadata": draw(metadata())})
    return docs


def loaded(specs: list[dict[str, Any]]) -> list[enginelib.LoadedDocument]:
    return [doc(s["id"], s["text"], title=s["title"], metadata=dict(s["metadata"])) for s in specs]


def add_sources(store: Store) -> None:
    store.add_source("src-gold", tier="gold", evidence_level="rct", authority_score=90)
    store.add_source("src-silver", tier="silver", peer_reviewed=True)
    store.add_source("src-plain", tier="bronze")


@contextmanager
def disk_store(specs: list[dict[str, Any]]) -> Iterator[tuple[Store, Path]]:
    folder = Path(tempfile.mkdtemp(prefix="enginelib-props-"))
    store = open_test_store(folder / "s")
    try:
        add_sources(store)
        store.ingest_documents(loaded(specs))
        yield store, folder / "s"
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


# -- requests -----------------------------------------------------------------------------


@st.composite
def filters(draw: st.DrawFn) -> dict[str, Any] | None:
    chosen: dict[str, Any] = {}
    kinds = draw(st.lists(st.sampled_from(
        ("tags", "tags_all", "domain", "source_id", "tenant_id", "namespace", "author",
         "language", "created_at", "truth_level", "region", "document_id")),
        max_size=3, unique=True))
    for kind in kinds:
        if kind == "tags":
            chosen["tags"] = draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True))
        elif kind == "tags_all":
            chosen["tags"] = {"all": draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=2,
                                                   unique=True))}
        elif kind in ("domain", "source_id", "tenant_id", "namespace", "author"):
            pool = {"domain": DOMAINS, "source_id": SOURCES, "tenant_id": TENANTS,
                    "namespace": TENANTS, "author": AUTHORS}[kind]
            chosen[kind] = draw(st.sampled_from(pool) | st.lists(st.sampled_from(pool), min_size=1,
                                                                 max_size=2, unique=True))
        elif kind == "language":
            chosen["language"] = "en"
        elif kind == "created_at":
            bounds = draw(st.dictionaries(st.sampled_from(("gte", "gt", "lte", "lt")),
                                          st.sampled_from([f"{y}-06-01" for y in YEARS]),
                                          min_size=1, max_size=2))
            chosen["created_at"] = bounds
        elif kind == "truth_level":
            chosen["truth_level"] = draw(st.lists(st.sampled_from(LEVELS), min_size=1, max_size=3,
                                                  unique=True))
        elif kind == "region":
            chosen["metadata.region"] = draw(st.sampled_from(REGIONS))
        else:
            chosen["document_id"] = [f"doc-{i:02d}" for i in draw(
                st.lists(st.integers(0, 29), min_size=1, max_size=8, unique=True))]
    return chosen or None


@st.composite
def queries(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.sampled_from(PART_NUMBERS))
    if kind == 1:
        return '"' + " ".join(draw(st.lists(words, min_size=1, max_size=2))) + '"'
    return " ".join(draw(st.lists(words, min_size=1, max_size=4)))


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """Search options (``query`` included); the gate off unless drawn, the log off."""
    options: dict[str, Any] = {
        "query": draw(queries()),
        "strategy": draw(st.sampled_from(("vector", "fulltext", "hybrid", "auto"))),
        "truth_levels": draw(st.lists(st.sampled_from(LEVELS), min_size=1, max_size=4, unique=True)),
        "filters": draw(filters()),
        "candidates": draw(st.sampled_from((3, 5, 8, 20, 100))),
        "log": False,
        "answerability_threshold": draw(st.sampled_from((None, None, None, 0.5))),
    }
    if draw(st.booleans()):
        options["preset"] = draw(st.sampled_from(PRESETS))
    else:
        options["fusion"] = draw(st.sampled_from(("rrf", "weighted")))
        options["rrf_k"] = draw(st.sampled_from((1, 10, 60)))
        options["weights"] = draw(st.sampled_from(((0.5, 0.5), (0.8, 0.2), (0.0, 1.0))))
    for name, values in (("chunks_per_doc", (1, 2, 3)), ("per_source_cap", (1, 2)),
                         ("min_score", (0.0, 0.01, 0.2)), ("mmr_lambda", (0.3, 0.7, 1.0))):
        if draw(st.integers(0, 2)) == 0:
            options[name] = draw(st.sampled_from(values))
    options["mmr"] = draw(st.integers(0, 3)) == 0
    options["boosts"] = draw(st.integers(0, 3)) == 0
    options["exact"] = draw(st.booleans())
    options["lenient"] = draw(st.booleans())
    return options


# -- the invariants -----------------------------------------------------------------------


def matches(document: Mapping[str, Any], field: str, value: Any) -> bool:
    """Does a stored document (``store.get_document``) pass one filter, as README says?"""
    if field == "tags":
        tags = set(document["tags"] or ())
        if isinstance(value, Mapping):
            return set(value["all"]) <= tags if "all" in value else bool(set(value["any"]) & tags)
        return bool(set(value) & tags)
    if field == "created_at":
        at = document["created_at"]
        ops = {"gte": at.__ge__, "gt": at.__gt__, "lte": at.__le__, "lt": at.__lt__}
        return all(ops[op](datetime.fromisoformat(bound)) for op, bound in value.items())
    if field.startswith("metadata."):
        wanted = value if isinstance(value, list) else [value]
        return str((document["custom"] or {}).get(field.split(".", 1)[1])) in wanted
    column = "tenant_id" if field == "namespace" else field
    wanted = value if isinstance(value, list) else [value]
    return document[column] in wanted


def source_of(document: Mapping[str, Any]) -> str:
    return str(document["source_id"] or document["document_id"])


def check_response(store: Store, options: Mapping[str, Any], response: enginelib.SearchResponse,
                   *, offset: int = 0) -> None:
    """Every promise one response makes on its own."""
    if response.status != OK:
        assert response.hits == ()
        assert response.reason
        assert response.total >= 0
        assert response.gate is not None and response.gate.decision == "refuse"
        assert response.gate.reason_code
        return
    assert response.gate is not None and response.gate.answerable
    hits = response.hits
    assert hits, "an ok response has hits"
    assert [h.rank for h in hits] == list(range(offset + 1, offset + 1 + len(hits)))
    assert response.total >= offset + len(hits)
    assert len({h.label for h in hits}) == len(hits), "a chunk twice in one page"
    assert len({(h.document_id, h.chunk_index) for h in hits}) == len(hits)
    levels = options.get("truth_levels") or ("L1", "L2")
    documents = {h.document_id: store.get_document(h.document_id) for h in hits}
    for hit in hits:
        document = documents[hit.document_id]
        assert hit.truth_level == document["truth_level"] in levels
        for field, value in (options.get("filters") or {}).items():
            assert matches(document, field, value), (field, value, hit.document_id)
        text = document["content"]
        assert text[hit.start_offset:hit.end_offset] == hit.content
        cite = hit.citation
        assert (cite.document_id, cite.chunk_index) == (hit.document_id, hit.chunk_index)
        assert (cite.start_offset, cite.end_offset) == (hit.start_offset, hit.end_offset)
        assert cite.quote_start is not None and cite.quote_end is not None
        assert text[cite.quote_start:cite.quote_end] == cite.quote
        assert hit.start_offset <= cite.quote_start <= cite.quote_end <= hit.end_offset
        assert cite.quote and len(cite.quote) <= 500
        assert cite.document_version == document["version"]
        if options.get("min_score") is not None:
            assert hit.scores.fused >= options["min_score"]
    assert response.context.document_ids == tuple(dict.fromkeys(h.document_id for h in hits))
    assert response.context.citations == tuple(h.citation for h in hits)
    assert response.context.lowest_truth_level == max(h.truth_level for h in hits)
    assert [h.citation.number for h in hits] == [h.rank for h in hits]
    per_doc = options.get("chunks_per_doc")
    if per_doc is not None:
        assert max(Counter(h.document_id for h in hits).values()) <= per_doc
    cap = options.get("per_source_cap") or (2 if options.get("mmr") else None)
    if cap is not None:
        assert max(Counter(source_of(documents[h.document_id]) for h in hits).values()) <= cap


def ranked_by_fused_score(options: Mapping[str, Any]) -> bool:
    """Requests whose order README describes as the fused score's (no boosts, MMR or
    grouping reorders it)."""
    return not (options.get("mmr") or options.get("boosts") or options.get("chunks_per_doc"))


def search(store: Store, options: Mapping[str, Any], **more: Any) -> enginelib.SearchResponse:
    given = {k: v for k, v in options.items() if k != "query"}
    return store.search(options["query"], **{**given, **more})


def ranking(response: enginelib.SearchResponse) -> list[tuple[str, int]]:
    return [(h.document_id, h.chunk_index) for h in response.hits]


def fingerprint(response: enginelib.SearchResponse) -> tuple[Any, ...]:
    return (response.status, response.total, response.total_is_lower_bound,
            [(h.document_id, h.chunk_index, h.start_offset, h.end_offset, h.content,
              h.citation.quote, h.citation.quote_start, round(h.scores.fused, 12))
             for h in response.hits])


# -- the properties -----------------------------------------------------------------------


def check_pages(store: Store, options: Mapping[str, Any], limit: int) -> None:
    """Pages at offset 0, limit, 2*limit... are slices of one ranking (no repeats, no gaps,
    the same hits and quotes as one deep request), and a total not flagged is exact."""
    first = search(store, options, limit=limit)
    check_response(store, options, first)
    if first.status == OK and ranked_by_fused_score(options) and limit <= options["candidates"]:
        # one rung ranks the page; deeper rungs fuse at their own depth (search/paging.py),
        # so their scores do not continue the first rung's
        fused = [h.scores.fused for h in first.hits]
        assert fused == sorted(fused, reverse=True), fused
    pages: list[tuple[Any, ...]] = []
    for number in range(5):
        page = search(store, options, limit=limit, offset=number * limit)
        check_response(store, options, page, offset=number * limit)
        pages += fingerprint(page)[3]
        if len(page.hits) < limit:
            break
    deep = search(store, options, limit=len(pages) or 1)
    assert fingerprint(deep)[3][: len(pages)] == pages
    everything = search(store, options, limit=1000)
    check_response(store, options, everything)
    assert fingerprint(everything)[3][: len(pages)] == pages
    if everything.status == OK and not everything.total_is_lower_bound:
        assert everything.total == len(everything.hits)
    if first.status == OK and not first.total_is_lower_bound:
        assert first.total == len(everything.hits)


@SETTINGS
@given(corpus=corpora(), data=st.data())
def test_responses_and_pages_keep_their_promises(
    corpus: list[dict[str, Any]], data: st.DataObject
) -> None:
    with disk_store(corpus) as (store, _):
        for _ in range(6):
            check_pages(store, data.draw(requests()), data.draw(st.sampled_from((1, 3, 5, 10))))


@FEWER
@given(corpus=corpora(), data=st.data())
def test_same_request_same_answer_from_every_copy_of_the_store(
    corpus: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Twice, without the cache, with it cleared, from a read-only reopen, a snapshot and
    an in-memory store of the same documents: one answer."""
    with disk_store(corpus) as (store, path):
        memory = open_memory(embedder=HashingEmbedder(64), chunking=SMALL_CHUNKS)
        add_sources(memory)
        memory.ingest_documents(loaded(corpus))
        snapshot = store.create_snapshot()
        reader = enginelib.open(path, read_only=True)
        frozen = enginelib.open(path, snapshot=snapshot.name)
        try:
            for _ in range(6):
                options = data.draw(requests())
                page = {"limit": data.draw(st.sampled_from((1, 5, 10))),
                        "offset": data.draw(st.sampled_from((0, 0, 4)))}
                expected = fingerprint(search(store, options, **page))
                assert fingerprint(search(store, options, **page)) == expected
                assert fingerprint(search(store, options, cache=False, **page)) == expected
                store.response_cache.clear()
                assert fingerprint(search(store, options, **page)) == expected
                for copy in (reader, frozen, memory):
                    assert fingerprint(search(copy, options, **page)) == expected
        finally:
            reader.close()
            frozen.close()
            memory.close()


@pytest.mark.slow  # ~40 s: every example commits a dozen times
@SETTINGS
@given(corpus=corpora(), data=st.data())
def test_deleted_and_replaced_documents_never_come_back(
    corpus: list[dict[str, Any]], data: st.DataObject
) -> None:
    """After deletes, metadata updates and re-ingests (one of a deleted id), searches from
    the writer, a reader opened before and a snapshot taken before keep every promise; no
    hit names a deleted document or a stale version or truth level."""
    with disk_store(corpus) as (store, path):
        options_list = [data.draw(requests()) for _ in range(5)]
        snapshot = store.create_snapshot()
        before = [fingerprint(search(store, options)) for options in options_list]
        reader = enginelib.open(path, read_only=True)
        for options in options_list:  # the reader's caches are warm with the old generation
            search(reader, options)
        ids = [spec["id"] for spec in corpus]
        deleted = set(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids) // 3 + 1,
                                         unique=True)))
        for document_id in sorted(deleted):
            store.delete_document(document_id)
        kept = [i for i in ids if i not in deleted]
        for document_id in kept[:3]:
            store.update_document(document_id, truth_level=data.draw(st.sampled_from(LEVELS)),
                                  tags=[data.draw(st.sampled_from(TAGS))],
                                  metadata={"region": data.draw(st.sampled_from(REGIONS))})
        specs = {spec["id"]: spec for spec in corpus}
        back = min(deleted)
        again = [dict(specs[i], text=specs[i]["text"] + "\n\nAddendum: rotor and caliper.")
                 for i in kept[-3:]]
        store.ingest_documents(loaded([*again, dict(specs[back], text="Returned. " + specs[back]["text"])]))
        deleted.discard(back)
        frozen = enginelib.open(path, snapshot=snapshot.name)
        try:
            for options, old in zip(options_list, before, strict=True):
                assert fingerprint(search(frozen, options)) == old
                for copy in (store, reader):
                    # DuckDB refuses a read-only connection beside a read-write one of the
                    # same process: the writer lets go first, as it does for other processes
                    store._catalog.release()
                    for response in (search(copy, options, limit=5),
                                     search(copy, options, limit=1000)):
                        assert not {h.document_id for h in response.hits} & deleted
                        check_response(copy, options, response)
                check_pages(store, options, 3)
        finally:
            reader.close()
            frozen.close()
