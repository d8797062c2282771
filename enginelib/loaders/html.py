"""HTML files: the visible text, with block elements as line breaks, titled by <title>.

Scripts, styles and comments are dropped; whitespace inside running text collapses as a
browser would show it, except inside <pre>. Paragraph-like blocks end with a blank line so
the chunker's "\\n\\n" separator finds them.
"""

from __future__ import annotations

import codecs
import re
import warnings
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

from ..text import normalize_text
from ..types import LoadedDocument
from .base import decode_text, fail, found_title, read_bytes, require_text

# Never shown to a reader; <title> is taken apart as the document title. <head> itself is
# kept: html.parser does not close it implicitly, so an unclosed <head> holds the body.
_DROPPED = frozenset({"script", "style", "noscript", "template", "title"})
_SKIPPED_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)
# Blocks that end a paragraph (blank line) vs. blocks that only end a line.
_PARAGRAPH = frozenset({
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol", "dl",
    "section", "article", "header", "footer", "main", "aside", "nav", "figure", "details",
    "form", "hr", "address", "fieldset",
})
_LINE = frozenset({
    "div", "li", "tr", "dt", "dd", "caption", "figcaption", "summary", "body", "html",
    "option", "legend",
})
_CELLS = frozenset({"td", "th"})
_SPACES = re.compile(r"[ \t\n\r\f\v]+")


class _TextBuilder:
    """Collects text runs and line breaks, merging breaks and trimming spaces around them."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending_newlines = 0

    def text(self, run: str, *, preformatted: bool = False) -> None:
        if self.pending_newlines:
            run = run.lstrip("\n") if preformatted else run.lstrip(" ")
            if not run:  # whitespace between blocks: the pending break stands for it
                return
            if self.parts:
                self.parts[-1] = self.parts[-1].rstrip(" ")
                self.parts.append("\n" * self.pending_newlines)
            self.pending_newlines = 0
        elif not preformatted and run.startswith(" "):
            if not self.parts or self.parts[-1].endswith((" ", "\n")):
                run = run.lstrip(" ")
        if run:
            self.parts.append(run)

    def newline(self, count: int) -> None:
        self.pending_newlines = max(self.pending_newlines, count)

    def result(self) -> str:
        return "".join(self.parts).rstrip()


def html_text(root: Tag) -> str:
    """The visible text of ``root`` (iterative: deeply nested pages do not overflow)."""
    out = _TextBuilder()
    pre_depth = 0
    stack: list[tuple[PageElement, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        if isinstance(node, NavigableString):
            if not isinstance(node, _SKIPPED_STRINGS):
                if pre_depth:
                    out.text(str(node), preformatted=True)
                else:
                    out.text(_SPACES.sub(" ", str(node)))
            continue
        if not isinstance(node, Tag):
            continue
        name = (node.name or "").lower()
        if closing:
            pre_depth -= name == "pre"
            if name in _CELLS:
                out.text(" ")
            elif name in _PARAGRAPH or name in _LINE:
                out.newline(2 if name in _PARAGRAPH else 1)
            continue
        if name in _DROPPED and node is not root:
            continue
        if name == "br":
            out.newline(1)
            continue
        if name in _PARAGRAPH or name in _LINE:
            out.newline(2 if name in _PARAGRAPH else 1)
        pre_depth += name == "pre"
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.contents))
    return out.result()


def _title(soup: BeautifulSoup) -> str | None:
    for tag in (soup.find("title"), soup.find("h1")):
        if isinstance(tag, Tag):
            title = _SPACES.sub(" ", normalize_text(tag.get_text())).strip()
            if title:
                return found_title(title)
    return None


def _language(soup: BeautifulSoup) -> str | None:
    html = soup.find("html")
    lang = html.get("lang") if isinstance(html, Tag) else None
    return (lang.strip().lower() or None) if isinstance(lang, str) else None


# <meta charset="..."> or <meta http-equiv="Content-Type" content="text/html; charset=...">,
# looked for in the first bytes as a browser's prescan does (the label is ASCII).
_META_CHARSET = re.compile(rb"<meta[^>]{0,512}?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]{1,40})",
                           re.IGNORECASE)
_PRESCAN_BYTES = 4096
# What browsers decode these labels as (the WHATWG Encoding Standard): pages that say
# Latin-1 or ASCII are read as Windows-1252, its superset.
_WINDOWS_1252 = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "cp819", "ibm819",
                 "us-ascii", "ascii", "windows-1252", "cp1252", "x-cp1252"}
# UTF-16's labels (the WHATWG list; Python knows only some of them). A declaration the
# ASCII prescan can read is not in UTF-16 (nor UTF-32, whose code units hold three zero
# bytes an ASCII character), so it cannot be true of the file: browsers read such a page as
# UTF-8, and so do we. Taken at its word, a UTF-8 page saying "utf-16" was refused, with
# advice to convert it from Windows-1252 that would have garbled it.
_UTF16_LABELS = {"csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff",
                 "unicodefffe", "utf-16", "utf-16le", "utf-16be"}
_WIDE_CODECS = ("utf-16", "utf-32")


def declared_charset(data: bytes, path: str | Path) -> str | None:
    """The codec of the charset an HTML file declares, or None for UTF-8 / none declared
    (a UTF-8 byte-order mark wins over any declaration, as in a browser)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return None
    found = _META_CHARSET.search(data[:_PRESCAN_BYTES])
    if found is None:
        return None
    label = found.group(1).decode("ascii").strip().lower()
    if label in _WINDOWS_1252:
        return "cp1252"
    if label in _UTF16_LABELS:
        return None
    try:
        info = codecs.lookup(label)
        # base64, zlib, rot13...: codecs Python has, but not of text (bytes.decode raised a
        # bare LookupError and stopped the folder's ingest); the flag is what decode checks
        if not getattr(info, "_is_text_encoding", True):
            raise LookupError(label)
        name = info.name
    except LookupError:
        raise fail(path, f"declares charset {label!r}, which is not one Python can decode: "
                         "save it as UTF-8") from None
    return None if name == "utf-8" or name.startswith(_WIDE_CODECS) else name


