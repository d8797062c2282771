"""Every command's every argument, walked from the click tree rather than listed by hand: hostile
values end as exit 0, 1 or 2 with a message, never a raw exception or a traceback, and an empty
path is refused instead of meaning the folder the command runs in."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from enginelib.cli.main import main
from enginelib.cli.options import GivenPath
from tests.reporting import say

ENV = {"ENGINELIB_EMBEDDER": "hashing-32"}
# Long-running commands: they get only values that must fail before they start.
SERVERS = {"serve", "worker"}


def commands(group: click.Group = main, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


def valued_params(command: click.Command) -> list[click.Parameter]:
    return [p for p in command.params if not (isinstance(p, click.Option) and p.is_flag)]


def base_args(path: tuple[str, ...], folder: Path) -> list[str]:
    """What each command needs besides the argument under test."""
    corpus = str(folder / "corpus.md")
    return {
        ("search",): ["brake"], ("show",): ["corpus.md"], ("delete",): ["corpus.md"],
        ("update",): ["corpus.md", "--tag", "x"], ("history",): ["corpus.md"],
        ("ingest",): [corpus], ("snapshot", "create"): ["s1"], ("snapshot", "delete"): ["s1"],
        ("snapshot", "pin"): ["s1"], ("snapshot", "restore"): ["s1"], ("snapshot", "show"): ["s1"],
        ("snapshot", "diff"): ["s1", "s1"], ("snapshot", "retention"): ["3"],
        ("eval",): ["--queries", str(folder / "q.jsonl"), "--qrels", str(folder / "qrels.tsv")],
        ("export", "postgres"): ["--sql-file", str(folder / "out.sql")],
        ("export", "verify"): ["--dsn", "postgresql://nobody@127.0.0.1:1/x"],
    }.get(path, [])


def invocation(path: tuple[str, ...], param: click.Parameter, value: str, store: Path,
               folder: Path) -> list[str]:
    base = base_args(path, folder)
    if param.name == "store_argument":
        return [*path, value, *base]
    if param.name in ("store_path", "store_option"):
        return [*path, *base, "--store", value]
    if isinstance(param, click.Option):
        return [*path, *base, "--store", str(store), param.opts[0], value]
    # A positional argument takes the place of the command's own.
    return [*path, "--store", str(store), value, *[a for a in base if a.startswith("--")]]


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner(env=ENV).invoke(main, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args}: raw {result.exception!r}")
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cliargs")
    (folder / "corpus.md").write_text("# Brakes\n\nBrake pads wear and rotors warp under heat.\n\n"
                                      "## Fluid\n\nBrake fluid absorbs water.\n", encoding="utf-8")
    (folder / "q.jsonl").write_text('{"_id": "1", "text": "brake pads"}\n', encoding="utf-8")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n1\tcorpus.md\t1\n", encoding="utf-8")
    code, output = run(["ingest", str(folder / "corpus.md"), "--store", str(folder / "template"),
                        "--no-progress"])
    assert code == 0, output
    return folder


def test_every_path_parameter_is_a_given_path() -> None:
    # A plain click.Path takes "" as the current folder; a new option must not bring that back.
    plain = [(" ".join(path), p.name) for path, command in commands() for p in command.params
             if isinstance(p.type, click.Path) and not isinstance(p.type, GivenPath)]
    assert plain == []


def test_an_empty_path_is_refused_and_the_current_folder_left_alone(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `ingest "$DOCS"` with DOCS unset ingested the folder the shell stood in; `--store ""`
    # opened (or created) a store there, `--sql-file ""` tried to write over it.
    here = tmp_path / "here"
    here.mkdir()
    (here / "notes.md").write_text("# Private\n\nNot for the store.\n", encoding="utf-8")
    monkeypatch.chdir(here)
    store = tmp_path / "store"
    shutil.copytree(folder / "template", store)
    cases = [(path, p) for path, command in commands() for p in command.params
             if isinstance(p.type, click.Path)]
    assert len(cases) >= 20
    for path, param in cases:
        code, output = run(invocation(path, param, "", store, folder))
        assert code == 2 and "is empty" in output, (path, param.name, output[-500:])
    assert sorted(p.name for p in here.iterdir()) == ["notes.md"]


def test_a_path_starting_with_a_tilde_is_the_home_folder_as_in_the_shell(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the shell expands ~ only at a word's start: `init --store=~/st` (and ENGINELIB_STORE='~/st')
    # made a folder named '~' in the current one and said "initialized store at ~/st"
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    code, output = run(["init", "--store=~/st"])
    assert code == 0 and output == f"initialized store at {home / 'st'}\n"
    shown = CliRunner(env={**ENV, "ENGINELIB_STORE": "~/st"}).invoke(main, ["stats", "--json"])
    assert shown.exit_code == 0 and '"path": "' + str(home / "st") + '"' in shown.output
    code, output = run(["ingest", "~/notes.md", "--store", str(home / "st")])
    assert code == 2 and str(home / "notes.md") in output, output
    code, output = run(["init", "--store", "~nobody-of-that-name/st"])
    assert code == 2 and "names no home folder here" in output, output
    assert list(work.iterdir()) == [] and [p.name for p in home.iterdir()] == ["st"]


@pytest.mark.parametrize("args, says", [
    (["init", "--embedder", ""], "--embedder"),
    # served with no token at all; the bad port after it stops a regression from serving
    (["serve", "--token", " ", "--port", "70000"], "'--token': is empty"),
    (["ingest", "corpus.md", "--embedder", " "], "--embedder"),
    (["list", "--truth-level", ""], "names no level"),
    (["list", "--truth-level", " , "], "names no level"),
    (["list", "--truth-level", "L9"], "unknown truth level"),
    (["eval", "--queries", "q.jsonl", "--qrels", "qrels.tsv", "--truth-level", " "], "names no level"),
    (["export", "postgres", "--sql-file", "out.sql", "--schema", "a\nb"], "control characters"),
    (["export", "postgres", "--sql-file", "out.sql", "--schema", " enginelib"], "spaces at its ends"),
])
def test_blank_names_are_refused_rather_than_read_as_the_default(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], says: str) -> None:
    # A blank --embedder gave the default model, a blank --truth-level every level (eval said
    # "as asked"), a schema named "\n" was exported.
    store = tmp_path / "store"
    shutil.copytree(folder / "template", store)
    monkeypatch.chdir(folder)
    command = args[:2] if args[0] == "export" else args[:1]
    code, output = run([*command, "--store", str(store), *args[len(command):]])
    assert code == 2 and says in output, output[-500:]
    assert not (folder / "out.sql").exists()


# Numbers Python's int() and float() (click's int and float types) read, and the API's query
# strings refuse: an underscore, Arabic-Indic, full-width and Devanagari digits.
NOT_DIGITS_0_9 = ["1_0", "\u0661\u0660", "\uff11\uff10", "\u0967", "1_0.5"]

HOSTILE = {
    "Path": ["{missing}", "{folder}", "{file}", "/dev/null", "a\nb", "x" * 5000, "\udcff"],
    # every integer option (cli/options.Integer), in digits 0-9 only
    "Integer": ["-1", "0", str(10**30), "abc", "1.5", "9" * 5000, *NOT_DIGITS_0_9],
    # a search option's number (integer or float), in digits 0-9 only
    "RequestNumber": ["-1", "0", str(10**30), "abc", "1.5", "nan", "1e309", *NOT_DIGITS_0_9],
    # every float option
    "FiniteRange": ["nan", "inf", "-inf", "-1", "0", "1e309", *NOT_DIGITS_0_9],
    "StringParamType": ["", " ", "\n", "y" * 100_000, "'; DROP TABLE chunks; --", "../../etc/passwd",
                        "\udcff", "\x1b[31m"],
    "Choice": ["bogus", ""],
}


@pytest.mark.slow
def test_hostile_values_for_every_argument_of_every_command(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    monkeypatch.chdir(tmp_path)  # relative names ("a\nb") land here
    a_file = tmp_path / "file.md"
    outcomes: Counter[str] = Counter()
    n = 0
    for path, command in commands():
        if path[0] in SERVERS or path == ("jobs",):
            continue  # they run until stopped; their arguments have their own tests
        for param in valued_params(command):
            kind = "Path" if isinstance(param.type, click.Path) else type(param.type).__name__
            for value in HOSTILE[kind]:
                n += 1
                store = tmp_path / f"s{n}"
                shutil.copytree(folder / "template", store)
                a_file.write_text("# Notes\n\nBrake notes.\n", encoding="utf-8")
                value = value.format(missing=tmp_path / "no" / "such", folder=tmp_path, file=a_file)
                code, output = run(invocation(path, param, value, store, folder))
                where = (" ".join(path), param.name, value[:40], output[-400:])
                assert code in (0, 1, 2) and "Traceback" not in output, where
                assert code != 2 or "Error" in output, where
                outcomes[f"exit {code}"] += 1
                shutil.rmtree(store)
    say(request, f"{n} hostile arguments over every command: "
        + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    assert n > 500


def numeric_params() -> list[tuple[tuple[str, ...], click.Parameter]]:
    """Every number a command takes: click's int and float types (and their ranges), and the
    search options' own type. The root group's ``--wait`` comes as the path ``()``."""
    group = [((), p) for p in main.params]
    return [(path, p) for path, p in [*group, *((path, p) for path, command in commands()
                                                for p in command.params)]
            if isinstance(p.type, (click.types.IntParamType, click.types.FloatParamType))
            or type(p.type).__name__ == "RequestNumber"]


def test_every_numeric_option_of_every_command_reads_digits_0_9_only(
        folder: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # Only search's options read numbers as the API does: `list --limit 1_0`, `jobs --offset
    # ١٠`, `snapshot retention １０`, `reindex --max-tokens 1_0`, `serve --port ８０８０`,
    # `enginelib --wait 1_0` were read as 10 (Python's int() and float()).
    store = tmp_path / "store"
    shutil.copytree(folder / "template", store)
    cases = numeric_params()
    assert len(cases) >= 30, cases
    for path, param in cases:
        for value in NOT_DIGITS_0_9:
            if path == ():
                args = ["--wait", value, "stats", "--store", str(store)]
            else:
                args = invocation(path, param, value, store, folder)
            if path[:1] in (("serve",), ("worker",)):
                # were the value taken, a bad value after it stops the server before it runs
                stopper = "--poll" if param.name == "time_unit" else "--time-unit"
                args += [stopper, "0"]
            code, output = run(args)
            assert code == 2 and "digits 0-9" in output, (path, param.name, value, output[-400:])
    say(request, f"{len(cases)} numeric options x {len(NOT_DIGITS_0_9)} numbers not in digits "
        "0-9, each refused")


@pytest.mark.parametrize("value", ["1_0", "\u0661\u0660", "\uff11\uff10"])
def test_the_wait_variable_reads_digits_0_9_only(folder: Path, tmp_path: Path, value: str) -> None:
    store = tmp_path / "store"
    shutil.copytree(folder / "template", store)
    result = CliRunner(env={**ENV, "ENGINELIB_WAIT": value}).invoke(
        main, ["stats", "--store", str(store)])
    assert result.exit_code == 2
    assert "$ENGINELIB_WAIT must be a number of seconds in digits 0-9" in result.output


def test_numbers_in_digits_0_9_read_as_before(folder: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(folder / "template", store)
    code, output = run(["--wait", " 2.5 ", "list", "--store", str(store), "--limit", " 1 ",
                        "--offset", "+0"])
    assert code == 0 and output.startswith("corpus.md"), output
    code, output = run(["snapshot", "retention", "--store", str(store), "4"])
    assert (code, output) == (0, "keep 4 newest unpinned snapshots\n")
    code, output = run(["list", "--store", str(store), "--limit", "9" * 5000])
    assert code == 2 and "(5,000 characters) is not a valid integer" in output
    assert len(output) < 1000
