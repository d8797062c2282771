"""Where a text's sections begin: markdown headings and numbered article/section lines.

The chunker cuts on these boundaries first, so a chunk belongs to one section and its
heading path names that section. Recognised:

- ATX headings ``#`` .. ``######`` (closing marks dropped) and setext headings (a
  paragraph underlined with ``===`` or ``---``), outside fenced code blocks;
- lines that open a numbered unit of a legal or technical text, in English, French and
  German: "Article 17", "Art. 5", "Article premier", "Section 2.3", "CHAPTER IV",
  "Chapitre II", "Annex III", "Titre I", "Artikel 3" ..., alone on their line or followed
  by a title after a dash, colon or full stop ("Article 17 — Right to erasure"). Such a
  line must open a paragraph (a blank line or another heading before it), so a sentence
  that merely starts with "Article 6(1) applies" is never taken for one.

Levels: ATX and setext headings keep their markdown level (1-6). Numbered lines get a
level from what they name, so "Chapter" holds "Section" which holds "Article" even in
plain text: part/title/book 1, chapter/annex 2, section 3 (+1 per dotted level, so
"Section 2.3" sits under "Section 2"), sub-section 4, article/recital 7; all of them
below any markdown heading (a plain "Section 1" line inside "#### ANNEX XI" belongs to
the annex), hence the offset ``_PLAIN_LEVEL_BASE``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .text import clip_words

# Words that open a numbered unit, with the nesting level each gives (under every Markdown
# level): English, French and German, and the other EU languages a regulation is published in
# that have a stemmer here (Spanish, Italian, Portuguese, Dutch), whose texts name their units
# "Artículo 17", "CAPO III", "Considerando (26)", "Hoofdstuk II"; "§ 5" for German statutes.
_KEYWORD_LEVELS = {
    "part": 1, "partie": 1, "teil": 1, "parte": 1, "deel": 1,
    "book": 1, "livre": 1, "libro": 1, "livro": 1, "boek": 1,
    "title": 1, "titre": 1, "título": 1, "titulo": 1, "titolo": 1, "titel": 1,
    "chapter": 2, "chapitre": 2, "kapitel": 2, "capítulo": 2, "capitulo": 2, "capo": 2,
    "hoofdstuk": 2,
    "annex": 2, "annexe": 2, "anhang": 2, "appendix": 2, "anexo": 2, "allegato": 2, "bijlage": 2,
    "section": 3, "abschnitt": 3, "sección": 3, "seccion": 3, "sezione": 3, "secção": 3,
    "seção": 3, "afdeling": 3,
    "sous-section": 4, "sub-section": 4, "subsection": 4,
    "article": 7, "art.": 7, "artikel": 7, "artículo": 7, "articulo": 7, "articolo": 7,
    "artigo": 7, "§": 7,
    "recital": 7, "considérant": 7, "considerando": 7, "overweging": 7, "erwägungsgrund": 7,
}
# Sections number their subsections ("Section 2.3"): each dot is one level deeper.
_SECTION_WORDS = frozenset({"section", "abschnitt", "sección", "seccion", "sezione", "secção",
                            "seção", "afdeling", "sous-section", "sub-section", "subsection"})
# Longest first, so that "article" is tried before "art." and "sous-section" before "section".
_KEYWORDS = "|".join(re.escape(k) for k in sorted(_KEYWORD_LEVELS, key=len, reverse=True))
_NUMBER = r"(?:(?i:premier|1er)|\d+(?:\.\d+)*[a-z]?|[IVXLCDM]+|[ivxlcdm]+|\(\d+\))"
# "§5" needs no space after its sign; a word does.
_AFTER_KEYWORD = r"(?:(?<=§)[ \t]*|[ \t]+)"

# One pass over the candidate lines; the branches are tried in this order.
_LINE = re.compile(
    r"^ {0,3}(?:"
    r"(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)"
    # the title runs to the end of its line and is stripped after: a lazy title before
    # [ \t]*$ tried every split of a line's spaces, minutes on a line padded with spaces
    r"|(?P<marks>#{1,6})(?:[ \t]+(?P<title>[^\n]*))?$"
    r"|(?P<underline>={2,}|-{2,})[ \t]*$"
    rf"|(?P<keyword>(?i:{_KEYWORDS})){_AFTER_KEYWORD}"
    rf"(?P<number>{_NUMBER}(?:[ \t]+(?:bis|ter|quater))?)"
    r"(?P<rest>[^\n]*)$"
    r")",
    re.MULTILINE,
)
# What may follow the number of a numbered line: nothing, or a separator and a title.
_TITLE_AFTER_SEPARATOR = re.compile(r"^\s*[—–\-:.)]\s*\S?")
# ... or, with no separator, a capitalised title that does not read as a sentence.
_BARE_TITLE = re.compile(r"^\s+[A-ZÀ-ÖØ-Þ][^\n]*$")
_NUMBERED_TITLE = re.compile(
    rf"^(?i:{_KEYWORDS})(?:(?<=§)\s*|\s+)"
    r"(?:(?i:premier|1er)|\d+(?:\.\d+)*[a-z]?|[IVXLCDM]+|\(\d+\))"
    r"(?:\s*$|\s*[—–\-:.)]|\s+[A-ZÀ-ÖØ-Þ])"
)
_NEXT_LINE = re.compile(r"\s*\n([^\n]{1,120})\n")  # the short line under a bare number
_MAX_NUMBERED_LINE = 200  # a longer line is a paragraph that starts with "Article 5 ..."
_MAX_BARE_TITLE_LINE = 100
_PLAIN_LEVEL_BASE = 6
# Lines that bound the paragraph a setext underline may title (see ``_paragraph_start``).
_THEMATIC_BREAK = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_FENCE_LINE = re.compile(r" {0,3}(?:```|~~~)")
_LIST_ITEM_OR_QUOTE = re.compile(r" {0,3}(?:(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)|>)")
_IN_A_LIST = -1  # the paragraph start of an underline under a list item or a block quote
# Longest heading title a chunk's heading path shows. Every chunk of a section repeats its
# path (in the catalog, the text segments and the text embedded), so an unbounded title made
# storage quadratic: a setext heading is its whole paragraph, and a 1 MB paragraph over a
# "---" line (or a 1 MB "# ..." line) gave each of the ~500 chunks under it a 1 MB path.
MAX_HEADING_CHARS = 200


@dataclass(frozen=True)
class Heading:
    """A section opener: where its line starts, its nesting level and its title."""

    offset: int
    level: int
    title: str
    numbered: bool  # names a numbered unit (article, recital, section...): cited on its own


def fence_after(fence: str | None, marker: str, rest: str = "") -> str | None:
    """The code fence open after a fence line: ``marker`` its run of backticks or tildes,
    ``rest`` what follows on the line (the chunker's heading scan and this one follow the
    same rule). As CommonMark has it, a line opens a fence when none is open (a run of
    backticks followed by more backticks on its line is inline code, no fence), and closes
    the open one when it is a run of the same mark at least as long with nothing after it:
    a ``~~~`` line, a shorter run or a "```python" line inside a block is part of the block
    ("````" around a block that shows a "```" one in a Markdown guide). The legacy flat
    chunker's scan passes the first three marks alone, and keeps its rule."""
    if fence is None:
        return None if marker[0] == "`" and "`" in rest else marker
    closes = marker[0] == fence[0] and len(marker) >= len(fence) and not rest.strip()
    return None if closes else fence


