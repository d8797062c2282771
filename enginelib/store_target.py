"""Module functions that take a store or its folder first (``maintenance.check``,
``snapshots.list_snapshots``...): the folder is checked as ``open()`` checks it, and the
file system's errors on it come out as enginelib errors.

Without this, ``check(None)`` was a TypeError from pathlib and ``list_snapshots`` of an
over-long name a raw OSError: these functions are public, beside the Store methods that
already had their edge (``store_guard``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from .core.store_core import StoreCore, require_folder
from .edge import guard
from .validation import check_store_path

P = ParamSpec("P")
R = TypeVar("R")

StoreLike = StoreCore | str | Path


def takes_store(func: Callable[P, R]) -> Callable[P, R]:
    """Check the first argument (an open store, or a store folder) and guard the call."""
    operation = func.__name__.replace("_", " ")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not args:
            return func(*args, **kwargs)  # let Python name the missing argument
        target, *rest = args
        if isinstance(target, StoreCore):
            # a closed store: check() failed an assert (an in-memory one, its folder gone),
            # list_snapshots() listed a closed disk store's, diff() looked its snapshots up
            target.require_open()
        else:
            target = check_store_path(target)
            require_folder(target)
        where = target.path if isinstance(target, StoreCore) else target
        with guard(operation, where):
            return func(target, *rest, **kwargs)  # type: ignore[arg-type]

    return wrapper  # type: ignore[return-value]
