"""What a built-in model's vectors depend on besides the text: its packages and its files.

Vectors cached outside a store (the benchmarks' vector cache) are keyed on the embedder's
name, which stays the same when the model behind it changes (a package upgraded, model
files replaced); this fingerprint changes then.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Bytes hashed at each end of a model file: enough to tell two weight files apart (their
# headers and last tensors differ), cheap on a 100 MB one where hashing it all takes ~0.3 s.
_ENDS = 1 << 16


def model_fingerprint(packages: Sequence[str], folder: Path | None) -> dict[str, Any]:
    """The installed versions of ``packages`` (None where missing) and, for each file under
    ``folder`` (compiled caches aside), its size and a hash of its ends. Plain JSON."""
    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    files: dict[str, list[Any]] = {}
    if folder is not None and folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                files[path.relative_to(folder).as_posix()] = _file_print(path)
    return {"packages": versions, "files": files}


def fingerprint_of(embedder: Any) -> dict[str, Any] | None:
    """An embedder's ``model_fingerprint()``; None for one without (a caller's own model,
    the hashing embedder, whose vectors come from enginelib's code alone)."""
    own = getattr(embedder, "model_fingerprint", None)
    return own() if callable(own) else None


def package_folder(module: str) -> Path | None:
    """Where an installed package's files are, found without importing it (no model loads)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(places[0]) if places else None


def _file_print(path: Path) -> list[Any]:
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(_ENDS))
        if size > 2 * _ENDS:
            handle.seek(size - _ENDS)
        digest.update(handle.read())
    return [size, digest.hexdigest()[:16]]
