"""SQL functions of the export: hybrid_search (RRF), match_chunks, filters, version archive.

RRF is the embedded engine's (enginelib/search/fusion.py): ``score = sum 1 / (k + rank)``
with ranks from 1, k = 60 by default, each method contributing its top ``candidate_count``
(default 100, like the engine's ``candidates``) and ties broken by the smaller chunk id.
Truth levels default to L1 + L2 as in the engine; the caller widens them with
``{"truth_level": [...]}``.
"""

from __future__ import annotations

from psycopg import sql

from ..search.fusion import RRF_K
from ..search.request import DEFAULT_CANDIDATES
from ..types import DEFAULT_SEARCH_TRUTH_LEVELS
from .pg_schema import Names, SqlText

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
_DATE_OPS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}
FILTER_KEYS: tuple[str, ...] = (*_ANY_OF, "tags", "metadata", *_DATES)


def function_statements(names: Names) -> list[SqlText]:
    return [_text_array(names), _check_filters(names), _match_chunks(names), _hybrid_search(names),
            *_archive_trigger(names)]


def _text_array(names: Names) -> sql.Composed:
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(value jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE
    WHEN value IS NULL OR jsonb_typeof(value) = 'null' THEN NULL
    WHEN jsonb_typeof(value) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(value))
    ELSE ARRAY[value #>> '{{}}']
  END
$fn$"""
    ).format(fn=names.table("text_array"))


def _check_filters(names: Names) -> sql.Composed:
    known = sql.SQL("ARRAY[{}]::text[]").format(
        sql.SQL(", ").join(sql.Literal(k) for k in FILTER_KEYS)
    )
    # The embedded engine rejects unknown fields; so does the server, rather than
    # silently ignoring a misspelt filter and returning unfiltered rows.
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(filters jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE unknown text;
BEGIN
  IF filters IS NULL THEN RETURN; END IF;
  IF jsonb_typeof(filters) <> 'object' THEN
    RAISE EXCEPTION 'filters must be a JSON object, got %', jsonb_typeof(filters)
      USING ERRCODE = '22023';
  END IF;
  SELECT string_agg(k, ', ') INTO unknown FROM jsonb_object_keys(filters) AS k
    WHERE k <> ALL ({known});
  IF unknown IS NOT NULL THEN
    RAISE EXCEPTION 'unknown filter field(s) %; filterable fields are: %', unknown,
      array_to_string({known}, ', ') USING ERRCODE = '22023';
  END IF;
END
$fn$"""
    ).format(fn=names.table("check_filters"), known=known)


def filter_clause(names: Names) -> sql.Composed:
    """The WHERE clause over chunks ``c`` joined to documents ``d`` for a ``filters`` jsonb."""
    arr = names.table("text_array")
    default_levels = sql.SQL("ARRAY[{}]::text[]").format(
        sql.SQL(", ").join(sql.Literal(level) for level in DEFAULT_SEARCH_TRUTH_LEVELS)
    )
    clauses: list[SqlText] = [sql.SQL("{col} = ANY (coalesce({arr}(filters->'truth_level'), {default}))").format(
        col=sql.SQL(_ANY_OF["truth_level"]), arr=arr, default=default_levels,
    )]
    for key, column in _ANY_OF.items():
        if key == "truth_level":
            continue
        clauses.append(sql.SQL("(filters->{key} IS NULL OR {col} = ANY ({arr}(filters->{key})))").format(
            key=sql.Literal(key), col=sql.SQL(column), arr=arr,
        ))
    # tags: a list means any of them; {"any": [...]} / {"all": [...]} as in the engine.
    clauses.append(sql.SQL(
        "(filters->'tags' IS NULL OR CASE WHEN jsonb_typeof(filters->'tags') = 'object' THEN"
        " (filters->'tags'->'all' IS NULL OR d.tags @> {arr}(filters->'tags'->'all'))"
        " AND (filters->'tags'->'any' IS NULL OR d.tags && {arr}(filters->'tags'->'any'))"
        " ELSE d.tags && {arr}(filters->'tags') END)"
    ).format(arr=arr))
    # Containment, so the GIN jsonb_path_ops index on metadata can answer it.
    clauses.append(sql.SQL("(filters->'metadata' IS NULL OR d.metadata @> (filters->'metadata'))"))
    for field in _DATES:
        for op, symbol in _DATE_OPS.items():
            clauses.append(sql.SQL(
                "(filters->{f}->>{op} IS NULL OR d.{col} {symbol} (filters->{f}->>{op})::timestamptz)"
            ).format(f=sql.Literal(field), op=sql.Literal(op), col=sql.Identifier(field),
                     symbol=sql.SQL(symbol)))
    return sql.SQL("\n      AND ").join(clauses)


# hnsw returns at most hnsw.ef_search rows (pgvector's default 40): raise it, for this
# transaction only and never lower, to the number of candidates asked for.
_EF_SEARCH = """  IF coalesce(nullif(current_setting('hnsw.ef_search', true), '')::integer, 40) < depth THEN
    PERFORM set_config('hnsw.ef_search', least(depth, 1000)::text, true);
  END IF;"""


def _match_chunks(names: Names) -> sql.Composed:
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(
  query_embedding vector,
  match_threshold double precision DEFAULT -1,
  match_count integer DEFAULT 10,
  filters jsonb DEFAULT '{{}}'::jsonb)
RETURNS TABLE (id bigint, document_id text, chunk_index integer, content text,
  similarity double precision, start_offset integer, end_offset integer, truth_level text,
  title text, heading_path text)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
