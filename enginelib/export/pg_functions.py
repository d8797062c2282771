"""SQL functions of the export: hybrid_search (RRF), match_chunks, filters, version archive.

RRF is the embedded engine's (enginelib/search/fusion.py): ``score = sum 1 / (k + rank)``
with ranks from 1, k = 60 by default, each method contributing its top ``candidate_count``
(default 100, like the engine's ``candidates``) and ties broken by the smaller chunk id.
Truth levels default to L1 + L2 as in the engine; the caller widens them with
``{"truth_level": [...]}``.

The text side is BM25 as the engine's tantivy index scores it (k1 = 1.2, b = 0.75,
idf = ln(1 + (N - df + 0.5) / (df + 0.5))): term frequencies are read from the chunk's
tsvector, document frequencies and N from ``term_stats`` / ``text_stats`` (computed in SQL
from the exported tsvectors at export time, pg_text_stats.py), and the length
normalization uses ``text_length``, the engine's own word count of the chunk.

Every function is SECURITY INVOKER (RLS applies to the caller) with ``SET search_path =
''``: every name inside is schema-qualified, pgvector's type and operators included.
Filters are decoded once into variables at the top of a function, never per row.
"""

from __future__ import annotations

from ..indexes.analyzers import MAX_TOKEN_CHARS
from ..search.filters import DATE_ONLY_PATTERN, ISO_DATETIME_PATTERN, THROUGH_THE_DAY
from ..search.fusion import RRF_K
from ..search.request import DEFAULT_CANDIDATES, DEFAULT_LIMIT
from ..types import DEFAULT_SEARCH_TRUTH_LEVELS, TRUTH_LEVELS
from ..validation import (
    MAX_CANDIDATES,
    MAX_FILTER_FIELDS,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_RRF_K,
)
from ._psycopg import sql
from .options import ExportOptions
from .pg_schema import Names, SqlText
from .pg_security import tenant_function

# filters key -> column it matches (any of the given values). Chunks carry truth_level and
# tenant_id themselves so the RLS policy and these filters need no join for them.
_ANY_OF = {
    "truth_level": "c.truth_level",
    "tenant_id": "c.tenant_id",
    "namespace": "c.tenant_id",
    "language": "c.language",
    "document_id": "c.document_id",
    "domain": "d.domain",
    "source_type": "d.source_type",
    "document_type": "d.document_type",
    "author": "d.author",
    "source_id": "d.source_id",
}
_DATES = ("created_at", "updated_at", "validated_at")
# The engine's operators (enginelib/search/filters.py), "from" / "to" included.
_DATE_OPS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<", "from": ">=", "to": "<="}
# ``metadata``: a JSON containment object (server only); ``metadata.<key>`` /
# ``custom.<key>``: the engine's per-key filter, compared as text like the engine does.
FILTER_KEYS: tuple[str, ...] = (*_ANY_OF, "tags", "metadata", *_DATES)
_METADATA_KEY_PATTERN = r"^(metadata|custom)\.[A-Za-z0-9_\-]{1,128}$"
# What both the engine's datetime.fromisoformat and Postgres's timestamptz read: a date,
# optionally a time, then optionally an offset ("now", "epoch" or a bare number are not dates).
_ISO_DATETIME = ISO_DATETIME_PATTERN
# The engine's code tokens (analyzers.CODE_PATTERN_RUST) in Postgres's regex dialect.
CODE_PATTERN_SQL = r"[[:alnum:]_]+(?:[-./][[:alnum:]_]+)*"
# tantivy's BM25 constants.
BM25_K1 = 1.2
BM25_B = 0.75

# Function settings. search_path: nothing resolves through the caller's path.
# iterative_scan: a filtered HNSW scan keeps going until it has enough rows that pass
# (pgvector 0.8; off by default). TimeZone: a date bound without offset means UTC, as
# the catalog's naive timestamps do. The SET clause restores all of them on exit, and
# also reverts the ef_search raise made inside. plan_cache_mode: each call is planned
# with its filter values; a generic plan guesses a truth-level filter keeps 0.5% of the
# rows and then sorts them all instead of walking the HNSW index.
_SETTINGS = (
    "SECURITY INVOKER\nSET search_path = ''\nSET hnsw.iterative_scan = 'strict_order'\n"
    "SET TimeZone = 'UTC'\nSET plan_cache_mode = 'force_custom_plan'"
)


def signatures(names: Names) -> dict[str, sql.Composed]:
    """Every function of the export with its argument types (GRANT/REVOKE name them so,
    which stays unambiguous beside another project's function of the same name)."""
    vector = names.vector
    return {
        "text_array": sql.SQL("{}(jsonb)").format(names.table("text_array")),
        "check_filters": sql.SQL("{}(jsonb)").format(names.table("check_filters")),
        "current_tenant": sql.SQL("{}()").format(names.table("current_tenant")),
        "match_chunks": sql.SQL("{}({}, double precision, integer, jsonb)").format(
            names.table("match_chunks"), vector),
        "hybrid_search": sql.SQL("{}(text, {}, integer, integer, jsonb, integer)").format(
            names.table("hybrid_search"), vector),
        "archive_document_version": sql.SQL("{}()").format(names.table("archive_document_version")),
    }


