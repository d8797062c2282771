"""A question that names a provision ("Article 6(1)(f)", "GDPR Art. 6", "considérant 26")
gets that provision first, in the default configuration (hybrid, gate on)."""

from __future__ import annotations

from pathlib import Path

import pytest

import enginelib
from enginelib import HashingEmbedder
from enginelib.references import provisions_of, references
from enginelib.types import LoadedDocument


@pytest.mark.parametrize(("text", "expected"), [
    ("Article 6(1)(f)", {("article", "6")}),
    ("GDPR Art. 6", {("article", "6")}),
    ("art 9 GDPR", {("article", "9")}),
    ("Artikel 5a DSGVO", {("article", "5a")}),
    ("§5 BDSG", {("article", "5")}),
    ("Article premier", {("article", "1")}),
    ("considérant (26)", {("recital", "26")}),
    ("Recital 26 and recital 27", {("recital", "26"), ("recital", "27")}),
    ("Annex III", {("annex", "III")}),
    ("Section 2.3.", {("section", "2.3")}),
    # not references: a plural, an ordinal, a word before a number, lower-case roman
    ("articles 1 à 23", set()),
    ("Article 17th", set()),
    ("the art of 3 things", set()),
    ("annex iii", set()),
    ("startart 5", set()),
])
def test_references_named_by_a_text(text: str, expected: set[tuple[str, str]]) -> None:
    assert references(text) == expected


def test_a_chunk_is_inside_the_provision_each_heading_part_names_first() -> None:
    # "Article 7 — Amendments to Annex III" is Article 7, about Annex III
    assert provisions_of("", "EU AI Act Article 7 — Amendments to Annex III") == {("article", "7")}
    assert provisions_of("CHAPITRE III — Droits > Section 3 — Effacement > Article 17 — Droit à "
                         "l'effacement (voir l'article 21)", "RGPD") == {
        ("chapter", "III"), ("section", "3"), ("article", "17")}


def _law() -> LoadedDocument:
    # Article 14 cites "Article 6(1)(f)" word for word; Article 6 never says "paragraph" or
    # "point": BM25 alone ranks Article 14 first for a question naming Article 6.
    sections = []
    for n in range(1, 31):
        if n == 6:
            body = ("Processing shall be lawful only if one of the following applies: the data "
                    "subject has given consent; or processing is necessary for the legitimate "
                    "interests pursued by the controller.")
        elif n == 14:
            body = ("Where processing is based on Article 6(1)(f), paragraph 1 point (f) of "
                    "Article 6, the controller shall provide the legitimate interests pursued "
                    "under Article 6(1)(f), paragraph 1, point (f).")
        else:
            body = f"Provision number {n} sets out duties of controllers in case {n}."
        sections.append(f"## Article {n} — Title {n}\n\n{body}\n")
    return LoadedDocument(id="law.md", text="# The Regulation\n\n" + "\n".join(sections),
                          title="The Regulation", language="en")


@pytest.fixture
def store(tmp_path: Path) -> enginelib.Store:
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([_law()])
    yield store
    store.close()


@pytest.mark.parametrize("question", [
    "Article 6(1)(f)", "Art. 6 paragraph 1 point (f)", "legitimate interests pursued Article 6",
])
def test_the_named_article_comes_first_in_the_default_search(store: enginelib.Store, question: str) -> None:
    response = store.search(question, log=False)
    assert response.status == "ok"
    assert response.hits[0].heading_path.endswith("Article 6 — Title 6")
    # the rest keep their fused order: Article 14, which cites it, follows
    assert any(h.heading_path.endswith("Article 14 — Title 14") for h in response.hits[1:4])


def test_without_a_named_provision_the_ranking_is_the_fused_one(store: enginelib.Store) -> None:
    plain = store.search("legitimate interests pursued paragraph point", strategy="fulltext", log=False)
    assert plain.hits[0].heading_path.endswith("Article 14 — Title 14")


