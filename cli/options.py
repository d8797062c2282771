"""Shared click options, store opening and error mapping for every command."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from click.core import ParameterSource

from enginelib import EngineError, Store
from enginelib.embedder import Embedder
from enginelib.errors import StoreLockedError
from enginelib.jobs.times import utc_iso
from enginelib.search.request import (
    DEFAULTS,
    INTEGER_TEXT,
    NUMBER_TEXT,
    OPTIONS,
    from_text,
    is_flag,
    option_spec,
)
from enginelib.text import excerpt
from enginelib.types import validate_truth_level
from enginelib.validation import CONTROL_CHARS

F = TypeVar("F", bound=Callable[..., Any])

class GivenPath(click.Path):
    """``click.Path`` refusing an empty string, and reading a leading ``~`` as the shell does.

    ``Path("")`` is the current folder, so an unset shell variable (``--store "$STORE"``,
    ``ingest "$DOCS"``) opened, ingested or wrote over whatever folder the command happened to
    run in. The shell expands ``~`` only at the start of a word, so ``--store=~/st`` and
    ``ENGINELIB_STORE='~/st'`` came in as is: a folder named ``~`` was made here, and the
    command said "initialized store at ~/st"."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value == "":
            here = ", or . for the current folder" if self.dir_okay else ""
            self.fail(f"is empty (an unset shell variable?): give a path{here}", param, ctx)
        if isinstance(value, str) and value.startswith("~"):
            expanded = os.path.expanduser(value)
            if expanded.startswith("~"):
                self.fail(f"{value!r} starts with '~', which names no home folder here: give "
                          f"the full path (or ./{value} for a folder named so)", param, ctx)
            value = expanded
        return super().convert(value, param, ctx)


def truth_level_list(value: str | None) -> list[str] | None:
    """``--truth-level L1,L2`` as a list; None when not given. Empty or blank is a usage error,
    as in search: it would match nothing, or silently mean every level."""
    if value is None:
        return None
    levels = [level.strip() for level in value.split(",") if level.strip()]
    if not levels:
        raise click.BadParameter(f"{value!r} names no level: pass e.g. L1,L2",
                                 param_hint="'--truth-level'")
    return [validate_truth_level(level) for level in levels]


