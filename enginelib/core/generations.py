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
from . import layout


def finish_reindex(
    root: Path, manifest: mf.Manifest, marker: dict[str, Any], index_version: str
) -> mf.Manifest:
    """Record the new model and chunking in the manifest, then drop the marker."""
    new = replace(
        manifest, embedding_model=marker["embedding_model"], embedding_dim=marker["embedding_dim"],
        chunking=marker["chunking"], chunking_hash=marker["chunking_hash"],
        generation=marker["generation"], index_version=index_version,
    )
    mf.write_manifest(root, new)
    (root / layout.REINDEX_MARKER).unlink(missing_ok=True)
    return new


def finish_interrupted_reindex(root: Path, manifest: mf.Manifest, *, writable: bool) -> mf.Manifest:
    """The manifest to trust when a reindex was killed between its catalog commit and its
    manifest write (the catalog then holds the new vectors). Writers also fix the files."""
    path = root / layout.REINDEX_MARKER
    if not path.exists():
        return manifest
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        marker = None
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
