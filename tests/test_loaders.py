"""Loaders: every format, the byte-level refusals, folder walking, ids, and a store ingest."""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import zlib
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import given as for_all
from hypothesis import settings
from hypothesis import strategies as st
from pypdf import PdfWriter

import enginelib
from enginelib import loaders
from enginelib.errors import InvalidInputError, LoaderError, UnsupportedFormatError
from enginelib.loaders import DEFAULT_MAX_BYTES, iter_load, load_file, stream_file
from enginelib.loaders import pdf as pdf_loader
from enginelib.loaders.front_matter import split_front_matter
from enginelib.loaders.html import without_unclosed_tail
from enginelib.types import LoadedDocument, SkippedInput

# -- builders ------------------------------------------------------------------------------


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[list[str] | None]) -> bytes:
    """A minimal valid PDF: one Helvetica text line per entry, None for a page without text."""
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: (f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] "
            f"/Count {len(pages)} >>").encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for page_id, lines in zip(page_ids, pages, strict=True):
        shown = " 0 -16 Td ".join(f"({_pdf_string(line)}) Tj" for line in lines or [])
        stream = f"BT /F1 12 Tf 72 720 Td {shown} ET".encode() if lines else b""
        objects[page_id] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>"
        ).encode()
        objects[page_id + 1] = (
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
        )
    return pdf_from_objects(objects)


