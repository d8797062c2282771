"""Structure-true chunks: sections bound chunks and name them, in English and French."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import enginelib
from enginelib import ChunkingConfig, HashingEmbedder
from enginelib.chunker import Chunker
from enginelib.errors import IncompatibleStoreError
from enginelib.sections import HeadingIndex, find_headings
from enginelib.text import normalize_text
from tests.helpers import DATASETS
from tests.test_chunker import assert_invariants

REGULATORY = DATASETS / "regulatory"
ACTS = ("gdpr.md", "gdpr_recitals.md", "eu_ai_act.md", "eu_ai_act_recitals.md")
_MD_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.MULTILINE)


def _units(text: str) -> list[tuple[int, int, str]]:
    """(start, end, title) of every article, recital and annex (the ``####`` headings)."""
    heads = [(m.start(), len(m.group(1)), m.group(2).strip()) for m in _MD_HEADING.finditer(text)]
    units = []
    for i, (offset, level, title) in enumerate(heads):
        if level == 4:
            end = next((o for o, lv, _ in heads[i + 1 :] if lv <= 4), len(text))
            units.append((offset, end, title))
    return units


def test_regulatory_chunks_lie_inside_one_article_with_its_heading_path(tmp_path: Path) -> None:
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(32))
    report = store.ingest_path(*(REGULATORY / name for name in ACTS), truth_level="L1")
    assert len(report.added) == len(ACTS)
    total = inside = named = 0
    doc_ids = [r[0] for r in store._catalog.con.execute("SELECT document_id FROM documents").fetchall()]
    for doc_id in doc_ids:
        shown = store.show(doc_id)
        text = shown["document"]["content"]
        units = _units(text)
        assert len(units) > 90
        for chunk in shown["chunks"]:
            start, end = chunk["start_offset"], chunk["end_offset"]
            assert text[start:end] == chunk["content"]
            # units the chunk has real text of (a chapter heading line opening it is fine)
            touched = [u for u in units if u[0] < end and start < u[1]
                       and text[max(u[0], start) : min(u[1], end)].strip()]
            total += 1
            inside += len(touched) <= 1
            named += len(touched) == 1 and touched[0][2] in chunk["heading_path"].split(" > ")
    store.close()
    assert total > 600
    assert inside / total >= 0.95, f"{inside}/{total} chunks inside one article"
    assert named / total >= 0.95, f"{named}/{total} chunks with their article's heading path"


FRENCH = """TITRE I
Dispositions générales

Article premier
Objet et objectifs

1. Le présent règlement établit des règles relatives à la protection des personnes physiques à l'égard du traitement des données à caractère personnel et des règles relatives à la libre circulation de ces données.

2. Le présent règlement protège les libertés et droits fondamentaux des personnes physiques, et en particulier leur droit à la protection des données à caractère personnel.

Article 2 — Champ d'application matériel

1. Le présent règlement s'applique au traitement de données à caractère personnel, automatisé en tout ou en partie, ainsi qu'au traitement non automatisé de données à caractère personnel contenues ou appelées à figurer dans un fichier.

CHAPITRE III
Droits de la personne concernée

Section 3
Rectification et effacement

Art. 17 : Droit à l'effacement (« droit à l'oubli »)

1. La personne concernée a le droit d'obtenir du responsable du traitement l'effacement, dans les meilleurs délais, de données à caractère personnel la concernant et le responsable du traitement a l'obligation d'effacer ces données à caractère personnel dans les meilleurs délais. L'article 6, paragraphe 1, s'applique.
Article 6 du présent règlement s'applique également à ces traitements.

Article 18
Droit à la limitation du traitement

1. La personne concernée a le droit d'obtenir du responsable du traitement la limitation du traitement.
"""


