"""Following generations across a crash: the manifest a reindex left half-written.

A reindex writes ``.reindex.json`` (the layout's ``REINDEX_MARKER``), commits its catalog,
then records the new model in the manifest and drops the marker. An open that finds the
marker decides which manifest to trust from the catalog itself.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import manifest as mf
from ..catalog import Catalog
from ..errors import StoreError
from ..input_files import read_regular
from . import layout


def finish_reindex(
    root: Path, manifest: mf.Manifest, marker: dict[str, Any], index_version: str
) -> mf.Manifest:
    """Record the new model and chunking in the manifest, then drop the marker."""
    new = reindexed_manifest(manifest, marker, index_version)
    mf.write_manifest(root, new)
    (root / layout.REINDEX_MARKER).unlink(missing_ok=True)
    return new


def reindexed_manifest(
    manifest: mf.Manifest, marker: dict[str, Any], index_version: str
) -> mf.Manifest:
    """``manifest`` as the reindex that wrote ``marker`` leaves it (nothing written)."""
    return replace(
        manifest, embedding_model=marker["embedding_model"], embedding_dim=marker["embedding_dim"],
        chunking=marker["chunking"], chunking_hash=marker["chunking_hash"],
        generation=marker["generation"], index_version=index_version,
    )


def finish_interrupted_reindex(root: Path, manifest: mf.Manifest, *, writable: bool) -> mf.Manifest:
    """The manifest to trust when a reindex was killed between its catalog commit and its
    manifest write (the catalog then holds the new vectors). Writers also fix the files."""
    path = root / layout.REINDEX_MARKER
    if not path.exists():
        return manifest
    if path.is_dir():  # unlinking it below failed with a bare "Is a directory"
        raise StoreError(f"{path} is a folder where enginelib keeps the marker of a reindex in "
                         f"progress: remove it (it holds nothing of the store) and open again",
                         path=path)
    try:
        marker = json.loads(read_regular(path).decode("utf-8"))  # a pipe: unreadable, not waited on
    except (OSError, ValueError):
        marker = None
    if not _is_marker(marker):
        marker = None  # not one a reindex wrote (cut short, edited): as if unreadable
    catalog = Catalog(layout.catalog_path(root), manifest.embedding_dim, read_only=True)
    try:
        done = marker is not None and catalog.get_meta("reindexed_generation") == str(marker["generation"])
        index_version = catalog.get_meta("index_version") or ""
    finally:
        catalog.close()
    if not done:  # the reindex never committed: the old manifest is right
        if writable:
            path.unlink(missing_ok=True)
        return manifest
    assert marker is not None
    if writable:
        return finish_reindex(root, manifest, marker, index_version)
    return replace(manifest, embedding_model=marker["embedding_model"],
                   embedding_dim=marker["embedding_dim"], chunking=marker["chunking"],
                   chunking_hash=marker["chunking_hash"])


def _is_marker(marker: Any) -> bool:
    """Whether ``marker`` has the shape ``finish_reindex`` and the open rely on (a marker of
    another shape raised a bare TypeError or KeyError from every open)."""
    kinds = {"generation": int, "embedding_model": str, "embedding_dim": int, "chunking": dict,
             "chunking_hash": str}
    return isinstance(marker, dict) and all(
        isinstance(marker.get(key), kind) and not isinstance(marker.get(key), bool)
        for key, kind in kinds.items())