INTERNAL_FUNCTIONS = ("archive_document_version",)


def function_statements(names: Names, options: ExportOptions, dim: int) -> list[SqlText]:
    return [_text_array(names), _check_filters(names), tenant_function(names, options),
            _match_chunks(names, dim), _hybrid_search(names, dim), *_archive_trigger(names)]


# -- arguments ------------------------------------------------------------------------------
# The engine's bounds for the same options (enginelib/validation.py): a number beyond them
# is refused with 22023 naming the argument, never left to overflow (rrf_k + rank as an
# integer), to let every row through (a NaN threshold) or to fail inside pgvector.


def _check_int(name: str, low: int, high: int, default: int) -> sql.Composed:
    message = f"{name} must be an integer within {low}..{high} (default {default}), got %"
    return sql.SQL(
        """  IF {arg} IS NULL OR {arg} NOT BETWEEN {low} AND {high} THEN
    RAISE EXCEPTION {message}, coalesce({arg}::text, 'NULL') USING ERRCODE = '22023';
  END IF;"""
    ).format(arg=sql.Identifier(name), low=sql.Literal(low), high=sql.Literal(high),
             message=sql.Literal(message))


def _check_threshold() -> sql.SQL:
    # NaN sorts above every number in Postgres, so NOT BETWEEN catches it (and infinities).
    # NULL keeps its meaning: no threshold, as the engine's min_score=None.
    return sql.SQL(
        """  IF match_threshold IS NOT NULL AND match_threshold NOT BETWEEN -1 AND 1 THEN
    RAISE EXCEPTION 'match_threshold must be a finite number within -1..1 (a cosine similarity; NULL or -1: no threshold), got %', match_threshold
      USING ERRCODE = '22023';
  END IF;"""
    )


def _check_query_text() -> sql.Composed:
    # Every call parses and stems the whole text once per text-search configuration.
    return sql.SQL(
        """  IF pg_catalog.length(query_text) > {limit} THEN
    RAISE EXCEPTION 'query_text is % characters; the maximum is {shown}',
      pg_catalog.to_char(pg_catalog.length(query_text), 'FM9,999,999,999') USING ERRCODE = '22023';
  END IF;"""
    ).format(limit=sql.SQL(str(int(MAX_QUERY_CHARS))), shown=sql.SQL(f"{MAX_QUERY_CHARS:,}"))


def _check_embedding(names: Names, dim: int, required: bool) -> sql.Composed:
    """A query vector of the export's dimension (pgvector's own error names neither)."""
    missing = sql.SQL(
        """  IF query_embedding IS NULL THEN
    RAISE EXCEPTION 'query_embedding is required: a vector of {dim} dimensions (the store''s embedding model)'
      USING ERRCODE = '22023';
  END IF;
""").format(dim=sql.SQL(str(int(dim)))) if required else sql.SQL(
        # hybrid_search with neither a text nor a vector returned no rows, as if nothing matched
        """  IF query_embedding IS NULL AND pg_catalog.btrim(coalesce(query_text, '')) = '' THEN
    RAISE EXCEPTION 'nothing to search for: give query_text, query_embedding or both'
      USING ERRCODE = '22023';
  END IF;
""")
    # An all-zero vector has no direction: every cosine distance is NaN and nothing matched
    # without a word; the engine refuses it too (InvalidVectorError).
    return sql.SQL(
        """{missing}  IF {dims}(query_embedding) <> {dim} THEN
    RAISE EXCEPTION 'query_embedding has % dimensions; this export needs {dim} (embed the query with the store''s model)',
      {dims}(query_embedding) USING ERRCODE = '22023';
  END IF;
  IF {norm}(query_embedding) = 0 THEN
    RAISE EXCEPTION 'query_embedding is all zeros: it has no direction to search' USING ERRCODE = '22023';
  END IF;"""
    ).format(missing=missing, dims=sql.SQL("{}.vector_dims").format(sql.Identifier(names.ext)),
             norm=sql.SQL("{}.vector_norm").format(sql.Identifier(names.ext)),
             dim=sql.SQL(str(int(dim))))