def test_french_plain_text_articles_are_sections() -> None:
    text = normalize_text(FRENCH)
    index = HeadingIndex(find_headings(text))
    assert [p[-1] for p in index.paths] == [
        "TITRE I — Dispositions générales",
        "Article premier — Objet et objectifs",
        "Article 2 — Champ d'application matériel",
        "CHAPITRE III — Droits de la personne concernée",
        "Section 3 — Rectification et effacement",
        "Art. 17 : Droit à l'effacement (« droit à l'oubli »)",
        "Article 18 — Droit à la limitation du traitement",
    ]
    # "Article 6 du présent règlement ..." continues a paragraph: not a heading
    assert index.paths[5] == (
        "TITRE I — Dispositions générales", "CHAPITRE III — Droits de la personne concernée",
        "Section 3 — Rectification et effacement",
        "Art. 17 : Droit à l'effacement (« droit à l'oubli »)",
    )
    config = ChunkingConfig(max_tokens=200, overlap_tokens=10, min_tokens=40)
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    erasure = [c for c in chunks if "effacement, dans" in c.content]
    assert len(erasure) == 1
    assert erasure[0].headings[-1].startswith("Art. 17")
    assert "Article 18" not in erasure[0].content and "Article 2 —" not in erasure[0].content
    # the chapter and section headings open the article they hold, filed under it
    assert erasure[0].content.startswith("CHAPITRE III")
    for chunk in chunks:
        articles = re.findall(r"^(?:Article|Art\.) \w+\s*(?:$|[—:])", chunk.content, re.MULTILINE)
        assert len(articles) <= 1, chunk.content


def test_every_heading_level_and_setext_bound_chunks() -> None:
    body = " ".join(f"Sentence {i} of the body text." for i in range(6))
    text = normalize_text(
        f"Guide\n=====\n\n{body}\n\nInstall\n-------\n\n{body}\n\n"
        f"##### Deep heading\n\n{body}\n\n###### Deeper\n\n{body}\n"
    )
    config = ChunkingConfig(max_tokens=200, overlap_tokens=10, min_tokens=5)
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    assert [c.headings for c in chunks] == [
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Deep heading"),
        ("Guide", "Install", "Deep heading", "Deeper"),
    ]
    assert chunks[1].content.startswith("Install\n---")


def test_long_section_splits_inside_itself_and_keeps_its_path() -> None:
    long_body = "\n\n".join(
        f"{i}. The controller shall keep record {i} of the processing activities." for i in range(60)
    )
    text = f"#### Article 30 — Records\n\n{long_body}\n\n#### Article 31 — Cooperation\n\nShort."
    config = ChunkingConfig(max_tokens=100, overlap_tokens=10, min_tokens=30)
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    assert len(chunks) > 5
    assert all(c.headings == ("Article 30 — Records",) for c in chunks[:-1])
    # the short numbered article is its own chunk: it is what a citation names
    assert chunks[-1].content == "#### Article 31 — Cooperation\n\nShort."
    assert chunks[-1].headings == ("Article 31 — Cooperation",)
    for c in chunks[:-1]:  # cut between paragraphs, never inside one
        assert c.content.rstrip().endswith(".")


def test_tiny_numbered_siblings_stay_apart_unnumbered_ones_join() -> None:
    config = ChunkingConfig(max_tokens=200, overlap_tokens=0, min_tokens=50)
    numbered = "".join(f"## Recital ({i})\n\nA short recital {i}.\n\n" for i in range(1, 5))
    assert len(Chunker(config).chunk(numbered)) == 4
    plain = "".join(f"## Note {c}\n\nA short note.\n\n" for c in "ABCD")
    joined = Chunker(config).chunk(plain)
    assert len(joined) == 1
    assert joined[0].headings == ()  # the notes share no heading but the (empty) root


def test_store_built_with_the_flat_chunker_is_flagged_for_reindex(tmp_path: Path) -> None:
    flat = ChunkingConfig(structure="flat")
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16), chunking=flat)
    store.close()
    manifest = (tmp_path / "s" / "manifest.json").read_text()
    assert '"structure"' not in manifest  # what a store of the old chunker recorded
    with pytest.raises(IncompatibleStoreError, match="reindex"):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16), chunking=ChunkingConfig())
    reopened = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16))
    assert reopened.chunker.config.structure == "flat"  # keeps chunking as it was built
    reopened.close()