def pdf_from_objects(objects: dict[int, bytes]) -> bytes:
    """A PDF of these numbered objects (1 is the catalog), with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in sorted(objects))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def flate_stream(data: bytes, entries: bytes = b"") -> bytes:
    packed = zlib.compress(data, 9)
    return (b"<< /Length %d /Filter /FlateDecode %s>>\nstream\n" % (len(packed), entries)
            + packed + b"\nendstream")


def blank_pdf(path: Path, pages: int = 2) -> Path:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=612, height=792)
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    return path


def only(path: Path, **kwargs: object) -> LoadedDocument:
    documents = load_file(path, **kwargs)  # type: ignore[arg-type]
    assert len(documents) == 1
    return documents[0]


def split(items: object) -> tuple[list[LoadedDocument], list[SkippedInput]]:
    documents, skipped = [], []
    for item in items:  # type: ignore[attr-defined]
        (skipped if isinstance(item, SkippedInput) else documents).append(item)
    return documents, skipped


BEIR_LINES = [
    {"_id": "doc1", "title": "Brake pads", "text": "Replace the pads at 3 mm.",
     "metadata": {"url": "https://example.org/pads", "truth_level": "L1"}},
    {"_id": "doc2", "title": "", "text": "Bleed the brake fluid every two years.", "metadata": {}},
    {"_id": 3, "title": "Rotors", "text": "Rotor minimum thickness is stamped on the hub.",
     "metadata": {}, "domain": "brakes", "tags": ["rotor"]},
]


def jsonl(lines: list[object]) -> str:
    return "".join(
        (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines
    )


# -- Markdown and plain text ---------------------------------------------------------------


def test_markdown_title_is_the_first_h1_outside_code_fences(tmp_path: Path) -> None:
    path = write(tmp_path / "Brakes.MD", (
        "Intro line.\n\n```bash\n# not a title\n```\n\n## Section first\n\n"
        "# Brake pads #\n\nBody text.\n"
    ))
    document = only(path)
    assert document.title == "Brake pads"
    assert document.id == "Brakes.MD"
    assert document.document_type == "markdown"
    assert document.file_extension == ".md"
    assert document.source_path == str(path)
    assert document.text.startswith("Intro line.") and document.text.endswith("Body text.\n")


FRONT = "---\ntitle: Brake Guide\ntags: [brakes, pads]\nauthor: Jo\ndate: 2024-01-05\n---\n\n"


def test_front_matter_is_metadata_and_the_text_starts_after_it(tmp_path: Path) -> None:
    # it was indexed as the first chunk's words, and "author: Jo" above the closing "---"
    # read as a setext heading
    path = write(tmp_path / "guide.md", FRONT + "# Replacing pads\n\nPads wear out.\n")
    document = only(path)
    assert document.title == "Brake Guide"
    assert document.text == "# Replacing pads\n\nPads wear out.\n"
    assert document.metadata == {"tags": ["brakes", "pads"], "author": "Jo", "date": "2024-01-05"}


def test_a_front_matter_title_is_the_text_written_or_refused_never_dropped(
        tmp_path: Path) -> None:
    # YAML reads these as a number, true, base 60: the title was dropped for the file's name
    for written in ("1984", "3.10", "Yes", "1:20", "0x1F", "2024-01-05"):
        document = only(write(tmp_path / "book.md", f"---\ntitle: {written}\n---\nBody.\n"))
        assert (document.title, document.metadata) == (written, {})
    for given, kind in (("[Part, One]", "list"), ("{name: x}", "mapping")):
        path = write(tmp_path / "book.md", f"---\ntitle: {given}\n---\nBody.\n")
        with pytest.raises(LoaderError, match=rf"book.md: front matter 'title' is a {kind}, "
                                              r"not a line of text: give the title as one line"):
            load_file(path)
        _, skipped = split(iter_load(path))
        assert [s.path for s in skipped] == [str(path)]


@pytest.mark.parametrize("text", [
    "---\n\nJust a rule\n\n---\n\nText.\n",  # rules around prose: not a mapping
    "---\ntitle: [unclosed\n---\nText.\n",  # not YAML
    "---\ntitle: never closed\n\nText.\n",  # no closing line
    "---\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "---\nText.\n",  # a few lines standing for 10,000 values
    # values YAML reads as a date or number but cannot build: a ValueError (RecursionError
    # for the nesting) stopped the whole folder's ingest
    "---\ntitle: Guide\ndate: 2023-02-30\n---\nText.\n",
    "---\nupdated: 2024-01-01 25:00:00\n---\nText.\n",
    "---\nsize: !!int big\n---\nText.\n",
    "---\nsize: !!int\n---\nText.\n",
    "---\nwhen: !!timestamp soon\n---\nText.\n",
    "---\na: " + "[" * 5_000 + "]" * 5_000 + "\n---\nText.\n",
])
def test_a_block_that_is_not_front_matter_stays_text(tmp_path: Path, text: str) -> None:
    document = only(write(tmp_path / "doc.md", text))
    assert document.text == text and document.metadata == {}


# Pieces of YAML a hand-written or generated header holds, the odd ones included: tags
# whose constructor fails, anchors, merge keys, dates and numbers out of range.
_YAML_PIECES = st.sampled_from([
    "a", "b", ":", ": ", "- ", "\n", "  ", "[", "]", "{", "}", ",", "&x ", "*x", "!!int ",
    "!!float ", "!!timestamp ", "!!binary ", "!!set ", "!!omap ", "!!pairs ", "!!str ",
    "!!null ", "!!bool ", "!!map ", "!!seq ", "? ", "<<: ", "2023-02-30", "2024-01-01",
    "12:00:00", "T", "+99:00", "0x", "0o", "1e999", ".inf", ".nan", "~", "'", '"', "|",
    ">", "#", "...", "\t", "é", "\\u", "\u2028", "!!python/name:os.system ", "1_0", "0.5",
])


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@for_all(block=st.lists(_YAML_PIECES, max_size=25).map("".join))
def test_any_front_matter_is_metadata_or_stays_text(block: str) -> None:
    text = "---\n" + block + "\n---\nBody.\n"
    metadata, body = split_front_matter(text)
    json.dumps(metadata, allow_nan=False)  # what the catalog stores
    assert body == text if not metadata else text.endswith(body)


def test_front_matter_sets_columns_in_a_store(tmp_path: Path) -> None:
    from tests.helpers import open_test_store

    folder = tmp_path / "docs"
    folder.mkdir()
    write(folder / "guide.md", FRONT.replace("author: Jo", "author: Jo\ntruth_level: L1")
          + "Pads wear out.\n")
    write(folder / "empty.md", FRONT)
    store = open_test_store(tmp_path / "s")
    report = store.ingest_path(folder)
    assert report.added == ("guide.md",)
    assert "only front matter" in report.skipped[0].reason
    row = store.get_document("guide.md")
    assert (row["title"], row["author"], row["truth_level"], list(row["tags"])) == (
        "Brake Guide", "Jo", "L1", ["brakes", "pads"])
    assert row["content"] == "Pads wear out.\n" and row["custom"] == {"date": "2024-01-05"}
    hit = store.search("pads", answerability_threshold=None).hits[0]
    assert row["content"][hit.start_offset:hit.end_offset] == hit.content
    store.close()


def test_markdown_without_heading_and_text_files_use_the_file_stem(tmp_path: Path) -> None:
    assert only(write(tmp_path / "notes.markdown", "## only h2\n\nbody")).title == "notes"
    for name in ("readme.txt", "readme.text", "readme.rst"):
        document = only(write(tmp_path / name, "# looks like a heading\nplain"))
        assert (document.title, document.document_type) == ("readme", "text")
        assert document.file_extension == Path(name).suffix


def test_text_is_normalized_once_crlf_bom_nfc_controls(tmp_path: Path) -> None:
    raw = "\ufeffline one\r\nline two\rcafe\u0301 \x07bell\r\n"
    document = only(write(tmp_path / "a.txt", raw))
    assert document.text == "line one\nline two\ncafé bell\n"
    assert "\r" not in document.text and "\ufeff" not in document.text
    # The stored text is a fixed point: normalizing again changes nothing.
    assert enginelib.text.normalize_text(document.text) == document.text
    assert enginelib.text.normalize_text("\x00\ufeffText") == "Text"  # a BOM after a NUL stayed


def test_a_line_or_page_break_control_keeps_the_words_apart(tmp_path: Path) -> None:
    # Vertical tab (Word's Shift+Enter), form feed (pdftotext's page break) and the
    # separators x1C-x1F were removed with the other controls: "brake\vpads" was stored as
    # "brakepads", and a full-text search for "pads" or "brake" found nothing.
    raw = b"Check the brake\x0bpads monthly.\x0cReplace rotors.\x1cfluid\x1dhose\x1ecable\x1fend\n"
    (tmp_path / "word.txt").write_bytes(raw)
    document = only(tmp_path / "word.txt")
    assert document.text == "Check the brake\npads monthly.\nReplace rotors.\nfluid\nhose\ncable\nend\n"
    with enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(32)) as store:
        store.ingest_path(tmp_path / "word.txt")
        for word in ("brake", "pads", "monthly", "fluid", "hose", "cable", "end"):
            hits = store.search(word, strategy="fulltext", answerability_threshold=None).hits
            assert [h.document_id for h in hits] == ["word.txt"], word


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_text_laid_out_with_unicode_line_separators_has_its_headings(
        tmp_path: Path, separator: str) -> None:
    # Every line-wise reading knows "\n" alone: "# Brakes" took the rest of the text as its
    # title (the document's title too, and the one heading of every chunk), and "## Fluid"
    # after it was no heading at all.
    lines = ["# Brakes", "Pads wear out.", "## Fluid", "Fluid absorbs water."]
    path = tmp_path / "manual.md"
    path.write_text(separator.join(lines), encoding="utf-8")
    document = only(path)
    assert document.title == "Brakes"
    assert separator not in document.text
    with enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(32)) as store:
        store.ingest_path(path)
        hit = store.search("fluid absorbs", strategy="fulltext", answerability_threshold=None).hits[0]
        assert hit.heading_path == "Brakes > Fluid"
        stored = store.get_document("manual.md")["content"]
        citation = hit.citation
        assert stored[citation.quote_start:citation.quote_end] == citation.quote != ""


_NORMALIZED_PIECES = st.sampled_from([
    "\ufeff", "\r", "\n", "\x00", "\x01", "\x7f", "\x0b", "\x0c", "\x1c", "\x1f",
    "\x85", "\u2028", "\u2029", "a", "e", "\u0301", "\u0327", "\u0308",
    "\u1100", "\u1161", "\u11a8", "\u0344", "\u0958", "\u2126", "\u212b", "\u0f73", " ",
    "\u0345", "\u0313", "\u03b1", "\u05b8", "\u05b7",
])


@settings(max_examples=500, derandomize=True, deadline=None, database=None)
@for_all(raw=st.lists(_NORMALIZED_PIECES, max_size=12).map("".join))
def test_normalizing_twice_changes_nothing(raw: str) -> None:
    # "\x00\ufeff" kept a BOM the second pass removed
    once = enginelib.text.normalize_text(raw)
    assert enginelib.text.normalize_text(once) == once
    assert not once.startswith("\ufeff") and "\r" not in once and "\x00" not in once


def test_doc_id_argument_overrides_the_file_name(tmp_path: Path) -> None:
    assert only(write(tmp_path / "a.md", "x"), doc_id="custom/id").id == "custom/id"


# -- refusals: empty, binary, encoding, size, missing ----------------------------------------


@pytest.mark.parametrize("content", ["", "  \n\t\r\n  "])
def test_empty_or_whitespace_only_file_is_refused(tmp_path: Path, content: str) -> None:
    path = write(tmp_path / "empty.md", content)
    with pytest.raises(LoaderError, match="empty") as info:
        load_file(path)
    assert str(path) in str(info.value) and info.value.path == str(path)


def test_binary_files_are_refused(tmp_path: Path) -> None:
    nul = write(tmp_path / "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    with pytest.raises(LoaderError, match="binary file"):
        load_file(nul)
    controls = write(tmp_path / "controls.txt", bytes(range(1, 9)) * 50 + b"some text")
    with pytest.raises(LoaderError, match="binary file"):
        load_file(controls)
    torn = write(tmp_path / "torn16.txt", b"\xff\xfe" + "hello".encode("utf-16-le") + b"\x00\xd8")
    with pytest.raises(LoaderError, match="not valid UTF-16"):
        load_file(torn)


# Windows Notepad's "Unicode" is UTF-16; UTF-32's little-endian mark starts like UTF-16's
# (read as UTF-16, every character came with a NUL and the file was refused as "binary
# file"). The mark names the encoding: nothing is guessed. Python's utf-16/utf-32 codecs
# write the little-endian mark; the big-endian ones none, so it is added by hand.
@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32", "utf-32-be"])
def test_text_with_a_byte_order_mark_is_read(tmp_path: Path, codec: str) -> None:
    data = ("\ufeff" if codec.endswith("be") else "").encode(codec) + \
        "Café crème, freins usés".encode(codec)
    (doc,) = load_file(write(tmp_path / f"{codec}.md", data))
    assert doc.text == "Café crème, freins usés"


def test_a_utf32_file_cut_short_says_so(tmp_path: Path) -> None:
    cut = write(tmp_path / "cut.txt", "Café".encode("utf-32")[:-1])
    with pytest.raises(LoaderError, match=r"not valid UTF-32 at byte 16 .*UTF-32 byte-order"):
        load_file(cut)


def test_invalid_utf8_names_the_byte_offset(tmp_path: Path) -> None:
    path = write(tmp_path / "latin1.txt", "abc café".encode("latin-1"))
    with pytest.raises(LoaderError, match=r"not valid UTF-8 at byte 7") as info:
        load_file(path)
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    assert str(path) in str(info.value)
    # Latin-1 / Windows-1252 bytes (old French files): the message says how to convert them
    assert "iconv -f WINDOWS-1252 -t UTF-8" in str(info.value)


def test_html_is_read_in_the_charset_it_declares(tmp_path: Path) -> None:
    body = "<p>Crème brûlée: 5€</p>"
    for head, codec in (('<meta charset="windows-1252">', "cp1252"),
                        ('<meta charset=ISO-8859-1>', "cp1252"),  # read as browsers do
                        ('<meta http-equiv="Content-Type" content="text/html; '
                         'charset=iso-8859-15">', "iso-8859-15"),
                        ('<meta charset="utf-8">', "utf-8")):
        data = f"<html><head>{head}<title>Café</title></head><body>{body}</body></html>"
        (doc,) = load_file(write(tmp_path / f"{codec}.html", data.encode(codec)))
        assert doc.text == "Crème brûlée: 5€" and doc.title == "Café"
    # what it declares must hold, and be a charset at all
    wrong = write(tmp_path / "wrong.html", '<meta charset="utf-8"><p>café</p>'.encode("cp1252"))
    with pytest.raises(LoaderError, match="not valid UTF-8"):
        load_file(wrong)
    unknown = write(tmp_path / "unknown.html", b'<meta charset="klingon"><p>x</p>')
    with pytest.raises(LoaderError, match="declares charset 'klingon'"):
        load_file(unknown)
    # codecs Python has that are no charset: a bare LookupError (UnicodeError) from them
    # stopped the ingest of the whole folder
    for label in ("base64", "rot13", "zlib"):
        other = write(tmp_path / f"{label}.html", f'<meta charset="{label}"><p>x</p>'.encode())
        with pytest.raises(LoaderError, match=f"declares charset '{label}'"):
            load_file(other)
    for label in ("punycode", "undefined"):
        other = write(tmp_path / f"{label}.html", f'<meta charset="{label}"><p>x y</p>'.encode())
        with pytest.raises(LoaderError, match=f"not valid {label.upper()} \\(the charset"):
            load_file(other)


def test_an_html_page_declaring_utf16_in_ascii_is_read_as_utf8(tmp_path: Path) -> None:
    # The declaration, found by an ASCII prescan, cannot be true of the file (UTF-16 puts a
    # zero byte in every ASCII character): browsers read such a page as UTF-8. One of an even
    # number of bytes was stored as CJK garbage, searchable by nothing; one of an odd number
    # was refused as "not valid UTF-16", with advice to convert it from Windows-1252.
    even = write(tmp_path / "even.html", '<meta charset="utf-16"><p>Brake pads wears</p>')
    assert len(even.read_bytes()) % 2 == 0 and only(even).text == "Brake pads wears"
    for label in ("utf-16", "UTF-16LE", "utf-16be", "unicode", "ucs-2", "utf-32"):
        page = write(tmp_path / f"{label}.html",
                     f'<meta charset="{label}"><title>Café</title><p>Crème brûlée: 5€</p>')
        (doc,) = load_file(page)
        assert (doc.title, doc.text) == ("Café", "Crème brûlée: 5€")
    # a page that is UTF-16 says so with its byte-order mark, which wins over any meta
    marked = write(tmp_path / "marked.html",
                   '<meta charset="utf-16"><p>Crème brûlée</p>'.encode("utf-16"))
    assert only(marked).text == "Crème brûlée"
    # a declaration that can be true still holds the file to it
    latin = write(tmp_path / "latin.html", '<meta charset="utf-16"><p>caf\xe9</p>'.encode("cp1252"))
    with pytest.raises(LoaderError, match="not valid UTF-8"):
        load_file(latin)


def test_a_50_mb_text_file_loads_under_the_default_limit(tmp_path: Path) -> None:
    line = "The caliper bracket bolts are torqued to 120 Nm; check the pads for wear.\n"
    path = tmp_path / "big.txt"
    count = 50_000_000 // len(line) + 1
    path.write_text(line * count, encoding="utf-8")
    assert path.stat().st_size > 50_000_000
    assert DEFAULT_MAX_BYTES >= path.stat().st_size
    document = only(path)
    assert len(document.text) == len(line) * count


def test_a_file_over_max_bytes_is_refused_with_the_limit_named(tmp_path: Path) -> None:
    path = write(tmp_path / "big.md", "x" * 2048)
    with pytest.raises(LoaderError) as info:
        load_file(path, max_bytes=1024)
    message = str(info.value)
    assert str(path) in message and "2048 bytes" in message and "max_bytes=1024" in message
    assert only(path, max_bytes=2048).text == "x" * 2048


def test_nonexistent_path_raises_before_anything_loads(tmp_path: Path) -> None:
    good = write(tmp_path / "good.md", "fine")
    missing = tmp_path / "nope" / "missing.md"
    with pytest.raises(LoaderError, match="no such file") as info:
        iter_load([good, missing])  # raised by the call itself, not on first next()
    assert info.value.path == str(missing) and str(missing) in str(info.value)
    with pytest.raises(LoaderError, match="no such file"):
        load_file(missing)


def test_bad_arguments_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no paths"):
        iter_load([])
    with pytest.raises(InvalidInputError, match="max_bytes"):
        iter_load(tmp_path, max_bytes=0)
    with pytest.raises(LoaderError, match="is a folder"):
        load_file(tmp_path)


def test_unsupported_format(tmp_path: Path) -> None:
    path = write(tmp_path / "data.xyz", "text")
    with pytest.raises(UnsupportedFormatError, match=r"unsupported format \.xyz") as info:
        load_file(path)
    assert ".md" in str(info.value) and ".jsonl.gz" in str(info.value)  # says what works
    _, skipped = split(iter_load(path))
    assert [s.path for s in skipped] == [str(path)]
    assert "unsupported format .xyz" in skipped[0].reason


# -- HTML ----------------------------------------------------------------------------------


def test_html_keeps_visible_text_with_block_breaks(tmp_path: Path) -> None:
    path = write(tmp_path / "page.htm", """<!DOCTYPE html>
