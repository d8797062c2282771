"""The conversational frame around a question, left out of what the model embeds.

"Can you tell me how long we may keep CVs?" asks what "how long may we keep CVs?" asks.
The frame says nothing of the topic, yet a multilingual model's query vector moves with
it: e5-small's cosine to *every* passage rises by about 0.017 (benchmarks/RESULTS.md), a
large share of the gate's cross-lingual band, so framed off-domain questions were
answered. The words themselves are question words already (search/highlights.py): BM25
and the gate's word count skip them. Here the leading frame is cut from the text the
model embeds, in English and French, greeting first, then the request.

A frame is only cut where the question goes on after it with at least ``MIN_WORDS``
words: "Can you tell me?" is left as it is. A question typed all in lowercase is read with
its capital (``sentence_case``): the first letter moved e5-small's cosines as a frame does.
"""

from __future__ import annotations

import re

from .search.highlights import is_function_word

_END = r"[\s,:;.!\-–—]*"  # what may follow a frame before the question itself

_LEADS = [
    # greetings
    r"(?:hi|hello|hey|dear\s+\w+|good\s+(?:morning|afternoon|evening))(?:\s+there)?\b",
    r"(?:bonjour|bonsoir|salut|coucou)(?:\s+à\s+tous)?\b",
    # "(quick) question:", "I have a question (about)"
    r"(?:a\s+)?(?:quick|short|simple|small|one)\s+question\b",
    r"i\s+(?:have|had|'ve\s+got|got)\s+(?:a\s+)?(?:quick\s+|short\s+|simple\s+)?question\b",
    r"(?:une\s+)?(?:petite|rapide|simple|courte)\s+question\b",
    r"j'ai\s+une\s+(?:petite\s+|rapide\s+|simple\s+)?question\b",
    # asking to be told, in English
    r"(?:please\s+)?(?:can|could|would|will)\s+you\s+(?:please\s+|kindly\s+)?"
    r"(?:tell|show|explain\s+to|remind)\s+me(?:\s+about)?\b",
    r"(?:please\s+)?(?:can|could|would|will)\s+you\s+(?:please\s+|kindly\s+)?"
    r"(?:explain|clarify|describe|confirm)\b",
    r"(?:please\s+)?(?:tell|show|remind)\s+me(?:\s+about)?\b",
    r"please\s+(?:explain|clarify|describe|confirm)\b",
    r"(?:i'd|i\s+would)\s+(?:like|love)\s+to\s+(?:know|understand|learn|find\s+out)(?:\s+about)?\b",
    r"i\s+(?:want|wanted|need|needed)\s+to\s+(?:know|understand|learn|find\s+out)(?:\s+about)?\b",
    r"i(?:'m|\s+am|\s+was)\s+(?:wondering|curious)(?:\s+about)?\b",
    r"i\s+wonder\b",
    r"do\s+you\s+(?:happen\s+to\s+)?know\b",
    r"(?:can\s+you\s+)?help\s+me\s+(?:understand|figure\s+out|find\s+out)\b",
    r"please\b",
    # asking to be told, in French
    r"(?:pouvez|pourriez|pourrais|peux|pourrait|pourrions)[-\s](?:vous|tu|on|nous)\s+"
    r"(?:m'|me\s+|nous\s+)?(?:dire|expliquer|indiquer|préciser|éclairer|rappeler)\b",
    r"(?:dites|dis|explique|expliquez|indique|indiquez|rappelez|rappelle)[-\s](?:moi|nous)\b",
    r"(?:j'aimerais|je\s+voudrais|je\s+souhaiterais|je\s+veux|j'ai\s+besoin\s+de)\s+"
    r"(?:savoir|comprendre|connaître|vérifier)\b",
    r"je\s+me\s+(?:demande|demandais)\b",
    r"(?:savez|sais)[-\s](?:vous|tu)\b",
    r"s'il\s+(?:vous|te)\s+pla[iî]t\b",
]
_LEAD = re.compile(r"^\s*(?:" + "|".join(_LEADS) + ")" + _END, re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")
MIN_WORDS = 2  # the question left once the frame is cut


def question_core(text: str) -> str:
    """``text`` without its leading conversational frames; as given when none leads it, or
    when too little would be left to be a question."""
    core = text.replace("’", "'")
    for _ in range(4):  # "Hi, quick question: can you tell me ..." is three frames
        cut = _LEAD.sub("", core, count=1)
        if cut == core or len(_WORD.findall(cut)) < MIN_WORDS:
            break
        core = cut
    if core == text.replace("’", "'"):
        return sentence_case(text)
    core = core.lstrip()
    return core[:1].upper() + core[1:]  # as the bare question would begin


def sentence_case(text: str) -> str:
    """A sentence typed in lowercase, beginning with a capital. Typed so, "how much sleep
    does a teenager need?" sat 0.036 closer to a French law's passages under e5-small than
    "How much sleep does a teenager need?", past the gate's whole cross-lingual band
    (0.77-0.81): a question's first letter must not decide whether it is answered. Only a
    sentence, which begins with a stop or question word ("how", "can", "est-ce"): keywords
    ("okra", "airport scanners") are no sentence, and a capital would make them a name. A
    word with a capital inside ("iPhone", "eIDAS") is left as written."""
    stripped = text.lstrip()
    first = stripped.split(maxsplit=1)[0] if stripped else ""
    if (not first[:1].islower() or any(c.isupper() for c in first)
            or not is_function_word(first.rstrip(",:;?!."))):
        return text
    at = len(text) - len(stripped)
    return text[:at] + stripped[0].upper() + stripped[1:]
