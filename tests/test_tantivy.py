"""TantivyTextIndex specifics: stemming, exact codes, the query language, persistence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from enginelib.errors import InvalidInputError, InvalidQueryError
from enginelib.indexes import tantivy_text
from enginelib.indexes.analyzers import LEGACY_MAX_TOKEN_CHARS, MAX_TOKEN_CHARS
from enginelib.indexes.base import TextDocument
from enginelib.indexes.tantivy_text import TantivyTextIndex
from tests.helpers import DATASETS

SCIFACT_QUERIES = DATASETS / "scifact" / "queries.jsonl"
NFCORPUS_QUERIES = DATASETS / "nfcorpus" / "queries.jsonl"

DOCS = [
    TextDocument(1, "The engine runs smoothly at low speed.", title="Engine notes"),
    TextDocument(2, "Le freinage des freins avant est efficace sur route mouillée.",
                 title="Freins", language="fr"),
    TextDocument(3, "Replace brake pad part 1K0615301M on the front axle.", title="Brake pads"),
    TextDocument(4, "Send the JWT_token header; erasure follows gdpr-art-17.",
                 headings="Authentication"),
    TextDocument(5, "Caterpillar 3512C engine maintenance schedule."),
    TextDocument(6, "A JWT token is rotated; token expiry is short."),
    TextDocument(7, "front pads wear quickly in city traffic", title="Pads"),
    TextDocument(8, "Pads for the rear axle and front calipers."),
    TextDocument(9, "Engine code 3512 without suffix, part 1K0615301 without letter."),
]


@pytest.fixture
def index(tmp_path: Path) -> TantivyTextIndex:
    idx = TantivyTextIndex(tmp_path)
    idx.add(DOCS)
    return idx


def top(index: TantivyTextIndex, query: str, k: int = 10, **kwargs: object) -> list[int]:
    return [label for label, _ in index.search([query], k, **kwargs)[0]]


@pytest.mark.parametrize("query", ["running", "run", "runs"])
def test_english_stemming(index: TantivyTextIndex, query: str) -> None:
    assert top(index, query) == [1]


@pytest.mark.parametrize("query", ["freinage", "frein", "freins", "mouillee", "mouillée"])
def test_french_stemming_and_accents(index: TantivyTextIndex, query: str) -> None:
    assert top(index, query) == [2]


@pytest.mark.parametrize(
    ("query", "first"),
    [("1K0615301M", 3), ("1k0615301m", 3), ("3512C", 5), ("JWT_token", 4),
     ("gdpr-art-17", 4)],
)
def test_codes_match_exactly_and_rank_first(index: TantivyTextIndex, query: str,
                                             first: int) -> None:
    assert top(index, query)[0] == first


def test_code_does_not_match_a_different_code(index: TantivyTextIndex) -> None:
    assert 9 not in top(index, "1K0615301M")
    assert top(index, "3512")[0] == 9


def test_phrase(index: TantivyTextIndex) -> None:
    assert top(index, '"front pads"') == [7]
    assert set(top(index, "front pads")) >= {3, 7, 8}


@pytest.mark.parametrize("query", ["pads NOT brake", "pads -brake", "pads AND NOT brake"])
def test_exclusion(index: TantivyTextIndex, query: str) -> None:
    assert sorted(top(index, query)) == [7, 8]


def test_and_or(index: TantivyTextIndex) -> None:
    assert top(index, "token AND rotated") == [6]
    assert sorted(top(index, "caterpillar OR calipers")) == [5, 8]
    assert top(index, "+pads +rear") == [8]


def test_field_queries(index: TantivyTextIndex) -> None:
    assert sorted(top(index, "title:pads")) == [3, 7]
    assert top(index, "headings:authentication") == [4]
    assert top(index, "title:freins") == [2]  # the user field spans every language
    assert top(index, 'content:"front calipers"') == [8]
    assert sorted(top(index, "title:(brake OR engine)")) == [1, 3]


def test_plain_words_search_title_headings_and_content_as_one_text(tmp_path: Path) -> None:
    # One combined field: a word counts the same in a title as in the body (separate
    # boosted fields over-rewarded short titles; see the module docstring), and a word
    # only in the heading or title still finds the chunk.
    idx = TantivyTextIndex(tmp_path)
    idx.add([TextDocument(1, "about gearbox oil and filters"),
             TextDocument(2, "about oil and filters", title="Gearbox"),
             TextDocument(3, "about oil and filters", headings="Gearbox > Service")])
    hits = idx.search(["gearbox"], 10)[0]
    assert sorted(label for label, _ in hits) == [1, 2, 3]
    assert hits[0][1] == pytest.approx(hits[1][1])  # same length, same tf: same score
    assert top(idx, "title:gearbox") == [2]
    assert top(idx, "headings:service") == [3]


@pytest.mark.parametrize(
    ("query", "hint"),
    [('"front pads', "double quote"), ("(brakes OR pads", "parenthesis"),
     ("brakes OR pads)", "parenthesis"), ("pads AND", "AND"), ("NOT pads", "excludes"),
     ("   ", "empty")],
)
def test_syntax_errors_raise_with_a_hint(index: TantivyTextIndex, query: str, hint: str) -> None:
    with pytest.raises(InvalidQueryError, match=hint):
        index.search([query], 5)


def test_lenient_is_suggested_only_where_it_would_find_words(index: TantivyTextIndex) -> None:
    """'???' refused with "or search its words as they are: --lenient", and --lenient then
    refused it again: the hint sent the user round in a circle."""
    with pytest.raises(InvalidQueryError, match="--lenient"):
        index.search(['"front pads'], 5)
    for query in ("???", '"', "( ) !!"):
        with pytest.raises(InvalidQueryError, match="no searchable words") as refused:
            index.search([query], 5)
        assert "lenient" not in str(refused.value), query
        with pytest.raises(InvalidQueryError, match="no searchable words"):
            index.search([query], 5, lenient=True)


def test_a_word_too_long_to_index_finds_nothing_rather_than_an_error(index: TantivyTextIndex) -> None:
    # a word past what the analyzers index alone was refused as a query that "only excludes
    # terms (NOT / -)", and in a hybrid search took the vectors down too
    blob = "a1" * (MAX_TOKEN_CHARS // 2)
    assert index.search([blob], 5) == [[]]
    assert index.search(["b2" * 200, f'"{blob}"'], 5) == [[], []]
    assert 3 in top(index, f"{blob} brake")
    with pytest.raises(InvalidQueryError, match="only excludes"):
        index.search(["NOT pads"], 5)


LONG_WORDS = {
    11: "commit da39a3ee5e6b4b0d3255bfef95601890afd80709 fixed the brake sensor",
    12: "checksum e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the image",
    13: "raise com.example.billing.service.impl.InvoiceServiceImpl when totals drift",
    14: "Das Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz wurde aufgehoben.",
}


@pytest.mark.parametrize("label, query", [
    (11, "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
    (12, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    (13, "com.example.billing.service.impl.InvoiceServiceImpl"),
    (14, "Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz"),
])
def test_digests_dotted_names_and_long_compounds_are_found_exactly(
        index: TantivyTextIndex, label: int, query: str) -> None:
    # Under tantivy's default limit of 40 bytes each of these matched nothing at all.
    index.add([TextDocument(n, text) for n, text in LONG_WORDS.items()])
    assert top(index, query) == [label]


def test_an_index_built_under_the_old_limit_keeps_it_until_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sha1 = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    with monkeypatch.context() as patch:
        patch.setattr(tantivy_text, "MAX_TOKEN_CHARS", LEGACY_MAX_TOKEN_CHARS)
        old = TantivyTextIndex(tmp_path)
        old.add([TextDocument(n, text) for n, text in LONG_WORDS.items()])
        old.save(7)
        del old
    stamp_path = tmp_path / tantivy_text.STAMP
    stamp = json.loads(stamp_path.read_text())
    del stamp["max_token"]  # as the releases before the limit was stamped wrote it
    stamp_path.write_text(json.dumps(stamp))
    reopened = TantivyTextIndex(tmp_path)
    # Kept, not rebuilt, and its query words cut as its documents were.
    assert reopened.generation == 7 and len(reopened) == len(LONG_WORDS)
    assert top(reopened, sha1) == [] and top(reopened, f"{sha1} brake") == [11]
    del reopened
    shutil.rmtree(tmp_path / tantivy_text.INDEX_DIR)  # what a rebuild (`repair`) does
    rebuilt = TantivyTextIndex(tmp_path)
    rebuilt.add([TextDocument(n, text) for n, text in LONG_WORDS.items()])
    rebuilt.save(8)
    assert top(rebuilt, sha1) == [11]
    assert json.loads(stamp_path.read_text())["max_token"] == MAX_TOKEN_CHARS


@pytest.mark.parametrize("value", ["40", 0, 10**9, True, None])
def test_a_damaged_token_limit_in_the_stamp_rebuilds_the_derived_index(
        tmp_path: Path, value: object) -> None:
    idx = TantivyTextIndex(tmp_path)
    idx.add(DOCS)
    idx.save(4)
    del idx
    stamp_path = tmp_path / tantivy_text.STAMP
    stamp_path.write_text(json.dumps({**json.loads(stamp_path.read_text()), "max_token": value}))
    reopened = TantivyTextIndex(tmp_path)
    assert reopened.generation is None and len(reopened) == 0


def test_groups_nested_past_the_limit_are_a_syntax_error(index: TantivyTextIndex) -> None:
    # 600 levels overflowed the translator's recursion: a BackendError that said to
    # repair the index
    deep = "(" * 600 + "brake AND pads" + ")" * 600
    with pytest.raises(InvalidQueryError, match="nests groups more than 32 deep"):
        index.search([deep], 5)
    assert 3 in top(index, deep, lenient=True)
    assert 3 in top(index, "(" * 32 + "brake AND pads" + ")" * 32)


def test_lenient_mode_searches_the_words(index: TantivyTextIndex, tmp_path: Path) -> None:
    assert 7 in top(index, '"front pads', lenient=True)
    assert 3 in top(index, "(brake OR pads", lenient=True)
    lenient = TantivyTextIndex(tmp_path / "lenient", lenient=True)
    lenient.add(DOCS)
    assert 7 in top(lenient, '"front pads')


@pytest.mark.parametrize(
    "query",
    ["What is 5-HT? (serotonin) engine", "it's the engine", "engine: low speed?",
     "x [1 TO 2] engine", "engine^2 ~ speed!", "Is 10% < 6 months? engine", "a/b engine",
     "1) engine", "E2f-1, -2, -3 engine", "+1 engine", "engine && speed || smooth",
     "author:smith engine"],
)
def test_natural_language_punctuation_never_errors(index: TantivyTextIndex, query: str) -> None:
    assert {1, 5} & set(top(index, query))  # one of the two chunks about the query's words


def _queries(path: Path, limit: int | None) -> list[str]:
    assert path.exists(), f"{path} is missing: set $ENGINELIB_DATASETS to the shared datasets"
    lines = path.read_text(encoding="utf-8").splitlines()[:limit]
    return [json.loads(line)["text"] for line in lines]


def test_scifact_queries_parse(index: TantivyTextIndex) -> None:
    queries = _queries(SCIFACT_QUERIES, 50)
    assert len(index.search(queries, 3)) == len(queries)


def test_all_beir_queries_parse(index: TantivyTextIndex) -> None:
    queries = _queries(SCIFACT_QUERIES, None) + _queries(NFCORPUS_QUERIES, None)
    for query in queries:
        index._parse(query, lenient=False)  # strict parsing: not one may fail


def test_highlight_terms(index: TantivyTextIndex) -> None:
    terms = index.highlight_terms('Running "front pads" -brake JWT_token freinage')
    assert terms[:2] == ["running", "run"]
    assert {"front", "pads", "pad", "jwt_token", "jwt", "token", "freinage"} <= set(terms)
    assert "brake" not in terms
    assert index.highlight_terms('"unbalanced quote') == ["unbalanced", "unbalanc", "quote",
                                                          "quot"]


def test_filter_keeps_bm25_scores(index: TantivyTextIndex) -> None:
    (full,) = index.search(["pads"], 10)
    (filtered,) = index.search(["pads"], 10, allowed=[8, 7])
    assert filtered == [pair for pair in full if pair[0] in (7, 8)]


def test_unknown_language_is_indexed_without_stemming(tmp_path: Path) -> None:
    idx = TantivyTextIndex(tmp_path)
    idx.add([TextDocument(1, "Bremsscheiben wechseln", language="de"),
             TextDocument(2, "runs", language="EN-us")])
    assert top(idx, "bremsscheiben") == [1]
    assert top(idx, "running") == [2]


def test_bad_arguments(index: TantivyTextIndex, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        index.search("pads", 5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        index.add([TextDocument(-1, "x")])
    with pytest.raises(InvalidInputError):
        TantivyTextIndex(tmp_path / "x", languages=("en", "klingon"))


def test_search_before_save_disowns_the_stamp(tmp_path: Path) -> None:
    idx = TantivyTextIndex(tmp_path)
    idx.add(DOCS[:2])
    idx.save(1)
    idx.add(DOCS[2:4])
    assert len(idx) == 4  # forces a commit outside save()
    assert idx.generation is None
    # A crash now must not reopen as generation 1: the stamp on disk says so too.
    stamp = json.loads((tmp_path / tantivy_text.STAMP).read_text())
    assert stamp["generation"] is None
    idx.save(2)
    del idx
    assert TantivyTextIndex(tmp_path).generation == 2


def test_corrupted_index_reopens_empty(tmp_path: Path) -> None:
    idx = TantivyTextIndex(tmp_path)
    idx.add(DOCS)
    idx.save(4)
    del idx
    (tmp_path / tantivy_text.INDEX_DIR / "meta.json").write_text("{garbage")
    reopened = TantivyTextIndex(tmp_path)
    assert reopened.generation is None
    assert len(reopened) == 0
    reopened.add(DOCS[:1])
    reopened.save(5)
    assert TantivyTextIndex(tmp_path).generation == 5


def test_other_languages_on_disk_rebuild(tmp_path: Path) -> None:
    idx = TantivyTextIndex(tmp_path)
    idx.add(DOCS)
    idx.save(4)
    del idx
    other = TantivyTextIndex(tmp_path, languages=("en", "de"))
    assert other.generation is None and len(other) == 0
