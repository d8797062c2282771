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

from psycopg import sql

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
    ]
