"""``-`` for a file option: read the input from standard input (``... | enginelib search -``).

Only an explicit ``-`` reads it: a path naming a pipe or a device is still refused unopened
(``enginelib.input_files``). A terminal on standard input is refused too: the command would
sit waiting for typing nobody meant to do. A file named ``-`` is given as ``./-``.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import BinaryIO, TextIO

import click

STDIN = "-"


def is_stdin(path: Path | str | None) -> bool:
    return path is not None and str(path) == STDIN


def stdin_binary(option: str) -> BinaryIO:
    """Standard input as bytes, for ``option`` given as ``-``."""
    if sys.stdin is None:  # started with its standard input closed
        raise click.UsageError(f"{option} -: there is no standard input to read")
    stream = sys.stdin.buffer  # CliRunner's too: it replaces sys.stdin
    if stream.isatty():
        raise click.UsageError(f"{option} -: standard input is a terminal: pipe the input in "
                               f"(`... | enginelib ... {option} -`) or name a file")
    return stream


def stdin_text(option: str) -> TextIO:
    """Standard input as UTF-8 text, a byte order mark dropped (as files are read); not
    closed by its reader: the stream stays the process's."""
    return _Unclosed(stdin_binary(option), encoding="utf-8-sig")


class _Unclosed(io.TextIOWrapper):
    """A text wrapper whose close leaves the binary stream under it open."""

    def close(self) -> None:
        try:
            self.detach()
        except ValueError:  # detached already
            pass
