"""The search request: every search option, its one default and its rule, in one frozen type.

``SearchRequest``'s fields are the options. Each carries an ``Option`` in its metadata that
says how it shows outside Python (help text, command-line flag, HTTP parameter, whether a
preset may set it). ``Store.search``'s signature, the CLI's options, the HTTP API's
parameters and OpenAPI schema, and preset saving all read their names and defaults from
here, so a default is written once; ``tests/test_request_defaults.py`` checks them all.
"""

from __future__ import annotations

import difflib
import inspect
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from types import MappingProxyType
from typing import Any

from ..errors import InvalidInputError, InvalidQueryError
from ..text import excerpt
from ..types import DEFAULT_SEARCH_TRUTH_LEVELS, FUSION_METHODS, STRATEGIES, validate_truth_level
from ..validation import MAX_QUERY_CHARS, check_search_options
from .filters import CompiledFilter, compile_filters
from .fusion import RRF_K, validate_rrf_k
from .gate import DEFAULT_THRESHOLD
from .post import MMR_LAMBDA, PER_SOURCE_CAP
from .ranked_at import check_token

DEFAULT_LIMIT = 10
DEFAULT_CANDIDATES = 100
DEFAULT_RERANK_TOP = 50
DEFAULT_WEIGHTS = (0.5, 0.5)  # (vector, bm25): equal, as the "balanced" preset
# MAX_LIMIT, MAX_OFFSET, MAX_CANDIDATES...: the documented bounds live in validation.py.
ANSWERABILITY_THRESHOLD = DEFAULT_THRESHOLD  # the gate's score (0..1) a query needs
GATE_TOP_N = 3

# Reranker hook: (query, passages) -> one relevance score per passage, higher is better.
Reranker = Callable[[str, Sequence[str]], Sequence[float]]