def _text_array(names: Names) -> sql.Composed:
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(value jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE SECURITY INVOKER SET search_path = '' AS $fn$
  SELECT CASE
    WHEN value IS NULL OR pg_catalog.jsonb_typeof(value) = 'null' THEN NULL
    WHEN pg_catalog.jsonb_typeof(value) = 'array' THEN
      ARRAY(SELECT pg_catalog.jsonb_array_elements_text(value))
    ELSE ARRAY[value #>> '{{}}']
  END
$fn$"""
    ).format(fn=names.table("text_array"))


def _check_filters(names: Names) -> sql.Composed:
    known = sql.SQL("ARRAY[{}]::text[]").format(
        sql.SQL(", ").join(sql.Literal(k) for k in FILTER_KEYS)
    )
    list_keys = sql.SQL("ARRAY[{}]::text[]").format(
        sql.SQL(", ").join(sql.Literal(k) for k in _ANY_OF)
    )
    ops = sql.SQL("ARRAY[{}]::text[]").format(sql.SQL(", ").join(sql.Literal(k) for k in _DATE_OPS))
    dates = sql.SQL("ARRAY[{}]::text[]").format(sql.SQL(", ").join(sql.Literal(k) for k in _DATES))
    levels = sql.SQL("ARRAY[{}]::text[]").format(sql.SQL(", ").join(sql.Literal(k) for k in TRUTH_LEVELS))
    # The embedded engine rejects unknown fields and empty lists; so does the server,
    # rather than silently returning unfiltered (or no) rows.
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(filters jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER SET search_path = '' AS $fn$
DECLARE unknown text; empty text; bad_shape text; bad_op text;
  fkey text; fvalue jsonb; items jsonb; bad jsonb; op text; bound jsonb; ok boolean;
BEGIN
  IF filters IS NULL THEN RETURN; END IF;
  IF pg_catalog.jsonb_typeof(filters) <> 'object' THEN
    RAISE EXCEPTION 'filters must be a JSON object, got %', pg_catalog.jsonb_typeof(filters)
      USING ERRCODE = '22023';
  END IF;
  IF (SELECT count(*) FROM pg_catalog.jsonb_object_keys(filters)) > {max_fields} THEN
    RAISE EXCEPTION 'filters name % fields; the maximum is {max_fields}',
      (SELECT count(*) FROM pg_catalog.jsonb_object_keys(filters)) USING ERRCODE = '22023';
  END IF;
  SELECT pg_catalog.string_agg(k, ', ') INTO unknown FROM pg_catalog.jsonb_object_keys(filters) AS k
    WHERE k <> ALL ({known}) AND k !~ {meta_key};
  IF unknown IS NOT NULL THEN
    RAISE EXCEPTION 'unknown filter field(s) %; filterable fields are: %, metadata.<key>', unknown,
      pg_catalog.array_to_string({known}, ', ') USING ERRCODE = '22023';
  END IF;
  SELECT pg_catalog.string_agg(e.key, ', ') INTO empty FROM pg_catalog.jsonb_each(filters) e
    WHERE (e.key = ANY ({list_keys}) OR e.key = 'tags' OR e.key ~ {meta_key})
      AND pg_catalog.jsonb_typeof(e.value) = 'array' AND pg_catalog.jsonb_array_length(e.value) = 0;
  IF empty IS NOT NULL THEN
    RAISE EXCEPTION 'filter(s) % have an empty list: nothing could match', empty
      USING ERRCODE = '22023';
  END IF;
  -- A date given as a bare value or {{}}, or tags as an object without exactly one of
  -- any / all, decode to no bound at all: the filter would be dropped and every row
  -- returned. The engine refuses both shapes.
  SELECT pg_catalog.string_agg(e.key, ', ') INTO bad_shape FROM pg_catalog.jsonb_each(filters) e
    WHERE (e.key = ANY ({dates}) AND (pg_catalog.jsonb_typeof(e.value) <> 'object' OR e.value = '{{}}'::jsonb))
       OR (e.key = 'tags' AND pg_catalog.jsonb_typeof(e.value) = 'object' AND (
             SELECT count(*) <> 1 OR pg_catalog.bool_or(k NOT IN ('any', 'all'))
             FROM pg_catalog.jsonb_object_keys(e.value) k));
  IF bad_shape IS NOT NULL THEN
    RAISE EXCEPTION 'filter(s) % have the wrong shape: a date takes a range such as {{"gte": "2024-01-01", "lt": "2025-01-01"}}, tags a list or {{"any": [...]}} or {{"all": [...]}}', bad_shape
      USING ERRCODE = '22023';
  END IF;
  SELECT pg_catalog.string_agg(e.key || '.' || o, ', ') INTO bad_op
    FROM pg_catalog.jsonb_each(filters) e, pg_catalog.jsonb_object_keys(
      CASE WHEN pg_catalog.jsonb_typeof(e.value) = 'object' THEN e.value ELSE '{{}}'::jsonb END) o
    WHERE e.key = ANY ({dates}) AND o <> ALL ({ops});
  IF bad_op IS NOT NULL THEN
    RAISE EXCEPTION 'unknown date operator(s) %; use one of %', bad_op,
      pg_catalog.array_to_string({ops}, ', ') USING ERRCODE = '22023';
  END IF;
  -- Values of the wrong type, which the engine refuses too (search/filters.py,
  -- validation.check_filters): they matched nothing (a null, a number) or, for a null,
  -- decoded to no filter at all.
  FOR fkey, fvalue IN SELECT e.key, e.value FROM pg_catalog.jsonb_each(filters) e ORDER BY e.key LOOP
    IF fkey = 'metadata' THEN
      IF pg_catalog.jsonb_typeof(fvalue) <> 'object' THEN
        RAISE EXCEPTION 'filter metadata expects a JSON object that the document''s metadata contains, got %',
          pg_catalog.left(fvalue::text, 60) USING ERRCODE = '22023';
      END IF;
    ELSIF fkey = ANY ({dates}) THEN
      FOR op, bound IN SELECT e.key, e.value FROM pg_catalog.jsonb_each(fvalue) e LOOP
        ok := pg_catalog.jsonb_typeof(bound) = 'string' AND (bound #>> '{{}}') ~ {iso};
        IF ok THEN
          BEGIN
            PERFORM (bound #>> '{{}}')::timestamptz;
          EXCEPTION WHEN data_exception THEN ok := false;
          END;
        END IF;
        IF NOT ok THEN
          RAISE EXCEPTION 'filter % expects an ISO date or datetime string such as "2024-01-01" or "2024-01-01T08:00:00+02:00" for %, got %',
            fkey, op, pg_catalog.left(bound::text, 60) USING ERRCODE = '22023';
        END IF;
      END LOOP;
    ELSE  -- a list key, tags or metadata.<key>: a value or a list of values
      items := CASE WHEN fkey = 'tags' AND pg_catalog.jsonb_typeof(fvalue) = 'object'
                    THEN (SELECT e.value FROM pg_catalog.jsonb_each(fvalue) e LIMIT 1) ELSE fvalue END;
      IF pg_catalog.jsonb_typeof(items) <> 'array' THEN
        items := pg_catalog.jsonb_build_array(items);
      END IF;
      IF pg_catalog.jsonb_array_length(items) = 0 THEN
        RAISE EXCEPTION 'filter % expects a non-empty list: nothing could match', fkey USING ERRCODE = '22023';
      END IF;
      IF pg_catalog.jsonb_array_length(items) > {max_values} THEN
        RAISE EXCEPTION 'filter % expects at most {max_values} values, got %', fkey,
          pg_catalog.jsonb_array_length(items) USING ERRCODE = '22023';
      END IF;
      IF fkey ~ {meta_key} THEN
        SELECT x INTO bad FROM pg_catalog.jsonb_array_elements(items) x
          WHERE pg_catalog.jsonb_typeof(x) NOT IN ('string', 'number', 'boolean') LIMIT 1;
        IF FOUND THEN
          RAISE EXCEPTION 'filter % expects a string, number or boolean, or a list of them, got %', fkey,
            pg_catalog.left(bad::text, 60) USING ERRCODE = '22023';
        END IF;
      ELSE
        SELECT x INTO bad FROM pg_catalog.jsonb_array_elements(items) x
          WHERE pg_catalog.jsonb_typeof(x) <> 'string' OR x = '""'::jsonb LIMIT 1;
        IF FOUND THEN
          RAISE EXCEPTION 'filter % expects a non-empty string or a list of them, got %', fkey,
            pg_catalog.left(bad::text, 60) USING ERRCODE = '22023';
        END IF;
        IF fkey = 'truth_level' THEN
          SELECT x INTO bad FROM pg_catalog.jsonb_array_elements(items) x
            WHERE pg_catalog.upper(pg_catalog.btrim(x #>> '{{}}')) <> ALL ({levels}) LIMIT 1;
          IF FOUND THEN
            RAISE EXCEPTION 'filter truth_level expects one of % (or a list of them), got %',
              pg_catalog.array_to_string({levels}, ', '), pg_catalog.left(bad::text, 60) USING ERRCODE = '22023';
          END IF;
        END IF;
      END IF;
    END IF;
  END LOOP;
END
$fn$"""
    ).format(fn=names.table("check_filters"), known=known, meta_key=sql.Literal(_METADATA_KEY_PATTERN),
             list_keys=list_keys, dates=dates, ops=ops, iso=sql.Literal(_ISO_DATETIME),
             max_values=sql.SQL(str(int(MAX_CANDIDATES))), levels=levels,
             max_fields=sql.SQL(str(int(MAX_FILTER_FIELDS))))


def _declare_filters(names: Names) -> sql.Composed:
    """plpgsql DECLARE lines decoding ``filters`` once; filter_clause() reads them."""
    arr = names.table("text_array")
    default_levels = sql.SQL("ARRAY[{}]::text[]").format(
        sql.SQL(", ").join(sql.Literal(level) for level in DEFAULT_SEARCH_TRUTH_LEVELS)
    )
    lines: list[SqlText] = [
        # " l2" is a spelling of L2 in the engine's filters too (check_filters refuses others).
        sql.SQL(
            "f_truth_level text[] := CASE WHEN filters->'truth_level' IS NULL THEN {default} "
            "ELSE ARRAY(SELECT pg_catalog.upper(pg_catalog.btrim(e)) "
            "FROM pg_catalog.unnest({arr}(filters->'truth_level')) e) END;"
        ).format(arr=arr, default=default_levels),
    ]
    for key in _ANY_OF:
        if key != "truth_level":
            lines.append(sql.SQL("{var} text[] := {arr}(filters->{key});").format(
                var=sql.Identifier(f"f_{key}"), arr=arr, key=sql.Literal(key)))
    lines += [
        sql.SQL(
            "f_tags_any text[] := CASE WHEN pg_catalog.jsonb_typeof(filters->'tags') = 'object' "
            "THEN {arr}(filters->'tags'->'any') ELSE {arr}(filters->'tags') END;"
        ).format(arr=arr),
        sql.SQL("f_tags_all text[] := {arr}(filters->'tags'->'all');").format(arr=arr),
        sql.SQL("f_metadata jsonb := filters->'metadata';"),
        # metadata.<key> filters as {filter key: {"key": key, "text": [values as text],
        # "num": [numbers]}}; the engine compares json_extract_string(custom, key) with
        # str(value), the same text ->> gives, and a number with a stored number by value (5
        # meets 5.0), as jsonb does. Keyed by the filter's own key: by the metadata key,
        # metadata.region and custom.region made one entry and the server kept one of the
        # two where the engine requires both.
        sql.SQL(
            "f_metadata_keys jsonb := (SELECT pg_catalog.jsonb_object_agg(e.key, "
            "pg_catalog.jsonb_build_object('key', pg_catalog.split_part(e.key, '.', 2), "
            "'text', pg_catalog.to_jsonb({arr}(e.value)), 'num', "
            "(SELECT pg_catalog.jsonb_agg(x) FROM pg_catalog.jsonb_array_elements(CASE WHEN "
            "pg_catalog.jsonb_typeof(e.value) = 'array' THEN e.value ELSE pg_catalog.jsonb_build_array(e.value) "
            "END) x WHERE pg_catalog.jsonb_typeof(x) = 'number'))) "
            "FROM pg_catalog.jsonb_each(filters) e WHERE e.key ~ {pattern});"
        ).format(arr=arr, pattern=sql.Literal(_METADATA_KEY_PATTERN)),
    ]
    for field in _DATES:
        for op in _DATE_OPS:
            lines.append(sql.SQL("{var} timestamptz := (filters->{f}->>{op})::timestamptz;").format(
                var=sql.Identifier(f"f_{field}_{op}"), f=sql.Literal(field), op=sql.Literal(op)))
        for op in THROUGH_THE_DAY:
            lines.append(sql.SQL("{var} boolean := coalesce((filters->{f}->>{op}) ~ {day}, false);").format(
                var=sql.Identifier(f"f_{field}_{op}_day"), f=sql.Literal(field), op=sql.Literal(op),
                day=sql.Literal(DATE_ONLY_PATTERN)))
    return sql.SQL("\n").join(lines)


def filter_clause(names: Names) -> sql.Composed:
    """The WHERE clause over chunks ``c`` joined to documents ``d`` (after _declare_filters)."""
    clauses: list[SqlText] = []
    for key, column in _ANY_OF.items():
        var = sql.Identifier(f"f_{key}")
        if key == "truth_level":
            clauses.append(sql.SQL("{col} = ANY ({var})").format(col=sql.SQL(column), var=var))
        else:
            clauses.append(sql.SQL("({var} IS NULL OR {col} = ANY ({var}))").format(
                col=sql.SQL(column), var=var))
    clauses += [
        sql.SQL("(f_tags_any IS NULL OR d.tags && f_tags_any)"),
        sql.SQL("(f_tags_all IS NULL OR d.tags @> f_tags_all)"),
        # Containment, so the GIN jsonb_path_ops index on metadata can answer it.
        sql.SQL("(f_metadata IS NULL OR d.metadata @> f_metadata)"),
        sql.SQL(
            "(f_metadata_keys IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each(f_metadata_keys) m "
            "WHERE NOT coalesce(m.value->'text' ? (d.metadata->>(m.value->>'key')), false) "
            "AND NOT coalesce(pg_catalog.jsonb_typeof(d.metadata->(m.value->>'key')) = 'number' "
            "AND m.value->'num' @> pg_catalog.jsonb_build_array(d.metadata->(m.value->>'key')), false)))"
        ),
    ]
    for field in _DATES:
        for op, symbol in _DATE_OPS.items():
            if op in THROUGH_THE_DAY:  # a date alone is its whole day, as in the engine
                clauses.append(sql.SQL(
                    "({var} IS NULL OR CASE WHEN {day} THEN d.{col} {day_symbol} {var} + interval '1 day' "
                    "ELSE d.{col} {symbol} {var} END)").format(
                    var=sql.Identifier(f"f_{field}_{op}"), day=sql.Identifier(f"f_{field}_{op}_day"),
                    col=sql.Identifier(field), symbol=sql.SQL(symbol),
                    day_symbol=sql.SQL(THROUGH_THE_DAY[op])))
                continue
            clauses.append(sql.SQL("({var} IS NULL OR d.{col} {symbol} {var})").format(
                var=sql.Identifier(f"f_{field}_{op}"), col=sql.Identifier(field), symbol=sql.SQL(symbol)))
    return sql.SQL("\n      AND ").join(clauses)


def allowed_ids_function(names: Names) -> sql.Composed:
    """``pg_temp.enginelib_allowed_ids(filters)``: every chunk id the exported filter code
    lets through, for verify's filter check (the search functions return at most
    MAX_LIMIT rows, a filter may pass more). A temporary function: nothing is left behind."""
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION pg_temp.enginelib_allowed_ids(filters jsonb) RETURNS SETOF bigint
LANGUAGE plpgsql STABLE
{settings}
AS $fn$
DECLARE
{declare}
BEGIN
  RETURN QUERY SELECT c.id FROM {chunks} c JOIN {documents} d ON d.document_id = c.document_id
    WHERE {where};
END
$fn$"""
    ).format(settings=sql.SQL(_SETTINGS), declare=_declare_and_check(names), chunks=names.table("chunks"),
             documents=names.table("documents"), where=filter_clause(names))


# hnsw returns at most hnsw.ef_search rows (pgvector's default 40): raise it, inside the
# function only and never lower, to the number of candidates asked for.
_EF_SEARCH = """  IF coalesce(nullif(pg_catalog.current_setting('hnsw.ef_search', true), '')::integer, 40) < depth THEN
    PERFORM pg_catalog.set_config('hnsw.ef_search', least(depth, 1000)::text, true);
  END IF;"""


def _match_chunks(names: Names, dim: int) -> sql.Composed:
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(
  query_embedding {vector},
  match_threshold double precision DEFAULT -1,
  match_count integer DEFAULT {limit},
  filters jsonb DEFAULT '{{}}'::jsonb)
RETURNS TABLE (id bigint, document_id text, chunk_index integer, content text,
  similarity double precision, start_offset integer, end_offset integer, truth_level text,
  title text, heading_path text)
LANGUAGE plpgsql STABLE
{settings}
AS $fn$
#variable_conflict use_column
DECLARE
depth integer := match_count;
{declare}
BEGIN
{checks}
{ef_search}
  RETURN QUERY
  WITH v AS MATERIALIZED (
    SELECT c.id, c.embedding {dist} query_embedding AS dist
    FROM {chunks} c JOIN {documents} d ON d.document_id = c.document_id
    WHERE {where}
      AND c.embedding {dist} query_embedding <= 1 - coalesce(match_threshold, -1)
    ORDER BY c.embedding {dist} query_embedding
    LIMIT match_count)
  SELECT c.id, c.document_id, c.chunk_index, c.content, 1 - v.dist, c.start_offset,
         c.end_offset, c.truth_level, c.title, c.heading_path
  FROM v JOIN {chunks} c ON c.id = v.id
  ORDER BY v.dist, v.id;
END
$fn$"""
    ).format(
        fn=names.table("match_chunks"), vector=names.vector, dist=names.op("<=>"),
        chunks=names.table("chunks"), documents=names.table("documents"),
        where=filter_clause(names), ef_search=sql.SQL(_EF_SEARCH),
        declare=_declare_and_check(names), settings=sql.SQL(_SETTINGS),
        limit=sql.SQL(str(int(DEFAULT_LIMIT))),
        checks=sql.SQL("\n").join([
            _check_embedding(names, dim, required=True), _check_threshold(),
            _check_int("match_count", 1, MAX_LIMIT, DEFAULT_LIMIT)]),
    )