<html lang="fr-FR"><head><title>  Freins
  avant </title><style>p { color: red }</style>
<script>var secret = "do not index";</script></head>
<body><noscript>enable JS</noscript><!-- a comment -->
  <h1>Plaquettes</h1>
  <p>Remplacer   les <b>plaquettes</b>
     à 3&nbsp;mm.</p>
  <ul><li>avant</li><li>arrière</li></ul>
  <table><tr><td>couple</td><td>120 Nm</td></tr></table>
  ligne<br>suivante
  <pre>  code
    indenté</pre>
</body></html>""")
    document = only(path)
    assert document.title == "Freins avant"
    assert document.language == "fr-fr"
    assert document.document_type == "html" and document.file_extension == ".htm"
    assert document.text == (
        "Plaquettes\n\nRemplacer les plaquettes à 3\xa0mm.\n\navant\narrière\n\n"
        "couple 120 Nm\n\nligne\nsuivante\n\n  code\n    indenté"
    )
    for hidden in ("secret", "color", "enable JS", "a comment", "DOCTYPE"):
        assert hidden not in document.text


def test_html_without_title_uses_h1_then_file_stem(tmp_path: Path) -> None:
    assert only(write(tmp_path / "a.html", "<h1>Heading</h1><p>x</p>")).title == "Heading"
    assert only(write(tmp_path / "b.html", "<p>just text</p>")).title == "b"
    with pytest.raises(LoaderError, match="empty"):
        load_file(write(tmp_path / "c.html", "<html><script>x()</script></html>"))


def test_a_page_with_a_tag_or_comment_never_closed_loads_in_linear_time(tmp_path: Path) -> None:
    # html.parser (before CPython's gh-135462 fix) read what follows an unclosed construct as
    # text at the end, rescanning the rest of the page from each "<": 120 KB of "<a " took
    # 150 s, a megabyte hours, and the folder's ingest waited on it. As a browser reads it,
    # an unclosed tag at the end of the file is dropped and an unclosed comment runs to it.
    for tail, shown in (("<a", ""), ("<a <a href='x", ""), ("</a", ""), ("<!-- draft", ""),
                        ("<!--x> more <p>hidden</p>", ""), ("<", "\n\n<"), ("</", "\n\n</")):
        assert only(write(tmp_path / "t.html", f"<p>kept</p>{tail}")).text == "kept" + shown
    for repeated in ("<a ", "<a b='", "<!--x>"):
        page = "<title>T</title><p>kept</p>" + repeated * 20_000  # 30 s and more unfixed
        # what the parser is given ends where the unclosed run begins: nothing is left for
        # its quadratic end-of-page pass
        assert without_unclosed_tail(page) == "<title>T</title><p>kept</p>", repeated
        document = only(write(tmp_path / "slow.html", page))
        assert (document.title, document.text) == ("T", "kept")


# -- PDF -----------------------------------------------------------------------------------


def test_a_title_found_in_the_file_is_cut_to_the_limit_not_the_document_refused(
    tmp_path: Path,
) -> None:
    # A heading written as one long line, a page whose <title> or <h1> holds a paragraph, a
    # PDF with long metadata: the loader's own pick of title got the whole document refused
    # at ingest ("title is 5,999 characters; the maximum is 4,096")
    from enginelib.validation import MAX_TITLE_CHARS

    long = "brake pad wear " * 400
    corpus = tmp_path / "corpus"
    write(corpus / "heading.md", f"# {long}\n\nbody of the markdown")
    write(corpus / "title.html", f"<title>{long}</title><p>body of the page</p>")
    write(corpus / "h1.html", f"<h1>{long}</h1><p>body of the page</p>")
    write(corpus / "meta.pdf", pdf_bytes([["body of the pdf"]]).replace(
        b"/Root 1 0 R", b"/Root 1 0 R /Info << /Title (" + long.encode() + b") >>"))
    write(corpus / "chosen.md", f"---\ntitle: {long}\n---\nbody")
    store = enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(64))
    try:
        report = store.ingest_path(corpus)
        assert sorted(report.added) == ["h1.html", "heading.md", "meta.pdf", "title.html"]
        for document_id in report.added:
            title = store.get_document(document_id)["title"]
            assert len(title) <= MAX_TITLE_CHARS and title.endswith("wear\u2026")
            assert long.startswith(title[:-1])
        # a title given on purpose is the author's to shorten
        (refused,) = report.skipped
        assert "chosen.md" in refused.reason and "title is 5,999 characters" in refused.reason
    finally:
        store.close()


def test_pdf_text_per_page_with_page_offsets(tmp_path: Path) -> None:
    path = write(tmp_path / "manual.pdf", pdf_bytes([
        ["Hello page one", "second line (one)"], None, ["Page three text"],
    ]))
    document = only(path)
    assert document.document_type == "pdf" and document.title == "manual"
    assert document.text == "Hello page one\nsecond line (one)\n\nPage three text"
    # The blank page 2 has no text, so no entry: offsets on page 3 map to page 3.
    assert document.pages == ((1, 0), (3, len("Hello page one\nsecond line (one)\n\n")))
    start = document.pages[1][1]
    assert document.text[start:] == "Page three text"


def test_pdf_without_text_layer_asks_for_ocr(tmp_path: Path) -> None:
    path = blank_pdf(tmp_path / "scan.pdf")
    with pytest.raises(LoaderError, match=r"no text layer \(scanned PDF\?\): OCR it first") as info:
        load_file(path)
    assert str(path) in str(info.value)


def encrypted_pdf(path: Path, user_password: str, algorithm: str = "AES-256") -> Path:
    reader_bytes = pdf_bytes([["Brake pads must be replaced below 3 mm of lining."]])
    writer = PdfWriter(clone_from=io.BytesIO(reader_bytes))
    writer.encrypt(user_password=user_password, owner_password="owner-secret",
                   algorithm=algorithm)
    with open(path, "wb") as handle:
        writer.write(handle)
    return path


@pytest.mark.parametrize("algorithm", ["AES-256", "AES-128", "RC4-128"])
def test_a_pdf_protected_by_an_owner_password_only_loads(tmp_path: Path, algorithm: str) -> None:
    # Most "protected" PDFs: every viewer opens them; AES needs the cryptography package.
    path = encrypted_pdf(tmp_path / "protected.pdf", user_password="", algorithm=algorithm)
    (document,) = load_file(path)
    assert "Brake pads must be replaced below 3 mm" in document.text


def test_a_pdf_that_needs_a_password_says_so(tmp_path: Path) -> None:
    path = encrypted_pdf(tmp_path / "locked.pdf", user_password="user-secret")
    with pytest.raises(LoaderError, match="needs a password to open: decrypt it first") as info:
        load_file(path)
    assert str(path) in str(info.value)


_WITHOUT_CRYPTOGRAPHY = r"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name == "cryptography" or name.startswith("cryptography."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Refuse())
from enginelib.errors import LoaderError
from enginelib.loaders import load_file
try:
    load_file(sys.argv[1])
except LoaderError as exc:
    print(exc)
"""


