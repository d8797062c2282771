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

from pypdf import PdfReader

from ..errors import LoaderError
from ..text import normalize_text
from ..types import LoadedDocument
from .base import fail, human_size, read_bytes

PAGE_SEPARATOR = "\n\n"


def _read(path: Path, max_bytes: int) -> tuple[list[tuple[int, str]], str | None]:
    """(page number, normalized page text) for pages with text, and the PDF's own title."""
    data = read_bytes(path, max_bytes)
    try:
        # pypdf warns (and logs) about every quirk of real-world PDFs; none is actionable
        # for the user, and under `filterwarnings=error` a warning would abort the load.
        with warnings.catch_warnings(), _pypdf_logs_quiet():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise fail(path, "encrypted PDF: decrypt it first (e.g. `qpdf --decrypt`)")
            pages: list[tuple[int, str]] = []
            size = 0
            for number, page in enumerate(reader.pages, start=1):
                text = normalize_text(page.extract_text() or "").strip()
                if text:
                    pages.append((number, text))
                    size += len(text.encode("utf-8"))
                if size > max_bytes:
                    # Page content is compressed, and pages may share one stream: a 6 KB
                    # file gave 10 MB of text in 24 s; a few hundred KB can give gigabytes.
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
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types on malformed files
        raise fail(path, f"cannot read PDF: {type(exc).__name__}: {exc}") from exc
    clean_title = normalize_text(title).strip() if isinstance(title, str) else ""
    return pages, clean_title or None


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
