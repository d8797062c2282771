"""Text normalization, done once at load time: the stored text is what offsets refer to."""

from __future__ import annotations

import hashlib
import re
import shlex
import unicodedata

# C0 controls other than tab and newline carry no text and break BM25 and Postgres (NUL).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")
# ... but these stand between words, as line breaks do: a vertical tab is a Word document's
# line break (Shift+Enter), a form feed pdftotext's page break, the separators a data file's
# records and fields. Removed, they glued the words on either side ("brake\vpads" was stored
# as "brakepads", which a search for "pads" or "brake" does not find).
# Unicode's own line breaks, NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR (a blank line),
# likewise: every line-wise reading (headings, numbered articles, paragraph cuts) knows "\n"
# alone, so in a text laid out with them "# Title" took the whole rest of the text as its
# title, the document's title too, and no heading after it was found.
_LINE_BREAKING = re.compile(r"[\x0b\x0c\x1c-\x1f\x85\u2028]")
_PARAGRAPH_SEPARATOR = "\u2029"


def normalize_text(raw: str) -> str:
    """Return the canonical form of a document's text.

    BOM dropped, CRLF and lone CR turned into LF, as are vertical tab, form feed, the
    information separators (x1C-x1F), NEL and LINE SEPARATOR (PARAGRAPH SEPARATOR into a
    blank line), other control characters removed, Unicode NFC
    (so "e" + combining acute and the precomposed "é" are stored, searched and cited alike).
    Idempotent: ``normalize_text(normalize_text(s)) == normalize_text(s)``.
    """
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    text = _LINE_BREAKING.sub("\n", _CONTROL.sub("", text)).replace(_PARAGRAPH_SEPARATOR, "\n\n")
    # after the controls go: "\x00\ufeff" left a BOM that a second pass removed
    text = text.lstrip("\ufeff")
    return unicodedata.normalize("NFC", text)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def shell_word(value: object) -> str:
    """``value`` as one shell word, for the commands our messages tell a user to run: a store
    path with a space or a quote must paste as it is."""
    return shlex.quote(str(value))


def excerpt(value: object, limit: int = 60) -> str:
    """``value`` as ``repr`` shows it, a string cut to its first ``limit`` characters: an
    error message quotes what was sent, not all of it (a megabyte snapshot name was answered
    with a megabyte message)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    shown = repr(value)
    return shown if len(shown) <= limit + 20 else shown[:limit] + "..."


def clip_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters with "\u2026" at the end, at its last word
    break when that keeps at least half of it; as it is when it fits."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    at_word = cut.rsplit(None, 1)[0] if cut[-1:].strip() and text[len(cut)].strip() else cut
    return (at_word if len(at_word) >= limit // 2 else cut).rstrip() + "\u2026"
