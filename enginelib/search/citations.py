"""Citations for hits, term highlights, and the evidence-loop check of an answer's references."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..chunk_view import ChunkRecord
from ..errors import InvalidInputError
from ..types import TRUTH_LEVELS
from .highlights import find_highlights
from .quotes import LazyQuote
from .results import Citation, assemble_rows

__all__ = ["CitationCheck", "check_answer_citations", "citations_of", "display_name",
           "find_highlights", "make_citation"]


def display_name(record: ChunkRecord) -> str:
    return _display_name(record.title, record.source_path, record.document_id)


def _display_name(title: str | None, source_path: str | None, document_id: str) -> str:
    if title:
        return title
    if source_path:
        return source_path.rsplit("/", 1)[-1]
    return document_id


def make_citation(number: int, record: ChunkRecord, terms: Sequence[str] = ()) -> Citation:
    """The citation of a hit; its quote is the passage that best matches ``terms``, cut
    when first read."""
    rows = {name: [getattr(record, name)] for name in _RECORD_FIELDS}
    return citations_of([number], rows, [record.content], [record.heading_path or ""], terms)[0]


# The ChunkView fields a citation reads (``ChunkView.fields_at`` gives them as columns).
_RECORD_FIELDS = ("document_id", "chunk_index", "start_offset", "end_offset", "truth_level",
                  "source_path", "source_type", "source_url", "title", "page_start", "page_end",
                  "version", "index_version")


def citations_of(
    numbers: Sequence[int], rows: Mapping[str, Sequence[Any]], contents: Sequence[str],
    headings: Sequence[str], terms: Sequence[str] = (),
    shown: Sequence[Sequence[tuple[int, int]]] | None = None,
) -> list[Citation]:
    """The citations of a page of hits from the view's columns over it (``rows``) and their
    texts; each quote is cut when first read. ``shown[i]``: the ranges of hit i's document
    that hits ranked above it hold (its quote is chosen outside them where it can be)."""
    ranges = shown if shown is not None else [()] * len(contents)
    quotes = [LazyQuote(content, start, terms, seen)
              for content, start, seen in zip(contents, rows["start_offset"], ranges,
                                              strict=True)]
    display = [
        f"[{number}] {_display_name(title, path, document)} ({TRUTH_LEVELS[level].name})"
        for number, title, path, document, level in zip(
            numbers, rows["title"], rows["source_path"], rows["document_id"], rows["truth_level"],
            strict=True)
    ]
    return assemble_rows(
        Citation,
        number=numbers,
        document_id=rows["document_id"],
        chunk_index=rows["chunk_index"],
        quote=quotes,
        start_offset=rows["start_offset"],
        end_offset=rows["end_offset"],
        display_text=display,
        truth_level=rows["truth_level"],
        source_path=rows["source_path"],
        source_type=rows["source_type"],
        source_url=rows["source_url"],
        title=rows["title"],
        heading_path=headings,
        page_start=rows["page_start"],
        page_end=rows["page_end"],
        document_version=rows["version"],
        index_version=rows["index_version"],
        quote_start=quotes,
        quote_end=quotes,
    )


_NUMBER_REF = re.compile(r"\[(\d+)\]")
_CHUNK_REF = re.compile(r"\[Chunk\s+([^\]]+)\]", re.IGNORECASE)


@dataclass(frozen=True)
class CitationCheck:
    """Result of checking an answer's references against the citations it was given."""

    cited: tuple[str, ...]
    supported: tuple[str, ...]
    unsupported: tuple[str, ...]
    uncited_sentences: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.unsupported and bool(self.supported)


def check_answer_citations(answer: str, citations: Any) -> CitationCheck:
    """Which ``[n]`` / ``[Chunk X]`` references in ``answer`` match a given citation.

    ``citations``: the search response the answer was written from, its ``context``, or
    a sequence of its citations (or hits). ``[n]`` must be a citation number;
    ``[Chunk X]`` matches ``X`` as a chunk label ``document_id#chunk_index`` or a bare
    chunk index of a cited document. Sentences with no reference at all are reported too:
    no source, no answer.
    """
    if not isinstance(answer, str):
        raise InvalidInputError(f"answer must be a string, got {type(answer).__name__}")
    citations = _given_citations(citations)
    numbers = {str(c.number) for c in citations}
    chunk_keys = {f"{c.document_id}#{c.chunk_index}" for c in citations}
    chunk_keys |= {str(c.chunk_index) for c in citations}
    cited: list[str] = []
    supported: list[str] = []
    unsupported: list[str] = []
    for match in _NUMBER_REF.finditer(answer):
        ref = f"[{match.group(1)}]"
        cited.append(ref)
        (supported if match.group(1) in numbers else unsupported).append(ref)
    for match in _CHUNK_REF.finditer(answer):
        key = match.group(1).strip()
        ref = f"[Chunk {key}]"
        cited.append(ref)
        (supported if key in chunk_keys else unsupported).append(ref)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", answer) if s.strip()]
    uncited = tuple(
        s for s in sentences if not _NUMBER_REF.search(s) and not _CHUNK_REF.search(s)
    )
    return CitationCheck(tuple(cited), tuple(supported), tuple(unsupported), uncited)


def _given_citations(given: Any) -> list[Citation]:
    """The citations of a SearchResponse, a RagContext, or a sequence of citations or hits
    (passing the response itself raised "'Hit' object has no attribute 'number'")."""
    context = getattr(given, "context", None)
    if context is not None and hasattr(context, "citations"):
        given = context.citations
    elif hasattr(given, "citations") and not isinstance(given, (str, bytes)):
        given = given.citations
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise InvalidInputError(
            "citations must be the search response the answer was written from, its "
            f"context, or its citations; got {type(given).__name__}")
    found: list[Citation] = []
    for item in given:
        citation = item if isinstance(item, Citation) else getattr(item, "citation", None)
        if not isinstance(citation, Citation):
            raise InvalidInputError(
                f"citations holds a {type(item).__name__}: give Citation or Hit objects, or "
                "the search response itself")
        found.append(citation)
    return found
