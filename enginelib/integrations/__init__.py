"""Retrievers for agent frameworks, each behind its own optional extra.

``enginelib.integrations.langchain`` (``pip install 'enginelib[langchain]'``) and
``enginelib.integrations.llama_index`` (``pip install 'enginelib[llama-index]'``). Both
pass the engine's options through, keep its order, and put the citation in each result's
metadata (see ``citation_metadata``).
"""

from ._common import (
    ON_REFUSAL,
    citation_metadata,
    result_id,
    run_search,
    search_options,
)

__all__ = ["ON_REFUSAL", "citation_metadata", "result_id", "run_search", "search_options"]
