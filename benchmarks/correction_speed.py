"""Typo correction on large vocabularies: the lexicon's cached, bucketed prefix scans
(``indexes/prefix_words.py``) against the code it replaced, which scanned the dictionary for
the word's first and second letters on every look-up. Same answers, checked word by word;
then the time of a query of 64 unknown words.

    python -m benchmarks.correction_speed same [--typos 3000]
    python -m benchmarks.correction_speed speed [--words 120000]

``same``: stores of SciFact and of the regulatory corpus (test embedder, no model), and for
each every word of the question sets (benchmarks/questions), of the SciFact and NFCorpus
queries, and seeded typos of corpus words (a deletion, insertion, substitution or
transposition anywhere, the first letter included; two for words over 8 letters): the
correction each lexicon finds, and every candidate it weighed (word, edits, documents).
``speed``: a synthetic vocabulary of ``--words`` pseudo-words starting with "a" (and as many
spread over the other letters, so that the second-letter scans are not empty), a query of 64
unknown words through ``text_index.corrections``: on a new lexicon (the first query after a
commit) and again with 64 other words, old and new alternately. Beside them, the option not
taken: generating every string within 1 or 2 edits of the word (over the vocabulary's
letters, which an exact answer needs) and asking ``doc_freq`` for each.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import enginelib
from enginelib import HashingEmbedder, LoadedDocument
from enginelib.indexes.osa import within
from enginelib.indexes.tantivy_lexicon import _FIRST_LETTERS, LONG_WORD_CHARS, TantivyLexicon

from . import beir

QUESTIONS = Path(__file__).resolve().parent / "questions"
LETTERS = "abcdefghijklmnopqrstuvwxyz"


class ReferenceLexicon(TantivyLexicon):
    """The lexicon with its look-up as it was: two dictionary scans and ``within`` on all."""

    def _near(self, typed: str, distance: int) -> list[tuple[str, int, int]]:
        terms: dict[str, int] = {}
        for prefix in dict.fromkeys((typed[:1], typed[1:2])):
            terms.update(self._searcher.terms_with_prefix(self._words_field, prefix))
        found = [(term, edits, int(terms[term]))
                 for term, edits in within(typed, terms, distance)]
        if not found:
            for letter in _FIRST_LETTERS:
                for guess in (letter + typed[1:], letter + typed):
                    docs = self._searcher.doc_freq(self._words_field, guess)
                    if docs:
                        found.append((guess, 1, int(docs)))
        return found


def _twins(store: enginelib.Store) -> tuple[TantivyLexicon, ReferenceLexicon]:
    """The store's lexicon, new, and the reference one over the same searcher."""
    index = store._text_index
    index._refresh()
    index._lexicon = None
    new = index._get_lexicon()
    old = ReferenceLexicon(new._searcher, new._fields, words_field=new._words_field,
                           fold=new._fold, is_stopword=new._is_stopword,
                           is_common=new._is_common)
    return new, old


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    kind = rng.choice("dist")
    if kind == "d":
        return word[:i] + word[i + 1:]
    if kind == "i":
        return word[:i] + rng.choice(LETTERS) + word[i:]
    if kind == "s":
        return word[:i] + rng.choice(LETTERS.replace(word[i], "")) + word[i + 1:]
    i = min(i, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text)


