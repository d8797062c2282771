"""The gate's phrase look-ups at scale: counting matches against collecting a top k.

When a question names a law the store lacks, the gate looks up the question's phrases and
asks, for each, whether at least 1 % of the chunks write it (``answerability._phrase_count``,
stop 36). Until stop 37 each look-up was a ranked top k of that many hits: 10,000 at 1M
chunks. ``TextIndex.count`` counts the matches instead. Both are timed here on the same
index, phrase by phrase, and their answers compared::

    python -m benchmarks.phrase_count --sizes 100000,1000000

The index is built once per size (cached in ``benchmarks/.cache/phrase_count``): each
chunk is 2-6 sentences of the regulatory corpus (and of the French GDPR,
``benchmarks/data/regulatory_fr``) drawn at random (seeded), so phrases occur
about as often as in the laws and chunk lengths vary as real ones do. The phrases are every
question phrase (``named_sources.question_phrases``) of every question set in
``benchmarks/questions``, the names each question gives left out, as the gate reads them.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from enginelib.indexes.base import TextDocument
from enginelib.indexes.tantivy_text import TantivyTextIndex
from enginelib.search.answerability import MAX_PHRASES, MIN_TERM_PASSAGES
from enginelib.search.named_sources import SUBJECT_SHARE, named_sources, question_phrases

from . import beir
from .timing import machine

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "phrase_count"
RESULTS = HERE / "results" / "phrase_count.json"
QUESTIONS = HERE / "questions"
FRENCH = HERE / "data" / "regulatory_fr"
SEED = 20261128
BATCH = 20_000
_SENTENCE = re.compile(r"(?<=[.;:])\s+")


def _sentences() -> list[tuple[str, str]]:
    """(sentence, language) of every passage of the regulatory corpus and of the French
    GDPR the French question sets ask over."""
    found = []
    with (beir.resolve("regulatory") / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line)["text"]
            found += [(s, "en") for s in _SENTENCE.split(text) if len(s) > 20]
    for path in sorted(FRENCH.glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.startswith(("#", "Source")):
                found += [(s, "fr") for s in _SENTENCE.split(line) if len(s) > 20]
    return found


def build(size: int) -> Path:
    folder = CACHE / str(size)
    if (folder / "complete").exists():
        return folder
    sentences = _sentences()
    rng = np.random.default_rng(SEED)
    index = TantivyTextIndex(folder)
    index.clear()
    started = time.perf_counter()
    for first in range(0, size, BATCH):
        batch = []
        for label in range(first, min(size, first + BATCH)):
            picked = rng.integers(0, len(sentences), int(rng.integers(2, 7)))
            text = " ".join(sentences[int(i)][0] for i in picked)
            batch.append(TextDocument(label, text, language=sentences[int(picked[0])][1]))
        index.add(batch)
    index.save(1)
    (folder / "complete").write_text(f"{time.perf_counter() - started:.1f} s\n")
    return folder


def question_set_phrases() -> dict[str, list[str]]:
    """Each question's phrases as the gate looks them up, the first MAX_PHRASES."""
    phrases = {}
    for path in sorted(QUESTIONS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                question = json.loads(line)["question"]
                names = [source.name for source in named_sources(question)]
                phrases[question] = question_phrases(question, names)[:MAX_PHRASES]
    return phrases


def _timed(call, repeats: int = 3) -> tuple[float, int]:
    result = call()  # warm: the parse cache and the page cache
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - started)
    return best * 1000, result


def measure(size: int, phrases: dict[str, list[str]]) -> dict[str, Any]:
    index = TantivyTextIndex(build(size), read_only=True)
    needed = max(MIN_TERM_PASSAGES, math.ceil(SUBJECT_SHARE * len(index)))
    per_phrase: dict[str, tuple[float, float]] = {}
    held: set[str] = set()
    differ = []
    for phrase in dict.fromkeys(p for ps in phrases.values() for p in ps):
        quoted = '"' + phrase.replace('"', " ") + '"'
        top_k_ms, ranked = _timed(lambda q=quoted: len(index.search([q], needed)[0]))
        count_ms, counted = _timed(lambda q=quoted: min(needed, index.count(q)))
        per_phrase[phrase] = (top_k_ms, count_ms)
        if ranked != counted:
            differ.append(phrase)
        if counted >= needed:
            held.add(phrase)
    per_question = [(sum(per_phrase[p][0] for p in ps), sum(per_phrase[p][1] for p in ps))
                    for ps in phrases.values() if ps]
    # The decision needs one held phrase: the look-ups up to the first one found.
    until_held = [sum(per_phrase[p][1] for p in ps[:_first_held(ps, held) + 1])
                  for ps in phrases.values() if ps]

    def summary(values: list[float]) -> dict[str, float]:
        values = sorted(values)
        return {"p50": statistics.median(values), "p95": values[int(0.95 * (len(values) - 1))],
                "max": values[-1]}

    return {
        "chunks": len(index), "needed": needed, "phrases": len(per_phrase),
        "questions": len(per_question), "answers_differ": differ,
        "phrase_top_k_ms": summary([a for a, _ in per_phrase.values()]),
        "phrase_count_ms": summary([b for _, b in per_phrase.values()]),
        "question_top_k_ms": summary([a for a, _ in per_question]),
        "question_count_ms": summary([b for _, b in per_question]),
        "question_count_until_held_ms": summary(until_held),
        "questions_with_a_held_phrase": sum(1 for ps in phrases.values() if held & set(ps)),
    }


def _first_held(phrases: list[str], held: set[str]) -> int:
    return next((i for i, phrase in enumerate(phrases) if phrase in held), len(phrases) - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    args = parser.parse_args()
    phrases = question_set_phrases()
    rows = {size: measure(size, phrases) for size in map(int, args.sizes.split(","))}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine(), "sizes": rows}, indent=2) + "\n")
    print("| chunks | 1 % | phrases | one phrase, top k / count (p50, p95 ms) "
          "| one question, all its phrases (p50, p95, max ms): top k; count; count up to the "
          "first held | answers differ |")
    print("| ---: | ---: | ---: | --- | --- | ---: |")
    for row in rows.values():
        pt, pc, qt, qc, qh = (row[k] for k in (
            "phrase_top_k_ms", "phrase_count_ms", "question_top_k_ms", "question_count_ms",
            "question_count_until_held_ms"))
        print(f"| {row['chunks']:,} | {row['needed']:,} | {row['phrases']} "
              f"| {pt['p50']:.2f} / {pc['p50']:.2f}, {pt['p95']:.1f} / {pc['p95']:.1f} "
              f"| {qt['p50']:.1f}, {qt['p95']:.1f}, {qt['max']:.0f}; "
              f"{qc['p50']:.1f}, {qc['p95']:.1f}, {qc['max']:.0f}; "
              f"{qh['p50']:.1f}, {qh['p95']:.1f}, {qh['max']:.0f} "
              f"| {len(row['answers_differ'])} |")


if __name__ == "__main__":
    main()
