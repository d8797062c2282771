"""Claims README.md makes about the command line, read from the commands a user runs."""

from __future__ import annotations

import json
import re
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


def test_every_command_takes_its_store_from_option_or_environment() -> None:
    """README: "Every command takes its store as `--store S` (or `$ENGINELIB_STORE`; default
    `./enginelib-store`). These six also accept it as their first argument"."""
    takes_store = {}
    for path, command in commands(main):
        if isinstance(command, click.Group):
            continue
        option = next(p for p in command.params if "--store" in p.opts)
        takes_store[path] = option.envvar
    assert set(takes_store.values()) == {"ENGINELIB_STORE"}
    first_argument = {path for path, command in commands(main)
                      if any(p.name == "store_argument" for p in command.params)}
    # update and delete read a first argument that is a store folder as the store (help text)
    assert first_argument | {("update",), ("delete",)} == {
        ("jobs",), ("list",), ("serve",), ("worker",), ("update",), ("delete",)}


def test_the_default_store_is_enginelib_store_in_the_current_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner(env={"ENGINELIB_STORE": None})
    assert runner.invoke(main, ["init", "--embedder", "hashing-32"]).exit_code == 0
    assert (tmp_path / "enginelib-store" / "manifest.json").is_file()
    for args in (["stats", "--json"], ["list", "--json"]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
    # the store's path is absolute (one opened by a relative path lost it at a chdir)
    stats = json.loads(runner.invoke(main, ["stats", "--json"]).output)
    assert stats["path"] == str(Path.cwd() / "enginelib-store")
    other = str(tmp_path / "other")
    assert runner.invoke(main, ["init", "--store", other, "--embedder", "hashing-32"]).exit_code == 0
    named = CliRunner(env={"ENGINELIB_STORE": other}).invoke(main, ["stats", "--json"])
    assert named.exit_code == 0 and json.loads(named.output)["path"] == other


def shell_pipeline(line: str) -> list[str]:
    """A command line cut at its shell pipes (` | `), not at a `[--a | --b]` of alternatives
    nor at `create|list`."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(line):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if line[at - 1:at + 2] == " | " and depth == 0:
            parts.append(line[start:at])
            start = at + 1
    return [*parts, line[start:]]


def documented_command_lines() -> Iterator[tuple[str, tuple[str, ...], list[str]]]:
    """Each `enginelib ...` line of README's and docs/postgres_export.md's bash blocks: the
    line, the command it names (`snapshot create|list|...` names each) and its --options."""
    root = Path(__file__).resolve().parent.parent
    for doc in ("README.md", "docs/postgres_export.md"):
        text = (root / doc).read_text(encoding="utf-8")
        for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
            for line in block.splitlines():
                for part in shell_pipeline(line.split("#", 1)[0]):
                    found = re.search(r"\benginelib\s+(.*)", part)
                    if found is None:
                        continue
                    words = found.group(1).split()
                    while words and words[0] in ("--wait", "--debug"):  # the group's options
                        words = words[2:] if words[0] == "--wait" else words[1:]
                    flags = re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", " ".join(words))
                    for first in words[0].split("|"):  # `snapshot create|list|...`: each
                        for second in words[1].split("|") if len(words) > 1 else [""]:
                            yield line, (first, second), flags


def test_every_option_a_documented_command_line_shows_exists() -> None:
    """README's command lines (`enginelib jobs --store S [--json] [--retry-dlq | ...]`) name
    only options their command has."""
    seen, wrong = 0, []
    for line, words, flags in documented_command_lines():
        command: click.Command = main
        for word in words:
            sub = command.get_command(click.Context(command), word) \
                if isinstance(command, click.Group) else None
            if sub is None:
                break
            command = sub
        assert command is not main, f"no such command: {line}"
        options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        wrong += [(line, flag) for flag in flags if flag not in options]
        seen += 1
    assert seen > 40 and wrong == []