def _question_words() -> dict[str, list[str]]:
    sources: dict[str, list[str]] = {}
    for path in sorted(QUESTIONS.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    sources.setdefault("question sets", []).extend(
                        _words(json.loads(line)["question"]))
    for dataset in ("scifact", "nfcorpus"):
        with (beir.resolve(dataset) / "queries.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                sources.setdefault(f"{dataset} queries", []).extend(
                    _words(json.loads(line)["text"]))
    return sources


def _rows(path: Path) -> Iterator[dict[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _compare(store: enginelib.Store, corpus_words: list[str], sources: dict[str, list[str]],
             typos: int, seed: int) -> dict[str, dict[str, int]]:
    rng = random.Random(seed)
    long_words = [w for w in corpus_words if len(w) >= 5]
    typed: list[str] = []
    for word in rng.sample(long_words, min(typos, len(long_words))):
        wrong = _typo(word, rng)
        if len(wrong) > LONG_WORD_CHARS and rng.random() < 0.5:
            wrong = _typo(wrong, rng)
        typed.append(wrong.capitalize() if rng.random() < 0.1 else wrong)
    new, old = _twins(store)
    out: dict[str, dict[str, int]] = {}
    for source, words in {**sources, "typos of corpus words": typed}.items():
        tally = dict.fromkeys(("words", "identical", "corrected", "candidate lists compared",
                               "candidates identical"), 0)
        for word in dict.fromkeys(words):
            mine, theirs = new.correct(word), old.correct(word)
            tally["words"] += 1
            tally["identical"] += mine == theirs
            tally["corrected"] += mine is not None
            folded = new._fold.analyze(word)
            if len(folded) == 1 and len(folded[0]) >= 4 and not new.knows(word):
                distance = 1 if len(folded[0]) <= LONG_WORD_CHARS else 2
                tally["candidate lists compared"] += 1
                tally["candidates identical"] += (sorted(new._near(folded[0], distance))
                                                  == sorted(old._near(folded[0], distance)))
        out[source] = tally
    return out


def run_same(typos: int, seed: int) -> dict[str, object]:
    sources = _question_words()
    corpora = {
        "scifact": [LoadedDocument(id=r["_id"], text=r["text"], title=r.get("title") or "",
                                   language="en")
                    for r in _rows(beir.resolve("scifact") / "corpus.jsonl.gz")],
        "regulatory": [LoadedDocument(id=r["_id"], text=r["text"], title=r["title"],
                                      language="en")
                       for r in _rows(beir.SHARED_DATASETS / "regulatory" / "corpus.jsonl")],
    }
    result: dict[str, object] = {}
    for name, documents in corpora.items():
        with tempfile.TemporaryDirectory() as tmp:
            store = enginelib.open(Path(tmp) / "store", embedder=HashingEmbedder(64))
            store.ingest_documents(documents)
            corpus_words = sorted({w.lower() for d in documents for w in _words(d.text)
                                   if w.isalpha()})
            result[name] = _compare(store, corpus_words, sources, typos, seed)
            store.close()
    return result


def _pseudo(first: str, rng: random.Random) -> str:
    return first + "".join(rng.choice("aeioubcdfghlmnprst") for _ in range(rng.randint(4, 11)))


def _one_edit(word: str, letters: str) -> set[str]:
    out = set()
    for i in range(len(word) + 1):
        if i < len(word):
            out.add(word[:i] + word[i + 1:])
            out.add(word[:i] + word[i + 1:i + 2] + word[i:i + 1] + word[i + 2:])
        for letter in letters:
            out.add(word[:i] + letter + word[i:])
            out.add(word[:i] + letter + word[i + 1:])
    return out


def _generation(store: enginelib.Store, typed: list[str], letters: str) -> dict[str, object]:
    """Seconds a word and candidates a word of candidate generation checked by doc_freq."""
    searcher = store._text_index._get_lexicon()._searcher
    out: dict[str, object] = {}
    for distance in (1, 2):
        start, candidates = time.perf_counter(), 0
        for word in typed:
            near = _one_edit(word, letters)
            if distance == 2:
                near = set().union(near, *(_one_edit(w, letters) for w in near))
            candidates += len(near)
            sum(1 for w in near
                if w[:1] in (word[:1], word[1:2]) and searcher.doc_freq("words", w))
        out[f"{distance} edit(s)"] = {
            "ms a word": round(1000 * (time.perf_counter() - start) / len(typed), 1),
            "candidates a word": round(candidates / len(typed))}
    return out


def run_speed(words: int, seed: int, rounds: int) -> dict[str, object]:
    rng = random.Random(seed)
    vocabulary: set[str] = set()
    while len(vocabulary) < words:
        vocabulary.add(_pseudo("a", rng))
    while len(vocabulary) < 2 * words:
        vocabulary.add(_pseudo(rng.choice(LETTERS[1:]), rng))
    ordered = sorted(vocabulary)
    rng.shuffle(ordered)
    per_chunk = 60
    store = enginelib.memory(
        [{"id": f"d{i}", "text": " ".join(ordered[at:at + per_chunk])}
         for i, at in enumerate(range(0, len(ordered), per_chunk))],
        embedder=HashingEmbedder(64), truth_level="L1")
    queries = []
    for _ in range(2 * rounds):
        unknown: list[str] = []
        while len(unknown) < 64:
            word = _pseudo("a", rng)
            if word not in vocabulary and word not in unknown:
                unknown.append(word)
        queries.append(" ".join(unknown))
    index = store._text_index
    times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    answers: dict[str, list[dict[str, str]]] = {"old": [], "new": []}
    for r in range(rounds):
        for version in ("old", "new") if r % 2 == 0 else ("new", "old"):
            new, old = _twins(store)
            index._lexicon = new if version == "new" else old
            for label, query in (("first query", queries[2 * r]),
                                 ("next query", queries[2 * r + 1])):
                index._translations.clear()
                start = time.perf_counter()
                answers[version].append(index.corrections(query))
                times[version].setdefault(label, []).append(time.perf_counter() - start)
    # What the new lexicon's scans hold, traced apart from the timings (tracing slows them).
    new, _ = _twins(store)
    index._translations.clear()
    tracemalloc.start()
    index.corrections(queries[0])
    scan_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    generation = _generation(store, queries[0].split()[:8], LETTERS)
    store.close()
    if answers["old"] != answers["new"]:
        raise AssertionError("old and new lexicons corrected the queries differently")
    return {
        "vocabulary": len(vocabulary), "words starting with 'a'": words, "query words": 64,
        "corrections per query": statistics.mean(len(a) for a in answers["new"]),
        "seconds (median)": {version: {label: round(statistics.median(values), 3)
                                       for label, values in by_label.items()}
                             for version, by_label in times.items()},
        "scan cache after the first query": {
            "words": new._scans.weight, "MB held (traced)": round(scan_bytes / 1e6, 1)},
        "candidate generation + doc_freq, 8 words (not taken)": generation,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.correction_speed",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    same = sub.add_parser("same", help="old and new corrections, word by word")
    same.add_argument("--typos", type=int, default=3000)
    same.add_argument("--seed", type=int, default=1)
    speed = sub.add_parser("speed", help="a query of 64 unknown words, old and new")
    speed.add_argument("--words", type=int, default=120_000)
    speed.add_argument("--rounds", type=int, default=3)
    speed.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "same":
        result = run_same(args.typos, args.seed)
    else:
        result = run_speed(args.words, args.seed, args.rounds)
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
