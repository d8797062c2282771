"""Loaders: turn files, folders and JSONL into normalized LoadedDocuments.

Formats (picked by extension, see ``LOADERS``): Markdown, plain text, HTML, PDF (text layer,
with page offsets), JSONL / NDJSON, optionally gzipped. ``iter_load`` streams documents
and SkippedInputs from files and folders for a batch ingest; ``load_file`` loads one file
strictly, ``stream_file`` likewise one document at a time. Ids: see
:mod:`enginelib.loaders.walk`.
"""

from __future__ import annotations

from .base import DEFAULT_MAX_BYTES, Loader, LoadItem
from .formats import LOADERS, SUPPORTED_EXTENSIONS, extension_of, loader_for
from .walk import iter_load, load_file, stream_file

__all__ = [
    "DEFAULT_MAX_BYTES", "LOADERS", "SUPPORTED_EXTENSIONS", "LoadItem", "Loader",
    "extension_of", "iter_load", "load_file", "loader_for", "stream_file",
]
