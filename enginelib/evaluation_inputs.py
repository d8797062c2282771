"""Checks of what the retrieval metrics take: rankings, judgments, runs, cutoffs.

The metric functions of evaluation.py are plain arithmetic, and a wrong argument (None, one
string for a list of ids, a float or NaN grade, a NaN score, k=-1) failed there as a
TypeError, KeyError or ZeroDivisionError naming none of them, or gave a wrong number (a
negative k sliced the ranking from its end). Each check raises InvalidInputError naming the
argument and the entry at fault.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .errors import InvalidInputError
from .validation import MAX_QUERY_CHARS, check_int, check_text, show_value

# A cutoff past any corpus a metric is run on here; a larger one is a mistake, not a depth.
MAX_CUTOFF = 1_000_000
# The largest relevance grade (in size): trec_eval's is a C long. Larger ones overflowed the
# DCG's float sum: three documents graded 10**308 made nDCG NaN, or 0.0 for a ranking with
# one of them first, and 10**400 an OverflowError.
MAX_GRADE = 2**31 - 1


def check_cutoff(k: Any, name: str = "k") -> int:
    """A rank cutoff: an int within 1..MAX_CUTOFF."""
    return check_int(name, k, minimum=1, maximum=MAX_CUTOFF)


def check_ranking(ranking: Any, name: str = "ranking") -> Sequence[str]:
    """Document ids best first: a list or tuple of str (one str would be its characters)."""
    if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
        raise InvalidInputError(f"{name} must be a list of document ids, best first, got "
                                f"{show_value(ranking)}")
    for i, doc in enumerate(ranking):
        if not isinstance(doc, str):
            raise InvalidInputError(f"{name}[{i}] must be a document id (str), got "
                                    f"{show_value(doc)}")
    return ranking


def check_judged(judged: Any, name: str = "judged") -> Mapping[str, int]:
    """One query's judgments: document id (str) -> integer grade (<= 0 not relevant)."""
    if not isinstance(judged, Mapping):
        raise InvalidInputError(f"{name} must be a mapping of document id -> integer grade, "
                                f"got {show_value(judged)}")
    for doc, grade in judged.items():
        if not isinstance(doc, str):
            raise InvalidInputError(f"{name} has the key {show_value(doc)}: document ids are "
                                    f"str")
        if isinstance(grade, (bool, np.bool_)) or not isinstance(grade, (int, np.integer)):
            raise InvalidInputError(
                f"{name}[{doc!r}] must be an integer grade (0 or less: not relevant, 1 or "
                f"more: relevant), got {show_value(grade)}")
        if not -MAX_GRADE <= grade <= MAX_GRADE:
            raise InvalidInputError(grade_out_of_range(f"{name}[{doc!r}]", grade))
    return judged


def grade_out_of_range(where: str, grade: Any) -> str:
    return (f"{where} is {show_value(grade)}: a relevance grade is a small whole number (0 "
            f"not relevant, 1, 2, 3... more relevant), within -{MAX_GRADE:,}..{MAX_GRADE:,}")


def check_qrels(qrels: Any, name: str = "qrels") -> Mapping[str, Mapping[str, int]]:
    """Judgments of every query: query id (str) -> ``check_judged``."""
    _check_query_ids(qrels, name, "document id -> integer grade")
    for qid, judged in qrels.items():
        check_judged(judged, f"{name}[{qid!r}]")
    return qrels


def check_rankings(rankings: Any, name: str = "rankings") -> Mapping[str, Sequence[str]]:
    """query id (str) -> ``check_ranking``."""
    _check_query_ids(rankings, name, "document ids best first")
    for qid, ranking in rankings.items():
        check_ranking(ranking, f"{name}[{qid!r}]")
    return rankings


def check_queries(queries: Any, name: str = "queries") -> Mapping[str, str]:
    """query id (str) -> the query's text (str), one a search takes (``query_text_problem``)."""
    _check_query_ids(queries, name, "the query's text")
    for qid, text in queries.items():
        if not isinstance(text, str):
            raise InvalidInputError(f"{name}[{qid!r}] must be the query's text (str), got "
                                    f"{show_value(text)}")
        problem = query_text_problem(text)
        if problem is not None:
            raise InvalidInputError(f"{name}[{qid!r}]: {problem}")
    return queries