def test_reindex_moves_a_flat_store_to_section_chunks(tmp_path: Path) -> None:
    text = "## First\n\n" + "One line of text. " * 30 + "\n\n## Second\n\n" + "Other text. " * 50
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16),
                           chunking=ChunkingConfig(structure="flat"))
    store.ingest_documents([enginelib.LoadedDocument(id="d", text=text)], truth_level="L1")
    store.reindex(embedder=HashingEmbedder(16))
    assert store.manifest.chunking_hash == ChunkingConfig().config_hash()
    paths = [c["heading_path"] for c in store.show("d")["chunks"]]
    assert paths == ["First", "Second"]
    store.close()
    reopened = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16), chunking=ChunkingConfig())
    reopened.close()


def test_numbered_line_forms() -> None:
    text = normalize_text(
        "Intro.\n\nArticle 1er\nObjet\n\ntext\n\nArticle 2 bis — Ajout\n\ntext\n\n"
        "CHAPITRE PREMIER\n\nArt. 5\n\n1. The text applies.\n\nArtikel 3 - Begriffe\n\ny\n\n"
        "Article 6(1) applies here.\n\nSection 2.3: Details\n\nz\n\nPart mix\n"
    )
    titles = [h.title for h in find_headings(text)]
    assert titles == ["Article 1er — Objet", "Article 2 bis — Ajout", "CHAPITRE PREMIER",
                      "Art. 5", "Artikel 3 - Begriffe", "Section 2.3: Details"]


# The same regulation as its other official languages print it: each article is one chunk
# (or several, all inside it), named by its own heading.
EU_LANGUAGES = {
    "es": ("CAPÍTULO III\n\nDerechos del interesado\n\n", "Artículo {n}\n{title}\n\n",
           "El interesado tendrá derecho a obtener del responsable la información pertinente. "),
    "it": ("CAPO III\n\nDiritti dell'interessato\n\n", "Articolo {n}\n{title}\n\n",
           "L'interessato ha il diritto di ottenere dal titolare del trattamento le informazioni. "),
    "pt": ("CAPÍTULO III\n\nDireitos do titular dos dados\n\n", "Artigo {n}.º\n{title}\n\n",
           "O titular dos dados tem o direito de obter do responsável pelo tratamento a informação. "),
    "nl": ("HOOFDSTUK III\n\nRechten van de betrokkene\n\n", "Artikel {n}\n{title}\n\n",
           "De betrokkene heeft het recht van de verwerkingsverantwoordelijke informatie te krijgen. "),
    "de": ("Abschnitt 3\n\nRechte der betroffenen Person\n\n", "§ {n} {title}\n\n",
           "Die betroffene Person hat das Recht, von dem Verantwortlichen Auskunft zu verlangen. "),
}


@pytest.mark.parametrize("language", sorted(EU_LANGUAGES))
def test_articles_of_other_eu_languages_bound_chunks(language: str) -> None:
    # "Artículo 17", "CAPO III", "Artigo 4.º", "Hoofdstuk", "§ 5" were running text: an
    # article's chunk began with the previous one's tail and named none of them.
    chapter, article, sentence = EU_LANGUAGES[language]
    text = chapter
    starts = {}
    for n, title in ((15, "Acceso"), (16, "Rectificación"), (17, "Supresión")):
        starts[n] = len(text)
        text += article.format(n=n, title=title) + "".join(
            f"{i}. " + sentence * 3 + "\n\n" for i in range(1, 2 + n % 3))
    text = normalize_text(text)
    chunks = Chunker(ChunkingConfig(max_tokens=60, overlap_tokens=0, min_tokens=10)).chunk(text)
    ends = dict(zip(starts, [*list(starts.values())[1:], len(text)], strict=True))
    assert chunks[0].end_offset <= starts[15]  # the chapter's own lines
    for chunk in chunks[1:]:
        n = max(k for k, start in starts.items() if start <= chunk.start_offset)
        assert chunk.end_offset <= ends[n], (language, chunk.heading_path)
        assert str(n) in chunk.headings[-1] and len(chunk.headings) == 2, chunk.headings


