"""Checks shared by the graph vector backends (hnsw.py, usearch_vectors.py)."""

from __future__ import annotations

from enginelib.errors import InvalidInputError


def check_graph_options(dim: int, exact_threshold: int, **positive: int | None) -> None:
    """InvalidInputError naming the option when a dimension, a graph option (``M``,
    ``ef_construction``, ``ef_search``, ``num_threads``: None means "choose") or the exact-path
    threshold cannot be used."""
    if dim <= 0:
        raise InvalidInputError(f"vector dimension must be positive, got {dim}")
    for name, value in positive.items():
        if value is not None and value <= 0:
            raise InvalidInputError(f"{name} must be positive, got {value}")
    if exact_threshold < 0:
        raise InvalidInputError(f"exact_threshold must be >= 0, got {exact_threshold}")