def query_text_problem(text: str) -> str | None:
    """Why a search would refuse ``text`` as its query, or None. Checked before the first
    search: the refusal came from the batch searching it ("the query contains a NUL
    character") and stopped the whole evaluation without naming the query among thousands."""
    try:
        check_text("the query text", text)
    except InvalidInputError as exc:
        return str(exc)
    words = unicodedata.normalize("NFC", text).strip()  # what the search measures
    if not words:
        return "the query text is empty: expected the words to search for"
    if len(words) > MAX_QUERY_CHARS:
        return (f"the query text is {len(words):,} characters; a search takes at most "
                f"{MAX_QUERY_CHARS:,}: shorten it to its key sentence")
    return None


def check_run(run: Any, name: str = "run") -> Mapping[str, Sequence[tuple[str, float]]]:
    """query id (str) -> (document id, finite score) pairs, best first."""
    _check_query_ids(run, name, "(document id, score) pairs best first")
    for qid, ranked in run.items():
        where = f"{name}[{qid!r}]"
        if isinstance(ranked, (str, bytes)) or not isinstance(ranked, Sequence):
            raise InvalidInputError(f"{where} must be a list of (document id, score) pairs, "
                                    f"got {show_value(ranked)}")
        for i, pair in enumerate(ranked):
            check_scored(pair, f"{where}[{i}]")
    return run


def check_scored(pair: Any, name: str) -> tuple[str, float]:
    """One (document id, score) pair; the score a finite number (NaN sorts nowhere, and a
    TREC run file with 'nan' in it is refused by trec_eval)."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise InvalidInputError(f"{name} must be a (document id, score) pair, got "
                                f"{show_value(pair)}")
    doc, score = pair
    if not isinstance(doc, str):
        raise InvalidInputError(f"{name} must start with a document id (str), got "
                                f"{show_value(doc)}")
    if not _finite(score):
        raise InvalidInputError(f"{name} has the score {show_value(score)}: a score must be a "
                                f"finite number")
    return doc, float(score)


def check_gains(gains: Any, name: str = "gains") -> Sequence[float]:
    """Gains by rank, best first: a list or tuple of finite numbers."""
    if isinstance(gains, (str, bytes)) or not isinstance(gains, Sequence):
        raise InvalidInputError(f"{name} must be a list of numbers, got {show_value(gains)}")
    for i, gain in enumerate(gains):
        if not _finite(gain):
            raise InvalidInputError(f"{name}[{i}] must be a finite number, got "
                                    f"{show_value(gain)}")
    return gains


def check_run_tag(tag: Any) -> str:
    """A TREC run tag: one word (the format's columns are split on white space)."""
    if not isinstance(tag, str) or not tag or len(tag.split()) != 1 or tag != tag.strip():
        raise InvalidInputError(f"the run tag must be one word without spaces, got "
                                f"{show_value(tag)}")
    return tag


def check_trec_ids(run: Mapping[str, Sequence[tuple[str, float]]]) -> None:
    """The query and document ids of a run written as TREC lines: each one word. The
    columns are split on white space, so 'q 1' or 'my doc.md' made a line of 7 columns
    (trec_eval stops, or reads the next column as the id) and an empty id one of 5."""
    for qid, ranked in run.items():
        _one_word(qid, f"run's query id {show_value(qid)}")
        for i, (doc, _score) in enumerate(ranked):
            _one_word(doc, f"run[{qid!r}][{i}]'s document id {show_value(doc)}")


def _one_word(text: str, what: str) -> None:
    if not text or any(c.isspace() for c in text):
        raise InvalidInputError(
            f"the {what} cannot be written as a TREC run: its columns are split on white space, "
            "so an id is one word, never empty; give ids without spaces (or write the run in "
            "another format)")


def _finite(value: Any) -> bool:
    """A real number (not a bool) that is neither NaN nor infinite, nor an int past float's
    range (math.isfinite raised OverflowError for 10**400: a bare error, not a refusal)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _check_query_ids(value: Any, name: str, holds: str) -> None:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping of query id -> {holds}, got "
                                f"{show_value(value)}")
    for qid in value:
        if not isinstance(qid, str):
            raise InvalidInputError(f"{name} has the query id {show_value(qid)}: query ids "
                                    f"are str")