def _declare_and_check(names: Names) -> sql.Composed:
    # check_filters runs first (in the DECLARE defaults' place it could not raise clearly),
    # so a bad filter fails with its message before any variable is decoded.
    return sql.SQL("checked boolean := ({check}(filters) IS NULL);\n{declare}").format(
        check=names.table("check_filters"), declare=_declare_filters(names))


def _hybrid_search(names: Names, dim: int) -> sql.Composed:
    # Full text: the query is parsed once per text-search configuration of the export (a
    # chunk is matched with the query parsed in its own language); any term may match,
    # like the engine's BM25; a repeated query word counts once per occurrence.
    #
    # Exact top-``depth`` BM25 without scoring every chunk that holds a common word
    # (MaxScore): terms are taken rarest first; only chunks holding one of the "essential"
    # terms taken so far are scored (fully, every query term). A chunk holding none of
    # them scores less than the sum of the other terms' upper bounds, idf * (k1 + 1); once
    # that sum is <= the depth-th best score found, no such chunk can enter the top, and
    # the result is exactly the exhaustive one.
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(
  query_text text,
  query_embedding {vector},
  match_count integer DEFAULT {limit},
  rrf_k integer DEFAULT {rrf_k},
  filters jsonb DEFAULT '{{}}'::jsonb,
  candidate_count integer DEFAULT {candidates})
