"""``results.assemble`` (the cite stage's fast constructor) builds what ``__init__`` builds,
and a lazy quote reads as the quote ``best_quote`` cuts."""

from __future__ import annotations

import dataclasses

import pytest

from enginelib.search.quotes import LazyQuote, best_quote
from enginelib.search.results import Citation, Hit, Scores, assemble, assemble_rows

TEXT = "Scope of the rules. Personal data must be erased without undue delay. Exceptions apply."


def _citation_values(quote: object) -> dict[str, object]:
    return dict(number=1, document_id="gdpr", chunk_index=3, quote=quote, start_offset=100,
                end_offset=100 + len(TEXT), display_text="[1] GDPR (Constructeur)",
                truth_level="L1", source_path="gdpr.md", source_type="md", source_url=None,
                title="GDPR", heading_path="Art. 17", page_start=None, page_end=None,
                document_version="1.0.0", index_version="2026.11.0",
                quote_start=quote if isinstance(quote, LazyQuote) else 120,
                quote_end=quote if isinstance(quote, LazyQuote) else 170)


def test_assembled_objects_equal_constructed_ones() -> None:
    scores = dict(vector_rank=1, vector_score=0.8, bm25_rank=None, bm25_score=None, fused=0.016,
                  sibling=0.0, similarity=0.8, boost=0.0, rerank_score=None)
    assert assemble(Scores, **scores) == Scores(**scores)
    citation = _citation_values("must be erased")
    assert assemble(Citation, **citation) == Citation(**citation)  # type: ignore[arg-type]
    hit = dict(rank=1, label=7, document_id="gdpr", chunk_index=3, content=TEXT,
               start_offset=100, end_offset=100 + len(TEXT), truth_level="L1",
               scores=Scores(**scores), citation=Citation(**citation),  # type: ignore[arg-type]
               highlight_terms=("erased",), title="GDPR", heading_path="Art. 17")
    built = assemble(Hit, **hit)
    assert built == Hit(**hit)  # type: ignore[arg-type]
    assert [h.term for h in built.highlights] == ["erased"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.rank = 2  # type: ignore[misc]


def test_a_lazy_quote_reads_as_the_cut_quote() -> None:
    lazy = LazyQuote(TEXT, 100, ("erased",))
    citation = assemble(Citation, **_citation_values(lazy))
    cut = best_quote(TEXT, 100, ("erased",))
    assert (citation.quote, citation.quote_start, citation.quote_end) == (
        cut.text, cut.start_offset, cut.end_offset)
    assert citation.quote == "Personal data must be erased without undue delay."
    assert dataclasses.asdict(citation)["quote"] == cut.text
    assert TEXT[citation.quote_start - 100 : citation.quote_end - 100] == citation.quote


def test_assemble_refuses_a_missing_or_unknown_field() -> None:
    values = dict(vector_rank=1, vector_score=0.8, bm25_rank=None, bm25_score=None, fused=0.1,
                  similarity=0.8, boost=0.0)
    with pytest.raises(TypeError, match="rerank_score"):
        assemble(Scores, **values)
    with pytest.raises(TypeError, match="colour"):
        assemble(Scores, **values, rerank_score=None, colour="red")


def test_assemble_rows_builds_a_page_from_columns() -> None:
    lazy = [LazyQuote(TEXT, 100, ("erased",)), LazyQuote(TEXT, 100, ("scope",))]
    rows = [_citation_values(quote) for quote in lazy]
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    built = assemble_rows(Citation, **columns)
    assert built == [Citation(**row) for row in rows]  # type: ignore[arg-type]
    assert [c.quote for c in built] == ["Personal data must be erased without undue delay.",
                                        "Scope of the rules."]
    assert assemble_rows(Scores, **{name: [] for name in Scores.__dataclass_fields__}) == []
    with pytest.raises(TypeError, match="one length"):
        assemble_rows(Citation, **{**columns, "number": [1]})
    with pytest.raises(TypeError, match="page_end"):
        assemble_rows(Citation, **{k: v for k, v in columns.items() if k != "page_end"})
