"""What the HTTP API shows of the server's files: names, never its absolute paths.

The catalog keeps each source's absolute path (the worker reads it, a re-ingest compares it),
and the CLI shows it to the user whose machine it is. A client of ``serve`` learns no more
than a name: a file inside the store by its path relative to the store (an upload:
``uploads/<folder>/notes.md``), any other file by its document's id (its path under the
folder that was ingested, or its file name), the store itself as ``<store>``. Messages (a
job's ``last_error``, an error reply) get the same names in place of the paths they hold, and
a job's ``lease_owner`` (host:pid:tag) keeps only its tag.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Fields that hold a file's path in the API's answers (a job's and a source row's ``source``,
# a document's and a citation's ``source_path`` and ``file_path``, the stats' ``path``).
PATH_FIELDS = frozenset({"source", "source_path", "file_path", "path"})
# Fields that hold a message that may quote one.
MESSAGE_FIELDS = frozenset({"error", "last_error", "worker_error"})
STORE_NAME = "<store>"


class Paths:
    """The server paths of one store, and how a client is shown them."""

    def __init__(self, store: Path) -> None:
        absolute = os.path.abspath(store)
        # The store as written and as resolved: a path recorded either way is recognised.
        self.roots = tuple(dict.fromkeys((absolute, os.path.realpath(absolute))))

    def name(self, path: str, fallback: str | None = None) -> str:
        """``path`` as a client sees it (a URL, an id or a relative path is left as it is)."""
        if not os.path.isabs(path):
            return path
        for root in self.roots:
            if path == root:
                return STORE_NAME
            if path.startswith(root.rstrip(os.sep) + os.sep):
                return Path(os.path.relpath(path, root)).as_posix()
        return fallback if fallback else os.path.basename(path.rstrip(os.sep)) or path

    def text(self, message: str, quoted: Mapping[str, str] | None = None) -> str:
        """``message`` with each path of ``quoted`` (path -> name) and the store's own
        folder replaced by what a client is shown of them."""
        for path, shown in sorted((quoted or {}).items(), key=lambda item: -len(item[0])):
            if path and os.path.isabs(path):
                message = message.replace(path, shown)
        for root in sorted(self.roots, key=len, reverse=True):
            message = message.replace(root, STORE_NAME)
        return message

    def view(self, data: Any) -> Any:
        """An API answer (JSON-shaped) with every path field and message made public."""
        if isinstance(data, (list, tuple)):
            return [self.view(item) for item in data]
        if not isinstance(data, dict):
            return data
        fallback = data.get("document_id")
        fallback = fallback if isinstance(fallback, str) else None
        shown = {key: self.name(value, fallback) for key, value in data.items()
                 if key in PATH_FIELDS and isinstance(value, str)}
        quoted = {data[key]: name for key, name in shown.items()}
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in shown:
                out[key] = shown[key]
            elif key in MESSAGE_FIELDS and isinstance(value, str):
                out[key] = self.text(value, quoted)
            elif key == "lease_owner" and isinstance(value, str):
                out[key] = value.rpartition(":")[2]  # host:pid:tag: the host and pid are the server's
            else:
                out[key] = self.view(value)
        return out
