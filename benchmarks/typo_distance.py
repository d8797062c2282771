"""Typo candidates: enginelib's numpy/Python OSA (``indexes/osa.py``) against rapidfuzz, the
package it replaced, on SciFact's vocabulary. Same question as ``tantivy_lexicon._near``: the
words sharing the typed word's first letter (the prefix scan), within 1 edit (words up to 8
letters) or 2 (longer). Checks the answers are identical and times both, alternately.

    ENGINELIB_DATASETS=... python -m benchmarks.typo_distance --typos 500

rapidfuzz is not a dependency any more: install it beside (``pip install rapidfuzz``) to run this.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import statistics
import time
from pathlib import Path

from enginelib.indexes.osa import within

LONG_WORD_CHARS = 8


def _vocabulary(path: Path) -> dict[str, list[str]]:
    words: set[str] = set()
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            words.update(re.findall(r"[a-z]+", (doc.get("title", "") + " " + doc["text"]).lower()))
    by_letter: dict[str, list[str]] = {}
    for word in sorted(words):
        by_letter.setdefault(word[0], []).append(word)
    return by_letter


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word))  # keep the first letter: the prefix scan's case
    kind = rng.choice(("insert", "delete", "replace", "swap"))
    letter = rng.choice("abcdefghijklmnopqrstuvwxyz")
    if kind == "insert":
        return word[:i] + letter + word[i:]
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    if kind == "replace":
        return word[:i] + letter + word[i + 1 :]
    return word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :]


def main() -> None:
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    parser = argparse.ArgumentParser()
    parser.add_argument("--typos", type=int, default=500)
    args = parser.parse_args()
    root = Path(os.environ.get("ENGINELIB_DATASETS", "datasets"))
    by_letter = _vocabulary(root / "scifact" / "corpus.jsonl.gz")
    rng = random.Random(14)
    pool = [w for words in by_letter.values() for w in words if len(w) >= 4]
    typos = [_typo(rng.choice(pool), rng) for _ in range(args.typos)]
    times: dict[str, dict[int, list[float]]] = {"osa": {1: [], 2: []}, "rapidfuzz": {1: [], 2: []}}
    differ = 0
    for n, typed in enumerate(typos):
        terms = by_letter.get(typed[0], [])
        distance = 1 if len(typed) <= LONG_WORD_CHARS else 2
        answers = {}
        for name in (("osa", "rapidfuzz") if n % 2 == 0 else ("rapidfuzz", "osa")):
            start = time.perf_counter()
            if name == "osa":
                found = dict(within(typed, terms, distance))
            else:
                found = {str(t): int(d) for t, d, _ in process.extract(
                    typed, terms, scorer=OSA.distance, score_cutoff=distance, limit=None)}
            times[name][distance].append(time.perf_counter() - start)
            answers[name] = found
        differ += answers["osa"] != answers["rapidfuzz"]
    print(json.dumps({
        "typos": len(typos), "vocabulary": sum(map(len, by_letter.values())), "answers_differ": differ,
        "median_ms": {name: {f"{d} edit(s) ({len(v)} words)": round(1000 * statistics.median(v), 3)
                             for d, v in by_distance.items() if v}
                      for name, by_distance in times.items()},
    }, indent=1))


if __name__ == "__main__":
    main()
