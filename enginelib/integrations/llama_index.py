"""A LlamaIndex retriever over an enginelib store (``pip install 'enginelib[llama-index]'``).

    from enginelib.integrations.llama_index import EnginelibRetriever
    retriever = EnginelibRetriever(store, similarity_top_k=5, filters={"tags": ["brakes"]},
                                   truth_levels=["L1", "L2"], strategy="hybrid")
    nodes = retriever.retrieve("when to replace brake pads?")
    nodes[0].node.metadata["start_offset"], nodes[0].score

Nodes come in the engine's order, one ``NodeWithScore`` per hit: a ``TextNode`` with the
chunk's text, id ``<document id>#<chunk index>`` and the citation and scores in its
metadata, and a score that falls down the engine's order: the fused score, lowered just
under the one before where a named provision, boosts, the reranker or MMR ranked the hit
below a better-fused one (``metadata["fused_score"]`` keeps it as fused). Options are those of ``Store.search``
(``similarity_top_k`` is LlamaIndex's name for ``limit``); filters are enginelib filter
dicts, or LlamaIndex ``MetadataFilters`` that say the same thing (AND of ==, in, any, all,
and >, >=, <, <= on dates); other operators are refused with a clear error.
A ``QueryBundle`` carrying an ``embedding`` is searched with that vector, one carrying
``custom_embedding_strs`` (HyDE's hypothetical passage) with the mean of their query vectors,
as LlamaIndex's own retrievers do; the words searched are ``query_str``. ``aretrieve`` runs
the search in a worker thread, leaving the event loop free. When the
answerability gate refuses, ``retrieve`` returns ``[]`` (a query engine then answers
"Empty Response"), or raises ``NoRelevantSourcesError`` with ``on_refusal="raise"``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType, TextNode
    from llama_index.core.vector_stores.types import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "enginelib.integrations.llama_index needs llama-index-core: "
        "pip install 'enginelib[llama-index]'"
    ) from exc

from ..errors import InvalidInputError, InvalidQueryError
from ..store import Store
from ._common import (
    check_refusal,
    check_store,
    citation_metadata,
    result_id,
    run_search,
    search_options,
)

FRAMEWORK = "LlamaIndex"
# What the LLM sees of a node besides its text: where it comes from and how far to trust
# it; offsets and scores stay in the metadata for the application.
LLM_METADATA = ("document_id", "title", "truth_level", "display_text")


class EnginelibRetriever(BaseRetriever):
    """LlamaIndex ``BaseRetriever`` answering from ``store`` with cited chunks."""

    def __init__(
        self,
        store: Store,
        *,
        on_refusal: str = "empty",
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **options: Any,
    ) -> None:
        if isinstance(options.get("filters"), MetadataFilters):
            options["filters"] = from_metadata_filters(options["filters"])
        if not isinstance(options.get("filters"), (dict, type(None))):
            raise InvalidInputError(
                f"{FRAMEWORK} retriever: filters must be an enginelib filter dict such as "
                "{'tags': ['brakes'], 'truth_level': ['L1']} or simple MetadataFilters, not "
                f"{type(options['filters']).__name__}"
            )
        self.store = check_store(store, FRAMEWORK)
        self.options = search_options(options, limit_alias="similarity_top_k", framework=FRAMEWORK)
        self.on_refusal = check_refusal(on_refusal)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        return super().retrieve(_query(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        return await super().aretrieve(_query(str_or_query_bundle))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        words, image = query_bundle.query_str, query_bundle.image_path
        if image is not None and query_bundle.embedding is None and not str(words).strip():
            # else refused as an empty query, about words the caller never meant to send
            raise InvalidQueryError(
                f"{FRAMEWORK} retriever: enginelib searches text, and this QueryBundle holds "
                f"only an image ({image!r}): give it a query_str (a question or a caption)")
        extra: dict[str, Any] = {}
        vector = self._query_vector(query_bundle)
        if vector is not None:
            extra["query_vector"] = vector
        response = run_search(self.store, query_bundle.query_str, self.options, self.on_refusal,
                              framework=FRAMEWORK, **extra)
        nodes = []
        scores = ranked_scores([hit.scores.fused for hit in response.hits])
        for hit, score in zip(response.hits, scores, strict=True):
            metadata = citation_metadata(hit, response)
            node = TextNode(
                id_=result_id(hit), text=hit.content, metadata=metadata,
                excluded_llm_metadata_keys=[k for k in metadata if k not in LLM_METADATA],
                excluded_embed_metadata_keys=list(metadata),
            )
            nodes.append(NodeWithScore(node=node, score=score))
        return nodes

    def _query_vector(self, query_bundle: QueryBundle) -> Any:
        """The bundle's embedding; else, where a query transform (HyDE) gave the texts to
        embed instead of the query, the mean of their query vectors, as LlamaIndex's own
        retrievers take it; else None (the engine embeds the query)."""
        if query_bundle.embedding is not None:
            return query_bundle.embedding
        texts = query_bundle.custom_embedding_strs
        if not texts or self.options.get("strategy") == "fulltext":  # no vector to search by
            return None
        if isinstance(texts, str) or not all(isinstance(t, str) and t.strip() for t in texts):
            raise InvalidQueryError(
                f"{FRAMEWORK} retriever: a QueryBundle's custom_embedding_strs must be a list of "
                f"non-empty strings, got {texts!r:.120}")
        store = check_store(self.store, FRAMEWORK)
        return store.query_embeddings.embed(list(texts)).mean(axis=0)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # LlamaIndex's default calls _retrieve on the event loop, which then waited for the
        # whole search; a worker thread leaves it free (as LangChain's ainvoke does).
        return await asyncio.to_thread(self._retrieve, query_bundle)


def _query(given: Any) -> QueryType:
    """A query LlamaIndex's ``retrieve`` can take: it read anything else before our
    ``_retrieve`` saw it, failing inside its own event models (pydantic's ValidationError for
    None, a number or a list) or with an AttributeError (bytes, a dict)."""
    if not isinstance(given, (str, QueryBundle)):
        hint = ("decode it first" if isinstance(given, (bytes, bytearray)) else
                "call retrieve() once per query" if isinstance(given, (list, tuple)) else
                "give the question as a str, or QueryBundle(query_str=...)")
        raise InvalidQueryError(
            f"the {FRAMEWORK} retriever takes one query string or a QueryBundle, got "
            f"{type(given).__name__}: {hint}")
    return given


def ranked_scores(fused: Sequence[float]) -> list[float]:
    """Node scores that fall strictly down the engine's order: each hit's fused score, or just
    under the score before it where a later stage (a named provision, boosts, the reranker,
    MMR) ranked the hit below a better-fused one. LlamaIndex's fusion retrievers and
    LongContextReorder sort nodes by score, and the fused score alone undid that order."""
    scores: list[float] = []
    for score in fused:
        if scores and score >= scores[-1]:
            score = math.nextafter(scores[-1], -math.inf)
        scores.append(score)
    return scores


# LlamaIndex operators that enginelib's filter dicts can say, per value shape.
_DATE_OPS = {FilterOperator.GT: "gt", FilterOperator.GTE: "gte",
             FilterOperator.LT: "lt", FilterOperator.LTE: "lte"}
_DATE_FIELDS = ("created_at", "updated_at", "validated_at")


def from_metadata_filters(filters: MetadataFilters) -> dict[str, Any]:
    """The enginelib filter dict equivalent to simple LlamaIndex ``MetadataFilters``."""
    if filters.condition not in (None, FilterCondition.AND):
        raise InvalidInputError(
            f"{FRAMEWORK} retriever: only AND of metadata filters maps onto enginelib filters, "
            f"not {filters.condition}"
        )
    out: dict[str, Any] = {}
    ranges: dict[str, dict[str, Any]] = {}  # date fields given by bounds (also in out)
    for item in filters.filters:
        if not isinstance(item, MetadataFilter):
            raise InvalidInputError(f"{FRAMEWORK} retriever: nested MetadataFilters are not supported")
        key, op, value = item.key, item.operator, item.value
        is_bound = key in _DATE_FIELDS and op in _DATE_OPS
        if key in out and not (is_bound and key in ranges):  # == and a bound: a TypeError
            raise InvalidInputError(
                f"{FRAMEWORK} retriever: {key!r} is filtered twice; give its values in one "
                "'in' filter"
            )
        if is_bound:
            bounds = out[key] = ranges.setdefault(key, {})
            if _DATE_OPS[op] in bounds:  # the second replaced the first: a wider filter
                raise InvalidInputError(
                    f"{FRAMEWORK} retriever: {key!r} has two {op.value!r} bounds; give the one "
                    "that should hold")
            bounds[_DATE_OPS[op]] = value
            continue
        if isinstance(value, list) and op in (FilterOperator.EQ, FilterOperator.CONTAINS):
            # searching for any of the values would widen an equality into 'in'
            raise InvalidInputError(
                f"{FRAMEWORK} retriever: {op.value!r} on {key!r} compares with one value, got "
                f"a list; use 'in' (or 'any'/'all' on tags) for several")
        if key == "tags" and op in (FilterOperator.ANY, FilterOperator.ALL):
            out[key] = {op.value: list(value) if isinstance(value, list) else [value]}
        elif key == "tags" and op in (FilterOperator.EQ, FilterOperator.CONTAINS):
            out[key] = [value]
        elif op in (FilterOperator.EQ, FilterOperator.IN, FilterOperator.ANY):
            out[key] = value
        else:
            raise InvalidInputError(
                f"{FRAMEWORK} retriever: operator {op.value!r} on {key!r} has no enginelib "
                "filter; use ==, in, any/all (tags) or >, >=, <, <= (created_at, updated_at, "
                "validated_at)"
            )
    return out