def test_an_aes_pdf_without_cryptography_names_the_package(tmp_path: Path) -> None:
    path = encrypted_pdf(tmp_path / "protected.pdf", user_password="")
    result = subprocess.run([sys.executable, "-c", _WITHOUT_CRYPTOGRAPHY, str(path)],
                            capture_output=True, text=True, timeout=120, check=True)
    assert "AES-encrypted PDF" in result.stdout
    assert "pip install 'enginelib[crypto]'" in result.stdout


def test_corrupt_pdf_is_a_loader_error_not_a_pypdf_traceback(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.pdf", b"%PDF-1.4\nthis is not really a pdf\n")
    with pytest.raises(LoaderError, match="cannot read PDF") as info:
        load_file(path)
    assert str(path) in str(info.value)
    assert info.value.__cause__ is not None  # the pypdf error is chained, not lost


def test_pypdf_complaints_do_not_reach_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # with no logging set up, Python printed them ("EOF marker not found") beside our reason
    path = write(tmp_path / "broken.pdf", b"%PDF-1.4\n1 0 obj garbage")
    with caplog.at_level(logging.DEBUG), pytest.raises(LoaderError, match="cannot read PDF"):
        load_file(path)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == []
    assert logging.getLogger("pypdf").level == logging.NOTSET  # the application's setting


def test_pdf_with_broken_xref_is_recovered(tmp_path: Path) -> None:
    # A wrong startxref makes pypdf complain and rebuild the table; under
    # filterwarnings=error any warning escaping the loader would fail this test.
    data = pdf_bytes([["Recovered text"]])
    head, _, _ = data.rpartition(b"startxref\n")
    path = write(tmp_path / "damaged.pdf", head + b"startxref\n99999\n%%EOF\n")
    assert only(path).text == "Recovered text"


def test_a_pdf_whose_text_passes_max_bytes_is_refused(tmp_path: Path) -> None:
    # Its pages share one compressed content stream: a 6 KB file gave 10 MB of text in 24 s
    # (and a few KB more, gigabytes), whatever max_bytes said.
    line = b"BT /F1 12 Tf 72 720 Td (brake pads wear out quickly) Tj ET\n"
    pages = 12
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
            b" ".join(b"%d 0 R" % (5 + i) for i in range(pages)), pages),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        4: flate_stream(line * 1_000),
        **{5 + i: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
                  b"<< /F1 3 0 R >> >> /Contents 4 0 R >>" for i in range(pages)},
    }
    path = write(tmp_path / "shared.pdf", pdf_from_objects(objects))
    assert path.stat().st_size < 8_000
    with pytest.raises(LoaderError, match=r"its text passes 100.0 KiB \(max_bytes=102400\) "
                                          r"by page 4 of 12"):
        load_file(path, max_bytes=100 * 1024)
    assert len(only(path).text) > 300_000  # under the default limit it loads


def _one_page_pdf(content: bytes, forms: dict[int, bytes] | None = None) -> bytes:
    xobjects = b" ".join(b"/Fm%d %d 0 R" % (n, n) for n in forms or {})
    return pdf_from_objects({
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
           b"<< /F1 5 0 R >> /XObject << %s >> >> /Contents 4 0 R >>" % xobjects,
        4: flate_stream(content),
        5: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        **(forms or {}),
    })


