"""manifest.json: what a store was built with, written atomically (temp file, fsync, rename)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from .chunker import ChunkingConfig
from .core.layout import MANIFEST_NAME, SNAPSHOTS_DIR
from .durable import write_atomic
from .errors import IncompatibleStoreError, InvalidInputError, StoreError
from .input_files import NotRegularFileError, open_regular
from .utc import utc_today
from .validation import MAX_DIM, check_index_options

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Manifest:
    embedding_model: str
    embedding_dim: int
    chunking: dict[str, Any]
    chunking_hash: str
    schema_version: int
    generation: int = 0
    index_version: str = ""
    format_version: int = FORMAT_VERSION
    created_at: str = ""
    vector_backend: str = "hnsw"
    text_backend: str = "tantivy"
    index_options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def with_generation(self, generation: int) -> Manifest:
        return replace(self, generation=generation)


def next_index_version(previous: str | None, today: date | None = None) -> str:
    """YYYY.MM.patch, the month in UTC (``today`` defaults to ``utc_today()``): patch restarts
    at 0 each month and counts commits within it."""
    today = today or utc_today()
    prefix = f"{today.year:04d}.{today.month:02d}"
    if previous and previous.startswith(prefix + "."):
        try:
            return f"{prefix}.{int(previous.rsplit('.', 1)[1]) + 1}"
        except ValueError:
            pass
    return f"{prefix}.0"


def write_manifest(directory: Path, manifest: Manifest) -> None:
    payload = json.dumps(manifest.to_dict(), indent=2, sort_keys=True).encode("utf-8")
    write_atomic(directory / MANIFEST_NAME, payload)


def read_manifest(directory: Path) -> Manifest | None:
    path = directory / MANIFEST_NAME
    if not path.exists():
        return None
    try:
        with open_regular(path) as handle:  # a pipe put in its place would wait forever
            data = json.loads(handle.read().decode("utf-8"))
    except NotRegularFileError as exc:
        raise _damaged(path, f"it is {exc.kind}, not a file") from exc
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc}", path=path) from exc
    except ValueError as exc:
        raise _damaged(path, f"not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise _damaged(path, f"a JSON {type(data).__name__}, not an object")
    version = data.get("format_version", 0)
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise IncompatibleStoreError(
            f"{path} has format version {version}, newer than this enginelib "
            f"supports ({FORMAT_VERSION}): upgrade enginelib",
            path=path,
        )
    for name, kind in _FIELD_TYPES.items():
        value = data.get(name)
        if name in data or name in _REQUIRED:
            if not isinstance(value, kind) or isinstance(value, bool):
                shown = "missing" if name not in data else f"{type(value).__name__} {value!r:.40}"
                raise _damaged(path, f"field {name!r} should be {kind.__name__}, is {shown}")
    manifest = Manifest.from_dict(data)
    _check_values(path, manifest)
    return manifest


# The backends' names (indexes.VECTOR_BACKENDS, TEXT_BACKENDS: test_faults_hardening pins
# them equal), kept here so that reading a manifest does not import the backends.
VECTOR_BACKEND_NAMES = ("hnsw", "usearch-i8", "usearch-f16")
TEXT_BACKEND_NAMES = ("tantivy",)


def _check_values(path: Path, manifest: Manifest) -> None:
    """Values of the right JSON type that no store can have. Unchecked, they failed every
    open, check and repair far from the file: an unknown backend as KeyError: 'faiss',
    index_options {"vector": {"M": "x"}} as a TypeError, embedding_dim 10**12 as numpy's
    'cannot reshape', a chunking {"max_tokens": "x"} as an InvalidInputError naming no file."""
    for field_name, name, known in (("vector_backend", manifest.vector_backend,
                                     VECTOR_BACKEND_NAMES),
                                    ("text_backend", manifest.text_backend, TEXT_BACKEND_NAMES)):
        if name not in known:
            raise IncompatibleStoreError(
                f"{path} names the {field_name} {name!r}, which this enginelib does not have "
                f"(it has {', '.join(map(repr, known))}): a newer enginelib or a hand edit wrote "
                f"it; upgrade enginelib, or put the file back from a copy of the folder",
                path=path)
    if not 1 <= manifest.embedding_dim <= MAX_DIM:
        raise _damaged(path, f"field 'embedding_dim' is {manifest.embedding_dim:,}, not a "
                       f"vector dimension (1..{MAX_DIM:,})")
    for field_name, check in (("index_options", check_index_options),
                              ("chunking", ChunkingConfig.from_dict)):
        try:
            check(getattr(manifest, field_name))  # the checks a new store's options pass
        except InvalidInputError as exc:
            raise _damaged(path, f"field {field_name!r}: {exc}") from exc


# What each field must be (JSON gives str, int, dict); a manifest we wrote always matches.
_FIELD_TYPES: dict[str, type] = {
    "embedding_model": str, "embedding_dim": int, "chunking": dict, "chunking_hash": str,
    "schema_version": int, "generation": int, "index_version": str, "format_version": int,
    "created_at": str, "vector_backend": str, "text_backend": str, "index_options": dict,
}
_REQUIRED = frozenset({"embedding_model", "embedding_dim", "chunking", "chunking_hash",
                       "schema_version"})


def _damaged(path: Path, what: str) -> StoreError:
    return StoreError(
        f"{path} is damaged: {what}. It says which model, dimension and chunking built the "
        f"store, and enginelib only ever replaces it whole: put it back from a copy of the "
        f"folder; a snapshot's manifest.json ({SNAPSHOTS_DIR}/NAME/manifest.json) has the same "
        f"settings unless a reindex came after that snapshot, and `enginelib repair` then "
        f"catches the generation up", path=path)
