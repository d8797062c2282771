"""Search: request validation, retrieval, fusion, post-processing and citations."""

from .citations import CitationCheck, check_answer_citations
from .results import (
    NO_RELEVANT_SOURCES,
    Citation,
    Highlight,
    Hit,
    RagContext,
    Scores,
    SearchResponse,
)

__all__ = [
    "NO_RELEVANT_SOURCES", "Citation", "CitationCheck", "Highlight", "Hit", "RagContext",
    "Scores", "SearchResponse", "check_answer_citations",
]
