"""What a search returns: hits with score breakdowns and citations, and the RagContext."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeVar

from .gate import GateDecision
from .highlights import Highlight, find_highlights
from .quotes import LazyQuote

Status = Literal["ok", "NO_RELEVANT_SOURCES"]
OK: Status = "ok"
NO_RELEVANT_SOURCES: Status = "NO_RELEVANT_SOURCES"


@dataclass(frozen=True)
class Scores:
    """Per-method ranks (from 1) and scores; None where a method did not return the chunk."""

    vector_rank: int | None = None
    vector_score: float | None = None
    bm25_rank: int | None = None
    bm25_score: float | None = None
    fused: float = 0.0
    # the share of the best other provision of its document's fused score that ``fused``
    # includes (hybrid RRF, text laid out in provisions: search/fusion.py)
    sibling: float = 0.0
    similarity: float | None = None  # cosine(query, chunk), used by the answerability gate
    boost: float = 0.0
    rerank_score: float | None = None

    @property
    def rrf(self) -> float:
        return self.fused


class _QuotePart:
    """A ``Citation`` field that holds its value, or a ``LazyQuote`` cut on first read.

    Every read (attribute, ``asdict``, equality, ``repr``) goes through ``__get__``, so a
    citation reads as before; it is only built without cutting its quote.
    """

    def __init__(self, part: str) -> None:
        self._part = part  # the Quote attribute read: text | start_offset | end_offset
        self._slot = "_quote_" + part

    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self._slot]
        if isinstance(value, LazyQuote):
            return getattr(value.get(), self._part)
        return value

    def __set__(self, obj: object, value: Any) -> None:
        obj.__dict__[self._slot] = value


@dataclass(frozen=True)
class Citation:
    """Where a hit's text sits in its source, in the canonical Citation schema's terms."""

    number: int
    document_id: str
    chunk_index: int
    quote: str  # the quote and its offsets may be a LazyQuote, cut on first read
    start_offset: int
    end_offset: int
    display_text: str
    truth_level: str
    source_path: str | None = None
    source_type: str | None = None
    source_url: str | None = None
    title: str | None = None
    heading_path: str = ""
    page_start: int | None = None
    page_end: int | None = None
    document_version: str | None = None
    index_version: str | None = None
    # where the quote sits in the document: document_text[quote_start:quote_end] == quote
    quote_start: int | None = None
    quote_end: int | None = None


# Installed after the dataclass is made so its fields keep their plain types and defaults;
# the generated __init__, equality, repr and asdict all go through them.
Citation.quote = _QuotePart("text")  # type: ignore[assignment]
Citation.quote_start = _QuotePart("start_offset")  # type: ignore[assignment]
Citation.quote_end = _QuotePart("end_offset")  # type: ignore[assignment]


# Where a Citation keeps its quote fields (the descriptors' slots), for ``assemble``.
_QUOTE_SLOTS = {"quote": "_quote_text", "quote_start": "_quote_start_offset",
                "quote_end": "_quote_end_offset"}

T = TypeVar("T")


def assemble(cls: type[T], /, **values: Any) -> T:
    """An instance of one of these frozen dataclasses from every field's value, without the
    generated ``__init__``: frozen, it sets each field through ``object.__setattr__``, which
    makes building a page of cited hits cost 4x what it must. The engine's own values only
    (there is no check in ``__init__`` to skip); every field must be given."""
    _check_fields("assemble", cls, values)
    if cls is Citation:
        for name, slot in _QUOTE_SLOTS.items():
            values[slot] = values.pop(name)
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


def assemble_rows(cls: type[T], /, **columns: Sequence[Any]) -> list[T]:
    """``assemble`` for a page of instances: one sequence per field, all of one length,
    the fields checked once for the page rather than once per instance."""
    _check_fields("assemble_rows", cls, columns)
    if len({len(column) for column in columns.values()}) > 1:
        raise TypeError(f"assemble_rows({cls.__name__}) needs columns of one length, got "
                        f"{ {name: len(column) for name, column in columns.items()} }")
    if cls is Citation:
        for name, slot in _QUOTE_SLOTS.items():
            columns[slot] = columns.pop(name)
    names = tuple(columns)
    new = object.__new__
    out = []
    for values in zip(*columns.values()):
        obj = new(cls)
        obj.__dict__.update(zip(names, values))
        out.append(obj)
    return out


def _check_fields(caller: str, cls: type, given: Mapping[str, Any]) -> None:
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    if given.keys() != fields.keys():
        raise TypeError(f"{caller}({cls.__name__}) needs exactly its fields; missing "
                        f"{sorted(fields.keys() - given.keys())}, unknown "
                        f"{sorted(given.keys() - fields.keys())}")


@dataclass(frozen=True)
class Hit:
    rank: int
    label: int
    document_id: str
    chunk_index: int
    content: str
    start_offset: int
    end_offset: int
    truth_level: str
    scores: Scores
    citation: Citation
    highlight_terms: tuple[str, ...] = ()
    title: str | None = None
    heading_path: str = ""

    @functools.cached_property
    def highlights(self) -> tuple[Highlight, ...]:
        """Where the query's terms occur, as global offsets; computed on first access
        because most callers (RAG prompts, evaluation) never look at them."""
        return find_highlights(self.content, self.start_offset, self.highlight_terms)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["highlights"] = [asdict(h) for h in self.highlights]
        return data


@dataclass(frozen=True)
class RagContext:
    document_ids: tuple[str, ...]
    citations: tuple[Citation, ...]
    lowest_truth_level: str | None
    confidence: float
    search_method: str
    index_version: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SearchResponse:
    query: str
    hits: tuple[Hit, ...]
    status: Status
    strategy_used: str
    total: int
    limit: int
    offset: int
    execution_time_ms: float
    context: RagContext
    reason: str | None = None
    truth_levels: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    # True when ``total`` counts the hits ranked so far and more may lie deeper
    total_is_lower_bound: bool = False
    # Query understanding (search/rewrite.py): what ran, words corrected, acronyms used.
    sub_queries: tuple[str, ...] = ()
    corrections: dict[str, str] = field(default_factory=dict)
    expansions: dict[str, str] = field(default_factory=dict)
    gate: GateDecision | None = None  # the answerability gate's decision, reason code, numbers
    # The store state it was ranked on (search/ranked_at.py): pass it back as ``ranked_at``
    # with the next page to get that page of this ranking, or RankingChangedError.
    ranked_at: str = ""

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "status": self.status,
            "reason": self.reason,
            "strategy_used": self.strategy_used,
            "total": self.total,
            "total_is_lower_bound": self.total_is_lower_bound,
            "ranked_at": self.ranked_at,
            "limit": self.limit,
            "offset": self.offset,
            "truth_levels": list(self.truth_levels),
            "execution_time_ms": round(self.execution_time_ms, 3),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "sub_queries": list(self.sub_queries),
            "corrections": dict(self.corrections),
            "expansions": dict(self.expansions),
            "hits": [h.to_dict() for h in self.hits],
            "context": self.context.to_dict(),
            "gate": None if self.gate is None else self.gate.to_dict(),
        }

    def gate_summary(self) -> dict[str, Any]:
        """The gate as the CLI's ``--json`` and the HTTP API show it: the decision, reason
        code, score, threshold and evidence of ``gate.to_dict()``, with whether the search
        is answered, its reason and confidence beside them."""
        numbers = {"decision": "answer" if self.ok else "refuse"}
        if self.gate is not None:
            numbers = self.gate.to_dict()
        return {"answerable": self.ok, "reason": self.reason,
                "confidence": self.context.confidence, **numbers}
