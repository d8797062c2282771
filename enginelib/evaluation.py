"""Retrieval metrics over graded judgments (nDCG@k, Recall@k, MRR@k) and BEIR-layout readers.

The formulas, written down once (they match trec_eval / ir-measures, which the tests check):

- ``ndcg(ranking, judged, k)``: DCG@k / IDCG@k with linear gain and a log2 discount,
  ``DCG = sum(rel_i / log2(i + 1))`` over ranks i = 1..k; IDCG is the DCG of the judged
  documents sorted by grade. Negative grades count as 0. A query with no relevant document
  scores 0.
- ``recall(ranking, judged, k)``: relevant documents (grade >= 1) in the top k / all relevant.
- ``mrr(ranking, judged, k)``: 1 / rank of the first relevant document in the top k, else 0.

A ranking is a sequence of document ids, best first; duplicates after their first occurrence
are ignored (a document counts once, at its best rank).

A run (``evaluate_run``, ``trec_run_lines``) holds (document id, score) pairs and is ranked by
its scores, as trec_eval and ir-measures rank one: score descending, equal scores by document
id, the larger first (trec_eval's rule). The order the pairs come in does not count, so a run
read from a file or built by hand scores what any TREC tool scores for it.

The empty cases, decided once:

- an empty ranking scores 0 on every metric, and so does a judged query missing from
  ``evaluate``'s rankings (an engine must not look better by returning nothing);
- a query whose judgments hold no relevant document (grade >= 1) scores 0 from ``ndcg``,
  ``recall`` and ``mrr``, and ``evaluate`` leaves it out of its means, as trec_eval does;
- ``evaluate`` (and ``evaluate_run``) over judgments with no such query at all raises
  InvalidInputError: a mean over no queries is undefined, and 0.0 would read as an engine
  that found nothing;
- ranked queries that have no judgments are ignored.

Arguments are checked (evaluation_inputs.py): ids are str, grades integers, scores finite,
cutoffs within 1..1,000,000; anything else is an InvalidInputError naming the argument.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .errors import InvalidInputError
from .evaluation_inputs import (
    MAX_GRADE,
    check_cutoff,
    check_gains,
    check_judged,
    check_qrels,
    check_queries,
    check_ranking,
    check_rankings,
    check_run,
    check_run_tag,
    check_scored,
    check_trec_ids,
    grade_out_of_range,
)
from .input_files import open_regular
from .types import validate_truth_level
from .validation import MAX_LIMIT, check_int, check_path, show_value

Qrels = dict[str, dict[str, int]]  # query id -> document id -> grade
Run = dict[str, list[tuple[str, float]]]  # query id -> [(document id, score)], ranked by score

RELEVANT_GRADE = 1
DEFAULT_CUTOFFS = {"ndcg": 10, "recall": 100, "mrr": 10}


def by_score(pairs: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """A query's (document id, score) pairs as trec_eval ranks them: score descending, equal
    scores by document id descending."""
    return sorted(pairs, key=lambda pair: (pair[1], pair[0]), reverse=True)


def scores_in_order(pairs: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pairs of a ranking made by other means (MMR, a reranker), their scores lowered
    where needed so that they fall strictly along the order: ranked by score (by trec_eval
    too), the run keeps that order. A score already below the one before it is kept.

    trec_eval (and pytrec_eval, ir-measures' default) reads a score as a float, single
    precision: a score one double step below the one before was the same number there, and
    the tie went to the larger document id. So each score falls below the one before as a
    float32 too."""
    kept: list[tuple[str, float]] = []
    for doc, score in pairs:
        if kept and _single(score) >= _single(kept[-1][1]):
            score = _just_below(kept[-1][1])
        kept.append((doc, score))
    return kept


def _single(score: float) -> np.float32:
    """``score`` as trec_eval reads it (a float; past its range, infinite)."""
    with np.errstate(over="ignore"):
        return np.float32(score)