class _Unset:
    """Marks an ``Option`` attribute left unset (None is a meaningful value there)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


# Numbers as text, in ASCII digits: int() and float() also take '1_000' and Arabic-Indic or
# full-width digits, so a typo or a pasted value was read as some other number. nan and inf
# pass here and are refused by the option's bounds, in the words Python's caller gets.
INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                         r"|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def parse_weights(text: str) -> tuple[float, ...]:
    """``VECTOR,BM25`` as typed on a command line or in a query string."""
    parts = [part.strip() for part in text.split(",")]
    if not all(NUMBER_TEXT.fullmatch(part) for part in parts):
        raise InvalidInputError(
            f"weights must be two numbers VECTOR,BM25 such as 0.7,0.3, got {excerpt(text)}")
    return tuple(float(part) for part in parts)


@dataclass(frozen=True)
class Option:
    """How one search option shows outside Python.

    ``kind`` is how text (a command-line value, a query-string parameter) is read. A flag
    (``flag`` set) takes no value: given, it sets the option to ``flag``; left out, the
    option keeps its default. ``preset``: a stored preset may set the option, so left out
    means "the preset's value", and the CLI and the API pass it only when the caller gives it.
    """

    help: str
    kind: type = str
    cli: str | None = None  # the command-line flag; None: Python only
    api: str | None = None  # the HTTP API's parameter name; None: not in the API
    flag: Any = UNSET
    choices: tuple[str, ...] = ()
    preset: bool = False
    multiple: bool = False  # repeatable on the command line (each shell reads the list)
    cli_help: str | None = None  # the command line's own wording, where it differs
    accepts: str | None = None  # the type a caller passes, where the field stores another
    given_default: Any = UNSET  # what a caller passes for the default, if not the field's
    parse: Callable[[str], Any] | None = None  # text -> value, where ``kind`` is not enough


def _option(default: Any = MISSING, *, factory: Callable[[], Any] | None = None,
            **spec: Any) -> Any:
    metadata = {"option": Option(**spec)}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class SearchRequest:
    queries: tuple[str, ...]  # the query and its rewrites; fused per chunk keeping the best
    # What the vector method embeds for each query, when not the query itself (query
    # understanding's plan: a corrected query embeds the words as typed).
    embed_texts: tuple[str, ...] = ()
    strategy: str = _option(
        "hybrid", choices=STRATEGIES, cli="--strategy", api="strategy",
        help="vector, fulltext, hybrid (both, fused) or auto (quoted or short technical "
             "queries go full-text, the rest hybrid).")
    limit: int = _option(DEFAULT_LIMIT, kind=int, cli="--limit", api="limit",
                         help="Hits per page.")
    offset: int = _option(0, kind=int, cli="--offset", api="offset",
                          help="Hits to skip: the page start (every page is a slice of one "
                               "ranking).")
    ranked_at: str | None = _option(
        None, cli="--ranked-at", api="ranked_at",
        help="An earlier response's ranked_at: answer from that store state or refuse "
             "(RankingChangedError), so pages never mix two rankings.")
    truth_levels: tuple[str, ...] = _option(
        DEFAULT_SEARCH_TRUTH_LEVELS, cli="--truth-level", api="truth_levels",
        accepts="str | Sequence[str] | None",
        help="Truth levels to search (widen explicitly, e.g. L1,L2,L3).",
        cli_help="Comma-separated truth levels to search (widen explicitly, e.g. L1,L2,L3).")
    filters: CompiledFilter = _option(
        factory=lambda: compile_filters(None), given_default=None, cli="--filter",
        api="filters", multiple=True, accepts="Mapping[str, Any] | None",
        help="Metadata filters: field -> value, list of values, or {operator: value}.",
        cli_help="FIELD=VALUE (repeatable); commas make lists.")
    raw_filters: Mapping[str, Any] | None = None  # the filters as given (the query log)
    preset: str | None = _option(
        None, cli="--preset", api="preset",
        help="Named fusion preset stored in the catalog (default, balanced, semantic, "
             "keyword, or your own); none named: the store's default preset.")
    fusion: str = _option("rrf", choices=FUSION_METHODS, preset=True, cli="--fusion",
                          api="fusion", help="Fusion method for hybrid search.")
    rrf_k: int = _option(RRF_K, kind=int, preset=True, cli="--rrf-k", api="rrf_k",
                         help="RRF's k in 1 / (k + rank).")
    weights: tuple[float, float] = _option(
        DEFAULT_WEIGHTS, preset=True, cli="--weights", api="weights",
        accepts="Sequence[float] | Mapping[str, float]", parse=parse_weights,
        help="(vector, bm25) weights for weighted fusion (VECTOR,BM25 as text).")
    candidates: int = _option(DEFAULT_CANDIDATES, kind=int, cli="--candidates",
                              api="candidates", help="Candidates each retriever returns.")
    min_score: float | None = _option(None, kind=float, preset=True, cli="--min-score",
                                      api="min_score",
                                      help="Drop hits whose fused score is lower.")
    boosts: bool = _option(False, kind=bool, flag=True, cli="--boost", api="boost",
                           help="Apply authority boosts (tier, evidence, peer review).")
    mmr: bool = _option(False, kind=bool, flag=True, cli="--diversify", api="diversify",
                        help=f"MMR (lambda {MMR_LAMBDA}) plus at most {PER_SOURCE_CAP} chunks "
                             "per source.")
    mmr_lambda: float = _option(MMR_LAMBDA, kind=float, cli="--mmr-lambda", api="mmr_lambda",
                                help="MMR's trade-off: 1 relevance only, 0 diversity only.")
    per_source_cap: int | None = _option(
        None, kind=int, cli="--per-source-cap", api="per_source_cap",
        help=f"At most this many hits per source (with MMR: {PER_SOURCE_CAP} unless set).")
    chunks_per_doc: int | None = _option(
        None, kind=int, cli="--chunks-per-doc", api="chunks_per_doc",
        help="Group hits by document, up to this many chunks each.")
    answerability_threshold: float | None = _option(
        ANSWERABILITY_THRESHOLD, kind=float, flag=None, cli="--no-gate", api="no_gate",
        help="The gate's score a query needs to be answered; None: no gate.",
        cli_help="Return hits even below the answerability threshold.")
    exact: bool = _option(False, kind=bool, flag=True, cli="--exact", api="exact",
                          help="Exact vector scan instead of the HNSW index.")
    reranker: Reranker | None = _option(
        None, help="Hook (query, passages) -> one score per passage, reorders the top hits.")
    rerank_top: int = _option(DEFAULT_RERANK_TOP, kind=int,
                              help="Hits the reranker reorders.")
    # Query rewriter hook: question -> a few sub-queries, run beside it (search/rewrite.py).
    rewriter: Callable[[str], Sequence[str]] | None = _option(
        None, help="Hook question -> a few sub-queries searched beside it.")
    # False: search the words as typed (no typo correction, no acronym twins).
    rewrite: bool = _option(True, kind=bool, flag=False, cli="--no-rewrite", api="no_rewrite",
                            help="Correct typos and add acronym twins from the index.",
                            cli_help="Search the words as typed: no typo correction, no "
                                     "acronym expansion.")
    # A query text a user did not write for our syntax (a dataset's, a pasted quote with its
    # opening mark only): its words, rather than a refusal.
    lenient: bool = _option(False, kind=bool, flag=True, cli="--lenient", api="lenient",
                            help="Read a malformed query (an unbalanced quote or parenthesis, "
                                 "a dangling AND/OR/NOT) as plain words instead of refusing it.")
    log: bool = _option(True, kind=bool, flag=False, cli="--no-log",
                        help="Record the search in the query log.",
                        cli_help="Leave this search out of the query log.")
    # answer from the store's response cache when it holds this request
    cache: bool = _option(True, kind=bool, help="Answer from the store's response cache.")

    @property
    def depth(self) -> int:
        """Candidates each retriever returns for a page in one piece; pages past
        ``candidates`` are stitched from deeper rankings (see ``search.paging``)."""
        return max(self.candidates, self.offset + self.limit)

    def embed_text(self, index: int) -> str:
        """What the vector method embeds for ``queries[index]``."""
        return self.embed_texts[index] if self.embed_texts else self.queries[index]


# -- the options, read from the dataclass -------------------------------------------------

OPTIONS: Mapping[str, Field[Any]] = MappingProxyType(
    {f.name: f for f in fields(SearchRequest) if "option" in f.metadata}
)


def option_spec(name: str) -> Option:
    spec: Option = OPTIONS[name].metadata["option"]
    return spec


def option_default(name: str) -> Any:
    """The value a caller passes to get the default (``filters``: None, not the compiled)."""
    item = OPTIONS[name]
    spec = option_spec(name)
    if spec.given_default is not UNSET:
        return spec.given_default
    if item.default_factory is not MISSING:
        return item.default_factory()
    return item.default


DEFAULTS: Mapping[str, Any] = MappingProxyType({name: option_default(name) for name in OPTIONS})


def is_flag(name: str) -> bool:
    return option_spec(name).flag is not UNSET


def from_text(name: str, text: str) -> Any:
    """An option's value from text (a command line, a query string), read by its kind."""
    spec = option_spec(name)
    if spec.parse is not None:
        return spec.parse(text)
    if spec.kind in (int, float):
        pattern = INTEGER_TEXT if spec.kind is int else NUMBER_TEXT
        if not pattern.fullmatch(text.strip()) or len(text) > 400:
            kind = "an integer" if spec.kind is int else "a number"
            raise InvalidInputError(f"{name} must be {kind} in digits 0-9, got {text[:60]!r}")
        return spec.kind(text.strip())
    return text