def test_a_named_provision_the_corpus_lacks_changes_nothing(store: enginelib.Store) -> None:
    named = store.search("Article 99 legitimate interests paragraph point", log=False)
    plain = store.search("Article 99 legitimate interests paragraph point", log=False, rewrite=False)
    assert named.hits[0].heading_path.endswith("Article 14 — Title 14")
    assert [h.label for h in named.hits] == [h.label for h in plain.hits]


def test_the_title_names_a_document_s_provision(tmp_path: Path) -> None:
    # one document per provision, the number in its title (the Article 7 document is about
    # Annex III and says so more often than the annex does)
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([
        LoadedDocument(id="art-7", title="AI Act Article 7 — Amendments to Annex III",
                       text="The Commission may amend Annex III. Annex III lists high-risk areas; "
                            "amendments to Annex III follow the conditions of this Article."),
        LoadedDocument(id="anx-3", title="AI Act Annex III — High-risk AI systems",
                       text="High-risk AI systems are those listed in the following areas: "
                            "biometrics, critical infrastructure, education."),
    ])
    assert store.search("Annex III", log=False).hits[0].document_id == "anx-3"
    assert store.search("Article 7", log=False).hits[0].document_id == "art-7"
    store.close()


def test_pages_of_a_question_naming_a_provision_are_one_ranking(tmp_path: Path) -> None:
    # More candidates than one depth holds, and many chunks inside the named article: pages
    # stitched from several depths give the order of one deep request, no hit twice.
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64))
    text = "\n".join(
        f"## Article {n % 40} — Duties\n\nControllers keep records of processing {n}; "
        f"the record of Article {n % 7} applies.\n" for n in range(400))
    store.ingest_documents([LoadedDocument(id="big.md", text=text, language="en")])
    deep = store.search("records under Article 3", limit=300, log=False, candidates=100)
    paged = []
    for offset in range(0, 300, 25):
        paged += store.search("records under Article 3", limit=25, offset=offset, log=False,
                              candidates=100).hits
    assert [h.label for h in paged] == [h.label for h in deep.hits]
    assert len({h.label for h in paged}) == len(paged)
    inside = [h.heading_path.endswith("Article 3 — Duties") for h in deep.hits]
    assert inside[: sum(inside)] == [True] * sum(inside)  # every hit inside Article 3 first
    store.close()


def test_the_question_s_other_words_tell_two_laws_provisions_apart(tmp_path: Path) -> None:
    # Both laws have a Recital 144; the question names its law. BM25 alone prefers the AI
    # Act's short text (it says "recital 144" twice) even when the GDPR is asked for.
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([
        LoadedDocument(id="ai-144", title="EU AI Act Recital 144",
                       text="Recital 144: innovation. This recital 144 supports sandboxes."),
        LoadedDocument(id="gdpr-144", title="GDPR Recital 144",
                       text="Where a court seised of proceedings against a decision by a "
                            "supervisory authority has reason to believe that proceedings "
                            "concerning the same processing are brought before a competent "
                            "court in another Member State, it should contact that court."),
    ] + [LoadedDocument(id=f"gdpr-{n}", title=f"GDPR Recital {n}",
                        text=f"The GDPR sets rules on topic {n}.") for n in range(1, 30)])
    assert store.search("GDPR recital (144)", log=False).hits[0].document_id == "gdpr-144"
    assert store.search("recital 144 of the AI Act", log=False).hits[0].document_id == "ai-144"
    store.close()


def test_mmr_keeps_the_named_provision_first(store: enginelib.Store) -> None:
    # MMR reorders by its own relevance (the final scores), not by the boost stage's order:
    # Article 14 has the higher fused score. (The gate is off: MMR keeps two hits per
    # source, too few to cover "(1)", which only Article 14 holds.)
    response = store.search("Article 6(1)(f)", mmr=True, log=False, answerability_threshold=None)
    assert response.hits[0].heading_path.endswith("Article 6 — Title 6")