# The parser builds every element in memory, 0.6-1 KB each: 64 MB of bare "<a>" tags (22
# million elements) would need 13-22 GB and get the process killed. A page may hold one
# element per this many bytes of the file limit (1 million at the default 64 MiB, about a
# gigabyte while parsing), so raising max_bytes raises both.
BYTES_PER_ELEMENT = 64
_START_TAG = re.compile(r"<[A-Za-z]")


def _check_elements(markup: str, path: Path, max_bytes: int) -> None:
    allowed = max(max_bytes // BYTES_PER_ELEMENT, 1)
    if markup.count("<") <= allowed:
        return
    elements = sum(1 for _ in _START_TAG.finditer(markup))
    if elements > allowed:
        raise fail(path, f"has {elements:,} HTML elements, over the {allowed:,} the loader "
                         f"reads within max_bytes={max_bytes} (each takes up to 1 KB of memory "
                         "while parsing); raise the limit (`enginelib ingest --max-file-mb`, "
                         "max_bytes= in Python) or convert the page to text first")


# What html.parser leaves unread at the end of a page and the HTML standard shows as text:
# a lone "<" or "</" (any longer start of a tag, comment or declaration is hidden).
_SHOWN_TAILS = ("<", "</")


def without_unclosed_tail(markup: str) -> str:
    """``markup`` cut before a tag, comment or declaration that is never closed.

    Python's html.parser before its June 2025 security releases (CPython gh-135462) reads
    what follows such a construct as text at the end of the parse, scanning to the end of
    the page again from each "<" in it: quadratic time. A page of 120 KB ("<a " over and
    over, or an attribute's quote never closed) held the ingest of its folder for 150 s, one
    of 1 MB for hours. As the HTML standard (and the fixed html.parser) reads it, an unclosed
    tag at the end of a file is dropped and an unclosed comment runs to the end: none of it
    is shown, so the page is cut there, after a first pass that only finds where (linear, a
    quarter of the time of the parse itself).
    """
    scan = HTMLParser(convert_charrefs=False)  # as bs4 runs it: the same place to stop
    scan.feed(markup)
    tail = scan.rawdata  # what feed() could not finish; close() would read it as above
    if tail.startswith("<") and tail not in _SHOWN_TAILS:
        return markup[:len(markup) - len(tail)]
    return markup


def load_html(path: Path, doc_id: str, max_bytes: int) -> Iterator[LoadedDocument]:
    data = read_bytes(path, max_bytes)
    markup = decode_text(data, path, declared_charset(data, path))
    _check_elements(markup, path, max_bytes)
    try:
        with warnings.catch_warnings():  # bs4 warns about markup that looks like a URL, etc.
            warnings.simplefilter("ignore")
            soup = BeautifulSoup(without_unclosed_tail(markup), "html.parser")
            text = normalize_text(html_text(soup))
            title, language = _title(soup), _language(soup)
    except Exception as exc:  # noqa: BLE001 - parser internals must not leak to the user
        raise fail(path, f"cannot parse HTML: {exc}") from exc
    yield LoadedDocument(
        id=doc_id, text=require_text(text, path), title=title or path.stem,
        source_path=str(path), file_extension=path.suffix.lower(), document_type="html",
        language=language,
    )
