"""Citations for hits, term highlights, and the evidence-loop check of an answer's references."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..chunk_view import ChunkRecord
from ..types import TRUTH_LEVELS
from .highlights import find_highlights
from .quotes import LazyQuote
from .results import Citation, assemble

__all__ = ["CitationCheck", "check_answer_citations", "citation_of", "display_name",
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
    fields = {name: [getattr(record, name)] for name in _RECORD_FIELDS}
    return citation_of(number, fields, 0, record.content, record.heading_path, terms)


# The ChunkView fields a citation reads (``ChunkView.fields_at`` gives them as columns).
_RECORD_FIELDS = ("document_id", "chunk_index", "start_offset", "end_offset", "truth_level",
                  "source_path", "source_type", "source_url", "title", "page_start", "page_end",
                  "version", "index_version")


def citation_of(
    number: int, rows: Mapping[str, Sequence[Any]], n: int, content: str, heading_path: str,
    terms: Sequence[str] = (),
) -> Citation:
    """The citation of row ``n`` of ``rows`` (the view's columns over a page of hits), with
    its ``content`` and ``heading_path``; the quote is cut when first read."""
    start_offset = rows["start_offset"][n]
    title, source_path, document_id = rows["title"][n], rows["source_path"][n], rows["document_id"][n]
    truth_level = rows["truth_level"][n]
    quote = LazyQuote(content, start_offset, terms)
    return assemble(
        Citation,
        number=number,
        document_id=document_id,
        chunk_index=rows["chunk_index"][n],
        quote=quote,
        start_offset=start_offset,
        end_offset=rows["end_offset"][n],
        display_text=f"[{number}] {_display_name(title, source_path, document_id)} "
                     f"({TRUTH_LEVELS[truth_level].name})",
        truth_level=truth_level,
        source_path=source_path,
        source_type=rows["source_type"][n],
        source_url=rows["source_url"][n],
        title=title,
        heading_path=heading_path or "",
        page_start=rows["page_start"][n],
        page_end=rows["page_end"][n],
        document_version=rows["version"][n],
        index_version=rows["index_version"][n],
        quote_start=quote,
        quote_end=quote,
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


def check_answer_citations(answer: str, citations: Sequence[Citation]) -> CitationCheck:
    """Which ``[n]`` / ``[Chunk X]`` references in ``answer`` match a given citation.

    ``[n]`` must be a citation number; ``[Chunk X]`` matches ``X`` as a chunk label
    ``document_id#chunk_index`` or a bare chunk index of a cited document. Sentences with
    no reference at all are reported too: no source, no answer.
    """
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