def test_store_built_before_paragraph_chunks_keeps_them_until_reindex(tmp_path: Path) -> None:
    # a long section of numbered paragraphs: one chunk before, several after a reindex
    text = "## Article 1\n\n" + "\n".join(
        f"{i}. " + "The controller shall keep records of processing activities. " * 6
        for i in range(1, 7)
    )
    before = ChunkingConfig(paragraph_tokens=0)
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16), chunking=before)
    store.ingest_documents([enginelib.LoadedDocument(id="d", text=text)], truth_level="L1")
    manifest = (tmp_path / "s" / "manifest.json").read_text()
    assert '"paragraph_tokens"' not in manifest  # what a store of the older chunker recorded
    assert len(store.show("d")["chunks"]) == 1
    store.close()
    with pytest.raises(IncompatibleStoreError, match="reindex"):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16), chunking=ChunkingConfig())
    reopened = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16))
    assert reopened.chunker.config.paragraph_tokens == 0  # keeps chunking as it was built
    reopened.reindex(embedder=HashingEmbedder(16))
    assert reopened.manifest.chunking_hash == ChunkingConfig().config_hash()
    chunks = reopened.show("d")["chunks"]
    assert len(chunks) > 1
    assert all(c["heading_path"] == "Article 1" for c in chunks)
    reopened.close()


def test_underlines_under_a_paragraph_that_is_no_heading_are_read_in_linear_time() -> None:
    # 20,000 "---" lines under a "#tag" line (or a table row) took close to a minute:
    # each underline walked the whole paragraph above it back again.
    for first in ("#tag", "| a | b |"):
        text = first + "\n" + "---\n" * 20_000 + "\nTitle\n=====\n\nBody.\n"
        started = time.perf_counter()
        headings = find_headings(text)
        chunks = Chunker().chunk(text)
        elapsed = time.perf_counter() - started
        assert [(h.title, h.level) for h in headings] == [("Title", 1)]
        assert chunks[-1].headings == ("Title",)
        assert elapsed < 5, f"took {elapsed:.1f}s: underlines are no longer read in linear time"


# Sections of every kind the chunker bounds on (ATX at each level, closing marks, numbered
# lines, setext), and bodies with what must not open one (fenced "#" lines, "(a)" points).
_HEADINGS = st.one_of(
    st.tuples(st.integers(1, 6), st.sampled_from(["Intro", "Données", "Ω", "x #", "Scope ###"]))
    .map(lambda h: "#" * h[0] + " " + h[1]),
    st.sampled_from(["Article 1", "Article 2 — Scope", "Section 2.3", "CHAPTER IV", "Annex III",
                     "Artikel 3", "Article premier", "Title\n=====", "Sub\n-----"]),
)
_BODY = st.lists(st.sampled_from([
    "The controller shall act. ", "word ", "données ", "中文。", "e\u0301 ", "😀 ", "\u200b",
    "x\r\ny ", "\r", "(a) point; ", "1. item\n", "```\n# no\n```\n", "#### fenced?\n", "\t",
]), max_size=40).map("".join)