def not_blank(instead: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """A click callback refusing a blank value, where taking it as "not given" would silently
    choose for the user (``--embedder "$MODEL"`` with MODEL unset)."""

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise click.BadParameter(f"is empty (an unset shell variable?): {instead}", ctx, param)
        return value

    return check


ENV_STORE = "ENGINELIB_STORE"
ENV_EMBEDDER = "ENGINELIB_EMBEDDER"  # a built-in name; "hashing-64": no model (tests, demos)
ENV_WAIT = "ENGINELIB_WAIT"  # seconds a writing command waits for another writer


def store_option(func: F) -> F:
    return click.option(
        "--store", "store_path", type=GivenPath(path_type=Path), envvar=ENV_STORE,
        default=Path("enginelib-store"), show_default=True,
        help=f"Store folder (or ${ENV_STORE}).",
    )(func)


def store_option_or_argument(func: F) -> F:
    """``--store PATH`` as every command takes it, or the store as the first argument (the
    older form of list, jobs, worker, serve, update and delete); the command gets
    ``store_path``. Naming two different stores is a usage error."""

    @functools.wraps(func)
    def wrapper(*args: Any, store_option: Path | None, store_argument: Path | None,
                **kwargs: Any) -> Any:
        kwargs["store_path"] = pick_store(store_option, store_argument)
        return func(*args, **kwargs)

    wrapper = click.argument("store_argument", required=False, default=None,
                             type=GivenPath(path_type=Path), metavar="[STORE]")(wrapper)
    return store_flag(wrapper)  # type: ignore[no-any-return]


def store_flag(func: Any) -> Any:
    """``--store`` without a default (``pick_store`` / ``store_and_ids`` apply it)."""
    return click.option(
        "--store", "store_option", type=GivenPath(path_type=Path), envvar=ENV_STORE,
        default=None, help=f"Store folder (or ${ENV_STORE}; default ./enginelib-store).",
    )(func)


DEFAULT_STORE = Path("enginelib-store")


def pick_store(option: Path | None, argument: Path | None) -> Path:
    """The store a command works on: ``--store`` (or $ENGINELIB_STORE), else the first
    argument, else ./enginelib-store."""
    if option is not None and argument is not None and Path(option) != Path(argument):
        raise click.UsageError(f"two stores named: --store {option} and {argument}; name one")
    return option or argument or DEFAULT_STORE


def store_and_ids(option: Path | None, values: tuple[str, ...]) -> tuple[Path, tuple[str, ...]]:
    """Split ``update``/``delete`` arguments: with ``--store`` every value is a document id;
    without, a first value that is a store folder is the store (the older form)."""
    if option is None and len(values) > 1 and (Path(values[0]) / "manifest.json").is_file():
        return Path(values[0]), values[1:]
    return option or DEFAULT_STORE, values


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print stable JSON for programs.")(func)


def snapshot_option(func: F) -> F:
    return click.option("--snapshot", default=None, help="Read this snapshot instead of the live store.")(func)


def embedder_option(func: F) -> F:
    return click.option(
        "--embedder", "embedder_name", default=None, metavar="NAME",
        callback=not_blank("name an embedder, or leave the option out for the store's own"),
        help="Embedder for a new store (e5-small, all-MiniLM-L6-v2, e5-minilm, hashing-DIM); an existing "
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


def vector_dim_option(func: F) -> F:
    return click.option(
        "--vector-dim", type=Integer(min=1), default=None, metavar="N",
        help="Create the store without a model, for vectors you bring (N dimensions): records "
        "carry a `vector` field, searches use --vector-file.",
    )(func)


def open_store(
    path: Path, *, read_only: bool = False, create: bool = False, snapshot: str | None = None,
    vector_dim: int | None = None, embedder: str | None = None,
) -> Store:
    import enginelib

    if str(path) == ":memory:":
        raise click.UsageError(
            "--store :memory: would vanish when this command ends; the command line needs a "
            "store folder (use enginelib.memory() from Python)"
        )
    chosen = embedder_from_env(embedder)
    if vector_dim is not None:
        from enginelib.own_vectors import ExternalVectors

        if chosen is not None:
            raise click.UsageError(
                f"--vector-dim and --embedder (or ${ENV_EMBEDDER}) both choose the embedder")
        chosen = ExternalVectors(vector_dim)
    return enginelib.open(
        path, embedder=chosen, read_only=read_only, create=create, snapshot=snapshot
    )


def writer_wait(given: float | None) -> float:
    """Seconds a writing command waits for the store's writer lock: ``enginelib --wait``,
    else $ENGINELIB_WAIT, else 0."""
    if given is not None:
        return float(given)
    text = os.environ.get(ENV_WAIT, "").strip()
    if not text:
        return 0.0
    if not is_number_text(text, NUMBER_TEXT):  # float() took '1_0' and '١٠' as 10
        raise click.UsageError(f"${ENV_WAIT} must be a number of seconds in digits 0-9, got "
                               f"{excerpt(text)}")
    seconds = float(text)
    if not 0 <= seconds <= 86400 or seconds != seconds:
        raise click.UsageError(f"${ENV_WAIT} must be within 0..86400 seconds, got {text!r}")
    return seconds


# Exit statuses, as grep has them: 0 found, 1 nothing relevant (a refused search),
# 2 usage or library error.
EXIT_NOTHING_RELEVANT = 1
EXIT_ERROR = 2
ENV_DEBUG = "ENGINELIB_DEBUG"


# Controls that move nothing on a page: tab and newline stay in a text printed as lines.
_CONTROL_BUT_LAYOUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: object, *, lines: bool = False) -> str:
    """``text`` for one terminal line: control characters shown escaped (a file named with a
    newline printed as two lines, an escape sequence recoloured the terminal). Everything a
    document brings (title, heading, quote, chunk, tags, metadata keys) goes through here: a
    document given through the Python API keeps its ESC and C1 bytes, and printed raw an OSC
    52 sequence writes the user's clipboard and a CSI one clears the screen. ``lines`` keeps
    tab and newline, for a text printed as the lines it has."""
    pattern = _CONTROL_BUT_LAYOUT if lines else CONTROL_CHARS
    return pattern.sub(lambda m: repr(m.group())[1:-1], str(text))


# Longest number text read: int() of 4,301+ digits is a ValueError that click quoted whole.
MAX_NUMBER_CHARS = 400


def is_number_text(text: str, pattern: re.Pattern[str]) -> bool:
    """``text`` is a number written in ASCII digits (``INTEGER_TEXT`` or ``NUMBER_TEXT``), as
    the API reads a query string's. Python's int() and float(), which click's int and float
    types are, also take '1_0' as 10 and Arabic-Indic or full-width digits as ASCII ones, so a
    typo or a pasted value was read as some other number."""
    return len(text) <= MAX_NUMBER_CHARS and pattern.fullmatch(text.strip()) is not None


class Integer(click.IntRange):
    """Every integer option's type: click's IntRange (no bounds given: any integer) reading
    digits 0-9 alone (``is_number_text``); a test holds every command to it."""

    def _describe_range(self) -> str:
        # click describes a range without bounds as "x<=None" in --help
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not is_number_text(value, INTEGER_TEXT):
            self.fail(f"{excerpt(value)} is not a valid integer: write it in digits 0-9",
                      param, ctx)
        return super().convert(value, param, ctx)


class FiniteRange(click.FloatRange):
    """Every float option's type: a float range reading digits 0-9 alone (``is_number_text``)
    that also refuses nan and inf: click's range lets nan through (every comparison with it is
    false) and an infinite lease overflowed deep inside."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not is_number_text(value, NUMBER_TEXT):
            self.fail(f"{excerpt(value)} is not a valid float: write it in digits 0-9",
                      param, ctx)
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class CommandError(click.ClickException):
    """`Error: ...` on stderr and exit status 2 (click's usage errors exit 2 as well)."""

    exit_code = EXIT_ERROR


def debug_enabled() -> bool:
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    flag = bool(root.params.get("debug")) if root is not None else False
    return flag or os.environ.get(ENV_DEBUG, "") not in ("", "0")


def handle_errors(func: F) -> F:
    """Any error becomes `Error: ...` and exit 2, never a traceback (unless --debug)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            _reader_went_away()
        except KeyboardInterrupt as exc:
            if debug_enabled():
                raise
            _interrupted(exc)
        except EngineError as exc:
            if debug_enabled():
                raise
            message = str(exc)
            if isinstance(exc, StoreLockedError) and message.startswith("another process is "
                                                                        "writing to") \
                    and "(waited" not in message:  # the writer lock, and nobody asked to wait
                message += "; `enginelib --wait SECONDS ...` waits for it"
            raise CommandError(message) from exc
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)) or debug_enabled():
                raise
            from enginelib.edge import as_interrupt, interrupted, map_error

            if interrupted(exc):  # DuckDB's words for a Ctrl-C (a query it stopped)
                _interrupted(as_interrupt(exc))

            mapped = map_error(exc, "the command", None)
            message = str(mapped) if mapped is not None else (
                f"unexpected {type(exc).__name__}: {exc} (this is a bug in enginelib: run the "
                "command again with --debug and report the traceback)"
            )
            raise CommandError(message) from exc

    return wrapper  # type: ignore[return-value]


# What a shell reports for a command stopped by Ctrl-C (128 + SIGINT); click's own "Aborted!"
# exits 1, which our commands use for "nothing relevant".
INTERRUPTED_EXIT = 130


def _interrupted(exc: KeyboardInterrupt) -> NoReturn:
    """Ctrl-C: say so, and what was already done (an ingest notes its committed documents);
    every write is crash-safe, so the store is as the last complete commit left it."""
    click.echo("interrupted: the store keeps what was committed before", err=True)
    for note in getattr(exc, "__notes__", ()):
        click.echo(f"  {note.removeprefix('enginelib: ')}", err=True)
    sys.exit(INTERRUPTED_EXIT)


# What a shell reports for a writer its reader stopped (128 + SIGPIPE): `enginelib list |
# head` ends quietly, as `cat | head` does, not with "Error: ... Broken pipe".
BROKEN_PIPE_EXIT = 141


def _reader_went_away() -> NoReturn:
    # stdout is a dead pipe: point it at /dev/null so the interpreter's final flush does
    # not raise again on the way out
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(BROKEN_PIPE_EXIT)


# A lone surrogate: how Python holds a byte of a file name that is not UTF-8 (os.fsdecode's
# surrogateescape). Written raw, it is that byte (invalid UTF-8) or a UnicodeEncodeError.
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def json_text(data: Any) -> str:
    """``data`` as JSON that is valid UTF-8 whatever it holds: a lone surrogate (a file named
    in another encoding) is written as its ``\\udcXX`` escape, which Python's json reads back
    as the same string (os.fsencode gives the file's own bytes), where it was written raw, as
    the byte of the name: JSON that strict UTF-8 readers refuse, or, with a strict stdout, an
    "unexpected UnicodeEncodeError" after the command had done its work."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=_json_default)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# A JSON answer is written in pieces this long (characters: at most 16 KiB of UTF-8).
JSON_PIECE_CHARS = 4096


def emit_json(data: Any) -> None:
    # In pieces, not one write: when the reader of a pipe leaves in the middle of a single
    # large write (`enginelib list --json | head -c 100`), Python's buffered stdout returns
    # the part the pipe took and drops the rest without an error, so the command ended with
    # status 0 and its output cut; the next piece raises BrokenPipeError (status 141).
    text = json_text(data) + "\n"
    for start in range(0, len(text), JSON_PIECE_CHARS):
        click.echo(text[start:start + JSON_PIECE_CHARS], nl=False)


def emit_mapping(data: dict[str, Any], as_json: bool) -> None:
    """A flat record as JSON for programs, or aligned ``key  value`` lines for people."""
    if as_json:
        emit_json(data)
        return
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        click.echo(f"{key:<{width}}  {value}")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        # the catalog's times are naive UTC: said so, as `serve`'s API says them
        return utc_iso(value)
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


# -- search options, generated from the request type (enginelib/search/request.py) ----------

class RequestNumber(click.ParamType):
    """A search option's number read as the API reads a query string's (``from_text``):
    ASCII digits only. click's int and float are Python's, which take ``1_0`` as 10 and
    Arabic-Indic or full-width digits as ASCII ones: ``--limit 1_0`` searched for 10 hits
    where ``?limit=1_0`` was refused."""

    def __init__(self, option: str) -> None:
        self.option = option
        self.name = "integer" if option_spec(option).kind is int else "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):  # a default, already a number
            return value
        try:
            return from_text(self.option, value)
        except EngineError as exc:
            self.fail(str(exc), param, ctx)


def cli_default(name: str) -> Any:
    """An option's default as the command line spells it (truth levels: ``L1,L2``)."""
    value = DEFAULTS[name]
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return value


def search_request_options(func: F) -> F:
    """One click option per search option that has a command-line flag, in the request's
    order, named for the request field it sets; defaults and help come from the request."""
    for name in reversed(list(OPTIONS)):
        spec = option_spec(name)
        if spec.cli is None:
            continue
        help_text = spec.cli_help or spec.help
        if is_flag(name):
            decorator = click.option(spec.cli, name, is_flag=True, default=False, help=help_text)
        elif spec.multiple:
            decorator = click.option(spec.cli, name, multiple=True, help=help_text)
        else:
            default = cli_default(name)
            shown: bool | str = default is not None
            if spec.preset:  # left out, the preset's value applies (see given_search_options)
                shown = f"{default if default is not None else 'none'}, or the preset's"
            decorator = click.option(
                spec.cli, name, default=default, show_default=shown,
                help=help_text,
                type=click.Choice(spec.choices) if spec.choices
                else RequestNumber(name) if spec.kind in (int, float) else None,
            )
        func = decorator(func)
    return func


def given_search_options(params: dict[str, Any]) -> dict[str, Any]:
    """The search options the user typed (a flag: the value it sets). Options left at their
    default are not passed: the request's default, or a preset's value, applies."""
    ctx = click.get_current_context()
    given: dict[str, Any] = {}
    for name, value in params.items():
        spec = option_spec(name)
        source = ctx.get_parameter_source(name)
        if source in (None, ParameterSource.DEFAULT):
            continue
        if is_flag(name):
            if value:
                given[name] = spec.flag
        elif spec.multiple:
            if value:
                given[name] = value
        elif isinstance(value, str) and spec.parse is not None:
            given[name] = from_text(name, value)
        else:
            given[name] = value
    return given
