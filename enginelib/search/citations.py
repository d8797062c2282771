"""Citations for hits, term highlights, and the evidence-loop check of an answer's references."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..chunk_view import ChunkRecord
from ..types import TRUTH_LEVELS
from .highlights import find_highlights
from .quotes import LazyQuote
from .results import Citation, assemble

__all__ = ["CitationCheck", "check_answer_citations", "display_name", "find_highlights",
           "make_citation"]


def display_name(record: ChunkRecord) -> str:
    if record.title:
        return record.title
    if record.source_path:
        return record.source_path.rsplit("/", 1)[-1]
    return record.document_id


def make_citation(number: int, record: ChunkRecord, terms: Sequence[str] = ()) -> Citation:
    """The citation of a hit; its quote is the passage that best matches ``terms``, cut
    when first read."""
    level = TRUTH_LEVELS[record.truth_level].name
    quote = LazyQuote(record.content, record.start_offset, terms)
    return assemble(
        Citation,
        number=number,
        document_id=record.document_id,
        chunk_index=record.chunk_index,
        quote=quote,
        start_offset=record.start_offset,
        end_offset=record.end_offset,
        display_text=f"[{number}] {display_name(record)} ({level})",
        truth_level=record.truth_level,
        source_path=record.source_path,
        source_type=record.source_type,
        source_url=record.source_url,
        title=record.title,
        heading_path=record.heading_path or "",
        page_start=record.page_start,
        page_end=record.page_end,
        document_version=record.version,
        index_version=record.index_version,
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
