"""Document keywords by TF-IDF over its chunks, so document-level views see chunk content."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

DEFAULT_KEYWORDS = 50

_TOKEN = re.compile(r"[^\W_][\w\-]*[^\W_]|[^\W_]", re.UNICODE)

# Function words of the two canonical corpus languages; they carry no topic.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her
    his how i if in into is it its may might more most must no not of on or our shall she
    should so such than that the their them then there these they this those to was we were
    what when where which while who will with would you your also any all each other only
    le la les un une des du de d l et ou en au aux ce ces cette dans par pour sur que qui
    est sont pas plus ne se sa son ses leur leurs il elle ils elles nous vous avec sans
    être etre être été ete""".split()
)


def tokenize(text: str) -> list[str]:
    # findall + lower per match (not findall over text.lower(): lowering can change a
    # character's class, e.g. U+0130 gains a combining mark, and so the token bounds).
    return [
        t for t in map(str.lower, _TOKEN.findall(text))
        if len(t) > 1 and t not in STOPWORDS and not t.isdigit()
    ]


def top_keywords(chunks: Sequence[str], limit: int = DEFAULT_KEYWORDS) -> list[str]:
    """Top ``limit`` terms of a document, TF-IDF with its chunks as the document set.

    Terms frequent in the whole document but concentrated in few chunks score highest;
    ties break alphabetically so the result is stable.
    """
    if limit <= 0 or not chunks:
        return []
    if len(chunks) == 1:
        # One chunk: every idf factor is 1 + log(2 / 2) = 1, so the order is by term
        # frequency alone (1 + log(tf) is increasing), ties alphabetical as below.
        counts = Counter(tokenize(chunks[0]))
        return sorted(counts, key=lambda term: (-counts[term], term))[:limit]
    per_chunk = [Counter(tokenize(chunk)) for chunk in chunks]
    term_freq: Counter[str] = Counter()
    doc_freq: Counter[str] = Counter()
    for counts in per_chunk:
        term_freq.update(counts)
        doc_freq.update(counts.keys())
    n = len(per_chunk)
    scores = {
        term: (1.0 + math.log(tf)) * (1.0 + math.log((1 + n) / (1 + doc_freq[term])))
        for term, tf in term_freq.items()
    }
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [term for term, _ in ranked[:limit]]
