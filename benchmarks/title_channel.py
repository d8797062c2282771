"""Would a third retrieval channel, the query against each document's title alone, put the
right article in the top 3 more often?

The fresh2 misses (benchmarks/RESULTS.md, stop 31) are mostly questions whose article's
heading says the answer in other words ("Cooperation with the supervisory authority" for
"do we have to cooperate with the data protection authority"), while the chunk's vector
mixes that heading with a long body. This simulates the channel at document level before
anything is built: the e5-small cosine between the question and each document's title is a
third ranking, fused by RRF (k = 60, weight ``w``) with either the store's own vector and
BM25 rankings (``rrf2 + title``) or with the engine's final hybrid ranking (``engine +
title``, the engine counted twice). Only titles that name something (``... — Heading``)
take part: a recital's title ("GDPR Recital 31") says nothing. Beside it, the same channel
by BM25 (the question's content words against the title and heading fields), and the title
folded into every chunk's vector instead (unit vector of chunk + w * title, no new channel).

    python -m benchmarks.title_channel                   # every group, every split; a table
    python -m benchmarks.title_channel --articles-only   # the article counts, not a recital
    python -m benchmarks.title_channel --beir nfcorpus   # and nDCG@10 on a built BEIR store
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from enginelib.search.quotes import content_terms

from . import regulatory_eval as R

WEIGHTS = (0.3, 0.5)
SPLITS = ("train", "test", "fresh", "fresh2")
GROUPS = (("EN", "regulatory_en", "en"), ("FR", "regulatory_fr", "fr"),
          ("EN>FR", "regulatory_en_over_fr", "fr"), ("EU>EN", "regulatory_eu_over_en", "en"))
Ranking = list[str]


def rrf(rankings: Sequence[Ranking], weights: Sequence[float], k: int = 60) -> Ranking:
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return sorted(fused, key=lambda doc: -fused[doc])


def doc_rankings(store: Any, texts: list[str], vectors: np.ndarray, **options: Any) -> list[Ranking]:
    responses = store.search_batch(
        texts, query_vectors=vectors, limit=100, answerability_threshold=R.GATHER_ONLY,
        log=False, chunks_per_doc=1, cache=False, **options)
    return [[hit.document_id for hit in response.hits] for response in responses]


ARTICLES_ONLY = False


def expected(question: dict[str, Any]) -> list[str]:
    """The units that count as the answer; with ARTICLES_ONLY, the articles (and annexes)
    among them, where a question names one."""
    units = list(question["expected"])
    articles = [unit for unit in units if "-rct-" not in unit]
    return articles if ARTICLES_ONLY and articles else units


def title_query(question: str) -> str:
    """The question's content words, each searched in the title and heading fields only."""
    words = content_terms([w.lower() for w in re.findall(r"\w+", question)])
    return " OR ".join(f"{field}:{word}" for word in words for field in ("title", "headings"))


def mixed_rankings(
    queries: np.ndarray, chunk_docs: list[str], chunk_vectors: np.ndarray,
    title_of: dict[str, np.ndarray],
) -> dict[float, list[Ranking]]:
    """Per weight ``w``, the documents by their best chunk whose vector is the unit vector
    of (chunk + w * title): the title folded into each chunk's vector instead of a channel."""
    docs = np.array(chunk_docs)
    zero = np.zeros(chunk_vectors.shape[1], dtype=np.float32)
    title_rows = np.array([title_of.get(doc, zero) for doc in chunk_docs], dtype=np.float32)
    out = {}
    for w in WEIGHTS:
        mixed = chunk_vectors + w * title_rows
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        rankings = []
        for scores in queries @ mixed.T:
            ranked = docs[np.argsort(-scores)]
            rankings.append(list(dict.fromkeys(ranked.tolist()))[:100])
        out[w] = rankings
    return out


