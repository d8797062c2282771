"""Parity of an export with the engine: the same queries on both, top-k overlap per
strategy, and a filter matrix whose allowed chunk sets must be identical.

    verify_postgres(store, dsn, queries)   -> ParityReport

Strategies compared: ``vector`` (match_chunks vs the engine's vector search), ``fulltext``
(hybrid_search without an embedding: its text ranks alone, vs the engine's BM25) and
``hybrid`` (RRF of both). The engine runs with every truth level and without its
answerability gate, because the server has neither default to compare against; both
sides otherwise use their defaults (RRF k, candidates).

A filter check asks both sides which chunks a filter lets through: the engine compiles
it (enginelib/search/filters.py) over its catalog, the server runs the filter code its
search functions share (pg_functions.allowed_ids_function) over every chunk. Any
difference is a mismatch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import catalog_export as ce
from ..errors import ExportError
from ..search.filters import compile_filters
from ..search.request import SearchRequest
from ..types import TRUTH_LEVELS
from ._psycopg import psycopg, sql
from .options import ExportOptions
from .pg_functions import allowed_ids_function
from .pg_load import _extension_schema, _server_message
from .pg_schema import Names

if TYPE_CHECKING:
    from ..store import Store

STRATEGIES = ("vector", "fulltext", "hybrid")
# The SQL functions search the query as typed: where the engine rewrites queries (typo
# fixes, acronyms), the comparison turns that off.
AS_TYPED: dict[str, Any] = {"rewrite": False} if "rewrite" in SearchRequest.__dataclass_fields__ else {}
ALL_LEVELS = list(TRUTH_LEVELS)


@dataclass
class ParityReport:
    queries: int
    k: int
    overlap: dict[str, float] = field(default_factory=dict)  # strategy -> mean top-k overlap
    minimum: dict[str, float] = field(default_factory=dict)
    identical: dict[str, int] = field(default_factory=dict)  # queries with the same top-k ids
    filters_checked: int = 0
    filter_mismatches: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries, "k": self.k,
            "overlap": {s: round(v, 4) for s, v in self.overlap.items()},
            "minimum": self.minimum, "identical": self.identical,
            "filters_checked": self.filters_checked, "filter_mismatches": self.filter_mismatches,
        }


def verify_postgres(
    store: Store, dsn: str, queries: Sequence[str], *, options: ExportOptions | None = None,
    k: int = 10, filters: Sequence[Mapping[str, Any]] | None = None, exact: bool = True,
    query_vectors: np.ndarray | None = None, connect_timeout: int = 10,
) -> ParityReport:
    """Compare the export at ``dsn`` with ``store`` on ``queries`` and a filter matrix.

    ``filters``: the matrix (default: one built from the store's own values, see
    filter_matrix). ``exact``: exact vector search on both sides (the default, so the
    overlap measures the SQL rather than HNSW recall). ``query_vectors``: the queries'
    embeddings when they are already known (a benchmark's cache). ``connect_timeout``:
    seconds to wait for the server to answer, as export_postgres (libpq waits for ever).
    """
    opts = options or ExportOptions()
    report = ParityReport(queries=len(queries), k=k)
    vectors = query_vectors if query_vectors is not None else store.query_embeddings.embed(list(queries))
    matrix = list(filters) if filters is not None else filter_matrix(store)
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=connect_timeout) as conn:
            _require_export(conn, opts)
            names = Names.of(opts, _extension_schema(conn) or opts.extension_schema)
            if exact:
                conn.execute("SET enable_indexscan = off")
            per: dict[str, list[float]] = {s: [] for s in STRATEGIES}
            same: dict[str, int] = dict.fromkeys(STRATEGIES, 0)
            for query, vector in zip(queries, vectors, strict=True):
                for strategy in STRATEGIES:
                    server = _server_ids(conn, names, strategy, query, vector, k, {"truth_level": ALL_LEVELS})
                    engine = _engine_ids(store, strategy, query, k, None, exact)
                    per[strategy].append(top_overlap(server, engine))
                    same[strategy] += server == engine
            for strategy in STRATEGIES:
                if per[strategy]:
                    report.overlap[strategy] = float(np.mean(per[strategy]))
                    report.minimum[strategy] = float(min(per[strategy]))
                report.identical[strategy] = same[strategy]
            if matrix:
                conn.execute(allowed_ids_function(names))
            for spec in matrix:
                report.filters_checked += 1
                mismatch = _check_filter(store, conn, names, spec)
                if mismatch:
                    report.filter_mismatches.append(mismatch)
    except psycopg.Error as exc:
        message = _server_message(exc, dsn)
        error = ExportError(f"parity check against Postgres failed: {message}")
        raise error from (None if message != _server_message(exc) else exc)
    return report


def top_overlap(server: Sequence[int], engine: Sequence[int]) -> float:
    """Share of the longer of the two top-k lists found in the other: 1.0 when both are the
    same, also when both hold fewer than k ids or none (a query neither side matches)."""
    longest = max(len(server), len(engine))
    return len(set(server) & set(engine)) / longest if longest else 1.0


def _require_export(conn: psycopg.Connection[Any], opts: ExportOptions) -> None:
    """An ExportError saying where the export was looked for when it is not there (the
    first query failed on whatever it missed first: 'schema "extensions" does not exist')."""
    function = f"{opts.table_prefix}hybrid_search"
    found = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n "
        "ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = %s",
        [opts.schema, function]).fetchone()
    if found is None:
        raise ExportError(
            f"no enginelib export in schema {opts.schema!r} of this database (no "
            f"{opts.schema}.{function}()): run `enginelib export postgres --dsn ...` first, or "
            "give the --schema / --table-prefix the export was made with")


def _vec(vector: Any) -> str:
    return "[" + ",".join(f"{float(x):.9g}" for x in np.asarray(vector, dtype=np.float32)) + "]"


def _server_filters(spec: Mapping[str, Any]) -> dict[str, Any]:
    # The engine's truth_levels option is separate from its filters; the server has one
    # filters object whose truth_level defaults to L1 + L2. Every level unless the spec says.
    return {"truth_level": ALL_LEVELS, **spec}


def _server_ids(conn: psycopg.Connection[Any], names: Names, strategy: str, query: str, vector: Any,
                k: int, filters: Mapping[str, Any]) -> list[int]:
    cast = sql.SQL("%s::{}").format(names.vector)
    if strategy == "vector":
        statement = sql.SQL("SELECT id FROM {}({}, -1, %s, %s::jsonb)").format(names.table("match_chunks"), cast)
        params: list[Any] = [_vec(vector), k, json.dumps(filters)]
    else:
        statement = sql.SQL("SELECT id FROM {}(%s, {}, %s, %s, %s::jsonb)").format(
            names.table("hybrid_search"), cast)
        # RRF's k: the search request's default, as the engine side uses
        params = [query, None if strategy == "fulltext" else _vec(vector), k, SearchRequest.rrf_k,
                  json.dumps(filters)]
    return [int(r[0]) for r in conn.execute(statement, params).fetchall()]


def _engine_ids(store: Store, strategy: str, query: str, k: int, filters: Mapping[str, Any] | None,
                exact: bool) -> list[int]:
    response = store.search(query, strategy=strategy, exact=exact, truth_levels=ALL_LEVELS, limit=k,
                            filters=dict(filters) if filters else None, answerability_threshold=None,
                            log=False, **AS_TYPED)
    return [int(h.label) for h in response.hits]


def _check_filter(store: Store, conn: psycopg.Connection[Any], names: Names,
                  spec: Mapping[str, Any]) -> dict[str, Any] | None:
    engine = engine_allowed(store, spec)
    server = {int(r[0]) for r in conn.execute(
        "SELECT pg_temp.enginelib_allowed_ids(%s::jsonb)", [json.dumps(_server_filters(spec))]).fetchall()}
    if server == engine:
        return None
    return {"filter": dict(spec), "engine_only": len(engine - server), "server_only": len(server - engine),
            "engine": len(engine), "server": len(server)}


def engine_allowed(store: Store, spec: Mapping[str, Any]) -> set[int]:
    """Chunk labels the engine's filter lets through (every truth level unless the spec says)."""
    compiled = compile_filters(dict(spec) if spec else None)
    return ce.labels_matching(store._catalog, compiled.where, tuple(compiled.params))


def filter_matrix(store: Store) -> list[dict[str, Any]]:
    """Filters over values the store really holds: each kind the engine supports."""
    held = ce.filter_probe_values(store._catalog, _COMMON_COLUMNS)
    matrix: list[dict[str, Any]] = [{}]
    matrix += [{"truth_level": level} for level in held.common["truth_level"]]
    for name in _COMMON_COLUMNS[1:]:
        values = held.common[name]
        if values:
            matrix.append({name: values[0]})
        if len(values) > 1:
            matrix.append({name: values})
    tags = held.tags
    if tags:
        matrix += [{"tags": tags[:1]}, {"tags": {"all": tags}}]
    dates = held.dates
    if dates and dates[0] is not None:
        matrix += [{"created_at": {"gte": dates[0].isoformat()}},
                   {"created_at": {"lt": dates[0].isoformat()}},
                   {"updated_at": {"from": dates[1].isoformat(), "to": dates[2].isoformat()}}]
    for key, value in held.custom:
        if key and all(ch.isalnum() or ch in "_-" for ch in key):
            matrix.append({f"metadata.{key}": value})
    return matrix


_COMMON_COLUMNS = ("truth_level", "domain", "language", "document_type", "source_type", "author",
                   "tenant_id")