RETURNS TABLE (id bigint, document_id text, chunk_index integer, content text,
  vector_rank integer, bm25_rank integer, rrf_score double precision, start_offset integer,
  end_offset integer, truth_level text, title text, heading_path text,
  similarity double precision, text_score double precision)
LANGUAGE plpgsql STABLE
{settings}
AS $fn$
#variable_conflict use_column
DECLARE
depth integer;
cfg regconfig; n_chunks double precision; avg_len double precision; avg_code double precision;
lex text[]; w double precision[]; essential integer; rest double precision;
tsq pg_catalog.tsquery; code_terms text[]; has_codes boolean; ids bigint[]; scores double precision[]; theta double precision;
text_ids bigint[] := '{{}}'; text_scores double precision[] := '{{}}';
{declare}
BEGIN
{checks}
  depth := greatest(candidate_count, match_count);
  -- NFC, as the engine reads a query and stores every text: "données" typed decomposed
  -- ("donne" + U+0301) would match no lexeme. normalize() needs a UTF8 database.
  IF pg_catalog.current_setting('server_encoding') = 'UTF8' THEN
    query_text := pg_catalog.normalize(query_text, 'NFC');
  END IF;
{ef_search}
  -- Terms: the query's lexemes in the configuration, and its code tokens (marked by a
  -- leading space, which no lexeme has) scored against the codes field as the engine does.
  FOR cfg, n_chunks, avg_len, avg_code IN
    SELECT s.ts_config, s.chunks, greatest(s.avg_length, 1e-9), greatest(s.avg_code_length, 1e-9)
    FROM {text_stats} s
    WHERE coalesce(query_text, '') <> ''
  LOOP
    SELECT pg_catalog.array_agg(x.lexeme ORDER BY x.idf DESC, x.lexeme),
           pg_catalog.array_agg(x.qtf * x.idf ORDER BY x.idf DESC, x.lexeme)
      INTO lex, w
      FROM (SELECT t.lexeme, coalesce(pg_catalog.array_length(t.positions, 1), 1)::double precision AS qtf,
                   pg_catalog.ln(1 + (n_chunks - ts.df + 0.5) / (ts.df + 0.5)) AS idf
            FROM pg_catalog.unnest(pg_catalog.to_tsvector(cfg, query_text)) t
            JOIN {term_stats} ts ON ts.ts_config = cfg AND ts.lexeme = t.lexeme
            UNION ALL
            SELECT ' ' || q.code, count(*)::double precision,
                   pg_catalog.ln(1 + (n_chunks - cs.df + 0.5) / (cs.df + 0.5))
            FROM (SELECT pg_catalog.lower(m[1]) AS code
                  FROM pg_catalog.regexp_matches(query_text, {code_pattern}, 'g') m
                  WHERE m[1] ~ '[0-9_./-]' AND pg_catalog.octet_length(pg_catalog.lower(m[1])) < {max_token}) q
            JOIN {code_stats} cs ON cs.code = q.code
            GROUP BY q.code, cs.df) x;
    CONTINUE WHEN lex IS NULL;
    -- Constant in each call's plan: without code terms the codes are never unnested.
    has_codes := EXISTS (SELECT 1 FROM pg_catalog.unnest(lex) e WHERE pg_catalog.left(e, 1) = ' ');
    essential := 1;
    LOOP
      SELECT coalesce(sum(x), 0) * {k1_plus_1} INTO rest FROM pg_catalog.unnest(w[essential + 1:]) x;
      SELECT pg_catalog.string_agg(pg_catalog.quote_literal(e), ' | ')::pg_catalog.tsquery INTO tsq
        FROM pg_catalog.unnest(lex[1:essential]) e WHERE pg_catalog.left(e, 1) <> ' ';
      code_terms := ARRAY(SELECT pg_catalog.substr(e, 2) FROM pg_catalog.unnest(lex[1:essential]) e
                     WHERE pg_catalog.left(e, 1) = ' ');
      SELECT pg_catalog.array_agg(r.id ORDER BY r.score DESC, r.id),
             pg_catalog.array_agg(r.score ORDER BY r.score DESC, r.id)
        INTO ids, scores
        FROM (
          SELECT c.id, coalesce((
            SELECT sum(w[pg_catalog.array_position(lex, u.lexeme)] * tf.n * {k1_plus_1}
                       / (tf.n + {k1} * (1 - {b} + {b} * c.text_length / avg_len)))
            -- Only the query's lexemes are unnested: marked with weight A, then kept.
            FROM pg_catalog.unnest(pg_catalog.ts_filter(pg_catalog.setweight(c.fts, 'A', lex), '{{a}}')) u
            CROSS JOIN LATERAL (SELECT coalesce(pg_catalog.array_length(u.positions, 1), 1)::double precision AS n) tf), 0) + CASE WHEN NOT has_codes THEN 0 ELSE coalesce((
            SELECT sum(w[pg_catalog.array_position(lex, ' ' || k.code)] * k.n * {k1_plus_1}
                       / (k.n + {k1} * (1 - {b} + {b} * pg_catalog.cardinality(c.codes) / avg_code)))
            FROM (SELECT x.code, count(*)::double precision AS n FROM pg_catalog.unnest(c.codes) AS x(code)
                  WHERE ' ' || x.code = ANY (lex) GROUP BY x.code) k), 0) END AS score
          FROM {chunks} c JOIN {documents} d ON d.document_id = c.document_id
          WHERE c.ts_config = cfg AND (c.fts @@ tsq OR c.codes && code_terms) AND {where}
          ORDER BY score DESC, c.id
          LIMIT depth) r;
      theta := CASE WHEN coalesce(pg_catalog.array_length(ids, 1), 0) >= depth THEN scores[depth] ELSE 0 END;
      EXIT WHEN essential >= pg_catalog.array_length(lex, 1) OR rest <= theta;
      essential := essential + 1;
    END LOOP;
    text_ids := text_ids || coalesce(ids, '{{}}'); text_scores := text_scores || coalesce(scores, '{{}}');
  END LOOP;
  RETURN QUERY
  WITH vec AS MATERIALIZED (
    SELECT v.id, (row_number() OVER (ORDER BY v.dist, v.id))::integer AS rank, 1 - v.dist AS sim
    FROM (
      SELECT c.id, c.embedding {dist} query_embedding AS dist
      FROM {chunks} c JOIN {documents} d ON d.document_id = c.document_id
      WHERE query_embedding IS NOT NULL AND {where}
      ORDER BY c.embedding {dist} query_embedding
      LIMIT depth) v
  ), txt AS MATERIALIZED (
    SELECT t.id, (row_number() OVER (ORDER BY t.score DESC, t.id))::integer AS rank, t.score
    FROM unnest(text_ids, text_scores) AS t(id, score)  -- ROWS FROM sugar: cannot be qualified
    ORDER BY t.score DESC, t.id
    LIMIT depth
  ), fused AS (
    SELECT coalesce(vec.id, txt.id) AS id, vec.rank AS vector_rank, txt.rank AS bm25_rank,
      coalesce(1.0::double precision / (rrf_k + vec.rank), 0)
        + coalesce(1.0::double precision / (rrf_k + txt.rank), 0) AS rrf_score,
      vec.sim, txt.score
    FROM vec FULL JOIN txt ON vec.id = txt.id
  )
  SELECT c.id, c.document_id, c.chunk_index, c.content, f.vector_rank, f.bm25_rank,
         f.rrf_score, c.start_offset, c.end_offset, c.truth_level, c.title, c.heading_path,
         f.sim, f.score
  FROM fused f JOIN {chunks} c ON c.id = f.id
  ORDER BY f.rrf_score DESC, f.id
  LIMIT match_count;