@st.composite
def _section_configs(draw: st.DrawFn) -> ChunkingConfig:
    most = draw(st.integers(16, 120))
    return ChunkingConfig(max_tokens=most, overlap_tokens=draw(st.integers(0, most // 3)),
                          min_tokens=draw(st.integers(0, most // 2)),
                          paragraph_tokens=draw(st.sampled_from([0, 200, most // 2])))


@settings(max_examples=100, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(sections=st.lists(st.tuples(_HEADINGS, _BODY), min_size=1, max_size=10),
       config=_section_configs())
def test_a_chunk_crosses_a_section_boundary_only_to_join_a_short_section_and_is_named_by_its_own(
    sections: list[tuple[str, str]], config: ChunkingConfig
) -> None:
    text = normalize_text("\n\n".join(f"{heading}\n\n{body}" for heading, body in sections))
    chunks = Chunker(config).chunk(text)
    assert_invariants(text, chunks, config)
    count = Chunker(config).count_tokens
    starts = [0, *(h.offset for h in find_headings(text) if h.offset > 0), len(text)]
    for before, boundary, after in zip(starts, starts[1:], starts[2:]):
        if any(c.start_offset < boundary < c.end_offset for c in chunks):
            # joined: the section before or after it is under min_tokens (a token or two
            # of slack: counts of the parts and of the whole differ at the seam)
            shorter = min(count(text[before:boundary]), count(text[boundary:after]))
            assert shorter < config.min_tokens + 3, (boundary, shorter)
    # A chunk inside one section is named by it, also one cut from a joined run of sections
    index = HeadingIndex(find_headings(text))
    for chunk in chunks:
        for start, end in zip(starts, starts[1:]):
            if start <= chunk.start_offset and chunk.end_offset <= end:
                assert chunk.headings == index.path_at(start), (chunk.start_offset, start)


def test_the_chunks_of_a_long_section_joined_by_a_short_sibling_carry_the_long_ones_path() -> None:
    """A short section joined to a long sibling: the joined run is cut into paragraph-sized
    chunks, and every one of them, also those wholly inside the long section, was named by
    the parent the two share ("Guide", not "Guide > Definitions")."""
    lines = "\n".join(f"Term {i}: the word number {i} means a part of the brake assembly."
                      for i in range(20))
    text = f"# Guide\n\n## Scope\n\nThis guide covers brakes.\n\n## Definitions\n\n{lines}"
    chunks = Chunker(ChunkingConfig()).chunk(text)
    definitions = text.index("## Definitions")
    assert len(chunks) >= 2 and chunks[0].start_offset < definitions < chunks[0].end_offset
    assert chunks[0].headings == ("Guide",)  # Scope and the start of Definitions
    for chunk in chunks[1:]:
        assert chunk.start_offset > definitions
        assert chunk.headings == ("Guide", "Definitions")


def test_a_dash_line_under_a_list_item_or_a_thematic_break_is_no_heading(tmp_path: Path) -> None:
    # "- step two" then "---" is a list then a thematic break (CommonMark: an underline never
    # continues a list item); it was read as a level-2 heading titled "- step one - step
    # two", which took the place of "## Brake service" in the path of every chunk after it.
    # Likewise "---" under a thematic break (a heading titled "---"), and under a quote.
    body = "The rotor torque is checked every year by the workshop."
    text = (f"# Manual\n\n## Brake service\n\nSteps:\n\n- step one\n- step two\n---\n\n{body}\n\n"
            f"Note\n\n---\n---\n\n{body}\n\n> quoted advice\n---\n\n{body}\n\n"
            f"***\nAfter a break\n---\n\n{body}\n")
    assert [(h.title, h.level) for h in find_headings(text)] == [
        ("Manual", 1), ("Brake service", 2), ("After a break", 2)]
    chunks = Chunker(ChunkingConfig(max_tokens=60, overlap_tokens=0, min_tokens=0)).chunk(text)
    assert [(c.headings, c.content.split("\n", 1)[0]) for c in chunks] == [
        (("Manual",), "# Manual"), (("Manual", "Brake service"), "## Brake service"),
        (("Manual", "After a break"), "After a break")]
    # through a store: the hit on the text after the list names the section it belongs to
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16))
    store.ingest_documents([enginelib.LoadedDocument(id="d", text=text)], truth_level="L1")
    paths = {c["heading_path"] for c in store.show("d")["chunks"]}
    assert not any("step" in p or "---" in p or "quoted" in p for p in paths), paths
    store.close()


def test_a_longer_fence_around_a_shown_code_block_keeps_its_lines_out_of_the_headings() -> None:
    # A Markdown guide shows a fenced block inside a "````" one: its "```python" line closed
    # the outer fence, so "# install the package" in the shown shell block became a section
    # of the guide (and the real "```" closing line opened a fence). A fence closes only on
    # a run of its own mark at least as long, with nothing after it (CommonMark).
    text = ("# Guide\n\nWrite a block like this:\n\n````markdown\n```python\n# install the package\n"
            "pip install enginelib\n```\n````\n\nThen the rotor torque is checked.\n\n"
            "## Next\n\nBody.\n\n~~~~\n~~~\n# not a heading either\n~~~\n~~~~\n\n"
            "```\n# in code\n```python\n# still code\n```\n\n"
            "```x``` opens no fence: it is inline code.\n\n## Last\n\nEnd.\n")
    assert [h.title for h in find_headings(text)] == ["Guide", "Next", "Last"]
    chunks = Chunker(ChunkingConfig(max_tokens=60, overlap_tokens=0, min_tokens=0)).chunk(text)
    assert [c.headings for c in chunks] == [("Guide",), ("Guide", "Next"), ("Guide", "Last")]
    assert all(text[c.start_offset:c.end_offset] == c.content for c in chunks)
