"""A validated, frozen search request; every option's rule lives here, checked once."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError, InvalidQueryError
from ..types import DEFAULT_SEARCH_TRUTH_LEVELS, FUSION_METHODS, STRATEGIES, validate_truth_level
from ..validation import MAX_CANDIDATES, MAX_LIMIT, MAX_OFFSET, MAX_QUERY_CHARS, MAX_RERANK_TOP
from .filters import CompiledFilter, compile_filters
from .fusion import RRF_K, validate_rrf_k
from .gate import DEFAULT_THRESHOLD

DEFAULT_LIMIT = 10
DEFAULT_CANDIDATES = 100
# MAX_LIMIT, MAX_OFFSET, MAX_CANDIDATES...: the documented bounds live in validation.py.
ANSWERABILITY_THRESHOLD = DEFAULT_THRESHOLD  # the gate's score (0..1) a query needs
GATE_TOP_N = 3

# Reranker hook: (query, passages) -> one relevance score per passage, higher is better.
Reranker = Callable[[str, Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class SearchRequest:
    queries: tuple[str, ...]  # the query and its rewrites; fused per chunk keeping the best
    strategy: str = "hybrid"
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    truth_levels: tuple[str, ...] = DEFAULT_SEARCH_TRUTH_LEVELS
    filters: CompiledFilter = field(default_factory=lambda: compile_filters(None))
    raw_filters: Mapping[str, Any] | None = None
    fusion: str = "rrf"
    rrf_k: int = RRF_K
    weights: tuple[float, float] = (0.5, 0.5)  # (vector, bm25) for weighted fusion
    candidates: int = DEFAULT_CANDIDATES
    min_score: float | None = None
    boosts: bool = False
    mmr: bool = False
    mmr_lambda: float = 0.7
    per_source_cap: int | None = None
    chunks_per_doc: int | None = None
    answerability_threshold: float | None = ANSWERABILITY_THRESHOLD
    exact: bool = False
    reranker: Reranker | None = None
    rerank_top: int = 50
    # Query rewriter hook: question -> a few sub-queries, run beside it (search/rewrite.py).
    rewriter: Callable[[str], Sequence[str]] | None = None
    # False: search the words as typed (no typo correction, no acronym twins).
    rewrite: bool = True
    log: bool = True
    cache: bool = True  # answer from the store's response cache when it holds this request

    @property
    def depth(self) -> int:
        """Candidates each retriever returns for a page in one piece; pages past
        ``candidates`` are stitched from deeper rankings (see ``search.paging``)."""
        return max(self.candidates, self.offset + self.limit)


def build_request(query: str | Sequence[str], **options: Any) -> SearchRequest:
    queries = _queries(query)
    known = set(SearchRequest.__dataclass_fields__) - {"queries", "filters", "raw_filters"}
    known |= {"filters", "query_vectors"}
    unknown = set(options) - known
    if unknown:
        raise InvalidInputError(
            f"unknown search option(s) {sorted(unknown)}; expected some of {sorted(known)}"
        )
    options.pop("query_vectors", None)
    strategy = options.get("strategy", "hybrid")
    if strategy not in STRATEGIES:
        raise InvalidInputError(f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    fusion = options.get("fusion", "rrf")
    if fusion not in FUSION_METHODS:
        raise InvalidInputError(f"fusion {fusion!r} is not one of {', '.join(FUSION_METHODS)}")
    limit = _int("limit", options.get("limit", DEFAULT_LIMIT), minimum=1, maximum=MAX_LIMIT)
    offset = _int("offset", options.get("offset", 0), minimum=0, maximum=MAX_OFFSET)
    candidates = _int("candidates", options.get("candidates", DEFAULT_CANDIDATES), minimum=1,
                      maximum=MAX_CANDIDATES)
    levels = options.get("truth_levels")
    if levels is None:
        levels = DEFAULT_SEARCH_TRUTH_LEVELS
    if isinstance(levels, str):
        levels = [part for part in re.split(r"[,\s]+", levels) if part]
    truth_levels = tuple(dict.fromkeys(validate_truth_level(level) for level in levels))
    if not truth_levels:
        raise InvalidInputError("truth_levels is empty: nothing could match; pass e.g. ['L1', 'L2']")
    raw_filters = options.get("filters")
    compiled = compile_filters(raw_filters)
    weights = options.get("weights", (0.5, 0.5))
    if isinstance(weights, Mapping):
        weights = (weights.get("vector", 0.0), weights.get("bm25", weights.get("fulltext", 0.0)))
    weights = tuple(float(w) for w in weights)
    if len(weights) != 2 or any(w < 0 or not math.isfinite(w) for w in weights) or sum(weights) == 0:
        raise InvalidInputError(f"weights must be two non-negative numbers, not both 0: {weights}")
    threshold = options.get("answerability_threshold", ANSWERABILITY_THRESHOLD)
    if threshold is not None and not -1.0 <= float(threshold) <= 1.0:
        raise InvalidInputError(f"answerability_threshold must be within -1..1, got {threshold}")
    for name in ("per_source_cap", "chunks_per_doc"):
        if options.get(name) is not None:
            _int(name, options[name], minimum=1)
    rewriter = options.get("rewriter")
    if rewriter is not None and not callable(rewriter):
        raise InvalidInputError(
            f"rewriter must be a callable question -> list of sub-queries, got {rewriter!r}"
        )
    min_score = options.get("min_score")
    if min_score is not None and not math.isfinite(float(min_score)):
        raise InvalidInputError(f"min_score must be a finite number, got {min_score}")
    return SearchRequest(
        queries=queries,
        strategy=strategy,
        limit=limit,
        offset=offset,
        truth_levels=truth_levels,
        filters=compiled,
        raw_filters=raw_filters,
        fusion=fusion,
        rrf_k=validate_rrf_k(options.get("rrf_k", RRF_K)),
        weights=(weights[0], weights[1]),
        candidates=candidates,
        min_score=None if min_score is None else float(min_score),
        boosts=bool(options.get("boosts", False)),
        mmr=bool(options.get("mmr", False)),
        mmr_lambda=float(options.get("mmr_lambda", 0.7)),
        per_source_cap=options.get("per_source_cap"),
        chunks_per_doc=options.get("chunks_per_doc"),
        answerability_threshold=None if threshold is None else float(threshold),
        exact=bool(options.get("exact", False)),
        reranker=options.get("reranker"),
        rerank_top=_int("rerank_top", options.get("rerank_top", 50), minimum=1,
                        maximum=MAX_RERANK_TOP),
        rewriter=rewriter,
        rewrite=bool(options.get("rewrite", True)),
        log=bool(options.get("log", True)),
        cache=bool(options.get("cache", True)),
    )


def _queries(query: str | Sequence[str]) -> tuple[str, ...]:
    items = [query] if isinstance(query, str) else list(query)
    if not items:
        raise InvalidQueryError("no query given")
    cleaned = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidQueryError(f"a query must be a string, got {type(item).__name__}")
        text = item.strip()
        if not text:
            raise InvalidQueryError("the query is empty: type some words to search for")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidQueryError(
                f"the query is {len(text)} characters; the limit is {MAX_QUERY_CHARS}: "
                "search with the key sentence instead of the whole text"
            )
        cleaned.append(text)
    return tuple(cleaned)


def _int(name: str, value: Any, *, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"within {minimum}..{maximum}"
        raise InvalidInputError(f"{name} must be {bound}, got {value}")
    return value


_TECHNICAL = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[\w\-./]+$|^\w*_\w*$|^[A-Z0-9\-]{3,}$")


def choose_strategy(query: str) -> str:
    """auto: quoted phrases and short technical queries go full-text, the rest hybrid."""
    if '"' in query:
        return "fulltext"
    tokens = query.split()
    if 0 < len(tokens) <= 3 and any(_TECHNICAL.match(t) for t in tokens):
        return "fulltext"
    return "hybrid"
