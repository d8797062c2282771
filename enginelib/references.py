"""Provisions a text names: "Article 6", "Art. 17", "Recital (26)", "considérant 26",
"Annex III", "Section 2.3", in the EU languages the chunker cuts on (``sections.py``).

A question that names a provision ("Article 6(1)(f)", "GDPR Art. 6", "considérant 26") asks
for that provision first. Neither retriever knows it: BM25 reads "Art." as the word "art",
which no "Article" heading holds, and a later article that cites "Article 6(1)" holds more of
the question's words than Article 6 itself; an embedding sees a number. The search moves the
candidates inside a named provision (its heading path or its document's title names it)
ahead of the rest (``search/stages.py``, the boost stage).

A chunk is inside the provisions its heading path's parts and its document's title each
name first: "EU AI Act Article 7 — Amendments to Annex III" is Article 7, about Annex III.

A number is ambiguous across documents (the GDPR and the AI Act both have a Recital 144):
among the candidates inside a named provision, those whose title and heading path hold more
of the question's other words ("GDPR", "AI Act") come first.

A reference is (kind, number): the keyword's kind in any language ("Artikel", "art." and
"Article" are all ``article``) and the number as written, normalised ("(26)" -> "26",
"premier" -> "1", "iii" -> "III"). Sub-numbers are ignored: "Article 6(1)(f)" names
Article 6, and "Section 2.3" names Section 2.3, whose heading says so.
"""

from __future__ import annotations

import functools
import re

from .types import HEADING_SEPARATOR

# keyword (lowercase) -> kind; the chunker's keywords, plus the bare "art" of typed queries
_KINDS = {
    **dict.fromkeys(("article", "art.", "art", "artikel", "artículo", "articulo", "articolo",
                     "artigo", "§"), "article"),
    **dict.fromkeys(("recital", "considérant", "considerant", "considerando", "overweging",
                     "erwägungsgrund"), "recital"),
    **dict.fromkeys(("annex", "annexe", "anhang", "appendix", "anexo", "allegato", "bijlage"),
                    "annex"),
    **dict.fromkeys(("chapter", "chapitre", "kapitel", "capítulo", "capitulo", "capo",
                     "hoofdstuk"), "chapter"),
    **dict.fromkeys(("section", "abschnitt", "sección", "seccion", "sezione", "secção", "seção",
                     "afdeling"), "section"),
}
_KEYWORDS = "|".join(re.escape(k) for k in sorted(_KINDS, key=len, reverse=True))
# "Art. 6", "Article 6(1)(f)", "Recital (26)", "§5", "Annex III", "Article premier"; a roman
# number only in capitals ("Annex III", not "art is"), a letter suffix only glued ("5a").
_REFERENCE = re.compile(
    rf"(?<![\w.])(?P<keyword>(?i:{_KEYWORDS}))(?:(?<=§)\s*|(?<=\.)\s*|\s+)"
    r"(?P<number>\((?P<paren>\d+)\)|(?P<arabic>\d+(?:\.\d+)*[a-z]?)(?!\w)|"
    r"(?P<roman>[IVXLCDM]+)\b|(?P<first>(?i:premier|1er))\b)"
)


@functools.lru_cache(maxsize=4096)
def references(text: str) -> frozenset[tuple[str, str]]:
    """The (kind, number) pairs ``text`` names; empty when it names none."""
    return frozenset(_reference(match) for match in _REFERENCE.finditer(text))


@functools.lru_cache(maxsize=65536)
def provisions_of(heading_path: str, title: str) -> frozenset[tuple[str, str]]:
    """The provisions a chunk is inside: the first reference of each heading path part and
    of the title."""
    found = set()
    for part in (*heading_path.split(HEADING_SEPARATOR), title):
        match = _REFERENCE.search(part)
        if match is not None:
            found.add(_reference(match))
    return frozenset(found)


_WORD = re.compile(r"\w+")


def other_words(text: str) -> frozenset[str]:
    """The lower-cased words of ``text`` outside the references it names."""
    return frozenset(_WORD.findall(_REFERENCE.sub(" ", text).lower()))


def standing(named: frozenset[tuple[str, str]], words: frozenset[str], heading_path: str,
             title: str) -> int:
    """0 for a chunk outside every provision in ``named``; inside one, 1 + how many of
    ``words`` its title and heading path hold."""
    if not named & provisions_of(heading_path, title):
        return 0
    return 1 + len(words & frozenset(_WORD.findall(f"{heading_path} {title}".lower())))


def _reference(match: re.Match[str]) -> tuple[str, str]:
    kind = _KINDS[match.group("keyword").lower()]
    number = (match.group("paren") or match.group("arabic") or match.group("roman")
              or ("1" if match.group("first") else ""))
    return kind, number.lower() if match.group("arabic") else number