def test_a_pdf_whose_page_expands_a_thousand_times_is_refused_before_it_is_parsed(
        tmp_path: Path) -> None:
    # 8 MB of page operators in a file of a few KB: pypdf spent 40 s and 350 MB on the 10 MB
    # version, within every byte limit, before the text reached max_bytes (it never did).
    line = b"BT /F1 12 Tf 72 700 Td (Hello brake pads world) Tj ET\n"
    path = write(tmp_path / "bomb.pdf", _one_page_pdf(line * (8_000_000 // len(line))))
    assert path.stat().st_size < 40_000
    with pytest.raises(LoaderError, match=r"expand past [0-9.]+ KiB by page 1 of 1 .*pdftotext"):
        load_file(path)


def test_a_form_drawn_over_and_over_stops_as_its_text_passes_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each draw is 12 bytes of page content and 225 characters of text: the page's content
    # stays small while its text grows without bound.
    monkeypatch.setattr(pdf_loader, "MIN_BUDGET", 256 * 1024)
    form = flate_stream(b"BT /F1 12 Tf 72 720 Td (" + b"brake pads wear out quickly " * 8
                        + b") Tj ET", b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                        b"/Resources << /Font << /F1 5 0 R >> >> ")
    few = write(tmp_path / "few.pdf", _one_page_pdf(b"q /Fm6 Do Q\n" * 500, {6: form}))
    assert only(few).text.count("brake pads") == 500 * 8
    many = write(tmp_path / "many.pdf", _one_page_pdf(b"q /Fm6 Do Q\n" * 20_000, {6: form}))
    with pytest.raises(LoaderError, match=r"expand past 128.0 KiB by page 1 of 1"):
        load_file(many)


def test_a_small_pdf_expands_by_its_pages_not_to_two_megabytes(tmp_path: Path) -> None:
    # A one-page file of 2 KB gave up to 2 MB of text (every small file had that floor):
    # 15 s of extraction and a thousand chunks from one page. The floor is per page now.
    line = b"BT /F1 6 Tf 20 780 Td (brake pads wear out quickly under heat and load) Tj ET\n"
    dense = write(tmp_path / "dense.pdf", _one_page_pdf(line * 400))  # a 6-point table: 32 KB
    assert len(only(dense).text) > 15_000
    bomb = write(tmp_path / "bomb.pdf", _one_page_pdf(line * 4_000))  # 320 KB of operators
    assert bomb.stat().st_size < 3_000
    with pytest.raises(LoaderError) as info:
        load_file(bomb)
    assert str(info.value) == (
        f"{bomb}: a PDF of {bomb.stat().st_size / 1024:.1f} KiB whose pages expand past 128.0 "
        "KiB by page 1 of 1 (the bound is 20 times the file's size, or 128.0 KiB a page up to "
        "2.0 MiB for a small file: a compression bomb, or one stream drawn over and over); "
        "nothing of it is loaded. Extract its text with another tool (e.g. `pdftotext`) and "
        "load the .txt file")
    documents, skipped = split(iter_load(tmp_path))  # in a folder: skipped with that reason
    assert [d.id for d in documents] == ["dense.pdf"] and skipped[0].reason == str(info.value)


def test_the_pdf_expansion_bound() -> None:
    budget = pdf_loader.expansion_budget
    assert budget(2_000, 1) == 128 * 1024  # a page's room, not 2 MB
    assert budget(2_000, 8) == 8 * 128 * 1024
    assert budget(2_000, 500) == 2 * 1024 * 1024  # pages cost ~100 bytes: the room is capped
    assert budget(1_000_000, 3) == 20_000_000  # past that, the file's own size counts


# -- JSONL ---------------------------------------------------------------------------------


def test_beir_jsonl_lines_load_as_they_are(tmp_path: Path) -> None:
    path = write(tmp_path / "corpus.jsonl", jsonl(BEIR_LINES))  # type: ignore[arg-type]
    documents = load_file(path)
    assert [d.id for d in documents] == ["doc1", "doc2", "3"]
    first, second, third = documents
    assert first.title == "Brake pads" and first.text == "Replace the pads at 3 mm."
    assert first.source_url == "https://example.org/pads"
    assert first.metadata == {"url": "https://example.org/pads", "truth_level": "L1"}
    assert second.title is None and second.metadata == {}
    assert third.metadata == {"domain": "brakes", "tags": ["rotor"]}
    assert {d.document_type for d in documents} == {"jsonl"}
    assert {d.source_path for d in documents} == {str(path)}


def test_jsonl_content_field_and_ids_derived_from_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.ndjson", jsonl([
        {"content": "first note", "author": "ana"}, "", {"id": "n2", "text": "second"},
        {"content": "third"},
    ]))
    documents = load_file(path)
    assert [d.id for d in documents] == ["notes.ndjson#1", "n2", "notes.ndjson#4"]
    assert documents[0].text == "first note" and documents[0].metadata == {"author": "ana"}
    assert documents[0].file_extension == ".ndjson"


def test_gzipped_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(jsonl(BEIR_LINES))  # type: ignore[arg-type]
    documents = load_file(path)
    assert [d.id for d in documents] == ["doc1", "doc2", "3"]
    assert {d.file_extension for d in documents} == {".jsonl.gz"}
    # max_bytes bounds each document line, not the (larger) file.
    longest = max(len(json.dumps(line)) for line in BEIR_LINES)
    assert path.stat().st_size > longest
    assert len(load_file(path, max_bytes=longest)) == 3


def test_a_utf16_jsonl_file_says_how_to_convert_it_not_that_it_is_binary(tmp_path: Path) -> None:
    # Windows PowerShell 5 writes UTF-16 with ">": refused as "binary file (NUL bytes)"
    lines = jsonl([{"id": "a", "text": "brake pads"}, {"id": "b", "text": "\u30d6\u30ec\u30ad"}])
    for name, data, encoding in (
            ("ps.jsonl", lines.encode("utf-16"), "UTF-16"),
            ("be.ndjson", b"\xfe\xff" + lines.encode("utf-16-be"), "UTF-16"),
            ("wide.jsonl", lines.encode("utf-32"), "UTF-32"),
            ("ps.jsonl.gz", gzip.compress(lines.encode("utf-16")), "UTF-16")):
        path = write(tmp_path / name, data)
        says = (rf"{name}: {encoding} text \(it starts with a {encoding} byte-order mark\), and "
                rf"JSONL is read as UTF-8: save it as UTF-8 \(`iconv -f {encoding} -t UTF-8`")
        with pytest.raises(LoaderError, match=says):
            load_file(path)
        documents, skipped = split(iter_load(path))
        assert documents == [] and len(skipped) == 1 and "binary" not in skipped[0].reason
    assert [d.id for d in load_file(write(tmp_path / "u8.jsonl", "\ufeff" + lines))] == ["a", "b"]


def test_malformed_jsonl_lines_are_skipped_with_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path / "mixed.jsonl", jsonl([
        {"_id": "a", "text": "good one"},
        '{"_id": "b", "text": ',
        '["not", "an", "object"]',
        {"_id": "c", "title": "no text here"},
        {"_id": "d", "text": 42},
        {"_id": "e", "text": "   "},
        {"_id": "f", "text": "fine", "metadata": "not a dict"},
        '{"_id": "h", "text": "fine", "n": ' + "9" * 5_000 + "}",  # stopped the whole ingest
        {"_id": "g", "text": "good two"},
    ]))
    documents, skipped = split(iter_load(path))
    assert [d.id for d in documents] == ["a", "g"]
    reasons = [s.reason for s in skipped]
    assert all(s.path == str(path) for s in skipped)
    assert reasons == [
        f"{path} line 2: invalid JSON: Expecting value (column 22)",
        f"{path} line 3: expected a JSON object, got list",
        f"{path} line 4: no 'text' (or 'content') field",
        f"{path} line 5: 'text' must be a string, got int",
        f"{path} line 6: 'text' is empty: no text to index",
        f"{path} line 7: 'metadata' must be an object, got str",
        f"{path} line 8: a number has more than 4,300 digits, more than Python reads: write "
        "it as a string",
    ]
    with pytest.raises(LoaderError, match="line 2: invalid JSON"):
        load_file(path)  # strict: the first bad line stops it


def test_jsonl_line_over_max_bytes_is_skipped_and_the_file_goes_on(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", jsonl([
        {"id": "small", "text": "ok"}, {"id": "huge", "text": "x" * 5000},
        {"id": "after", "text": "still read"},
    ]))
    documents, skipped = split(iter_load(path, max_bytes=1000))
    assert [d.id for d in documents] == ["small", "after"]
    assert len(skipped) == 1
    assert "line 2" in skipped[0].reason and "max_bytes=1000" in skipped[0].reason


def test_jsonl_streams_line_by_line(tmp_path: Path) -> None:
    path = write(tmp_path / "big.jsonl", jsonl(
        [{"id": f"d{i}", "text": f"document number {i}"} for i in range(5000)]
    ))
    items = iter_load(path)
    first = next(items)
    assert isinstance(first, LoadedDocument) and first.id == "d0"
    # Written after loading began: only a loader that reads as it goes can see it.
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "late", "text": "appended"}) + "\n")
    rest = [item.id for item in items if isinstance(item, LoadedDocument)]
    assert len(rest) == 5000 and rest[-1] == "late"


def test_stream_file_reads_as_it_goes_and_raises_at_a_bad_line_when_it_reaches_it(
    tmp_path: Path,
) -> None:
    """A queued job ingests its file through stream_file: a JSONL file is never held whole."""
    good = [{"id": f"d{i}", "text": f"document number {i}"} for i in range(300)]
    path = write(tmp_path / "big.jsonl", jsonl([*good, '{"id": "bad", "text": ', good[0]]))
    documents = stream_file(path)  # line 301 is not read yet: no error
    assert next(documents).id == "d0"
    assert [d.id for d in islice(documents, 299)] == [f"d{i}" for i in range(1, 300)]
    with pytest.raises(LoaderError, match=f"^{re.escape(str(path))} line 301: invalid JSON"):
        next(documents)
    with pytest.raises(LoaderError, match="line 301"):
        load_file(path)  # the whole file at once: the same error before any document

    appended = write(tmp_path / "grows.jsonl", jsonl(good[:2]))
    documents = stream_file(appended)
    # Written after loading began: only a loader that reads as it goes can see it.
    with appended.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "late", "text": "appended"}) + "\n")
    assert [d.id for d in documents] == ["d0", "d1", "late"]


def test_stream_file_refuses_what_load_file_refuses_before_returning(tmp_path: Path) -> None:
    for path, words in ((tmp_path / "gone.md", "no such file"),
                        (write(tmp_path / "blank.jsonl", "\n\n"), "empty: no JSON lines"),
                        (write(tmp_path / "first.jsonl", "[1]\n"), "line 1: expected a JSON")):
        with pytest.raises(LoaderError, match=words):
            stream_file(path)  # raised by the call itself, not at the first next()


