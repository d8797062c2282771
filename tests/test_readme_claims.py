"""Claims README.md makes about the command line, read from the commands a user runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
from click.testing import CliRunner

from enginelib.cli.main import main

# Commands that change the store and have nothing to report but what they did: the rest
# read (or report what they wrote), and README says `--json` works on every one of them.
NO_JSON = {("init",), ("delete",), ("serve",), ("export",), ("snapshot",),
           ("snapshot", "delete"), ("snapshot", "pin")}


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and subcommand, as `enginelib --help` lists them (loaded lazily)."""
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def test_every_read_command_takes_json() -> None:
    """README: "`--json` on every read command prints stable snake_case JSON"."""
    lacking = [" ".join(path) for path, command in commands(main)
               if path not in NO_JSON and "--json" not in {o for p in command.params for o in p.opts}]
    assert lacking == []


def test_snapshot_retention_prints_json(tmp_path: Path) -> None:
    runner = CliRunner()
    store = str(tmp_path / "s")
    assert runner.invoke(main, ["init", "--store", store, "--embedder", "hashing-32"]).exit_code == 0
    shown = runner.invoke(main, ["snapshot", "retention", "--store", store, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output) == {"keep": 3, "removed": []}  # README: the newest 3 by default
    for name in ("a", "b"):
        assert runner.invoke(main, ["snapshot", "create", name, "--store", store]).exit_code == 0
    changed = runner.invoke(main, ["snapshot", "retention", "1", "--store", store, "--json"])
    assert changed.exit_code == 0, changed.output
    assert json.loads(changed.output) == {"keep": 1, "removed": ["a"]}
