"""Query vectors given on the command line (``--vector-file``, ``-`` for standard input)
for stores without a model."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from enginelib import InvalidVectorError, Store
from enginelib.input_files import open_regular
from enginelib.validation import MAX_DIM, real_array

from .stdin_input import is_stdin, stdin_binary

# One vector of at most MAX_DIM numbers, as JSON (about 25 bytes a number) or .npy: a larger
# file is not a query vector, and reading it whole could take all the memory there is.
MAX_VECTOR_FILE_BYTES = 64 * MAX_DIM + 4096


# How an .npy file starts: on standard input there is no file name to go by.
NPY_MAGIC = b"\x93NUMPY"


def load_vector_file(path: Path) -> np.ndarray:
    """One query vector from a ``.npy`` file or a JSON list of numbers (``[[...]]`` too);
    ``-``: from standard input, with the same limits (.npy told by its magic bytes)."""
    try:
        if is_stdin(path):
            data = stdin_binary("--vector-file").read(MAX_VECTOR_FILE_BYTES + 1)
        else:
            with open_regular(path) as handle:  # a pipe or device is refused, never waited on
                data = handle.read(MAX_VECTOR_FILE_BYTES + 1)
    except OSError as exc:
        raise InvalidVectorError(f"--vector-file {path}: cannot read it: "
                                 f"{exc.strerror or exc}") from exc
    if len(data) > MAX_VECTOR_FILE_BYTES:
        raise InvalidVectorError(
            f"--vector-file {path} is over {MAX_VECTOR_FILE_BYTES} bytes: a query vector has at "
            f"most {MAX_DIM} numbers; give one vector")
    npy = data.startswith(NPY_MAGIC) if is_stdin(path) else path.suffix.lower() == ".npy"
    try:
        if npy:
            raw = np.load(io.BytesIO(data), allow_pickle=False)
        else:
            raw = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # RecursionError: [[[[... nested too deeply
        raise InvalidVectorError(
            f"--vector-file {path}: cannot read a vector ({exc}); give a JSON list of numbers "
            "or a .npy array"
        ) from exc
    if not isinstance(raw, (list, np.ndarray)):
        raise InvalidVectorError(f"--vector-file {path}: expected a list of numbers")
    # the Python API's rule: JSON text ("1.5") and true were read as numbers, an integer
    # past float's range stopped the command with a raw OverflowError
    array = real_array(raw, f"--vector-file {path}: the list")
    if array.ndim == 2 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 1 or array.size == 0:
        raise InvalidVectorError(
            f"--vector-file {path}: expected one vector (a flat list of numbers), got shape "
            f"{array.shape}"
        )
    return array


def check_dimension(vector: np.ndarray, store: Store, path: Path) -> np.ndarray:
    dim = store.manifest.embedding_dim
    if vector.size != dim:
        raise InvalidVectorError(
            f"--vector-file {path} holds {vector.size} numbers; this store takes vectors of "
            f"{dim} ({store.manifest.embedding_model}): embed the query with the model the "
            "store's vectors came from"
        )
    return vector
