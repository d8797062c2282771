"""Shared click options, store opening and error mapping for every command."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from enginelib import EngineError, Store
from enginelib.embedder import Embedder

F = TypeVar("F", bound=Callable[..., Any])

ENV_STORE = "ENGINELIB_STORE"
ENV_EMBEDDER = "ENGINELIB_EMBEDDER"  # a built-in name; "hashing-64": no model (tests, demos)


def store_option(func: F) -> F:
    return click.option(
        "--store", "store_path", type=click.Path(path_type=Path), envvar=ENV_STORE,
        default=Path("enginelib-store"), show_default=True,
        help=f"Store folder (or ${ENV_STORE}).",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print stable JSON for programs.")(func)


def snapshot_option(func: F) -> F:
    return click.option("--snapshot", default=None, help="Read this snapshot instead of the live store.")(func)


def embedder_option(func: F) -> F:
    return click.option(
        "--embedder", "embedder_name", default=None, metavar="NAME",
        help="Embedder for a new store (e5-small, all-MiniLM-L6-v2, hashing-DIM); an existing "
             f"store uses the one it recorded (or ${ENV_EMBEDDER}).",
    )(func)


def embedder_from_env(name: str | None = None) -> Embedder | None:
    """The embedder the CLI was asked for: ``name`` (--embedder), else $ENGINELIB_EMBEDDER,
    else None (a new store gets the default, an existing one the model it recorded)."""
    spec = (name or os.environ.get(ENV_EMBEDDER, "")).strip()
    if not spec:
        return None
    from enginelib.embedders import make_embedder

    return make_embedder(spec)


def open_store(path: Path, *, read_only: bool = False, create: bool = False,
               snapshot: str | None = None, embedder: str | None = None) -> Store:
    import enginelib

    return enginelib.open(
        path, embedder=embedder_from_env(embedder), read_only=read_only, create=create,
        snapshot=snapshot,
    )


# Exit statuses, as grep has them: 0 found, 1 nothing relevant (a refused search),
# 2 usage or library error.
EXIT_NOTHING_RELEVANT = 1
EXIT_ERROR = 2


class CommandError(click.ClickException):
    """`Error: ...` on stderr and exit status 2 (click's usage errors exit 2 as well)."""

    exit_code = EXIT_ERROR


def handle_errors(func: F) -> F:
    """Library errors become `Error: ...` and exit 2, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except EngineError as exc:
            raise CommandError(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=_json_default))


def emit_mapping(data: dict[str, Any], as_json: bool) -> None:
    """A flat record as JSON for programs, or aligned ``key  value`` lines for people."""
    if as_json:
        emit_json(data)
        return
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        click.echo(f"{key:<{width}}  {value}")


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def parse_key_values(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint=what)
        key, value = pair.split("=", 1)
        if not key.strip():
            raise click.BadParameter(f"{pair!r} has an empty key", param_hint=what)
        result[key.strip()] = value
    return result