def _just_below(score: float) -> float:
    """The largest number below ``score`` that a float32 tells from it."""
    below = float(np.nextafter(_single(score), np.float32(-np.inf)))
    return below if math.isfinite(below) else math.nextafter(score, -math.inf)


def _dedupe(ranking: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def dcg(gains: Sequence[float]) -> float:
    return _dcg(check_gains(gains))


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)


def ndcg(ranking: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    return _ndcg(check_ranking(ranking), check_judged(judged), check_cutoff(k))


def recall(ranking: Sequence[str], judged: Mapping[str, int], k: int = 100) -> float:
    return _recall(check_ranking(ranking), check_judged(judged), check_cutoff(k))


def mrr(ranking: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    return _mrr(check_ranking(ranking), check_judged(judged), check_cutoff(k))


# The formulas, over arguments already checked (``evaluate`` checks every query once).


def _ndcg(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    top = _dedupe(ranking)[:k]
    ideal = _dcg(sorted((max(g, 0) for g in judged.values()), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return _dcg([max(judged.get(doc, 0), 0) for doc in top]) / ideal


def _recall(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, grade in judged.items() if grade >= RELEVANT_GRADE}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_dedupe(ranking)[:k])) / len(relevant)


def _mrr(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    for rank, doc in enumerate(_dedupe(ranking)[:k], start=1):
        if judged.get(doc, 0) >= RELEVANT_GRADE:
            return 1.0 / rank
    return 0.0


@dataclass(frozen=True)
class Evaluation:
    """Mean metrics over the judged queries, plus each query's values."""

    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int
    per_query: dict[str, dict[str, float]]

    def summary(self) -> dict[str, float | int]:
        return {
            "ndcg@10": round(self.ndcg_at_10, 4),
            "recall@100": round(self.recall_at_100, 4),
            "mrr@10": round(self.mrr_at_10, 4),
            "queries": self.queries,
        }


def evaluate(rankings: Mapping[str, Sequence[str]], qrels: Qrels) -> Evaluation:
    """Score rankings (query id -> document ids, best first) against every judged query.

    A judged query missing from ``rankings`` scores 0 (an engine that returns nothing for a
    query must not look better by having it dropped from the mean). Queries whose judgments
    hold no relevant document are skipped, as trec_eval does; when that leaves none,
    InvalidInputError (see the module docstring's empty cases).
    """
    check_rankings(rankings)
    check_qrels(qrels)
    per_query: dict[str, dict[str, float]] = {}
    for qid, judged in qrels.items():
        if not any(grade >= RELEVANT_GRADE for grade in judged.values()):
            continue
        ranking = rankings.get(qid, [])
        per_query[qid] = {
            "ndcg@10": _ndcg(ranking, judged, DEFAULT_CUTOFFS["ndcg"]),
            "recall@100": _recall(ranking, judged, DEFAULT_CUTOFFS["recall"]),
            "mrr@10": _mrr(ranking, judged, DEFAULT_CUTOFFS["mrr"]),
        }
    n = len(per_query)
    if not n:
        raise InvalidInputError(
            f"qrels hold no query with a relevant document (grade >= {RELEVANT_GRADE}) among "
            f"their {len(qrels):,} queries: there is nothing to score; judge at least one "
            f"document relevant")

    def mean(name: str) -> float:
        return sum(v[name] for v in per_query.values()) / n

    return Evaluation(mean("ndcg@10"), mean("recall@100"), mean("mrr@10"), n, per_query)


def documents_by_best_chunk(hits: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """(document id, chunk score) pairs best first -> each document once, at its best chunk."""
    best: dict[str, float] = {}
    for i, pair in enumerate(hits):
        doc, _ = check_scored(pair, f"hits[{i}]")
        if doc not in best:
            best[doc] = pair[1]
    return list(best.items())


# -- BEIR-layout files -------------------------------------------------------------------------


# UTF-8, a leading byte order mark dropped: files saved by Notepad or Excel carry one, and
# kept it glued to the first query id (judged, never matched) or failed the JSON.
_ENCODING = "utf-8-sig"


def _open_text(path: Any, name: str) -> TextIO:
    """A judgments or queries file, opened as text once its path is checked (an int was a
    file descriptor to open(), which then closed it)."""
    file = check_path(path, name)
    try:
        return io.TextIOWrapper(open_regular(file), encoding=_ENCODING)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {file}: {exc.strerror or exc}") from exc


@contextmanager
def _source(path: str | Path, name: str, handle: TextIO | None) -> Iterator[TextIO]:
    """``handle`` when the caller opened the input (standard input: left open), else the file
    at ``path``, opened. Bytes that are not UTF-8 are an InvalidInputError naming the file:
    they were Python's bare UnicodeDecodeError (the CLI alone named the file)."""
    try:
        with nullcontext(handle) if handle is not None else _open_text(path, name) as opened:
            yield opened
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 text ({exc.reason}): save it as UTF-8 "
                                "and read it again") from exc


# A grade as trec_eval reads one, in ASCII digits: float() also took "1_0" (10, where
# trec_eval reads 1) and Arabic-Indic or full-width digits, a grade no other tool agreed on.
_GRADE_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def read_qrels(path: str | Path, *, handle: TextIO | None = None) -> Qrels:
    """A qrels file: BEIR .tsv (``query-id corpus-id score`` with a header) or TREC
    (``qid 0 docid grade``), tab- or space-separated. ``handle``: read that text instead
    (standard input, say), ``path`` naming it in messages."""
    qrels: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    with _source(path, "qrels path", handle) as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) == 4:
                qid, _, doc, grade = parts
            elif len(parts) == 3:
                qid, doc, grade = parts
            else:
                raise _bad_line(path, number, f"expected 3 or 4 columns (BEIR `query-id corpus-id "
                                f"score`, TREC `qid 0 docid grade`), got {len(parts)}")
            try:
                if not _GRADE_TEXT.fullmatch(grade):
                    raise ValueError(grade)
                as_float = float(grade)
                value = int(as_float)
            except (ValueError, OverflowError):  # "x", "nan", "inf", "1_0", "١"
                if number == 1 and not any(c.isdigit() for c in grade):
                    continue  # header
                raise _bad_line(path, number, f"grade {grade!r} is not a number: expected a "
                                "whole-number relevance grade in digits 0-9, such as 0, 1 or 2"
                                ) from None
            if value != as_float:  # int() cut 0.5 to 0: a judged-relevant pair read as not
                raise _bad_line(path, number, f"grade {grade!r} is not a whole number: expected "
                                "a relevance grade such as 0, 1 or 2 (scale graded judgments "
                                "to whole numbers first)")
            if not -MAX_GRADE <= value <= MAX_GRADE:
                raise _bad_line(path, number, grade_out_of_range("the grade", grade))
            judged = qrels.setdefault(qid, {})
            if doc in judged and judged[doc] != value:
                # the later line replaced the earlier grade, unseen (as read_queries refuses
                # a query id given again with other words)
                raise _bad_line(path, number, f"query {qid!r} judges {doc!r} again, {value} "
                                f"here and {judged[doc]} on line {first_line[qid, doc]}: "
                                "expected one grade for each pair; keep the right one")
            judged[doc] = value
            first_line.setdefault((qid, doc), number)
    return qrels


def read_queries(path: str | Path, *, handle: TextIO | None = None) -> dict[str, str]:
    """queries.jsonl (``{"_id", "text"}`` a line) or a two-column TSV ``qid<TAB>text``: by the
    file's suffix (.tsv, .txt), or with ``handle`` (text the caller opened, such as standard
    input, ``path`` naming it in messages) by its first line (JSON starts with ``{``)."""
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}

    def add(qid: str, text: str, number: int) -> None:
        text = _query_text(text, path, number)
        if qid in queries and queries[qid] != text:
            # the later line replaced the earlier one, and the judged query was searched
            # with other words, scoring 0 with nothing said
            raise _bad_line(path, number, f"query id {qid!r} again, with other text than on "
                            f"line {first_line[qid]}: expected each query under its own id")
        queries[qid] = text
        first_line.setdefault(qid, number)

    with _source(path, "queries path", handle) as opened:
        lines: Iterable[str] = opened
        if handle is None:
            tsv = str(path).endswith((".tsv", ".txt"))
        else:  # no file name to go by: look at the first line that is not blank
            head: list[str] = []
            for line in opened:
                head.append(line)
                if line.strip():
                    break
            tsv = not (head and head[-1].lstrip().startswith("{"))
            lines = itertools.chain(head, opened)
        if tsv:
            # No CSV quoting: a '"' is the query's own (a phrase), and a quoted field ran
            # on over the following lines, swallowing their queries.
            rows = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
            for number, row in enumerate(rows, start=1):
                if len(row) >= 2:
                    add(row[0], row[1], number)
            return queries
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _bad_line(path, number, f'not JSON ({exc.msg}): expected one object a '
                                'line, {"_id": ..., "text": "..."}') from None
            except (ValueError, RecursionError) as exc:  # a 5,000-digit number, [[[[...
                raise _bad_line(path, number, f"not JSON that Python reads ({exc}): expected "
                                'one object a line, {"_id": ..., "text": "..."}') from None
            if not isinstance(row, dict) or "_id" not in row or not isinstance(row.get("text"), str):
                raise _bad_line(path, number, f'expected {{"_id": ..., "text": "..."}}, got '
                                f"{line.strip()[:80]}")
            add(str(row["_id"]), row["text"], number)
    return queries


def _query_text(text: str, path: str | Path, number: int) -> str:
    # an empty judged query would fail the whole run later, far from its line (the other
    # refusals, such as a NUL, are checked on the judged queries alone: rank_documents)
    if not text.strip():
        raise _bad_line(path, number, "the query text is empty: expected the words to search "
                        "for")
    return text


def _bad_line(path: str | Path, number: int, what: str) -> InvalidInputError:
    """A malformed line of an evaluation input, as ``file:line: what (expected ...)``."""
    return InvalidInputError(f"{path}:{number}: {what}")


def trec_run_lines(run: Run, tag: str) -> Iterator[str]:
    """TREC run format: ``qid Q0 docid rank score tag``, ranks from 1 (the run and the tag
    are checked before the first line)."""
    check_run(run)
    check_run_tag(tag)
    check_trec_ids(run)
    return _run_lines(run, tag)


def _run_lines(run: Run, tag: str) -> Iterator[str]:
    for qid, ranked in run.items():
        for rank, (doc, score) in enumerate(_written_scores(by_score(ranked)), start=1):
            yield f"{qid} Q0 {doc} {rank} {score} {tag}"


def _written_scores(ranked: Iterable[tuple[str, float]]) -> Iterator[tuple[str, str]]:
    """Each score as a run file's text: six decimals, unless they read (as trec_eval reads a
    score, a float32) no lower than the line above for a lower score; then the nine digits a
    float32 needs, one float32 step below the line above where the score itself is not.
    Six decimals alone wrote 0.9999999 and 1.0 as 1.000000, and trec_eval ranked the tie by
    document id. Equal scores stay equal: trec_eval breaks the tie as ``by_score`` did."""
    above: tuple[float, str, np.float32] | None = None
    for doc, given in ranked:
        score = float(given)
        if above is not None and score == above[0]:
            text = above[1]
        else:
            text = f"{score:.6f}"
            if above is not None and _single(float(text)) >= above[2]:
                single = min(_single(score), np.nextafter(above[2], np.float32(-np.inf)))
                text = f"{float(single):.9g}" if np.isfinite(single) else repr(score)
        above = (score, text, _single(float(text)))
        yield doc, text


# -- scoring a store ---------------------------------------------------------------------------

EVAL_DEPTH = 100  # documents ranked per query: enough for Recall@100
EVAL_BATCH = 256


@dataclass(frozen=True)
class StoreRun:
    """Document rankings from a store, and what was searched to get them."""

    run: Run
    strategy: str
    truth_levels: tuple[str, ...]
    seconds: float


def levels_present(store: Any) -> tuple[str, ...]:
    """The truth levels of the store's documents, most trusted first."""
    levels = store.stats()["documents_by_truth_level"]
    return tuple(sorted((lv for lv, n in levels.items() if n), key=lambda lv: int(lv[1])))


def rank_documents(
    store: Any,
    queries: Mapping[str, str],
    *,
    strategy: str = "hybrid",
    truth_levels: Sequence[str] | None = None,
    depth: int = EVAL_DEPTH,
    **options: Any,
) -> StoreRun:
    """Search every query (in batches) and rank documents by their best chunk.

    ``truth_levels`` defaults to every level present in the store, not the production default
    (L1+L2), so an evaluated corpus ingested as L3 is never silently dropped. The answerability
    gate is off (a metric needs the ranking, not the refusal) and the query log is not written.
    """
    import time

    # Unchecked, a str or a list of queries failed as a bare TypeError ("string indices must
    # be integers"), a path or None for the store as an AttributeError, and truth_levels="L1"
    # was searched as its characters ("unknown truth level 'L'"), where a search takes it.
    if not (callable(getattr(store, "search_batch", None)) and callable(getattr(store, "stats", None))):
        raise InvalidInputError(f"store must be an open enginelib Store, such as "
                                f"enginelib.open('mystore'), got {type(store).__name__}")
    check_queries(queries)
    if isinstance(truth_levels, str):
        truth_levels = [part for part in re.split(r"[,\s]+", truth_levels) if part]
    elif truth_levels is not None and not isinstance(truth_levels, (list, tuple, set, frozenset)):
        raise InvalidInputError(f"truth_levels must be a list like ['L1', 'L2'], got "
                                f"{show_value(truth_levels)}")
    # a hit is a chunk and chunks_per_doc=1, so the search limit is the depth: name it as such
    depth = check_int("depth", depth, minimum=1, maximum=MAX_LIMIT)
    levels = (tuple(dict.fromkeys(validate_truth_level(level) for level in truth_levels))
              if truth_levels else levels_present(store))
    if not levels:
        return StoreRun({qid: [] for qid in queries}, strategy, (), 0.0)
    # lenient: a dataset's query with an unbalanced quote (common in BEIR argument texts)
    # stopped the whole run; it is searched as its words, as any other query.
    search_options = {
        "strategy": strategy, "limit": depth, "truth_levels": list(levels),
        "chunks_per_doc": 1, "answerability_threshold": None, "log": False, "lenient": True,
        **options,
    }
    run: Run = {}
    ids = list(queries)
    started = time.perf_counter()
    for start in range(0, len(ids), EVAL_BATCH):
        batch = ids[start : start + EVAL_BATCH]
        responses = store.search_batch([queries[q] for q in batch], **search_options)
        for qid, response in zip(batch, responses, strict=True):
            run[qid] = scores_in_order(documents_by_best_chunk(
                (hit.document_id, hit.scores.fused) for hit in response.hits
            )[:depth])
    return StoreRun(run, strategy, levels, time.perf_counter() - started)


def evaluate_run(run: Run, qrels: Qrels) -> Evaluation:
    """``evaluate`` over a run, each query's documents ranked by their scores (``by_score``),
    not by the order of the pairs: ``[("a", 0.1), ("b", 0.9)]`` ranks b first."""
    check_run(run)
    return evaluate({qid: [doc for doc, _ in by_score(ranked)] for qid, ranked in run.items()},
                    qrels)
