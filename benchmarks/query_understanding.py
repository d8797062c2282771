"""Query understanding measured: does typo correction + acronym twins cost BEIR quality, and
how well does the typo fallback recover misspelled words?

    python -m benchmarks.query_understanding beir [--dataset scifact] [--embedder minilm|hashing]
    python -m benchmarks.query_understanding typos

``beir``: nDCG@10 per query with ``rewrite=True`` (the default) and ``rewrite=False`` (words
as typed) on the same store, the mean difference and a paired t-test (scipy-free: the
t statistic with its two-sided p from the normal approximation, n >= 300 queries).
``typos``: words of the regulatory corpus misspelled by one or two random edits
(deletion, insertion, substitution, transposition; seeded), and the corpus-foreign words of
the SciFact queries: how often the index corrects them, and correctly.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import re
import sys
import tempfile
from pathlib import Path

import enginelib
from enginelib import HashingEmbedder
from enginelib.evaluation import EVAL_DEPTH, ndcg, rank_documents
from enginelib.indexes.base import TextDocument
from enginelib.indexes.tantivy_text import TantivyTextIndex

from . import beir

REGULATORY = beir.SHARED_DATASETS / "regulatory"


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    t = mean / math.sqrt(var / n) if var > 0 else 0.0
    p = math.erfc(abs(t) / math.sqrt(2))
    return {"mean_diff": mean, "t": t, "p_two_sided": p, "changed": sum(d != 0 for d in diffs)}


def run_beir(dataset: str, embedder_name: str) -> dict[str, object]:
    data = beir.load(dataset, "test")
    embedder = HashingEmbedder(64) if embedder_name == "hashing" else None
    strategies = ["fulltext"] if embedder_name == "hashing" else ["fulltext", "hybrid"]
    with tempfile.TemporaryDirectory() as tmp:
        options = {"embedder": embedder} if embedder is not None else {}
        store = enginelib.open(Path(tmp) / "store", **options)
        store.ingest_documents(list(data.documents), truth_level="L2")
        out: dict[str, object] = {"dataset": data.name, "queries": len(data.queries),
                                  "embedder": store.manifest.embedding_model}
        for strategy in strategies:
            scores = {}
            for rewrite in (True, False):
                run = rank_documents(store, data.queries, strategy=strategy, depth=EVAL_DEPTH,
                                     rewrite=rewrite)
                ranked = {qid: [doc for doc, _ in docs] for qid, docs in run.run.items()}
                scores[rewrite] = [ndcg(ranked.get(q, []), data.qrels.get(q, {}))
                                   for q in sorted(data.queries) if data.qrels.get(q)]
            stats = paired(scores[True], scores[False])
            out[strategy] = {
                "ndcg10_rewrite": sum(scores[True]) / len(scores[True]),
                "ndcg10_as_typed": sum(scores[False]) / len(scores[False]),
                **stats,
            }
        # How many queries the plan changed, and how.
        corrected = expanded = 0
        for text in data.queries.values():
            response = store.search(text, strategy="fulltext", limit=1,
                                    answerability_threshold=None, log=False)
            corrected += bool(response.corrections)
            expanded += bool(response.expansions)
        out["queries_corrected"] = corrected
        out["queries_with_acronym_twin"] = expanded
        store.close()
    return out


def _typo(word: str, rng: random.Random) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = rng.randrange(len(word))
    kind = rng.choice("dist")
    if kind == "d":
        return word[:i] + word[i + 1:]
    if kind == "i":
        return word[:i] + rng.choice(letters) + word[i:]
    if kind == "s":
        return word[:i] + rng.choice(letters.replace(word[i], "")) + word[i + 1:]
    i = min(i, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def run_typos(samples: int = 800, seed: int = 1) -> dict[str, object]:
    counts: collections.Counter[str] = collections.Counter()
    documents = []
    with (REGULATORY / "corpus.jsonl").open(encoding="utf-8") as handle:
        for label, line in enumerate(handle):
            row = json.loads(line)
            documents.append(TextDocument(label, row["text"], "", row["title"], "en"))
            counts.update(w.lower() for w in re.findall(r"[a-zA-Z]+", row["text"]))
    with tempfile.TemporaryDirectory() as tmp:
        index = TantivyTextIndex(Path(tmp))
        index.add(documents)
        index.save(1)
        lexicon = index._get_lexicon()
        stem = index._analyzers["enginelib_en"]
        rng = random.Random(seed)
        words = sorted(w for w, c in counts.items() if c >= 3 and len(w) >= 4)
        result: dict[str, collections.Counter[str]] = {}
        for edits in (1, 2):
            tally: collections.Counter[str] = collections.Counter()
            for word in rng.sample(words, samples):
                typed = _typo(word, rng) if edits == 1 else _typo(_typo(word, rng), rng)
                if lexicon.knows(typed):
                    tally["known (stems like an indexed word)"] += 1
                    continue
                fix = lexicon.correct(typed)
                if fix is None:
                    tally["not corrected"] += 1
                elif stem.analyze(fix.replacement) == stem.analyze(word):
                    tally["corrected right"] += 1
                else:
                    tally["corrected wrong"] += 1
            result[f"{edits} edit(s)"] = tally
        foreign: collections.Counter[str] = collections.Counter()
        scifact = beir.resolve("scifact") / "queries.jsonl"
        with scifact.open(encoding="utf-8") as handle:
            for line in handle:
                for word in re.findall(r"[A-Za-z]{4,}", json.loads(line)["text"]):
                    if not lexicon.knows(word):
                        foreign["replaced" if lexicon.correct(word) else "left alone"] += 1
        result["SciFact query words absent from the regulatory corpus"] = foreign
    return {name: dict(tally) for name, tally in result.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("beir")
    b.add_argument("--dataset", action="append", default=None)
    b.add_argument("--embedder", choices=("minilm", "hashing"), default="hashing")
    sub.add_parser("typos")
    args = parser.parse_args(argv)
    if args.command == "typos":
        print(json.dumps(run_typos(), indent=2))
    else:
        for dataset in args.dataset or ["scifact", "nfcorpus"]:
            print(json.dumps(run_beir(dataset, args.embedder), indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
