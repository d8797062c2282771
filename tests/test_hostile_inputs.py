"""Hostile input through the Python API: property-based over search options, filters,
records, ids and names. Every call either works or raises an enginelib error; nothing
aborts the process, leaks a dependency's exception, or is stored silently wrong."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enginelib import Store
from enginelib.errors import (
    DocumentNotFoundError,
    EngineError,
    InvalidInputError,
    InvalidQueryError,
)
from enginelib.search.results import SearchResponse
from enginelib.types import LoadedDocument
from enginelib.validation import (
    MAX_CANDIDATES,
    MAX_LIMIT,
    MAX_OFFSET,
    check_name,
)
from tests.helpers import doc, open_test_store, paragraphs
from tests.reporting import say

SETTINGS = settings(
    max_examples=150, deadline=None, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Values a careless or hostile caller passes: huge and negative ints, NaN, text with NUL
# and lone surrogates, wrong containers.
HUGE = st.sampled_from([10**9, 10**10, 10**12, 10**18, 2**63, -(2**63), -1, 0, 10**100])
NASTY_TEXT = st.sampled_from(["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "L9", "\n",
                              "名前", "'; DROP TABLE documents; --", "*", '"', "(", "a" * 5000])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), HUGE,
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), NASTY_TEXT,
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8) | NASTY_TEXT, inner, max_size=3),
                      max_leaves=8)
OPTION_NAMES = st.sampled_from([
    "limit", "offset", "candidates", "strategy", "fusion", "rrf_k", "weights", "truth_levels",
    "filters", "min_score", "boosts", "mmr", "mmr_lambda", "per_source_cap", "chunks_per_doc",
    "answerability_threshold", "exact", "rerank_top", "log", "preset", "query_vector",
    "lenient", "ef", "nonsense",
])

OUTCOMES: Counter[str] = Counter()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Store]:
    path = tmp_path_factory.mktemp("hostile") / "s"
    store = open_test_store(path)
    store.ingest_documents(
        [doc(f"d{i}", paragraphs(3, f"topic{i}"), metadata={"domain": "brakes" if i % 2 else "privacy"})
         for i in range(12)]
    )
    yield store
    store.close()
    total = sum(OUTCOMES.values())
    say(request, f"hostile API calls: {total}; "
        + ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES.items()))
        + f"; raw dependency exceptions {OUTCOMES['raw']}; process aborts 0 (still running)")


def _call(func: Any, *args: Any, **kwargs: Any) -> Any:
    """Run an API call; count the outcome; a non-enginelib exception fails the test."""
    try:
        result = func(*args, **kwargs)
    except EngineError as exc:
        OUTCOMES["typed error"] += 1
        assert str(exc), "an error must say something"
        return exc
    except BaseException as exc:  # noqa: BLE001 - the point: nothing else may come out
        OUTCOMES["raw"] += 1
        raise AssertionError(f"raw {type(exc).__name__} leaked: {exc!r}") from exc
    OUTCOMES["ok"] += 1
    return result


@SETTINGS
@given(options=st.dictionaries(OPTION_NAMES, VALUES, max_size=4))
def test_search_options_never_crash(store: Store, options: dict[str, Any]) -> None:
    result = _call(store.search, "brake pads", **options)
    if isinstance(result, SearchResponse):
        # Whatever was accepted was within the documented bounds.
        assert options.get("limit", 10) is None or 1 <= options.get("limit", 10) <= MAX_LIMIT
        assert len(result.hits) <= MAX_LIMIT
        offset = options.get("offset")
        assert offset is None or 0 <= offset <= MAX_OFFSET
        candidates = options.get("candidates")
        assert candidates is None or 1 <= candidates <= MAX_CANDIDATES


@SETTINGS
@given(query=VALUES)
def test_any_query_value(store: Store, query: Any) -> None:
    result = _call(store.search, query, answerability_threshold=None)
    if isinstance(result, SearchResponse):
        assert isinstance(query, (str, list))


# Pieces of what people type, paste or probe with: words of the corpus (and a typo),
# stop words, operators, every character of tantivy's grammar, prefixes, fields, scripts.
QUERY_PIECES = st.sampled_from([
    "brake", "pads", "rotor", "topic3", "workshop", "brkae", "pad*", "wh*", "*", "the", "of",
    "le", "AND", "OR", "NOT", "TO", "IN", ":", '"', "(", ")", "[", "]", "{", "}", "^", "~",
    "\\", "+", "-", "!", "?", "/", "&&", "||", "content:", "title:", "nope:", "^2", "~2",
    "[a TO z]", "( )", '""', "données", "東京", "مرحبا", "Привет", "e\u0301", "İ", "😀",
    "\u200b", "\u200f", "1K0615301M", "C++", "5-HT",
])


@settings(SETTINGS, max_examples=150, derandomize=True)
@given(pieces=st.lists(st.tuples(QUERY_PIECES, st.sampled_from(["", " ", "  "])),
                       min_size=1, max_size=10),
       strategy=st.sampled_from(["hybrid", "fulltext"]), lenient=st.booleans())
def test_query_syntax_never_leaks_a_backend_error(store: Store, pieces: list[tuple[str, str]],
                                                  strategy: str, lenient: bool) -> None:
    query = "".join(piece + gap for piece, gap in pieces)
    result = _call(store.search, query, strategy=strategy, lenient=lenient, limit=3,
                   answerability_threshold=None)
    # a well-formed or lenient query that is refused says it is the query, not the index
    assert not isinstance(result, EngineError) or isinstance(result, InvalidQueryError)
    if isinstance(result, SearchResponse):
        for hit in result.hits:
            text = store.get_document(hit.document_id)["content"]
            citation = hit.citation
            assert text[citation.start_offset:citation.end_offset] == hit.content
            assert text[citation.quote_start:citation.quote_end] == citation.quote


# Past 4,300 digits Python will not write an int as text: str(), repr(), json.dumps() and
# float() of it raised a bare ValueError (OverflowError) in each of these calls.
TOO_LONG = 10**5_000


@pytest.mark.parametrize("call", [
    lambda s: s.search("brake pads", limit=TOO_LONG),
    lambda s: s.search("brake pads", limit=[TOO_LONG]),
    lambda s: s.search("brake pads", weights={"vector": TOO_LONG}),
    lambda s: s.search("brake pads", min_score=-TOO_LONG),
    lambda s: s.search("brake pads", truth_levels=[TOO_LONG]),
    lambda s: s.search("brake pads", filters={"metadata.n": [1, TOO_LONG]}),
    lambda s: s.update_document("d0", metadata={"n": TOO_LONG}),
    lambda s: s.ingest_documents([doc("long-int", "Pads.")], truth_level=TOO_LONG),
], ids=["limit", "limit list", "weights", "min_score", "truth_levels", "metadata filter",
        "update metadata", "ingest truth level"])
def test_an_integer_too_long_to_write_is_a_typed_error(store: Store, call: Any) -> None:
    with pytest.raises(EngineError) as caught:
        call(store)
    assert "integer" in str(caught.value)


def test_a_record_with_an_integer_too_long_to_write_is_skipped(store: Store) -> None:
    report = store.ingest_documents([doc("long-meta", "Pads.", metadata={"n": [TOO_LONG]})])
    assert report.added == () and "over 4,300 digits" in report.skipped[0].reason


@pytest.mark.parametrize("name,value", [
    ("offset", 10**9), ("offset", 10**10), ("offset", 10**18), ("candidates", 10**12),
    ("limit", 10**6), ("limit", 0), ("offset", -1), ("candidates", 0),
])
def test_out_of_range_names_the_bound(store: Store, name: str, value: int) -> None:
    with pytest.raises(InvalidInputError, match=name) as caught:
        store.search("brake pads", **{name: value})
    assert "maximum" in str(caught.value) or "within" in str(caught.value)


def test_bounds_themselves_are_accepted(store: Store) -> None:
    page = store.search("brake pads", limit=MAX_LIMIT, offset=MAX_OFFSET,
                        candidates=MAX_CANDIDATES, answerability_threshold=None)
    assert page.hits == ()  # far past the 36 chunks, but no crash and no error


@SETTINGS
@given(filters=st.dictionaries(st.sampled_from(["domain", "truth_level", "tags", "document_id",
                                                "created_at", "custom.x", "\x00", "nope"]),
                               VALUES, max_size=3))
def test_filters_never_crash(store: Store, filters: dict[str, Any]) -> None:
    result = _call(store.search, "brake pads", filters=filters, answerability_threshold=None)
    if isinstance(result, SearchResponse) and filters.get("domain") == "brakes":
        assert all(store.get_document(h.document_id)["domain"] == "brakes" for h in result.hits)


@SETTINGS
@given(document_id=VALUES)
def test_document_lookups(store: Store, document_id: Any) -> None:
    for method in (store.get_document, store.show, store.history):
        result = _call(method, document_id)
        if isinstance(result, EngineError):
            assert isinstance(result, (DocumentNotFoundError, InvalidInputError))


@SETTINGS
@given(name=VALUES)
def test_snapshot_names(store: Store, name: Any) -> None:
    result = _call(store.delete_snapshot, name)
    assert isinstance(result, EngineError)  # no snapshot exists in this store
    try:
        check_name("snapshot", name)
    except InvalidInputError:
        assert isinstance(result, InvalidInputError)


@pytest.mark.parametrize("name", ["ok\n", "ok\r", "\nok", "a/b", "..", ".hidden", "a\x00", "\ud800",
                                  "x" * 101, "-dash", "with space", "live", ""])
def test_bad_snapshot_names_are_refused(tmp_path: Path, name: str) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(2))])
    with pytest.raises(InvalidInputError):
        store.create_snapshot(name)
    assert store.list_snapshots() == []
    store.close()


RECORD_FIELDS = st.dictionaries(
    st.sampled_from(["truth_level", "domain", "tags", "created_at", "author", "custom",
                     "entities", "tenant_id", "source_type", "language", "\x00key", "k\ud800"]),
    VALUES, max_size=3,
)


_EXAMPLE = iter(range(10**9))


@pytest.mark.slow
@settings(SETTINGS, max_examples=100)
@given(records=st.lists(st.tuples(st.one_of(st.text(max_size=6), NASTY_TEXT, st.integers()),
                                  st.one_of(st.just("a normal paragraph about pads"), NASTY_TEXT),
                                  RECORD_FIELDS), min_size=1, max_size=6))
def test_records_bad_ones_skipped_counts_exact(store: Store,
                                              records: list[tuple[Any, str, dict[str, Any]]]) -> None:
    prefix = f"e{next(_EXAMPLE)}-"  # ids unique to this example in the shared store
    docs = [LoadedDocument(id=prefix + i if isinstance(i, str) else i, text=t, metadata=m)
            for i, t, m in records]
    before = {d["document_id"] for d in store._catalog.list_documents()}
    report = _call(store.ingest_documents, docs)
    assert not isinstance(report, EngineError), report
    after = {d["document_id"] for d in store._catalog.list_documents()}
    # Exactly what the report says was committed is new in the store, and nothing else;
    # every record has exactly one outcome.
    assert after - before == set(report.added) and not set(report.updated) - after
    outcomes = len(report.added) + len(report.updated) + len(report.unchanged) + len(report.skipped)
    assert outcomes == len(records)
    for document_id in after - before:  # nothing silently wrong: clean text everywhere
        document = store.get_document(document_id)
        for value in (document["document_id"], document["content"], str(document["custom"])):
            assert "\x00" not in value
            assert not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    for skipped in report.skipped:
        assert skipped.reason
        skipped.reason.encode("utf-8")  # printable and storable as it is


# Document text no loader would clean up: control characters, CR line ends, BOMs, RTL and
# zero-width marks, combining sequences, scripts without spaces, headings in fences,
# setext underlines, long unbroken runs.
HOSTILE_TEXT = st.lists(st.one_of(st.sampled_from([
    "word ", "the quick brown fox jumps", ". ", "\n", "\n\n", "\r\n", "\r", "\t", "  ",
    "\n## Section A\n", "\n### Sub B ###\n", "# Title\n", "\n#### Article 17 — Erasure\n",
    "```\n# not a heading\n```\n", "Title\n=====\n", "#tag\n---\n", "😀", "👨\u200d👩\u200d👧",
    "e\u0301", "q\u0307\u0323", "中文字符测试，", "日本語のテキスト。", "שלום עולם ", "مرحبا ",
    "\u200b", "\u200f", "\x00", "\x07", "\ufeff", "x" * 300, "Ж" * 120, "<|endoftext|>",
    "DPIA (data protection impact assessment) ", "İstanbul ", "Straße ", "ﬁle ", "1K0615301M ",
    "(a) point; ", "\u2028", "\x85",
]), st.text(max_size=20)), min_size=1, max_size=50).map("".join)


@pytest.mark.slow
@settings(SETTINGS, max_examples=60, derandomize=True)
@given(text=HOSTILE_TEXT, pick=st.integers(0, 10**6))
def test_hostile_text_is_stored_searched_and_cited_exactly(store: Store, text: str,
                                                           pick: int) -> None:
    document_id = f"h{next(_EXAMPLE)}"
    report = _call(store.ingest_documents, [doc(document_id, text)])
    assert not isinstance(report, EngineError), report
    if document_id not in report.added:
        assert report.skipped and report.skipped[0].reason
        return
    stored = store.get_document(document_id)["content"]
    for chunk in store.show(document_id)["chunks"]:
        assert stored[chunk["start_offset"]:chunk["end_offset"]] == chunk["content"]
    words = re.findall(r"\w+", stored)
    for query in ([words[pick % len(words)]] if words else []) + [stored[:50]]:
        for strategy in ("hybrid", "fulltext"):
            result = _call(store.search, query, strategy=strategy, lenient=True,
                           filters={"document_id": document_id}, answerability_threshold=None)
            for hit in getattr(result, "hits", ()):
                citation = hit.citation
                assert stored[citation.start_offset:citation.end_offset] == hit.content
                assert stored[citation.quote_start:citation.quote_end] == citation.quote
                assert citation.start_offset <= citation.quote_start <= citation.quote_end
                assert citation.quote_end <= citation.end_offset
                assert bool(citation.quote) == bool(hit.content.strip())
                for highlight in hit.highlights:
                    assert citation.start_offset <= highlight.start_offset
                    assert highlight.end_offset <= citation.end_offset


def test_strict_ingest_is_all_or_nothing(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    docs = [doc("good1", paragraphs(2)), doc("bad", paragraphs(2), metadata={"truth_level": "L9"}),
            doc("good2", paragraphs(2))]
    with pytest.raises(EngineError, match="L9") as caught:
        store.ingest_documents(docs, strict=True, batch_size=1)
    assert "nothing was ingested" in str(caught.value)
    assert store._catalog.list_documents() == []
    report = store.ingest_documents(docs, batch_size=1)
    assert report.added == ("good1", "good2") and "'bad'" in report.skipped[0].reason
    store.close()


def test_two_files_sharing_an_id_in_one_ingest_are_not_merged(tmp_path: Path) -> None:
    # `ingest docs/en docs/fr` with README.md in both: ids are paths under the folder given,
    # so both were 'README.md' and the second silently replaced the first
    for folder, text in (("en", "Brake rotors wear out."), ("fr", "Les disques de frein s'usent.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "README.md").write_text(text, encoding="utf-8")
    store = open_test_store(tmp_path / "s")
    report = store.ingest_path(tmp_path / "en", tmp_path / "fr")
    assert report.added == ("README.md",) and report.updated == ()
    (skipped,) = report.skipped
    assert skipped.path.endswith("fr/README.md") and "also" in skipped.reason
    assert "common parent folder" in skipped.reason
    assert store.get_document("README.md")["content"] == "Brake rotors wear out."
    # from the common parent, both go in under their own ids
    both = store.ingest_path(tmp_path, include=["*/README.md"])
    assert set(both.added) == {"en/README.md", "fr/README.md"} and both.skipped == ()
    # one JSONL file may still update a record it holds twice (the later line wins)
    (tmp_path / "r.jsonl").write_text('{"id": "j", "text": "one"}\n{"id": "j", "text": "two"}\n',
                                      encoding="utf-8")
    again = store.ingest_path(tmp_path / "r.jsonl")
    assert again.added == ("j",) and again.updated == ("j",)
    store.close()


@pytest.mark.parametrize("metadata", [{"k": "a\x00b"}, {"k\x00": "v"}, {"k": "\udc80"},
                                      {"domain": {"nested": 1}}, {"tags": 5},
                                      {"created_at": "yesterday"}, {"truth_level": "L9"},
                                      {"k": float("nan")}])
def test_bad_metadata_is_reported_never_stored(tmp_path: Path, metadata: dict[str, Any]) -> None:
    store = open_test_store(tmp_path / "s")
    report = store.ingest_documents([doc("before", paragraphs(2)), doc("bad", paragraphs(2), metadata=metadata),
                                     doc("after", paragraphs(2))])
    assert set(report.added) == {"before", "after"}
    assert len(report.skipped) == 1 and "'bad'" in report.skipped[0].reason
    with pytest.raises(DocumentNotFoundError):
        store.get_document("bad")
    if any(bad in repr(metadata) for bad in ("\\x00", "\\udc80", "nan")):
        with pytest.raises(InvalidInputError):  # the same metadata for the whole call
            store.ingest_documents([doc("x", paragraphs(2))], metadata=metadata)
    store.close()


@pytest.mark.parametrize("path", ["a\\b", "a\x00b"])
def test_store_path_refused_with_reason(tmp_path: Path, path: str) -> None:
    with pytest.raises(InvalidInputError, match="backslash|NUL"):
        open_test_store(tmp_path / path)
    assert list(tmp_path.iterdir()) == []  # nothing half-created


@pytest.mark.parametrize("options", [{"vector": {"ef_search": 10**9}}, {"vector": {"num_threads": 0}},
                                     {"vector": {"ef_search": "x"}}, {"text": {"lenient": "yes"}}])
def test_index_options_bounded(tmp_path: Path, options: dict[str, Any]) -> None:
    import enginelib
    from enginelib import HashingEmbedder

    with pytest.raises(InvalidInputError):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(8), index_options=options)


def test_query_vector_bad_shapes(store: Store) -> None:
    for vector in ([1.0] * 3, [float("nan")] * 64, [[0.0] * 64], "abc", [[1.0] * 64] * 2,
                   3.4028235677973366e38, [1e39] * 64):  # beyond float32: inf once cast
        result = _call(store.search, "pads", query_vector=vector)
        assert isinstance(result, InvalidInputError)
    assert "float32" in str(_call(store.search, "pads", query_vector=[1e39] * 64))


def test_exports_to_unwritable_places(store: Store, tmp_path: Path) -> None:
    # Special files stand for /dev/full: a fifo and a folder here, never the real device
    # (a bug would replace it, and the tests may run as root).
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in ("/proc/version", str(fifo), str(tmp_path), "/proc/nonexistent/x.sql"):
        result = _call(store.to_sql, target)
        assert isinstance(result, EngineError), target
    assert fifo.exists() and not fifo.is_file()


@pytest.mark.parametrize(("limit", "offset", "message"), [
    (1000, 10**23, "offset must be within 0..1000000000"),  # DuckDB's 64-bit OFFSET overflowed
    (0, 0, "limit must be within 1..1000000"),
    (10, -1, "offset must be within"),
    (10.5, 0, "limit must be an integer"),
    (True, 0, "limit must be an integer"),
])
def test_listing_documents_refuses_a_page_it_cannot_serve(
    tmp_path: Path, limit: Any, offset: Any, message: str
) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", "Brake pads wear faster in city traffic.")])
    with pytest.raises(InvalidInputError, match=message):
        store.list_documents(limit=limit, offset=offset)
    assert [d["document_id"] for d in store.list_documents(limit=1, offset=0)] == ["a"]
    assert store.list_documents(offset=10**9) == []
    store.close()


@pytest.mark.parametrize(("filters", "message"), [
    ({"tag": ["gdpr"]}, "tag must be a string"),  # reached DuckDB as a list: a Binder Error
    ({"prefix": 5}, "prefix must be a string"),  # an AttributeError from deep inside
    ({"domain": 5}, "domain must be a string"),  # quietly matched nothing
    ({"source_type": "a\x00"}, "NUL"),
])
def test_listing_documents_refuses_filters_of_the_wrong_type(
    tmp_path: Path, filters: dict[str, Any], message: str
) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", "Brake pads wear faster in city traffic.", metadata={"truth_level": "L1"})])
    with pytest.raises(InvalidInputError, match=message):
        store.list_documents(**filters)
    # one level as a string, or comma-separated, is a level (never its characters)
    assert [d["document_id"] for d in store.list_documents(truth_levels="L1")] == ["a"]
    assert [d["document_id"] for d in store.list_documents(truth_levels="L1,L2")] == ["a"]
    assert store.list_documents(truth_levels="L2") == []
    store.close()


@pytest.mark.parametrize("bad_id", ["a\nb.md", "t\tx", "e\x1b[31mred", "del\x7f", "c1\x85"])
def test_a_new_document_id_with_a_control_character_is_skipped_with_the_reason(
    tmp_path: Path, bad_id: str
) -> None:
    # printed as two lines in `enginelib list` (a script read two documents), or an escape
    # sequence recoloured the terminal
    store = open_test_store(tmp_path / "s")
    report = store.ingest_documents([doc(bad_id, "Brake pads wear."), doc("ok", "Tyres.")])
    assert report.added == ("ok",) and len(report.skipped) == 1
    assert "contains a control character" in report.skipped[0].reason
    store.close()


def test_cli_ingest_names_a_file_with_a_newline_on_one_escaped_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from enginelib.cli.main import main

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a\nb.md").write_text("Brake pads wear.", encoding="utf-8")
    (folder / "ok.md").write_text("Tyres need air.", encoding="utf-8")
    result = CliRunner().invoke(main, ["ingest", str(folder), "--store", str(tmp_path / "s")],
                                env={"ENGINELIB_EMBEDDER": "hashing-64"})
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.output.splitlines() if "skipped" in line and "a\\nb" in line]
    assert len(skipped) == 1 and "control character" in skipped[0]
    listed = CliRunner().invoke(main, ["list", "--store", str(tmp_path / "s")])
    assert listed.output.splitlines()[0].startswith("ok.md")
    assert len(listed.output.splitlines()) == 1


def test_a_queued_file_whose_name_has_a_control_character_is_refused_at_enqueue(
    tmp_path: Path
) -> None:
    from enginelib.jobs import jobs_for_paths

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a\tb.md").write_text("Brake pads wear.", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="control character"):
        jobs_for_paths([str(folder)], {})


@pytest.mark.parametrize("bad_tag", ["a\nb", "e\x1b[31mred", "c1\x85"])
def test_a_tag_with_a_control_character_is_refused_at_ingest_and_update(
    tmp_path: Path, bad_tag: str
) -> None:
    # a tag "a<newline>b" printed as two lines in `list` and `show`
    store = open_test_store(tmp_path / "s")
    with pytest.raises(InvalidInputError, match="control character"):
        store.ingest_documents([doc("a", "Brake pads wear.")], tags=[bad_tag])
    report = store.ingest_documents([doc("b", "Tyres.", metadata={"tags": ["ok", bad_tag]}),
                                     doc("c", "Wipers.", metadata={"tags": ["ok"]})])
    assert report.added == ("c",) and "control character" in report.skipped[0].reason
    with pytest.raises(InvalidInputError, match="control character"):
        store.update_document("c", tags=[bad_tag])
    assert store.get_document("c")["tags"] == ["ok"]
    store.close()


def test_a_filter_naming_too_many_fields_is_refused(tmp_path: Path) -> None:
    from enginelib.errors import InvalidFilterError
    from enginelib.validation import MAX_FILTER_FIELDS

    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", "Brake pads wear.", metadata={"k1": "x"})])
    many = {f"metadata.k{i}": "x" for i in range(MAX_FILTER_FIELDS + 1)}
    with pytest.raises(InvalidFilterError, match=f"the maximum is {MAX_FILTER_FIELDS}"):
        store.search("brake pads", filters=many)
    fewer = {f"metadata.k{i}": "x" for i in range(1, MAX_FILTER_FIELDS + 1)}
    store.search("brake pads", filters=fewer)  # at the bound: searched
    store.close()