def heading_title(raw: str | None) -> str:
    """An ATX heading's title without its closing ``#`` marks ("Title ##" -> "Title").

    Plain string work, not a regex: a pattern for the marks backtracked over every space
    of the line, quadratic on a heading padded with thousands of spaces.
    """
    title = (raw or "").strip()
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        return bare.strip()
    return title


def is_numbered_title(title: str) -> bool:
    """True when a heading names a numbered unit such as "Article 17 — ..." or "Recital (3)"."""
    return _NUMBERED_TITLE.match(title.strip()) is not None


def find_headings(text: str) -> list[Heading]:
    """Every section opener of ``text`` in order, fenced code skipped."""
    headings: list[Heading] = []
    fence: str | None = None
    last_heading_end = -1  # end of the line of the previous heading found
    # The paragraph the last underline closed, for the next one over the same paragraph:
    # (that underline's line start and end, the paragraph's start or None: none above it).
    # Walking a paragraph back afresh from each of thousands of "---" lines under one that
    # cannot be a heading ("#tag", a table row) took minutes on a few hundred KB.
    previous: tuple[int, int, int | None] | None = None
    for match in _LINE.finditer(text):
        marker = match.group("fence")
        if marker is not None:
            fence = fence_after(fence, marker, match.group("info"))
            continue
        if fence is not None:
            continue
        start, end = match.start(), match.end()
        if match.group("marks") is not None:
            title = heading_title(match.group("title"))
            if title:
                level = len(match.group("marks"))
                headings.append(Heading(start, level, title, is_numbered_title(title)))
                last_heading_end = end
        elif match.group("underline") is not None:
            para_start = _paragraph_start(text, start, last_heading_end, previous)
            previous = (start, end, para_start)
            heading = _setext(text, para_start, start, match.group("underline")[0])
            if heading is not None and (not headings or heading.offset > headings[-1].offset):
                headings.append(heading)
                last_heading_end = end
        else:
            heading = _numbered_line(text, match, last_heading_end)
            if heading is not None:
                headings.append(heading)
                last_heading_end = end
    return headings


