"""BM25 statistics of the exported text, computed in SQL from the exported tsvectors.

Why computed on the server rather than copied from the engine's index: the server scores
the words Postgres extracts (its parser and Snowball stemmer), so the document
frequencies must count those same words; the engine's tantivy terms differ on stop words,
hyphenated and accented words. ``ts_stat`` counts them in one pass per text-search
configuration. N is every exported chunk and the average length is taken over N per
configuration, as tantivy does for a field (each language has its own field there).
The lengths themselves (``chunks.text_length``) are the engine's word counts.

The statistics cover every tenant's rows, like the engine's single index; a caller can
read them (document frequencies of words), which the docs point out.
"""

from __future__ import annotations

from ..indexes.analyzers import STEMMERS
from ._psycopg import sql
from .pg_schema import Names, SqlText


def text_stats_statements(names: Names) -> list[SqlText]:
    chunks, term_stats, text_stats = (names.table(t) for t in ("chunks", "term_stats", "text_stats"))
    # DELETE, not TRUNCATE: TRUNCATE's exclusive lock would block readers until COMMIT.
    return [
        sql.SQL("DELETE FROM {}").format(term_stats),
        sql.SQL("DELETE FROM {}").format(text_stats),
        sql.SQL(
            """INSERT INTO {text_stats} (ts_config, chunks, avg_length)
SELECT c.ts_config, n.total, sum(c.text_length)::double precision / n.total
FROM {chunks} c CROSS JOIN (SELECT count(*) AS total FROM {chunks}) n
GROUP BY c.ts_config, n.total"""
        ).format(text_stats=text_stats, chunks=chunks),
        sql.SQL(
            """DO $stats$
DECLARE cfg regconfig;
BEGIN
  FOR cfg IN SELECT ts_config FROM {text_stats} LOOP
    EXECUTE format('INSERT INTO %s (ts_config, lexeme, df) SELECT %L::regconfig, word, ndoc FROM pg_catalog.ts_stat(%L)',
                   {term_stats_name}, cfg,
                   format('SELECT fts FROM %s WHERE ts_config = %L::regconfig', {chunks_name}, cfg));
  END LOOP;
END $stats$"""
        ).format(text_stats=text_stats, term_stats_name=names.regclass("term_stats"),
                 chunks_name=names.regclass("chunks")),
        sql.SQL("ANALYZE {}").format(term_stats),
        # The codes field: one set of statistics for all languages, as in the engine.
        sql.SQL("DELETE FROM {}").format(names.table("code_stats")),
        sql.SQL(
            "INSERT INTO {code_stats} (code, df) SELECT u.code, count(*) FROM "
            "(SELECT DISTINCT c.id, x.code FROM {chunks} c, unnest(c.codes) AS x(code)) u GROUP BY u.code"
        ).format(code_stats=names.table("code_stats"), chunks=chunks),
        sql.SQL(
            "UPDATE {text_stats} SET avg_code_length = (SELECT coalesce(sum(cardinality(codes)), 0)"
            "::double precision / greatest(count(*), 1) FROM {chunks})"
        ).format(text_stats=text_stats, chunks=chunks),
    ]


def ts_config_statements(names: Names) -> list[SqlText]:
    """The export's own text-search configurations: Postgres's, made to cut words like the
    engine's analyzers (tantivy's simple tokenizer + Snowball stemmer).

    One per stemmer language plus ``simple``, named ``<prefix><language>`` in the export's
    schema: the same Snowball stemmer without a stop-word list (the engine indexes and
    queries stop words), and hyphenated words only as their parts ("4-PBA" -> 4, pba; the
    engine's tokenizer splits there too). Created once, when missing.
    """
    languages = sql.SQL("ARRAY[{}]::text[]").format(
        sql.SQL(", ").join(sql.Literal(lang) for lang in sorted(set(STEMMERS.values())))
    )
    return [sql.SQL(
        """DO $cfg$
DECLARE lang text; target text; dict text;
BEGIN
  FOREACH lang IN ARRAY {languages} || ARRAY['simple'] LOOP
    target := format('%I.%I', {schema}, {prefix} || lang);
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_ts_config c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.cfgnamespace
      WHERE n.nspname = {schema} AND c.cfgname = {prefix} || lang);
    IF lang = 'simple' OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_ts_config WHERE cfgname = lang
                                      AND cfgnamespace = 'pg_catalog'::regnamespace) THEN
      EXECUTE format('CREATE TEXT SEARCH CONFIGURATION %s (COPY = pg_catalog.simple)', target);
    ELSE
      dict := format('%I.%I', {schema}, {prefix} || lang || '_stem');
      IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_ts_dict d JOIN pg_catalog.pg_namespace n
                     ON n.oid = d.dictnamespace WHERE n.nspname = {schema}
                     AND d.dictname = {prefix} || lang || '_stem') THEN
        EXECUTE format('CREATE TEXT SEARCH DICTIONARY %s (TEMPLATE = pg_catalog.snowball, Language = %I)',
                       dict, lang);
      END IF;
      EXECUTE format('CREATE TEXT SEARCH CONFIGURATION %s (COPY = pg_catalog.%I)', target, lang);
      EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %s ALTER MAPPING REPLACE pg_catalog.%I WITH %s',
                     target, lang || '_stem', dict);
    END IF;
    EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %s DROP MAPPING IF EXISTS FOR asciihword, hword, numhword',
                   target);
  END LOOP;
END $cfg$"""
    ).format(languages=languages, schema=sql.Literal(names.schema), prefix=sql.Literal(names.prefix))]


def qualified_ts_config(names: Names, config: str) -> str:
    """The export's configuration for a Postgres language name ('english')."""
    return sql.Identifier(names.schema, names.prefix + config).as_string()
