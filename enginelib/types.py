"""Literal types, truth-level config and the frozen records passed between layers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .errors import InvalidTruthLevelError
from .text import excerpt

TruthLevel = Literal["L1", "L2", "L3", "L4"]
Strategy = Literal["vector", "fulltext", "hybrid", "auto"]
FusionMethod = Literal["rrf", "weighted"]
SourceType = Literal[
    "manual", "guide", "faq", "article", "paper", "regulation", "web", "note", "dataset", "other"
]

TRUTH_LEVEL_NAMES: tuple[str, ...] = get_args(TruthLevel)
STRATEGIES: tuple[str, ...] = get_args(Strategy)
FUSION_METHODS: tuple[str, ...] = get_args(FusionMethod)

# Between the headings of a chunk's heading path ("Chapter III > Article 17").
HEADING_SEPARATOR = " > "


@dataclass(frozen=True)
class TruthLevelConfig:
    level: str
    name: str
    auto_publish: bool
    human_review: bool
    min_confidence: float
    typical_sources: tuple[str, ...]


# The canonical RAG spec's table; L1 is the most trusted.
TRUTH_LEVELS: dict[str, TruthLevelConfig] = {
    "L1": TruthLevelConfig("L1", "Constructeur", True, False, 0.95,
                           ("manufacturer documentation", "official regulation", "standards")),
    "L2": TruthLevelConfig("L2", "Expert valide", True, False, 0.85,
                           ("expert-validated guides", "peer-reviewed papers")),
    "L3": TruthLevelConfig("L3", "IA supervisee", False, True, 0.70,
                           ("AI-generated content reviewed by a human",)),
    "L4": TruthLevelConfig("L4", "IA non validee", False, True, 0.50,
                           ("unvalidated AI-generated content", "forums")),
}
DEFAULT_SEARCH_TRUTH_LEVELS: tuple[str, ...] = ("L1", "L2")


def validate_truth_level(value: object) -> str:
    """Return the canonical truth level ("L1".."L4"), accepting "l2" or 2 as spellings."""
    expected = (f"expected one of {', '.join(TRUTH_LEVEL_NAMES)} "
                "(L1 Constructeur, L2 Expert valide, L3 IA supervisee, L4 IA non validee)")
    if isinstance(value, int) and not isinstance(value, bool):
        if not -10**6 < value < 10**6:  # past 4,300 digits it cannot even be written here
            raise InvalidTruthLevelError(f"unknown truth level: an integer out of range; {expected}")
        value = f"L{value}"
    if isinstance(value, str):
        candidate = value.strip().upper()
        if candidate in TRUTH_LEVELS:
            return candidate
    raise InvalidTruthLevelError(f"unknown truth level {excerpt(value)}: {expected}")


def truth_rank(level: str) -> int:
    """1 for L1 ... 4 for L4: a larger number is less trusted."""
    return int(level[1])


@dataclass(frozen=True)
class LoadedDocument:
    """One document's normalized text and metadata, as a loader produced it."""

    id: str
    text: str
    title: str | None = None
    source_path: str | None = None
    source_url: str | None = None
    file_extension: str | None = None
    document_type: str | None = None
    language: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # (page number starting at 1, start offset into text) for paged sources such as PDF
    pages: tuple[tuple[int, int], ...] = ()
    # The caller's own embedding (numpy float32, one row per chunk), used instead of the
    # store's model; None: the store embeds the chunks.
    vectors: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ChunkSpan:
    """A chunk as the chunker cut it: ``text[start_offset:end_offset] == content``."""

    chunk_index: int
    content: str
    start_offset: int
    end_offset: int
    token_count: int
    headings: tuple[str, ...] = ()

    @property
    def heading_path(self) -> str:
        return HEADING_SEPARATOR.join(self.headings)


@dataclass(frozen=True)
class SkippedInput:
    """An input a batch ingest did not take, with the reason a user can act on."""

    path: str
    reason: str


@dataclass(frozen=True)
class IngestReport:
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    skipped: tuple[SkippedInput, ...] = ()
    chunks_written: int = 0
    chunks_embedded: int = 0
    chunks_from_cache: int = 0
    # ids deleted by folder sync (``ingest_path(..., prune=True)``): their file is gone
    pruned: tuple[str, ...] = ()

    @property
    def documents_seen(self) -> int:
        return len(self.added) + len(self.updated) + len(self.unchanged)