def _paragraph_start(
    text: str, underline_start: int, last_heading_end: int,
    previous: tuple[int, int, int | None] | None,
) -> int | None:
    """Start of the paragraph above an underline (None: a blank line, a heading, a thematic
    break or a code fence is right above; ``_IN_A_LIST``: the lines above belong to a list
    item or a block quote), not walking again a paragraph the ``previous`` underline walked.

    CommonMark: a setext underline never continues a list item or a block quote ("- item"
    then "---" is a list, then a thematic break), and a paragraph starts after a thematic
    break or a fence, which are no paragraph text."""
    line_end = underline_start - 1  # the newline that ends the paragraph's last line
    para_start: int | None = None
    while line_end > last_heading_end:  # walk back over the paragraph to a blank line
        if previous is not None and line_end == previous[1]:
            if _THEMATIC_BREAK.match(text, previous[0], previous[1]):
                break  # a "---" that made no heading is a thematic break: nothing above
            # the previous underline's line: the paragraph it closed goes on down to here
            return previous[2] if previous[2] is not None else previous[0]
        line_start = text.rfind("\n", 0, line_end) + 1
        if (not text[line_start:line_end].strip()
                or _THEMATIC_BREAK.match(text, line_start, line_end)
                or _FENCE_LINE.match(text, line_start, line_end)):
            break
        if _LIST_ITEM_OR_QUOTE.match(text, line_start, line_end):
            return _IN_A_LIST
        para_start = line_start
        if line_start == 0:
            break
        line_end = line_start - 1
    return para_start


def _setext(text: str, para_start: int | None, underline_start: int, char: str) -> Heading | None:
    """The paragraph above an ``===``/``---`` line, as a level 1/2 heading (CommonMark)."""
    if para_start is None or para_start == _IN_A_LIST:
        return None
    first_end = text.find("\n", para_start, underline_start)
    # its first line is not blank (the walk starts a paragraph on text): checked before the
    # whole paragraph is read, which happens once, for a heading
    if text[para_start:first_end].strip().startswith(("```", "~~~", "#", "|")):
        return None
    para_end = underline_start - 1
    lines = [ln.strip() for ln in text[para_start:para_end].split("\n") if ln.strip()]
    title = " ".join(lines)
    return Heading(para_start, 1 if char == "=" else 2, title, is_numbered_title(title))


def _numbered_line(text: str, match: re.Match[str], last_heading_end: int) -> Heading | None:
    start, end = match.start(), match.end()
    line = text[start:end].strip()
    if len(line) > _MAX_NUMBERED_LINE:
        return None
    number = match.group("number")
    if number.isalpha() and number.lower() not in ("premier",) and not number.isupper():
        return None  # "Part mix": lower-case roman numerals are words more often than not
    rest = match.group("rest")
    if rest.strip():
        separated = _TITLE_AFTER_SEPARATOR.match(rest) is not None
        bare = (
            number[0].isdigit()
            and _BARE_TITLE.match(rest) is not None
            and len(line) <= _MAX_BARE_TITLE_LINE
            and line[-1] not in ".;,:"
        )
        if not (separated or bare):
            return None
    # It must open a paragraph: start of text, a blank line, or right under another heading.
    if start > 0:
        prev_end = start - 1
        prev_start = text.rfind("\n", 0, prev_end) + 1
        if text[prev_start:prev_end].strip() and prev_end != last_heading_end:
            return None
    keyword = match.group("keyword").lower()
    level = _PLAIN_LEVEL_BASE + _KEYWORD_LEVELS[keyword]
    if keyword in _SECTION_WORDS:
        level += number.count(".")
    title = line
    if not rest.strip():
        title = _with_title_line(text, end, line)
    return Heading(start, level, title, True)


def _with_title_line(text: str, line_end: int, line: str) -> str:
    """ "Article 17" alone on its line takes the short line after it as its title."""
    nxt = _NEXT_LINE.match(text, line_end)
    if nxt is None:
        return line
    candidate = nxt.group(1).strip()
    if (
        not candidate
        or candidate[-1] in ".;,:"
        or candidate[0].isdigit()
        or candidate[0] in "(#-*|>"
        or _LINE.match(nxt.group(1)) is not None
    ):
        return line
    return f"{line} — {candidate}"


def shown_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """A heading path as a chunk carries it: each title cut to ``MAX_HEADING_CHARS``. Cut
    here, not where headings are found, so that sections compare by their whole titles."""
    return tuple(clip_words(title, MAX_HEADING_CHARS) for title in path)


class HeadingIndex:
    """Heading paths by position: the path of the section a character belongs to."""

    def __init__(self, headings: list[Heading]) -> None:
        self.headings = headings
        self.offsets = [h.offset for h in headings]
        self.paths: list[tuple[str, ...]] = []
        stack: list[Heading] = []
        for heading in headings:
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            self.paths.append(tuple(h.title for h in stack))

    def path_at(self, pos: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self.offsets, pos) - 1
        return self.paths[i] if i >= 0 else ()
