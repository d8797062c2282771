"""PDF files: the text layer page by page, with each page's start offset for citations.

Pages are joined with a blank line; ``pages`` holds ``(page_number, start_offset)`` for
every page that has text (page numbers start at 1, offsets index the final text), so a
chunk's page is the last entry starting at or before its offset. A PDF without any text
layer (a scan) is refused rather than stored empty: it needs OCR first.
"""

from __future__ import annotations

import io
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pypdf import PageObject, PdfReader
from pypdf.errors import DependencyError

from ..errors import LoaderError
from ..text import normalize_text
from ..types import LoadedDocument
from .base import fail, found_title, human_size, read_bytes

PAGE_SEPARATOR = "\n\n"
# What a PDF's pages may expand to, per byte of its file: the decoded content streams (pypdf
# parses about 1.5 MB of them a second) and the text extracted from them (about 130 KB a
# second). Real PDFs stay near 1 for both (fonts and images weigh more than the page
# operators); a crafted 30 KB file expanded to 10 MB of content and 4 MB of text, 40 s of CPU,
# and a stream shared by many pages or a form drawn over and over expands further. Past either
# budget the load stops, before the page's parse or as its text grows, and the file is
# skipped whole with the reason (no page of it is kept: a document cut short would be cited
# as if it were all there).
MAX_EXPANSION = 20
# A small file may expand further, by its pages: the densest pages of real PDFs we measured
# hold 19 KB of content and 3.5 KB of text (a 6-point table holds about 25 KB), so 128 KiB a
# page is room for any page. It stops a one-page file of a few KB at 128 KiB, where the
# floor alone (below) let it give 2 MB of text, 15 s of extraction and a thousand chunks.
PAGE_BUDGET = 128 * 1024
# The most a small file's pages earn (16 pages and more): the work of a 2 MB text file, any
# upload's size; past it only the file's own size (MAX_EXPANSION) counts.
MIN_BUDGET = 2 * 1024 * 1024


def expansion_budget(file_size: int, pages: int) -> int:
    """Bytes of page content, and characters of text, a PDF of ``file_size`` bytes and
    ``pages`` pages may expand to: ``MAX_EXPANSION`` times its size, or ``PAGE_BUDGET`` a
    page up to ``MIN_BUDGET`` when that is more."""
    return max(MAX_EXPANSION * file_size, min(MIN_BUDGET, PAGE_BUDGET * pages))


class _TextBudget:
    """pypdf's visitor for every piece of text it extracts: raises once the pieces pass
    ``limit`` characters, so a page's extraction stops as its text grows, not after it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def __call__(self, text: object, *_: object) -> None:
        if isinstance(text, str):
            self.used += len(text)
            if self.used > self.limit:
                raise _OverBudget


class _OverBudget(Exception):
    pass


def _read(path: Path, max_bytes: int) -> tuple[list[tuple[int, str]], str | None]:
    """(page number, normalized page text) for pages with text, and the PDF's own title."""
    data = read_bytes(path, max_bytes)
    try:
        # pypdf warns (and logs) about every quirk of real-world PDFs; none is actionable
        # for the user, and under `filterwarnings=error` a warning would abort the load.
        with warnings.catch_warnings(), _pypdf_logs_quiet():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data))
            # Most "protected" PDFs open with the empty user password (an owner password
            # only, against printing or copying): pypdf tries it as it opens the file.
            if reader.is_encrypted and not reader.decrypt(""):
                raise fail(path, "encrypted PDF that needs a password to open: decrypt it "
                                 "first (`qpdf --password=PASSWORD --decrypt in.pdf out.pdf`)")
            pages: list[tuple[int, str]] = []
            size = 0
            budget = expansion_budget(len(data), len(reader.pages))
            text_budget = _TextBudget(budget)
            content = 0
            for number, page in enumerate(reader.pages, start=1):
                content += _content_size(page)
                if content > budget:
                    raise _expands(path, len(data), budget, number, len(reader.pages))
                try:
                    raw = page.extract_text(visitor_text=text_budget)
                except _OverBudget:
                    raise _expands(path, len(data), budget, number, len(reader.pages)) from None
                text = normalize_text(raw or "").strip()
                if text:
                    pages.append((number, text))
                    size += len(text.encode("utf-8"))
                if size > max_bytes:
                    # The limit on a document holds for its text, not only for its file.
                    raise fail(path, (
                        f"its text passes {human_size(max_bytes)} (max_bytes={max_bytes}) by "
                        f"page {number} of {len(reader.pages)}, from a file of "
                        f"{human_size(len(data))}: raise the limit to load it (`enginelib "
                        f"ingest --max-file-mb`, or max_bytes= in Python)"))
            info = reader.metadata
            title = info.title if info is not None else None
    except LoaderError:
        raise
    except DependencyError as exc:
        # AES needs the cryptography package (the `crypto` extra, outside the base install's
        # size budget): "cannot read PDF" alone hid what to do about a file any viewer opens.
        raise fail(path, "AES-encrypted PDF, and the `cryptography` package that decrypts it "
                         "is not installed: `pip install 'enginelib[crypto]'` (or `pip install "
                         "cryptography`)") from exc
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types on malformed files
        raise fail(path, f"cannot read PDF: {type(exc).__name__}: {exc}") from exc
    clean_title = normalize_text(title).strip() if isinstance(title, str) else ""
    return pages, found_title(clean_title) or None


def _content_size(page: PageObject) -> int:
    """Bytes of the page's decoded content streams (decoding is fast; parsing them is not)."""
    contents = page.get_contents()
    return 0 if contents is None else len(contents.get_data())


def _expands(path: Path, size: int, budget: int, number: int, pages: int) -> LoaderError:
    return fail(path, (
        f"a PDF of {human_size(size)} whose pages expand past {human_size(budget)} by page "
        f"{number} of {pages} (the bound is {MAX_EXPANSION} times the file's size, or "
        f"{human_size(PAGE_BUDGET)} a page up to {human_size(MIN_BUDGET)} for a small file: "
        f"a compression bomb, or one stream drawn over and over); nothing of it is loaded. "
        f"Extract its text with another tool (e.g. `pdftotext`) and load the .txt file"))


@contextmanager
def _pypdf_logs_quiet() -> Iterator[None]:
    """pypdf logs its quirks as warnings, which Python's last-resort handler prints on stderr
    ("EOF marker not found") beside our own skip reason; only for this read, so an
    application's own logging settings are left as they were."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def load_pdf(path: Path, doc_id: str, max_bytes: int) -> Iterator[LoadedDocument]:
    pages, title = _read(path, max_bytes)
    if not pages:
        raise fail(path, "no text layer (scanned PDF?): OCR it first")
    parts: list[str] = []
    starts: list[tuple[int, int]] = []
    offset = 0
    for number, text in pages:
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        starts.append((number, offset))
        parts.append(text)
        offset += len(text)
    yield LoadedDocument(
        id=doc_id, text="".join(parts), title=title or path.stem, source_path=str(path),
        file_extension=path.suffix.lower(), document_type="pdf", pages=tuple(starts),
    )
