"""Restore: make the live catalog equal to a snapshot in one transaction, then rebuild indexes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import catalog_snapshots as cs
from . import columns as cols
from . import faults
from .catalog import utcnow
from .chunker import ChunkingConfig
from .core.layout import SNAPSHOT_TABLES_DIR as TABLES_DIR
from .core.layout import way_out
from .errors import EngineError
from .manifest import Manifest, next_index_version
from .text import shell_word

if TYPE_CHECKING:
    from .core.store_core import StoreCore


@dataclass(frozen=True)
class RestoreReport:
    name: str
    generation: int
    index_version: str
    documents: int
    chunks: int
    archived: int  # live versions archived because the restore replaced or removed them
    # where a damaged catalog the restore replaced was moved (kept: what it committed after
    # the snapshot is only there); None for a restore into a sound catalog
    damaged_catalog: str | None = None
    # the store had lost its catalog file; the snapshot filled a fresh one
    catalog_was_missing: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def restore_into(store: StoreCore, folder: Path, name: str) -> RestoreReport:
    """Replace the live documents and chunks with the snapshot's (caller checked compatibility)."""
    catalog = store._catalog
    tables = folder / TABLES_DIR
    with catalog.transaction():
        generation = catalog.bump_generation()
        index_version = next_index_version(catalog.get_meta("index_version"))
        catalog.set_meta("index_version", index_version)
        now = utcnow()
        archived = cs.archive_replaced(catalog, tables, name, now, generation)
        versions = _restored_versions(*cs.snapshot_and_known_versions(catalog, tables))
        cs.replace_documents_and_chunks(catalog, tables, versions, index_version, now, generation)
        counts = cs.restore_acronyms_labels_sources(catalog, tables)
        faults.crash_point("restore_before_catalog_commit")
    with store._indexes_follow():
        faults.crash_point("restore_after_catalog_commit")
        store._committed()
        store.rebuild_indexes()
    return RestoreReport(
        name=name, generation=generation, index_version=index_version,
        documents=counts[0], chunks=counts[1], archived=archived,
    )


def _semver(version: str) -> tuple[int, int, int]:
    try:
        major, minor, patch = (int(x) for x in version.split("."))
    except ValueError:
        return (0, 0, 0)
    return (major, minor, patch)


def _restored_versions(
    snapshot: list[tuple[str, str]], known: list[tuple[str, str]]
) -> dict[str, np.ndarray]:
    """The version each restored document gets: its own, unless the document moved past it.

    Ingest bumps from the current version, so the current one must stay the newest the
    document ever had, or a later edit would reuse (and silently lose) an archived number.
    A version the history already holds is never current again: a document deleted since
    the snapshot comes back after its last version, as an ingest of the deleted id does.
    """
    newest: dict[str, tuple[int, int, int]] = {}
    for doc_id, version in known:
        newest[doc_id] = max(newest.get(doc_id, (0, 0, 0)), _semver(version))
    ids, out, bumped = [], [], []
    for doc_id, version in snapshot:
        top = newest.get(doc_id)
        ids.append(doc_id)
        if top is None or _semver(version) > top:
            out.append(version)
            bumped.append(False)
        else:
            out.append(f"{top[0]}.{top[1] + 1}.0")
            bumped.append(True)
    return {"document_id": cols.objects(ids), "version": cols.objects(out),
            "bumped": np.array(bumped, dtype=bool)}


# The chunk sizes `enginelib reindex` takes as options (--max-tokens ...).
_SIZES = ("max_tokens", "overlap_tokens", "min_tokens")


def unrestorable(root: Path, name: str, snapshot: Manifest, live: Manifest) -> str | None:
    """Why snapshot ``name`` cannot be restored into the live store (its model or chunking
    is not the live one's, as after a reindex), with the reindex that makes it restorable;
    None when it can be. It said "built with hashing-64 and other chunking or model than the
    live store (hashing-64)", naming no difference and no way to restore."""
    model = (snapshot.embedding_model, snapshot.embedding_dim)
    differs = {}
    if model != (live.embedding_model, live.embedding_dim):
        differs["model"] = (f"the model {model[0]} ({model[1]} dims) where the live store has "
                            f"{live.embedding_model} ({live.embedding_dim} dims)")
    if snapshot.chunking_hash != live.chunking_hash:
        fields = sorted(k for k in {*snapshot.chunking, *live.chunking}
                        if snapshot.chunking.get(k) != live.chunking.get(k))
        differs["chunking"] = "the chunking " + (", ".join(
            f"{k} {snapshot.chunking.get(k)!r} (live {live.chunking.get(k)!r})"
            for k in fields) or "of an older enginelib")
    if not differs:
        return None
    return (f"snapshot {name!r} cannot be restored into the live store: it was built with "
            f"{' and '.join(differs.values())}. Reindex the live store to the snapshot's "
            f"{' and '.join(differs)} first ({_reindex_way(root, snapshot, live)}), then "
            f"restore it; or open it read-only with enginelib.open(path, snapshot={name!r})")


def _reindex_way(root: Path, snapshot: Manifest, live: Manifest) -> str:
    """The reindex that gives the live store the snapshot's model and chunking: the command
    where its options can say them, else the Python call with the whole chunking."""
    wanted = ChunkingConfig.from_dict(snapshot.chunking)
    options = []
    if (snapshot.embedding_model, snapshot.embedding_dim) != (live.embedding_model,
                                                              live.embedding_dim):
        options.append(f"--embedder {shell_word(snapshot.embedding_model)}")
    if _as_reindex_keeps(live) != snapshot.chunking_hash:
        sizes = {k: snapshot.chunking.get(k) for k in _SIZES}
        options += [f"--{k.replace('_', '-')} {v}" for k, v in sizes.items()]
        if _as_reindex_sets(live, sizes) != snapshot.chunking_hash:
            options = []  # the command's options cannot say this chunking
    call = (f"store.reindex(embedder={snapshot.embedding_model!r}, "
            f"chunking=enginelib.ChunkingConfig.from_dict({wanted.to_dict()!r}))")
    if not options:
        return call
    return way_out(root, f"`enginelib reindex --store {shell_word(root)} {' '.join(options)}`",
                   call)


def _as_reindex_keeps(live: Manifest) -> str:
    """The chunking hash `enginelib reindex` without chunk options gives the live store."""
    recorded = ChunkingConfig.from_dict(live.chunking)
    return replace(recorded, structure="sections", paragraph_tokens=recorded.paragraph_tokens
                   or ChunkingConfig.paragraph_tokens).config_hash()


def _as_reindex_sets(live: Manifest, sizes: dict[str, Any]) -> str | None:
    """The chunking hash `enginelib reindex --max-tokens ...` gives the live store."""
    try:
        return ChunkingConfig.from_dict({**live.chunking, **sizes,
                                         "structure": "sections"}).config_hash()
    except EngineError:
        return None
