"""Markdown and plain-text files: the text as written, titled by heading or file name."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..sections import heading_title
from ..types import LoadedDocument
from .base import fail, found_title, load_text_bytes, read_bytes
from .front_matter import split_front_matter

# A level-1 ATX heading, or a code fence (a "# comment" inside a shell block is no title).
_TITLE_OR_FENCE = re.compile(
    r"^ {0,3}(?:#[ \t]+(?P<title>[^\n]*)$|(?P<fence>```|~~~))", re.MULTILINE
)


def markdown_title(text: str) -> str | None:
    """The first ``# `` heading outside code fences, without closing ``#`` marks."""
    open_fence: str | None = None
    for match in _TITLE_OR_FENCE.finditer(text):
        fence = match.group("fence")
        if fence is not None:
            if open_fence is None:
                open_fence = fence
            elif fence == open_fence:
                open_fence = None
            continue
        if open_fence is None:
            title = heading_title(match.group("title"))
            if title:
                return title
    return None


def load_markdown(path: Path, doc_id: str, max_bytes: int) -> Iterator[LoadedDocument]:
    metadata, text = split_front_matter(load_text_bytes(read_bytes(path, max_bytes), path))
    if not text.strip():
        raise fail(path, "only front matter, no text to index")
    declared = metadata.pop("title", None)
    if isinstance(declared, (list, dict)):
        # dropped for the file's name without a word: a title given on purpose is refused
        # as a JSONL record's is
        kind = "list" if isinstance(declared, list) else "mapping"
        raise fail(path, f"front matter 'title' is a {kind}, not a line of text: give the "
                         "title as one line (title: \"...\")")
    title = None if declared is None else str(declared).strip() or None
    yield LoadedDocument(
        id=doc_id, text=text, title=title or found_title(markdown_title(text)) or path.stem,
        source_path=str(path), file_extension=path.suffix.lower(), document_type="markdown",
        metadata=metadata,
    )


def load_plain_text(path: Path, doc_id: str, max_bytes: int) -> Iterator[LoadedDocument]:
    text = load_text_bytes(read_bytes(path, max_bytes), path)
    yield LoadedDocument(
        id=doc_id, text=text, title=path.stem, source_path=str(path),
        file_extension=path.suffix.lower(), document_type="text",
    )