DECLARE depth integer := match_count;
BEGIN
  IF match_count IS NULL OR match_count < 1 THEN
    RAISE EXCEPTION 'match_count must be >= 1, got %', match_count USING ERRCODE = '22023';
  END IF;
  PERFORM {check}(filters);
  filters := coalesce(filters, '{{}}'::jsonb);
{ef_search}
  RETURN QUERY
  SELECT c.id, c.document_id, c.chunk_index, c.content, 1 - v.dist, c.start_offset,
         c.end_offset, c.truth_level, c.title, c.heading_path
  FROM (
    SELECT c.id, c.embedding <=> query_embedding AS dist
    FROM {chunks} c JOIN {documents} d ON d.document_id = c.document_id
    WHERE {where}
      AND c.embedding <=> query_embedding <= 1 - coalesce(match_threshold, -1)
    ORDER BY c.embedding <=> query_embedding
    LIMIT match_count) v
  JOIN {chunks} c ON c.id = v.id
  ORDER BY v.dist, v.id;
END
$fn$"""
    ).format(
        fn=names.table("match_chunks"), check=names.table("check_filters"),
        chunks=names.table("chunks"), documents=names.table("documents"),
        where=filter_clause(names), ef_search=sql.SQL(_EF_SEARCH),
    )


def _hybrid_search(names: Names) -> sql.Composed:
    # Full text: the query is parsed once per text-search configuration and OR-ed over its
    # lexemes (like the engine's BM25, any term may match); a chunk is matched with the
    # query parsed in its own language. ts_rank (normalization 1: / 1 + log(length)) stands
    # in for BM25, so text ranks are close to, not equal to, the engine's.
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}(
  query_text text,
  query_embedding vector,
  match_count integer DEFAULT 10,
  rrf_k integer DEFAULT {rrf_k},
  filters jsonb DEFAULT '{{}}'::jsonb,
  candidate_count integer DEFAULT {candidates})
RETURNS TABLE (id bigint, document_id text, chunk_index integer, content text,
  vector_rank integer, bm25_rank integer, rrf_score double precision, start_offset integer,
  end_offset integer, truth_level text, title text, heading_path text,
  similarity double precision, text_score double precision)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
DECLARE depth integer;
BEGIN
  IF rrf_k IS NULL OR rrf_k <= 0 THEN
    RAISE EXCEPTION 'rrf_k must be a positive integer (default {rrf_k}), got %', rrf_k
      USING ERRCODE = '22023';
  END IF;
  IF match_count IS NULL OR match_count < 1 THEN
    RAISE EXCEPTION 'match_count must be >= 1, got %', match_count USING ERRCODE = '22023';
  END IF;
  PERFORM {check}(filters);
  filters := coalesce(filters, '{{}}'::jsonb);
  depth := greatest(coalesce(candidate_count, {candidates}), match_count);
{ef_search}
  RETURN QUERY
  WITH vec AS (
    SELECT v.id, (row_number() OVER (ORDER BY v.dist, v.id))::integer AS rank, 1 - v.dist AS sim
    FROM (
      SELECT c.id, c.embedding <=> query_embedding AS dist
      FROM {chunks} c JOIN {documents} d ON d.document_id = c.document_id
      WHERE query_embedding IS NOT NULL AND {where}
      ORDER BY c.embedding <=> query_embedding
      LIMIT depth) v
  ), q AS (
    SELECT cfg.oid::regconfig AS cfg,
      (SELECT string_agg(quote_literal(t.lexeme), ' | ')
       FROM unnest(to_tsvector(cfg.oid::regconfig, coalesce(query_text, ''))) t)::tsquery AS tsq
    FROM pg_catalog.pg_ts_config cfg
  ), txt AS (
    SELECT t.id, (row_number() OVER (ORDER BY t.score DESC, t.id))::integer AS rank, t.score
    FROM (
      SELECT c.id, ts_rank(c.fts, q.tsq, 1)::double precision AS score
      FROM q JOIN {chunks} c ON c.ts_config = q.cfg AND c.fts @@ q.tsq
      JOIN {documents} d ON d.document_id = c.document_id
      WHERE q.tsq IS NOT NULL AND {where}
      ORDER BY score DESC, c.id
      LIMIT depth) t
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
        fn=names.table("hybrid_search"), check=names.table("check_filters"),
        chunks=names.table("chunks"), documents=names.table("documents"),
        where=filter_clause(names), ef_search=sql.SQL(_EF_SEARCH),
        rrf_k=sql.SQL(str(int(RRF_K))), candidates=sql.SQL(str(int(DEFAULT_CANDIDATES))),
    )


def _archive_trigger(names: Names) -> list[SqlText]:
    """Archive a document's previous row when its content changes or it is deleted.

    The store's own archived versions are exported first; ON CONFLICT keeps theirs.
    """
    function = sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'DELETE' OR NEW.content IS DISTINCT FROM OLD.content THEN
    INSERT INTO {versions} (document_id, version, index_version, title, content,
      content_hash, truth_level, total_chunks, metadata, change_summary, valid_from,
      archived_at, generation)
    VALUES (OLD.document_id, OLD.version, OLD.index_version, OLD.title, OLD.content,
      OLD.content_hash, OLD.truth_level, OLD.total_chunks, OLD.metadata,
      CASE TG_OP WHEN 'DELETE' THEN 'deleted' ELSE 'content changed' END,
      OLD.updated_at, now(), OLD.generation)
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
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass({regclass})
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
