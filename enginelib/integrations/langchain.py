"""A LangChain retriever over an enginelib store (``pip install 'enginelib[langchain]'``).

    from enginelib.integrations.langchain import EnginelibRetriever
    retriever = EnginelibRetriever(store=store, search_kwargs={"k": 5, "strategy": "hybrid",
                                   "filters": {"tags": ["brakes"]}, "truth_levels": ["L1"]})
    docs = retriever.invoke("when to replace brake pads?")
    docs[0].metadata["start_offset"], docs[0].metadata["quote"], docs[0].metadata["truth_level"]

Documents come in the engine's order, one per hit, ``page_content`` the chunk's text and
``metadata`` its citation and scores (``enginelib.integrations.citation_metadata``).
``search_kwargs`` take every ``Store.search`` option (``k`` is LangChain's name for
``limit``); ``retriever.invoke(query, **overrides)`` (or ``ainvoke``, ``batch``, ``abatch``)
changes them for one call. The query is one string: ``batch`` searches several (a list given
to ``invoke`` is refused, not fused into one ranking). When the answerability gate refuses,
the retriever returns ``[]`` like any LangChain retriever with nothing relevant, or raises
``NoRelevantSourcesError`` with ``on_refusal="raise"``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables.config import run_in_executor
    from pydantic import ConfigDict, Field
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "enginelib.integrations.langchain needs langchain-core: "
        "pip install 'enginelib[langchain]'"
    ) from exc

from ..errors import InvalidInputError
from ..search.request import OPTIONS, shown_names
from ..store import Store
from ._common import (
    check_refusal,
    check_store,
    citation_metadata,
    result_id,
    run_search,
    search_options,
)

FRAMEWORK = "LangChain"


class EnginelibRetriever(BaseRetriever):
    """LangChain ``BaseRetriever`` answering from ``store`` with cited chunks."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Store
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    on_refusal: str = "empty"

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic sees them, so bad options raise enginelib's typed errors
        # (pydantic would wrap them in a ValidationError). Kept as given (k stays k), so
        # that retriever.search_kwargs["k"] = 2 works as on LangChain's own retrievers.
        check_store(data.get("store"), FRAMEWORK)
        _refuse_unknown(data, type(self).model_fields)
        given = data.get("search_kwargs") or {}
        search_options(given, limit_alias="k", framework=FRAMEWORK)
        data["search_kwargs"] = dict(given)
        check_refusal(data.get("on_refusal", "empty"))
        super().__init__(**data)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        # Checked again per call: search_kwargs may have been changed since construction.
        options = search_options(
            {**_renamed(self.search_kwargs), **_renamed(overrides)}, limit_alias="k",
            framework=FRAMEWORK,
        )
        response = run_search(self.store, query, options, self.on_refusal, framework=FRAMEWORK)
        return [
            Document(page_content=hit.content, metadata=citation_metadata(hit, response),
                     id=result_id(hit))
            for hit in response.hits
        ]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        # LangChain's default takes no options: ainvoke(q, k=2) was a bare TypeError. The
        # search runs in a worker thread, as the default does, so the event loop goes on.
        return await run_in_executor(
            None, self._get_relevant_documents, query, run_manager=run_manager.get_sync(),
            **overrides,
        )


def _refuse_unknown(data: Mapping[str, Any], fields: Iterable[str]) -> None:
    """Pydantic ignores a keyword that is not a field: ``EnginelibRetriever(store=s, k=2,
    filters={"tenant_id": "a"})`` searched every tenant, ten results, without a word."""
    unknown = set(data) - set(fields)
    if not unknown:
        return
    search = sorted(unknown & ({"k", "preset"} | set(OPTIONS)))
    if search:
        example = ", ".join(f"{name!r}: ..." for name in search[:3])
        hint = f": search options go in search_kwargs, e.g. search_kwargs={{{example}}}"
    else:
        close = [m for n in shown_names(unknown)
                 for m in difflib.get_close_matches(n, sorted(fields), n=1, cutoff=0.6)]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
    if "search_type" in unknown:  # VectorStoreRetriever's: "mmr", "similarity_score_threshold"
        hint += ("; for search_type='mmr' give search_kwargs={'mmr': True}, for a score "
                 "threshold search_kwargs={'min_score': ...}")
    raise InvalidInputError(
        f"{FRAMEWORK} retriever: unknown argument(s) {shown_names(unknown)}{hint}; it takes "
        f"{', '.join(sorted(fields))}")


def _renamed(options: Mapping[str, Any]) -> dict[str, Any]:
    """``k`` as ``limit``, so that a per-call ``k`` replaces the configured limit (and the
    other way round)."""
    if not isinstance(options, Mapping):  # search_kwargs replaced by something else
        search_options(options, limit_alias="k", framework=FRAMEWORK)  # raises, saying what
    renamed = dict(options)
    if "k" in renamed and "limit" in renamed:  # one of them was dropped without a word
        raise InvalidInputError(
            f"give either k= or limit= to the {FRAMEWORK} retriever, not both")
    if "k" in renamed:
        renamed["limit"] = renamed.pop("k")
    return renamed