# Call inputs that are data, not options: the caller's own query vector(s).
CALL_INPUTS = ("query_vector", "query_vectors")


def unknown_options_error(unknown: Iterable[str], known: Iterable[str],
                          what: str = "search option") -> InvalidInputError:
    """Unknown names (the first few), the closest known one as a suggestion, and every
    known name."""
    names, choices = shown_names(unknown), sorted(known)
    close = [m for n in names for m in difflib.get_close_matches(n, choices, n=1, cutoff=0.6)]
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return InvalidInputError(f"unknown {what}(s) {names}{more_names(unknown)}{hint}; "
                             f"expected some of {choices}")


# Names a message lists: a query string of 40,000 made-up parameters was answered with all of
# them, 290 KB, after a close-match search for each.
SHOWN_NAMES = 10


def shown_names(names: Iterable[str]) -> list[str]:
    """The first ``SHOWN_NAMES`` of ``names``, sorted, each cut to 60 characters: what a
    message lists (a parameter named with a megabyte was answered with a megabyte)."""
    return [name if len(name) <= 60 else f"{name[:60]}... ({len(name):,} characters)"
            for name in sorted(names)[:SHOWN_NAMES]]


def more_names(names: Iterable[str]) -> str:
    """" and N more" after the names a message lists, or nothing."""
    extra = len(set(names)) - SHOWN_NAMES
    return f" and {extra:,} more" if extra > 0 else ""


def search_signature(first: str, *, vectors: str, doc: str = "") -> inspect.Signature:
    """``Store.search``'s signature: ``first`` then every option keyword-only, with its default."""
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter(first, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation="str | Sequence[str]" if first == "query" else "Sequence[str]"),
    ]
    for name, item in OPTIONS.items():
        annotation = option_spec(name).accepts or item.type
        params.append(inspect.Parameter(name, kw, default=DEFAULTS[name], annotation=annotation))
    params.append(inspect.Parameter(vectors, kw, default=None, annotation="ArrayLike | None"))
    return inspect.Signature(params, return_annotation="SearchResponse" if first == "query"
                             else "list[SearchResponse]")


# -- building one --------------------------------------------------------------------------