def test_truncated_gzip_keeps_the_lines_before_the_damage(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl.gz"
    lines = [{"id": f"d{i}", "text": f"text {i} " * 20} for i in range(400)]
    data = gzip.compress(jsonl(lines).encode())  # type: ignore[arg-type]
    path.write_bytes(data[: len(data) // 2])
    documents, skipped = split(iter_load(path))
    assert 0 < len(documents) < 400
    assert [d.id for d in documents] == [f"d{i}" for i in range(len(documents))]
    assert len(skipped) == 1 and str(path) in skipped[0].reason
    with pytest.raises(LoaderError, match="cannot read"):
        load_file(path)


def test_not_gzip_at_all(tmp_path: Path) -> None:
    path = write(tmp_path / "fake.jsonl.gz", b"plain bytes, not gzip")
    with pytest.raises(LoaderError) as info:
        load_file(path)
    assert str(path) in str(info.value)


# -- folders -------------------------------------------------------------------------------


def make_tree(root: Path) -> None:
    write(root / "guides" / "brakes.md", "# Brakes\n\npads")
    write(root / "guides" / "tyres.txt", "tyres")
    write(root / "guides" / "drafts" / "wip.md", "draft")
    write(root / "a.html", "<p>html</p>")
    write(root / "Z.txt", "upper case sorts first")
    write(root / "image.png", b"\x89PNG\x00")
    write(root / ".hidden.md", "hidden")
    write(root / ".git" / "config.txt", "git")
    write(root / "guides" / ".cache" / "x.md", "cache")


def test_walk_is_sorted_recursive_and_skips_hidden(tmp_path: Path) -> None:
    make_tree(tmp_path)
    documents, skipped = split(iter_load(tmp_path))
    assert [d.id for d in documents] == [
        "Z.txt", "a.html", "guides/brakes.md", "guides/drafts/wip.md", "guides/tyres.txt",
    ]
    assert [d.source_path for d in documents][2] == str(tmp_path / "guides" / "brakes.md")
    assert [(s.path, s.reason.split(": ", 1)[1].split(";")[0]) for s in skipped] == [
        (str(tmp_path / "image.png"), "unsupported format .png"),
    ]


def _nested(root: Path, depth: int) -> Path:
    """``root/d/d/.../d`` (``depth`` levels), made a level at a time from the one above."""
    folder = root
    for _ in range(depth):
        folder = folder / "d"
        folder.mkdir()
    return folder


def _remove_nested(root: Path) -> None:
    # shutil.rmtree (and pytest's cleanup of old tmp folders) recurses per level too
    chain = [root]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain[1:]):
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        folder.rmdir()


def test_a_tree_deeper_than_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    # The walker recursed a generator per folder: a tree about a thousand folders deep raised
    # RecursionError out of the ingest (and out of `ingest --queue`'s walk), and no file of
    # the folder was ingested
    from enginelib.loaders.walk import selected

    corpus = tmp_path / "corpus"
    write(corpus / "a.md", "# A\n\nbrake pads first")
    write(_nested(corpus, sys.getrecursionlimit() + 100) / "deep.md", "deep brake")
    write(corpus / "z.md", "# Z\n\nrotor last")
    try:
        documents, skipped = split(iter_load(corpus))
        assert [d.id.rsplit("/", 1)[-1] for d in documents] == ["a.md", "deep.md", "z.md"]
        assert documents[1].text == "deep brake" and skipped == []
        queued = [found[1].rsplit("/", 1)[-1] for found in selected(corpus, (), ())
                  if not isinstance(found, SkippedInput)]
        assert queued == ["a.md", "deep.md", "z.md"]
        store = enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(64))
        try:
            report = store.ingest_path(corpus)
            assert report.added == ("a.md", "z.md")
            (refused,) = report.skipped  # its id, the path under the folder, is too long
            assert "deep.md" in refused.reason and "the maximum is 1,024" in refused.reason
            assert [hit.document_id for hit in store.search("rotor last", limit=1)] == ["z.md"]
        finally:
            store.close()
    finally:
        _remove_nested(corpus)


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    make_tree(tmp_path)

    def ids(**kwargs: object) -> list[str]:
        documents, _ = split(iter_load(tmp_path, **kwargs))  # type: ignore[arg-type]
        return [d.id for d in documents]

    assert ids(include=["*.md"]) == ["guides/brakes.md", "guides/drafts/wip.md"]
    assert ids(include=["guides/*"], exclude=["*.txt"]) == [
        "guides/brakes.md", "guides/drafts/wip.md",
    ]
    assert ids(include=["**/*.txt"]) == ["Z.txt", "guides/tyres.txt"]
    assert ids(exclude=["drafts"]) == ["Z.txt", "a.html", "guides/brakes.md", "guides/tyres.txt"]
    assert ids(exclude=["guides/drafts/*", "a.*", "Z.txt"]) == [
        "guides/brakes.md", "guides/tyres.txt",
    ]
    _, skipped = split(iter_load(tmp_path, include=["*.md"]))
    assert skipped == []  # files left out by the include glob are not reported





def test_a_file_whose_name_is_not_utf8_is_skipped_with_advice_to_rename_it(
        tmp_path: Path) -> None:
    from tests.helpers import open_test_store

    # skipped as "document id contains a lone surrogate ... (decode the source as UTF-8)"
    folder = tmp_path / "docs"
    write(folder / "fine.md", "# Fine\n\nkept")
    for name in (b"caf\xe9.md", b"d\xe9/inner.md"):
        raw = os.path.join(os.fsencode(folder), name)
        os.makedirs(os.path.dirname(raw), exist_ok=True)
        with open(raw, "wb") as handle:
            handle.write(b"# Bad name\n\ntext")
    with open_test_store(tmp_path / "s") as store:
        report = store.ingest_path(folder, prune=True)
        assert report.added == ("fine.md",) and report.pruned == ()
        assert [(s.path, s.reason) for s in report.skipped] == [
            (path, f"{path}: its path is not valid UTF-8, so it can be no document's id or "
                   "source: rename it (or leave it out with --exclude)")
            for path in (os.fsdecode(os.path.join(os.fsencode(folder), name))
                         for name in (b"caf\xe9.md", b"d\xe9/inner.md"))]


def test_a_path_named_with_a_name_that_is_not_utf8_says_to_rename_it(tmp_path: Path) -> None:
    from tests.helpers import open_test_store

    # the whole call was refused with "path contains a lone surrogate '\\udce9' at position 3:
    # it is not valid Unicode text (decode the source as UTF-8)", advice for text, not names
    raw = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.makedirs(raw)
    with open(os.path.join(raw, b"notes.md"), "wb") as handle:
        handle.write(b"# Notes\n\ntext")
    with open_test_store(tmp_path / "s") as store:
        for given in (os.fsdecode(raw), os.fsdecode(os.path.join(raw, b"notes.md"))):
            says = rf"path {re.escape(repr(given))} is not valid UTF-8 \(a name written in " \
                   r"another encoding, such as Latin-1\): rename it$"
            for call in (store.ingest_path, store.enqueue_paths):
                with pytest.raises(InvalidInputError, match=says):
                    call(given)


def test_a_pattern_ending_in_a_slash_names_a_folder(tmp_path: Path) -> None:
    # "drafts/" matched nothing (no path or file name ends in "/"): --exclude drafts/
    # ingested the drafts, --include guides/ nothing
    make_tree(tmp_path)
    write(tmp_path / "drafts.md", "a file, not the folder")

    def ids(**kwargs: object) -> list[str]:
        documents, _ = split(iter_load(tmp_path, **kwargs))  # type: ignore[arg-type]
        return [d.id for d in documents]

    everything_but_drafts = ["Z.txt", "a.html", "drafts.md", "guides/brakes.md", "guides/tyres.txt"]
    for pattern in ("drafts/", "guides/drafts/", "**/drafts/", "dr*/"):
        assert ids(exclude=[pattern]) == everything_but_drafts
    assert ids(exclude=["drafts/x/"]) == ids()  # a folder that is not there excludes nothing
    assert ids(include=["guides/"]) == ["guides/brakes.md", "guides/drafts/wip.md", "guides/tyres.txt"]
    assert ids(include=["drafts/"]) == ["guides/drafts/wip.md"]

@pytest.mark.parametrize("given", ["exclude", "include"])
def test_a_pattern_that_can_never_match_is_refused(tmp_path: Path, given: str) -> None:
    from tests.helpers import open_test_store

    # --exclude /abs/docs/guides/drafts matched nothing (patterns see "guides/drafts/wip.md"),
    # so the drafts were ingested without a word; --include ./*.md ingested nothing
    make_tree(tmp_path)
    drafts = tmp_path / "guides" / "drafts"
    for pattern in (str(drafts), f"{drafts}/*", "./*.md", "../docs/*.md", ""):
        with pytest.raises(InvalidInputError, match="can never match|matches no file") as bad:
            list(iter_load(tmp_path, **{given: [pattern]}))  # type: ignore[arg-type]
        assert repr(pattern) in str(bad.value) or not pattern
        with open_test_store(tmp_path / "store") as store:
            with pytest.raises(InvalidInputError, match="can never match|matches no file"):
                store.ingest_path(tmp_path, **{given: [pattern]})  # type: ignore[arg-type]
            assert store.list_documents() == []
    # the same folder written relative to the one given works, "[" and "**" as fnmatch reads them
    documents, _ = split(iter_load(tmp_path, exclude=["guides/drafts", "[", "**/*.txt"]))
    assert [d.id for d in documents] == ["a.html", "guides/brakes.md"]

def test_files_given_directly_use_their_name_and_bad_ones_are_skipped(tmp_path: Path) -> None:
    make_tree(tmp_path)
    bad = write(tmp_path / "bad.txt", b"ok \xff broken")
    hidden = tmp_path / ".hidden.md"
    documents, skipped = split(iter_load([
        tmp_path / "guides" / "brakes.md", bad, hidden, tmp_path / "guides",
    ], exclude=["*.txt"]))
    assert [d.id for d in documents] == ["brakes.md", ".hidden.md", "brakes.md", "drafts/wip.md"]
    assert len(skipped) == 1 and skipped[0].path == str(bad)
    assert "not valid UTF-8 at byte 3" in skipped[0].reason


_UNREADABLE_CHILD = """
import json, sys
from enginelib.loaders import iter_load
from enginelib.types import LoadedDocument
out = {"documents": [], "skipped": []}
for item in iter_load(sys.argv[1]):
    if isinstance(item, LoadedDocument):
        out["documents"].append(item.id)
    else:
        out["skipped"].append([item.path, item.reason])
print(json.dumps(out))
"""


def test_unreadable_file_in_a_folder_is_skipped(tmp_path: Path) -> None:
    # A real permission error: root (as in CI) reads a chmod 0 file anyway, so there the walk
    # runs in a child that has given up the capabilities that override file permissions.
    locked = write(tmp_path / "locked.md", "secret")
    write(tmp_path / "open.md", "public")
    locked.chmod(0)
    command = [sys.executable, "-c", _UNREADABLE_CHILD, str(tmp_path)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "as root this test needs util-linux's setpriv to drop CAP_DAC_OVERRIDE"
        command = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *command]
    root = Path(__file__).resolve().parents[1]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=True, cwd=root,
                                env={**os.environ, "PYTHONPATH": str(root)})
    finally:
        locked.chmod(0o644)
    out = json.loads(result.stdout)
    assert out["documents"] == ["open.md"]
    assert out["skipped"][0][0] == str(locked) and "cannot read" in out["skipped"][0][1]