def group_rows(embedder: Any, question_set: str, corpus: str) -> list[tuple[str, list[str]]]:
    units = R.english_units() if corpus == "en" else R.french_units()
    named = [unit for unit in units if unit.title and " — " in unit.title]
    titles = embedder.embed([unit.title for unit in named])
    questions = R.load_questions(question_set)
    texts = [q["question"] for q in questions]
    vectors = R.query_vectors(embedder, texts)
    store = R.open_store(embedder, corpus)
    try:
        hybrid = doc_rankings(store, texts, vectors)
        vector = doc_rankings(store, texts, vectors, strategy="vector")
        bm25 = doc_rankings(store, texts, vectors, strategy="fulltext")
        title_queries = [title_query(text) for text in texts]
        by_title_bm25 = [
            [hit.document_id for hit in response.hits] if query else []
            for query, response in zip(title_queries, store.search_batch(
                [q or "x" for q in title_queries], limit=100, strategy="fulltext",
                answerability_threshold=R.GATHER_ONLY, log=False, chunks_per_doc=1,
                cache=False), strict=True)]
        rows = store.catalog.con.execute("SELECT document_id, embedding FROM chunks").fetchall()
    finally:
        store.close()
    by_title = [[named[j].id for j in np.argsort(-row)[:100]] for row in vectors @ titles.T]
    chunk_docs = [doc for doc, _ in rows]
    chunk_vectors = np.array([vector for _, vector in rows], dtype=np.float32)
    title_of = dict(zip((unit.id for unit in named), titles, strict=True))
    mixed = mixed_rankings(vectors, chunk_docs, chunk_vectors, title_of)
    variants: dict[str, Callable[[int], Ranking]] = {
        "engine (default)": lambda i: hybrid[i],
        "rrf2 (vector + BM25)": lambda i: rrf([vector[i], bm25[i]], [1, 1]),
        "title alone": lambda i: by_title[i],
    }
    variants["title BM25 alone"] = lambda i: by_title_bm25[i]
    for w in WEIGHTS:
        variants[f"engine + title BM25 x{w}"] = (
            lambda i, w=w: rrf([hybrid[i], by_title_bm25[i]], [2, w]))
        variants[f"rrf2 + title BM25 x{w}"] = (
            lambda i, w=w: rrf([vector[i], bm25[i], by_title_bm25[i]], [1, 1, w]))
        variants[f"rrf2 + title x{w}"] = (
            lambda i, w=w: rrf([vector[i], bm25[i], by_title[i]], [1, 1, w]))
        variants[f"engine + title x{w}"] = (
            lambda i, w=w: rrf([hybrid[i], by_title[i]], [2, w]))
        variants[f"rrf2, chunk vectors + title x{w}"] = (
            lambda i, w=w: rrf([mixed[w][i], bm25[i]], [1, 1]))
    rows = []
    for name, ranking in variants.items():
        cells = []
        for split in SPLITS:
            picked = [i for i, q in enumerate(questions) if q["split"] == split]
            hits = [any(doc in expected(questions[i]) for doc in ranking(i)[:3]) for i in picked]
            cells.append(f"{100 * np.mean(hits):.1f} %" if hits else "")
        rows.append((name, cells))
    return rows


def beir_rows(embedder: Any, name: str) -> list[str]:
    """The same channel (every document's title) beside the engine's ranking on a BEIR
    dataset's test queries: nDCG@10 and the paired test against the engine alone."""
    from enginelib.evaluation import ndcg

    from . import beir
    from .vector_cache import DEFAULT_CACHE, CachingEmbedder, VectorCache

    cached = CachingEmbedder(embedder, VectorCache.for_embedder(DEFAULT_CACHE, embedder))
    data = beir.load(name, "test")
    documents = list(data.documents)
    titled = [doc for doc in documents if doc.title and doc.title.strip()]
    titles = cached.embed([doc.title for doc in titled])
    store = R._build(R.CACHE / embedder.name / f"beir-{data.name}-all", cached, lambda: documents)
    ids = list(data.queries)
    texts = [data.queries[q] for q in ids]
    vectors = cached.embed_queries(texts)
    try:
        hybrid = [list(dict.fromkeys(ranking)) for ranking in doc_rankings(store, texts, vectors)]
    finally:
        store.close()
    titled_ids = np.array([doc.id for doc in titled])
    by_title = [titled_ids[np.argsort(-row)[:100]].tolist() for row in vectors @ titles.T]
    base = np.array([ndcg(hybrid[i], data.qrels[q], 10) for i, q in enumerate(ids)])
    lines = [f"{name}: engine {base.mean():.4f}; title alone "
             f"{np.mean([ndcg(by_title[i], data.qrels[q], 10) for i, q in enumerate(ids)]):.4f}"]
    for w in WEIGHTS:
        fused = np.array([ndcg(rrf([hybrid[i], by_title[i]], [2, w]), data.qrels[q], 10)
                          for i, q in enumerate(ids)])
        lines.append(f"{name}: engine + title x{w} {fused.mean():.4f} "
                     f"({R.paired_test(dict(zip(ids, fused)), dict(zip(ids, base)))})")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles-only", action="store_true",
                        help="count only the expected articles where a question names one")
    global ARTICLES_ONLY
    parser.add_argument("--beir", default="", help="comma-separated BEIR datasets whose "
                        "built store (regulatory_eval --beir) gets the channel too")
    args = parser.parse_args(argv)
    ARTICLES_ONLY = args.articles_only
    embedder = R.harness_embedder(R.DEFAULT_EMBEDDER)
    for name in filter(None, args.beir.split(",")):
        print("\n".join(beir_rows(embedder, name)))
    print("| group | ranking | " + " | ".join(SPLITS) + " |")
    print("| --- | --- |" + " ---: |" * len(SPLITS))
    for group, question_set, corpus in GROUPS:
        for name, cells in group_rows(embedder, question_set, corpus):
            print(f"| {group} | {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