def build_request(query: str | Sequence[str], **options: Any) -> SearchRequest:
    """The request for ``query``: each option given or its default, checked once.

    Types and bounds come from ``validation.check_search_options`` (the one place for
    them); the rules that need more than a bound (choices, truth levels, weights,
    filters) are applied here. None means the default, except for
    ``answerability_threshold``, where None turns the gate off.
    """
    # A vector search with the query's vector given needs no words: "" is then the query
    # (nothing for the gate's coverage, the quotes or the highlights to read).
    wordless = options.get("query_vectors") is not None and options.get("strategy") == "vector"
    queries = _queries(query, wordless=wordless)
    known = set(OPTIONS) | {"query_vectors"}
    unknown = set(options) - known
    if unknown:
        raise unknown_options_error(unknown, known)
    options.pop("query_vectors", None)
    check_search_options(options)
    values: dict[str, Any] = {}
    for name in OPTIONS:
        value = options.get(name)
        if value is None and not (name == "answerability_threshold" and name in options):
            value = DEFAULTS[name]
        values[name] = value
    for name in OPTIONS:
        choices = option_spec(name).choices
        if choices and values[name] not in choices:
            raise InvalidInputError(
                f"{name} {values[name]!r} is not one of {', '.join(choices)}")
    values["truth_levels"] = _truth_levels(values["truth_levels"])
    values["raw_filters"] = values["filters"]
    values["filters"] = compile_filters(values["filters"])
    values["weights"] = _weights(values["weights"])
    if values["ranked_at"] is not None:
        values["ranked_at"] = check_token(values["ranked_at"])
    values["rrf_k"] = validate_rrf_k(int(values["rrf_k"]))
    for name in ("limit", "offset", "candidates", "rerank_top", "per_source_cap", "chunks_per_doc"):
        if values[name] is not None:
            values[name] = int(values[name])
    for name in ("min_score", "mmr_lambda", "answerability_threshold"):
        if values[name] is not None:
            values[name] = float(values[name])
    for name in ("boosts", "mmr", "exact", "rewrite", "lenient", "log", "cache"):
        values[name] = bool(values[name])
    if values["rewriter"] is not None and not callable(values["rewriter"]):
        raise InvalidInputError(
            "rewriter must be a callable question -> list of sub-queries, got "
            f"{excerpt(values['rewriter'])}"
        )
    if values["min_score"] is not None and not math.isfinite(values["min_score"]):
        raise InvalidInputError(f"min_score must be a finite number, got {values['min_score']}")
    return SearchRequest(queries=queries, **values)


def _truth_levels(levels: Any) -> tuple[str, ...]:
    if isinstance(levels, str):
        levels = [part for part in re.split(r"[,\s]+", levels) if part]
    truth_levels = tuple(dict.fromkeys(validate_truth_level(level) for level in levels))
    if not truth_levels:
        raise InvalidInputError("truth_levels is empty: nothing could match; pass e.g. ['L1', 'L2']")
    return truth_levels


def _weights(weights: Any) -> tuple[float, float]:
    if isinstance(weights, Mapping):
        weights = (weights.get("vector", 0.0), weights.get("bm25", weights.get("fulltext", 0.0)))
    pair = tuple(float(w) for w in weights)
    if len(pair) != 2 or any(w < 0 or not math.isfinite(w) for w in pair) or sum(pair) == 0:
        raise InvalidInputError(f"weights must be two non-negative numbers, not both 0: {pair}")
    return pair[0], pair[1]


def _queries(query: str | Sequence[str], *, wordless: bool = False) -> tuple[str, ...]:
    items = [query] if isinstance(query, str) else list(query)
    if not items:
        raise InvalidQueryError("no query given")
    cleaned = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidQueryError(f"a query must be a string, got {type(item).__name__}")
        # NFC, as every document is stored: "données" typed or pasted decomposed (macOS, PDF
        # text) is "donne" + U+0301 + "es", which no analyzer matched with the stored word
        text = unicodedata.normalize("NFC", item).strip()
        if not text and not wordless:
            raise InvalidQueryError(
                "the query is empty: type some words to search for (or give query_vector= "
                "with strategy='vector' to search by the vector alone)")
        # The limit is on the text as sent (the API's schema says so: maxLength) and as
        # searched (NFC may lengthen it): counted after the strip alone, a query 20,000
        # characters long with a space or a newline around it was taken.
        size = max(len(item), len(text))
        if size > MAX_QUERY_CHARS:
            raise InvalidQueryError(
                f"the query is {size} characters; the limit is {MAX_QUERY_CHARS}: "
                "search with the key sentence instead of the whole text"
            )
        cleaned.append(text)
    return tuple(cleaned)


_TECHNICAL = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[\w\-./]+$|^\w*_\w*$|^[A-Z0-9\-]{3,}$")


def choose_strategy(query: str) -> str:
    """auto: quoted phrases and short technical queries go full-text, the rest hybrid."""
    if '"' in query:
        return "fulltext"
    tokens = query.split()
    if 0 < len(tokens) <= 3 and any(_TECHNICAL.match(t) for t in tokens):
        return "fulltext"
    return "hybrid"