def test_read_errors_become_skips_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Works as root too (where chmod 0 does not stop reads): the OS error is simulated.
    locked = write(tmp_path / "locked.md", "secret")
    write(tmp_path / "open.md", "public")
    real_open = os.open

    def guarded_open(path: str | Path, *args: int, **kwargs: int) -> int:
        if Path(path).name == "locked.md":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)  # files are opened by os.open (input_files)
    documents, skipped = split(iter_load(tmp_path))
    assert [d.id for d in documents] == ["open.md"]
    assert [s.reason for s in skipped] == [f"{locked}: cannot read: Permission denied"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_special_files_are_skipped_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")  # reading it would block forever
    write(tmp_path / "real.md", "text")
    documents, skipped = split(iter_load(tmp_path))
    assert [d.id for d in documents] == ["real.md"]
    assert [s.path for s in skipped] == [str(tmp_path / "pipe.md")]
    assert skipped[0].reason == f"{tmp_path / 'pipe.md'}: a named pipe (FIFO), not a regular file: left unread"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_or_device_named_directly_is_refused_unopened(tmp_path: Path) -> None:
    # Named directly (`enginelib ingest pipe.md`, ingest_path("/dev/zero")) it was opened
    # and read: a FIFO waited for a writer forever, a device read until memory ran out.
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    link = tmp_path / "link.jsonl"
    link.symlink_to(fifo)
    real = write(tmp_path / "real.md", "text")
    for path, kind in ((fifo, "a named pipe (FIFO)"), (link, "a named pipe (FIFO)"),
                       (Path("/dev/zero"), "a character device")):
        with pytest.raises(LoaderError, match=rf"{path}: {re.escape(kind)}, not a file or folder"):
            iter_load([real, path])  # refused as a whole, before anything is read
        with pytest.raises(LoaderError, match=rf"{re.escape(kind)}, not a regular file"):
            load_file(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_swapped_in_after_the_check_is_refused_without_waiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The walker looks at each path before it loads it; a pipe put in its place in between
    # is refused by the open itself (non-blocking, then checked on the descriptor).
    from enginelib import input_files

    fifo = tmp_path / "notes.jsonl"
    os.mkfifo(fifo)
    monkeypatch.setattr(input_files, "check_regular", lambda path: None)  # the race lost
    for loader in (loaders.LOADERS[".jsonl"], loaders.LOADERS[".md"]):
        with pytest.raises(LoaderError, match=r"cannot read: a named pipe \(FIFO\)"):
            list(loader(fifo, "notes", DEFAULT_MAX_BYTES))


def test_a_dangling_symlink_says_where_it_points(tmp_path: Path) -> None:
    (tmp_path / "gone.md").symlink_to(tmp_path / "moved-away.md")
    write(tmp_path / "real.md", "text")
    documents, skipped = split(iter_load(tmp_path))
    assert [d.id for d in documents] == ["real.md"]
    assert "a symbolic link to" in skipped[0].reason and "moved-away.md" in skipped[0].reason


def test_links_that_lead_nowhere_are_named_as_links(tmp_path: Path) -> None:
    # Named directly they were "no such file or folder" beside a link `ls` shows; a loop
    # in a folder read as "a symbolic link to 'l2', which does not exist".
    folder = tmp_path / "docs"
    write(folder / "real.md", "text")
    (folder / "l1").symlink_to("l2")
    (folder / "l2").symlink_to("l1")
    (tmp_path / "gone").symlink_to(tmp_path / "moved-away")
    documents, skipped = split(iter_load(folder))
    assert [d.id for d in documents] == ["real.md"]
    assert [s.reason for s in skipped] == [f"{folder / 'l1'}: a loop of symbolic links",
                                           f"{folder / 'l2'}: a loop of symbolic links"]
    with pytest.raises(LoaderError, match=r"l1: a loop of symbolic links$"):
        iter_load(folder / "l1")
    with pytest.raises(LoaderError, match=r"gone: a symbolic link to '.*moved-away', which does "
                                          r"not exist$"):
        iter_load(tmp_path / "gone")
    with pytest.raises(LoaderError, match=r"nothing-here: no such file or folder$"):
        iter_load(tmp_path / "nothing-here")


def test_a_file_removed_while_the_folder_is_read_says_so(tmp_path: Path) -> None:
    # It was "not a regular file": the user looked for a pipe or device that was never there
    write(tmp_path / "a.md", "first")
    write(tmp_path / "b.md", "second")
    items = iter_load(tmp_path)
    assert next(items).id == "a.md"  # the folder is listed: b.md is on the way
    (tmp_path / "b.md").unlink()
    skipped = list(items)
    assert [s.path for s in skipped] == [str(tmp_path / "b.md")]
    reason = skipped[0].reason  # type: ignore[union-attr]
    assert "no longer exists" in reason and "not a regular file" not in reason


def test_iter_load_is_lazy(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "first")
    items = iter_load(tmp_path)
    write(tmp_path / "b.md", "added after the call")
    assert [item.id for item in islice(items, 5)] == ["a.md", "b.md"]  # type: ignore[union-attr]


def test_public_names() -> None:
    assert set(loaders.__all__) == {
        "DEFAULT_MAX_BYTES", "LOADERS", "SUPPORTED_EXTENSIONS", "LoadItem", "Loader",
        "extension_of", "iter_load", "load_file", "loader_for", "stream_file",
    }
    assert DEFAULT_MAX_BYTES == 64 * 1024 * 1024


# -- through the store ---------------------------------------------------------------------


def test_ingest_path_end_to_end(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    guide = "\n\n".join(
        f"## Step {i}\n\nCheck the brake pads and rotors; torque the caliper bolts to "
        f"{100 + i} Nm and inspect the fluid level in reservoir {i}." for i in range(60)
    )
    write(corpus / "guides" / "brakes.md", "# Brake service\r\n\r\n" + guide.replace("\n", "\r\n"))
    write(corpus / "page.html", "<title>Pads</title><p>Front pads 1K0615301M.</p>")
    write(corpus / "manual.pdf", pdf_bytes([["Torque table page one"], ["Rotor wear page two"]]))
    blank_pdf(corpus / "scan.pdf")
    write(corpus / "empty.txt", "\n\n")
    write(corpus / "latin1.txt", "résumé".encode("latin-1"))
    write(corpus / "photo.jpg", b"\xff\xd8\xff\xe0")
    write(corpus / "beir.jsonl", jsonl([*BEIR_LINES, "{broken"]))  # type: ignore[list-item]

    store = enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(64))
    try:
        report = store.ingest_path(corpus, truth_level="L2")
        assert sorted(report.added) == sorted([
            "guides/brakes.md", "page.html", "manual.pdf", "doc1", "doc2", "3",
        ])
        reasons = {Path(s.path).name: s.reason for s in report.skipped}
        assert set(reasons) == {"scan.pdf", "empty.txt", "latin1.txt", "photo.jpg", "beir.jsonl"}
        for name, reason in reasons.items():
            assert name in reason
        assert "no text layer" in reasons["scan.pdf"]
        assert "empty" in reasons["empty.txt"]
        assert "not valid UTF-8" in reasons["latin1.txt"]
        assert "unsupported format .jpg" in reasons["photo.jpg"]
        assert "line 4: invalid JSON" in reasons["beir.jsonl"]

        shown = store.show("guides/brakes.md")
        document = shown["document"]
        assert document["title"] == "Brake service"
        assert document["document_type"] == "markdown" and document["file_extension"] == ".md"
        text = document["content"]
        assert "\r" not in text
        chunks = shown["chunks"]
        assert len(chunks) > 1
        for chunk in chunks:
            assert text[chunk["start_offset"]:chunk["end_offset"]] == chunk["content"]

        pdf = store.show("manual.pdf")
        assert [(c["page_start"], c["page_end"]) for c in pdf["chunks"]] == [(1, 2)]
        beir = store.get_document("doc1")
        assert beir["truth_level"] == "L1"  # lifted from the line's metadata
        assert beir["source_url"] == "https://example.org/pads"
        assert store.get_document("3")["domain"] == "brakes"
    finally:
        store.close()


def test_a_store_inside_the_folder_it_ingests_is_not_walked(tmp_path: Path) -> None:
    # `enginelib ingest .` beside the default ./enginelib-store walked the store's own folder:
    # its catalog and index files came out as skipped inputs, a file uploaded to `serve`
    # still waiting in uploads/ became a second document, and a --prune of a folder left
    # with only the store in it read as a folder holding files
    from enginelib.errors import PruneRefusedError
    from enginelib.jobs import jobs_for_paths

    docs = tmp_path / "docs"
    write(docs / "a.md", "# A\n\nbrake pads alpha")
    store = enginelib.open(docs / "enginelib-store", embedder=enginelib.HashingEmbedder(64))
    try:
        write(docs / "enginelib-store" / "uploads" / "7" / "guide.md", "# Guide\n\nrotor")
        for given in (docs, tmp_path / ".." / tmp_path.name / "docs"):
            report = store.ingest_path(given)
            assert (report.added or report.unchanged) == ("a.md",) and report.skipped == ()
        assert [job.document_id for job in jobs_for_paths(
            [docs], {}, skip_folders=[docs / "enginelib-store"])] == ["a.md"]
        assert len(store.enqueue_paths(docs)) == 1
        # named itself, a folder is walked: only a store met inside another folder is left
        assert [d.id for d in split(iter_load(docs / "enginelib-store" / "uploads"))[0]] == [
            "7/guide.md"]
        (docs / "a.md").unlink()
        with pytest.raises(PruneRefusedError, match="holds no file"):
            store.ingest_path(docs, prune=True)
        assert store.present_documents(["a.md"]) == {"a.md"}
    finally:
        store.close()


def test_cli_ingest_raises_the_file_limit_the_skip_reason_names(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from enginelib.cli.main import main

    # the reason said "pass a larger max_bytes", which no command-line user could
    path = write(tmp_path / "big.md", "brake pads " * 120_000)  # 1.26 MiB
    args = ["ingest", str(path), "--store", str(tmp_path / "s"), "--no-progress"]
    env = {"ENGINELIB_EMBEDDER": "hashing-64"}
    refused = CliRunner().invoke(main, [*args, "--max-file-mb", "1"], env=env)
    assert refused.exit_code == 0 and "--max-file-mb 2" in refused.output
    taken = CliRunner().invoke(main, [*args, "--max-file-mb", "2"], env=env)
    assert taken.exit_code == 0 and taken.output.startswith("added 1,")
    queued = CliRunner().invoke(main, [*args, "--max-file-mb", "2", "--queue"], env=env)
    assert queued.exit_code == 2 and "for a direct ingest" in queued.output


def test_source_path_is_absolute_whatever_path_names_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The path as typed named another file from another working directory, and the same
    # folder typed two ways read as a metadata change on every re-ingest.
    write(tmp_path / "real" / "guides" / "brakes.md", "# Brakes\n\nPads.\n")
    write(tmp_path / "alone.md", "# Alone\n\nText.\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    expected = str((tmp_path / "real" / "guides" / "brakes.md").resolve())
    for given in ("real", "./real", "link", str(tmp_path / "real"), "real/../real"):
        documents, _ = split(iter_load(given))
        assert [(d.id, d.source_path) for d in documents] == [("guides/brakes.md", expected)]
    documents, _ = split(iter_load("alone.md"))
    assert [(d.id, d.source_path) for d in documents] == [
        ("alone.md", str((tmp_path / "alone.md").resolve()))]


def test_html_with_more_elements_than_its_byte_limit_allows_is_refused_before_parsing(
        tmp_path: Path) -> None:
    """The parser holds every element in memory (0.6-1 KB each): 64 MB of bare '<a>' tags
    would have taken 13-22 GB, and the process with it, where the file limit promised 64 MB."""
    path = tmp_path / "tags.html"
    path.write_text("<html><body>" + "<a>" * 2_000 + "text</body></html>")
    limit = 64 * 1_000  # allows 1,000 elements
    with pytest.raises(LoaderError, match=r"has 2,002 HTML elements, over the 1,000 .* "
                                          r"max_bytes=64000 .* --max-file-mb"):
        load_file(path, max_bytes=limit)
    assert only(path, max_bytes=64 * 3_000).text == "text"  # a raised limit reads it
    # "<" in text (a formula, code) is not an element
    (tmp_path / "less.html").write_text("<p>" + "a < b " * 2_000 + "</p>")
    assert only(tmp_path / "less.html", max_bytes=limit).text.startswith("a < b")


def test_loader_entry_points_refuse_what_is_not_a_path(tmp_path: Path) -> None:
    # None failed inside pathlib with a TypeError, an over-long name with a raw OSError, and a
    # string include was read as one pattern per character
    long_name = tmp_path / ("a" * 5000)
    for call, says in (
            (lambda: load_file(None), "must be a str or Path"),  # type: ignore[arg-type]
            (lambda: load_file(long_name), "File name too long"),
            (lambda: loaders.loader_for(None), "must be a str or Path"),  # type: ignore[arg-type]
            (lambda: list(iter_load(None)), "a path or a list of paths"),  # type: ignore[arg-type]
            (lambda: list(iter_load(long_name)), "File name too long"),
            (lambda: list(iter_load(tmp_path, include="*.md")), "list of glob patterns"),  # type: ignore[arg-type]
            (lambda: list(iter_load(tmp_path, exclude=None)), "list of glob patterns")):  # type: ignore[arg-type]
        with pytest.raises((InvalidInputError, LoaderError), match=says):
            call()