END
$fn$"""
    ).format(
        fn=names.table("hybrid_search"), vector=names.vector, dist=names.op("<=>"),
        chunks=names.table("chunks"), documents=names.table("documents"),
        text_stats=names.table("text_stats"), term_stats=names.table("term_stats"),
        code_stats=names.table("code_stats"), code_pattern=sql.Literal(CODE_PATTERN_SQL),
        max_token=sql.Literal(MAX_TOKEN_CHARS),
        where=filter_clause(names), ef_search=sql.SQL(_EF_SEARCH),
        declare=_declare_and_check(names), settings=sql.SQL(_SETTINGS),
        rrf_k=sql.SQL(str(int(RRF_K))), candidates=sql.SQL(str(int(DEFAULT_CANDIDATES))),
        limit=sql.SQL(str(int(DEFAULT_LIMIT))),
        k1=sql.SQL(repr(BM25_K1)), k1_plus_1=sql.SQL(repr(BM25_K1 + 1)), b=sql.SQL(repr(BM25_B)),
        # query_embedding may be NULL: the text ranking alone.
        checks=sql.SQL("\n").join([
            _check_query_text(), _check_embedding(names, dim, required=False),
            _check_int("rrf_k", 1, MAX_RRF_K, RRF_K), _check_int("match_count", 1, MAX_LIMIT, DEFAULT_LIMIT),
            _check_int("candidate_count", 1, MAX_CANDIDATES, DEFAULT_CANDIDATES)]),
    )


def _archive_trigger(names: Names) -> list[SqlText]:
    """Archive a document's previous row when its content changes or it is deleted.

    The store's own archived versions are exported first; ON CONFLICT keeps theirs.
    """
    function = sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = '' AS $fn$
BEGIN
  IF TG_OP = 'DELETE' OR NEW.content IS DISTINCT FROM OLD.content THEN
    INSERT INTO {versions} (document_id, version, index_version, title, content,
      content_hash, truth_level, total_chunks, metadata, change_summary, valid_from,
      archived_at, generation, tenant_id)
    VALUES (OLD.document_id, OLD.version, OLD.index_version, OLD.title, OLD.content,
      OLD.content_hash, OLD.truth_level, OLD.total_chunks, OLD.metadata,
      CASE TG_OP WHEN 'DELETE' THEN 'deleted' ELSE 'content changed' END,
      OLD.updated_at, pg_catalog.now(), OLD.generation, OLD.tenant_id)
    ON CONFLICT (document_id, version) DO NOTHING;
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END
$fn$"""
    ).format(fn=names.table("archive_document_version"), versions=names.table("document_versions"))
    # Created only when missing: DROP/CREATE TRIGGER would lock out writers needlessly.
    trigger = sql.SQL(
        """DO $trg$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = to_regclass({regclass})
                 AND tgname = {trigger_name}) THEN
    CREATE TRIGGER {trigger} BEFORE UPDATE OR DELETE ON {documents}
      FOR EACH ROW EXECUTE FUNCTION {fn}();
  END IF;
END $trg$"""
    ).format(
        regclass=names.regclass("documents"), trigger_name=sql.Literal(names.prefix + "documents_archive_version"),
        trigger=names.local("documents_archive_version"), documents=names.table("documents"),
        fn=names.table("archive_document_version"),
    )
    return [function, trigger]
