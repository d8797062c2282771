"""The registry of formats: a file's extension picks its loader (no if/elif chain)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UnsupportedFormatError
from ..validation import check_path
from .base import Loader
from .html import load_html
from .jsonl import load_jsonl
from .pdf import load_pdf
from .text import load_markdown, load_plain_text

LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".txt": load_plain_text,
    ".text": load_plain_text,
    ".rst": load_plain_text,
    ".html": load_html,
    ".htm": load_html,
    ".pdf": load_pdf,
    ".jsonl": load_jsonl,
    ".ndjson": load_jsonl,
    ".jsonl.gz": load_jsonl,
    ".ndjson.gz": load_jsonl,
}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(LOADERS)


def extension_of(path: Path) -> str:
    """The registry key for ``path``: ".jsonl.gz" for a gzipped corpus, else the suffix."""
    name = path.name.lower()
    for extension in LOADERS:
        if extension.count(".") > 1 and name.endswith(extension):
            return extension
    return path.suffix.lower()


def loader_for(path: Path) -> Loader:
    """The loader for ``path``; UnsupportedFormatError (naming the choices) when none."""
    path = check_path(path)
    extension = extension_of(path)
    loader = LOADERS.get(extension)
    if loader is None:
        what = f"unsupported format {extension}" if extension else "unsupported format (no extension)"
        raise UnsupportedFormatError(
            f"{path}: {what}; supported: {', '.join(SUPPORTED_EXTENSIONS)}", path=path
        )
    return loader
