"""Quotes that repeat: how often two hits of one document in a top 10 quote overlapping text.

Chunks overlap (50 tokens by default), so neighbouring chunks of one article often both
hold the sentence that best answers; each hit used to quote it. A hit's quote is now
chosen among the sentences it adds to the hits of its document ranked above it when one
of them holds a query word (``quotes.best_quote(shown=...)``). This counts, over our
regulatory question sets (every split, default search, limit 10, chunks of one document
not capped), the pairs of hits of one document whose quotes share characters, as served
and as each hit's own best quote would have been without the rule (same run).

    ENGINELIB_DATASETS=... python -m benchmarks.quote_repeats
"""

from __future__ import annotations

from typing import Any

from benchmarks import regulatory_eval as reg
from enginelib.search.quotes import best_quote

SETS = {"en": ("regulatory_en", "off_domain_en"), "fr": ("regulatory_fr", "off_domain_fr")}


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return max(a[0], b[0]) < min(a[1], b[1])


def count(responses: list[Any]) -> dict[str, int]:
    pairs = served = unruled = queries_with = queries_unruled = 0
    for response in responses:
        hits = response.hits
        own = [best_quote(h.content, h.start_offset, h.highlight_terms) for h in hits]
        repeated = unruled_here = False
        for i, later in enumerate(hits):
            for j in range(i):
                if hits[j].document_id != later.document_id:
                    continue
                pairs += 1
                a, b = hits[j].citation, later.citation
                if _overlap((a.quote_start, a.quote_end), (b.quote_start, b.quote_end)):
                    served += 1
                    repeated = True
                if _overlap((own[j].start_offset, own[j].end_offset),
                            (own[i].start_offset, own[i].end_offset)):
                    unruled += 1
                    unruled_here = True
        queries_with += repeated
        queries_unruled += unruled_here
    return {"queries": len(responses), "same_document_pairs": pairs,
            "repeats_without_rule": unruled, "repeats_served": served,
            "queries_with_a_repeat": queries_with, "queries_with_a_repeat_without_rule": queries_unruled}


def main() -> None:
    embedder = reg.harness_embedder("e5-small")
    print("| corpus | questions | pairs of one document in a top 10 | quotes repeating, "
          "without the rule / served | questions with a repeat, without / served |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for corpus, names in SETS.items():
        store = reg.open_store(embedder, corpus)
        texts = [q["question"] for name in names for q in reg.load_questions(name)]
        vectors = reg.query_vectors(embedder, texts)
        responses = store.search_batch(texts, query_vectors=vectors, limit=10, log=False,
                                       cache=False, answerability_threshold=0.0)
        c = count(responses)
        print(f"| {corpus} | {c['queries']} | {c['same_document_pairs']} | "
              f"{c['repeats_without_rule']} / {c['repeats_served']} | "
              f"{c['queries_with_a_repeat_without_rule']} / {c['queries_with_a_repeat']} |")
        store.close()


if __name__ == "__main__":
    main()
