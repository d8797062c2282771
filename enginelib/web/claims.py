"""The claim map of an answer: each sentence, the references it makes and what they point to.

The verdicts come from the evidence checker (:func:`enginelib.search.check_answer_citations`)
run on each sentence: a reference that names no citation of the search is *fabricated*; a
sentence with no reference at all is *unsupported* (no source, no answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..search import Citation, check_answer_citations

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CHUNK_KEY = re.compile(r"^\[Chunk\s+(.+)\]$", re.IGNORECASE)


def claim_map(answer: str, citations: Sequence[Citation]) -> list[dict[str, Any]]:
    claims = []
    for sentence in (s.strip() for s in _SENTENCE_END.split(answer)):
        if not sentence:
            continue
        check = check_answer_citations(sentence, citations)
        references = []
        for ref in check.cited:
            target = _target(ref, citations) if ref in check.supported else None
            references.append({
                "ref": ref,
                "status": "supported" if target is not None else "fabricated",
                "citation": None if target is None else {
                    "number": target.number, "document_id": target.document_id,
                    "chunk_index": target.chunk_index, "start_offset": target.start_offset,
                    "end_offset": target.end_offset, "truth_level": target.truth_level,
                    "quote": target.quote,
                },
            })
        if not references:
            verdict = "unsupported"
        elif any(r["status"] == "fabricated" for r in references):
            verdict = "fabricated"
        else:
            verdict = "supported"
        claims.append({"claim": sentence, "verdict": verdict, "references": references})
    return claims


def _target(ref: str, citations: Sequence[Citation]) -> Citation | None:
    match = _CHUNK_KEY.match(ref)
    for citation in citations:
        if match is None and ref == f"[{citation.number}]":
            return citation
        if match is not None and match.group(1).strip() in (
            f"{citation.document_id}#{citation.chunk_index}", str(citation.chunk_index)
        ):
            return citation
    return None
