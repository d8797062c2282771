"""Read a store's catalog as rows in the Postgres column order (pg_schema's column specs).

All reads run in one DuckDB transaction, so documents, chunks and versions come from the
same catalog generation even if a writer commits meanwhile.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import catalog_export as ce
from ..catalog_export import Row
from ..indexes.analyzers import MAX_TOKEN_CHARS, code_tokens, word_parts
from .pg_schema import DOCUMENT_COLUMNS, ts_config

if TYPE_CHECKING:
    import duckdb

    from ..core.store_core import StoreCore as Store

@dataclass(frozen=True)
class StoreMeta:
    path: str
    embedding_model: str
    embedding_dim: int
    generation: int
    index_version: str
    documents: int
    chunks: int
    versions: int
    sources: int


class CatalogReader:
    """Row iterators over one consistent view of the catalog (see ``read_store``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, meta: StoreMeta) -> None:
        self._con = con
        self.meta = meta

    def documents(self, source_paths: str = "absolute") -> Iterator[Row]:
        """Document rows, their source_path and file_path shaped by ``source_paths``
        (ExportOptions' modes)."""
        if source_paths == "absolute":
            yield from ce.documents(self._con)
            return
        shape = path_shaper(source_paths, ce.source_folders(self._con))
        for row in ce.documents(self._con):
            out = list(row)
            out[_AT_SOURCE_PATH] = shape(out[_AT_SOURCE_PATH])
            out[_AT_FILE_PATH] = shape(out[_AT_FILE_PATH])
            yield tuple(out)

    def versions(self) -> Iterator[Row]:
        yield from ce.versions(self._con)

    def sources(self) -> Iterator[Row]:
        yield from ce.sources(self._con)

    def chunks(self, batch_size: int = 4096) -> Iterator[Row]:
        """Chunk rows with the embedding as a float32 array, then the row's ts_config,
        text_length and codes (pg_schema's chunk column order)."""
        names = ce.CHUNK_COLUMNS
        at_embedding, at_language = names.index("embedding"), names.index("language")
        at_title, at_heading, at_content = (names.index(n) for n in ("title", "heading_path", "content"))
        for rows, vectors in ce.chunk_pages(self._con, self.meta.embedding_dim, batch_size):
            for i, row in enumerate(rows):
                out = list(row)
                out[at_embedding] = vectors[i]
                parts = (out[at_title], out[at_heading], out[at_content])
                yield (*out, ts_config(out[at_language]), text_length(*parts), codes(*parts))


_DOCUMENT_NAMES = [name for name, _, _ in DOCUMENT_COLUMNS]
_AT_SOURCE_PATH = _DOCUMENT_NAMES.index("source_path")
_AT_FILE_PATH = _DOCUMENT_NAMES.index("file_path")


def path_shaper(mode: str, folders: list[str]) -> Callable[[str | None], str | None]:
    """How one exported path is written: "none" drops it; "relative" makes an absolute one
    relative to the deepest folder holding all of ``folders`` (the documents' folders)."""
    if mode == "none":
        return lambda path: None
    root = posixpath.commonpath(folders) if folders else "/"

    def relative(path: str | None) -> str | None:
        if not path or not path.startswith("/"):
            return path  # a path the store already holds as relative leaks no folder
        return posixpath.relpath(path, root)

    return relative


@contextmanager
def read_store(store: Store) -> Iterator[CatalogReader]:
    """A reader over the store's catalog inside one read transaction; releases the file after."""
    with ce.read_transaction(store._catalog) as con:
        yield CatalogReader(con, _meta(store, con))


def _meta(store: Store, con: duckdb.DuckDBPyConnection) -> StoreMeta:
    counted = ce.counts(con)
    return StoreMeta(
        path=str(store.path),
        embedding_model=store.manifest.embedding_model,
        embedding_dim=int(store.manifest.embedding_dim),
        generation=int(ce.meta_value(con, "generation") or 0),
        index_version=ce.meta_value(con, "index_version"),
        documents=counted["documents"],
        chunks=counted["chunks"],
        versions=counted["document_versions"],
        sources=counted["sources"],
    )


def text_length(*parts: str | None) -> int:
    """Words in a chunk's text as the engine's BM25 counts them (its field length):
    tantivy's simple tokenizer pieces, without those its length filter drops."""
    text = "\n".join(p for p in parts if p)
    return sum(1 for w in word_parts(text) if len(w.encode("utf-8")) < MAX_TOKEN_CHARS)


def codes(*parts: str | None) -> list[str]:
    """The chunk's exact-match code tokens as the engine's codes field holds them."""
    text = " ".join(p for p in parts if p)
    return [t for t in (c.lower() for c in code_tokens(text)) if len(t.encode("utf-8")) < MAX_TOKEN_CHARS]
