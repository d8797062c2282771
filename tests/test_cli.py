"""The CLI through click's CliRunner: exact output shapes, JSON fields, errors, help texts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from enginelib.cli.main import main


@pytest.fixture()
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    return CliRunner()


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "brakes.md").write_text(
        "# Brake pads\n\nReplace pads 1K0615301M when thinner than 2 mm.\n\n"
        "## Torque\n\nCaliper bolts take 28 Nm.\n", encoding="utf-8")
    (folder / "gdpr.md").write_text(
        "# Right to erasure\n\nThe data subject has the right to obtain erasure of personal data.\n",
        encoding="utf-8")
    (folder / "notes.txt").write_text("Plain text about rotors and discs.\n", encoding="utf-8")
    return folder


def invoke(runner: CliRunner, *args: str) -> click.testing.Result:
    result = runner.invoke(main, list(args), catch_exceptions=False)
    return result


def test_init_ingest_stats_show_search(runner: CliRunner, corpus: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    assert invoke(runner, "init", "--store", store).output == f"initialized store at {store}\n"
    result = invoke(runner, "ingest", str(corpus), "--store", store, "--truth-level", "L1",
                    "--tag", "demo", "--metadata", "team=ops", "--no-progress")
    assert result.exit_code == 0
    assert result.output.startswith("added 3, updated 0, unchanged 0, skipped 0 documents;")

    stats = json.loads(invoke(runner, "stats", "--store", store, "--json").output)
    assert stats["documents"] == 3 and stats["documents_by_truth_level"] == {"L1": 3}

    shown = json.loads(invoke(runner, "show", "brakes.md", "--store", store, "--json").output)
    text = shown["document"]["text"]
    assert shown["document"]["tags"] == ["demo"] and shown["document"]["custom"] == {"team": "ops"}
    for chunk in shown["chunks"]:
        assert set(chunk) >= {"chunk_index", "content", "start_offset", "end_offset", "token_count"}
        assert text[chunk["start_offset"] : chunk["end_offset"]] == chunk["content"]

    found = json.loads(invoke(runner, "search", "1K0615301M", "--store", store, "--json",
                              "--strategy", "fulltext").output)
    assert found["status"] == "ok" and found["strategy_used"] == "fulltext" and found["total"] >= 1
    hit = found["hits"][0]
    assert hit["document_id"] == "brakes.md"
    assert set(hit["scores"]) >= {"vector_rank", "vector_score", "bm25_rank", "bm25_score", "fused"}
    assert hit["scores"]["bm25_rank"] == 1 and hit["scores"]["vector_rank"] is None
    assert hit["citation"]["display_text"] == "[1] Brake pads (Constructeur)"
    assert text[hit["start_offset"] : hit["end_offset"]] == hit["content"]
    assert isinstance(found["execution_time_ms"], float)


def test_search_human_output_and_explain(runner: CliRunner, corpus: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    invoke(runner, "ingest", str(corpus), "--store", store, "--no-progress")
    result = invoke(runner, "search", "erasure of personal data", "--store", store, "--explain",
                    "--no-gate", "--limit", "1")
    lines = result.output.splitlines()
    assert lines[0].startswith("3 results, showing 1-1 (hybrid, truth levels L1,L2")
    assert lines[2] == "[1] Right to erasure (Expert valide)"
    assert lines[3].startswith("    gdpr.md chunk 0, chars 0-")
    assert "vector rank" in result.output and "bm25 rank 1" in result.output


def test_no_relevant_sources_is_explicit(runner: CliRunner, corpus: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    invoke(runner, "ingest", str(corpus), "--store", store, "--no-progress")
    # grep's convention: a refused search exits 1, with its reason, in JSON or text
    refused = runner.invoke(main, ["search", "zzqx", "--store", store, "--json",
                                   "--strategy", "fulltext"])
    assert refused.exit_code == 1, refused.output
    out = json.loads(refused.output)
    assert out["status"] == "NO_RELEVANT_SOURCES" and out["hits"] == [] and out["reason"]
    assert out["gate"]["answerable"] is False and out["gate"]["reason"] == out["reason"]
    text = runner.invoke(main, ["search", "zzqx", "--store", store, "--strategy", "fulltext"])
    assert text.exit_code == 1
    assert text.output.startswith("NO_RELEVANT_SOURCES: ")
    assert runner.invoke(main, ["search", "--store", store]).exit_code == 2  # usage
    found = runner.invoke(main, ["search", "brake pads", "--store", store, "--json",
                                 "--strategy", "fulltext"])
    assert found.exit_code == 0, found.output
    data = json.loads(found.output)
    assert data["status"] == "ok" and data["gate"]["answerable"] is True
    assert set(data["gate"]) >= {"answerable", "reason", "confidence"}
    assert isinstance(data["total_is_lower_bound"], bool)
    citation = data["hits"][0]["citation"]
    assert citation["quote_start"] >= data["hits"][0]["start_offset"]
    assert citation["quote_end"] <= data["hits"][0]["end_offset"]


@pytest.mark.parametrize("args, message", [
    (["search", "brakes", "--filter", "colour=red"], "unknown filter field 'colour'"),
    (["search", "", ], "the query is empty"),
    (["search", "brakes", "--truth-level", "L7"], "unknown truth level 'L7'"),
    (["show", "missing-doc"], "no document with id 'missing-doc'"),
])
def test_errors_are_one_line_exit_2(runner: CliRunner, corpus: Path, tmp_path: Path,
                                    args: list[str], message: str) -> None:
    store = str(tmp_path / "store")
    invoke(runner, "ingest", str(corpus), "--store", store, "--no-progress")
    result = runner.invoke(main, [*args, "--store", store])
    assert result.exit_code == 2
    assert result.output.startswith("Error: ") and message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("pair", ["created_at=2024-01-01", "updated_at>=2024-01-01"])
def test_a_date_filter_without_a_bound_says_how_to_write_one(
        runner: CliRunner, corpus: Path, tmp_path: Path, pair: str) -> None:
    # the refusal spoke of a Python dict ("expects a range like {'gte': '2024-01-01', ...}")
    # or of an unknown field 'updated_at>', and neither said how to write a range here
    store = str(tmp_path / "store")
    invoke(runner, "ingest", str(corpus), "--store", store, "--no-progress")
    result = runner.invoke(main, ["search", "brakes", "--store", store, "--filter", pair])
    field = pair[:10]
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.endswith(
        f"Error: Invalid value for --filter: {field} takes bounds, each its own --filter: "
        f"{field}.gte=2024-01-01 (from that day) and {field}.lt=2025-01-01 (before that day); "
        "the bounds are gte, gt, lte, lt, and a date alone is its whole day\n")
    ranged = runner.invoke(main, ["search", "brakes", "--store", store, "--no-gate", "--json",
                                  "--filter", f"{field}.gte=2000-01-01"])
    assert ranged.exit_code == 0 and json.loads(ranged.output)["hits"]


def test_missing_store_and_missing_path(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(main, ["stats", "--store", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "enginelib init" in result.output
    # A mistyped path fails the whole command before anything is written.
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nA real document about brake pads.\n", encoding="utf-8")
    missing = tmp_path / "nofile.md"
    result = runner.invoke(main, ["ingest", str(good), str(missing), "--store",
                                  str(tmp_path / "s"), "--no-progress"])
    assert result.exit_code == 2 and str(missing) in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(main, ["stats", "--store", str(tmp_path / "s"), "--json"])
    assert result.exit_code != 0 or '"documents": 0' in result.output


def test_every_command_has_help() -> None:
    def walk(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
        found = [(path, command)]
        if isinstance(command, click.Group):  # through click's API: commands load lazily
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, f"`{path} {name}` is listed but does not load"
                found += walk(sub, f"{path} {name}")
        return found

    for path, command in walk(main, "enginelib"):
        assert command.help, f"`{path}` has no help text"
        result = CliRunner().invoke(main, [*path.split()[1:], "--help"])
        assert result.exit_code == 0, path


def _pads_store(runner: CliRunner, tmp_path: Path) -> str:
    """A store holding one short Markdown file about brake pads, ingested by the CLI."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pads.md").write_text("# Pads\n\nBrake pads wear and must be replaced in pairs.\n",
                                  encoding="utf-8")
    store = str(tmp_path / "s")
    assert runner.invoke(main, ["ingest", str(docs), "--store", store, "--no-progress"]).exit_code == 0
    return store


def test_query_log_lists_unanswered_questions(runner: CliRunner, tmp_path: Path) -> None:
    store = _pads_store(runner, tmp_path)
    for query, code in (("brake pads", 0), ("zeppelin mooring", 1)):
        result = runner.invoke(main, ["search", query, "--store", store, "--strategy", "fulltext"])
        assert result.exit_code == code, result.output
    result = runner.invoke(main, ["queries", "--store", store, "--zero-results", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["query_text"] for r in rows] == ["zeppelin mooring"]
    assert rows[0]["status"] == "NO_RELEVANT_SOURCES" and rows[0]["result_count"] == 0
    result = runner.invoke(main, ["queries", "--store", store])
    lines = result.output.strip().splitlines()
    assert len(lines) == 2 and lines[0].endswith("zeppelin mooring") and lines[1].endswith("brake pads")


def test_stats_counts_the_searches_queries_lists(runner: CliRunner, tmp_path: Path) -> None:
    """`enginelib search` logs as a reader, and a writer imports that log later: `stats`
    said queries_logged 0 after searches that `queries` listed."""
    store = _pads_store(runner, tmp_path)
    for query in ("brake pads", "zeppelin mooring"):
        runner.invoke(main, ["search", query, "--store", store, "--strategy", "fulltext"])
    listed = json.loads(runner.invoke(main, ["queries", "--store", store, "--json"]).output)
    stats = json.loads(runner.invoke(main, ["stats", "--store", store, "--json"]).output)
    assert len(listed) == stats["queries_logged"] == 2
    runner.invoke(main, ["presets", "--store", store, "--set-default", "default"])  # a writer imports
    stats = json.loads(runner.invoke(main, ["stats", "--store", store, "--json"]).output)
    assert stats["queries_logged"] == 2


def test_query_log_keeps_a_pasted_multi_line_question_on_one_line(runner: CliRunner,
                                                                  tmp_path: Path) -> None:
    """A question pasted with its line breaks was printed over two lines by `queries`: the
    second looked like a row of its own, and `enginelib queries | grep` lost it."""
    store = _pads_store(runner, tmp_path)
    result = runner.invoke(main, ["search", "brake pads\nreplaced?", "--store", store])
    assert result.exit_code in (0, 1), result.output
    result = runner.invoke(main, ["queries", "--store", store])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].endswith("brake pads\\nreplaced?")
    assert len(result.output.splitlines()) == 1
    rows = json.loads(runner.invoke(main, ["queries", "--store", store, "--json"]).output)
    assert rows[0]["query_text"] == "brake pads\nreplaced?"  # the log keeps what was asked


def test_presets_list_and_default(runner: CliRunner, tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    assert runner.invoke(main, ["init", "--store", store]).exit_code == 0
    result = runner.invoke(main, ["presets", "--store", store])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].startswith("* default      rrf k=60")
    result = runner.invoke(main, ["presets", "--store", store, "--set-default", "balanced", "--json"])
    data = json.loads(result.output)
    assert data["default"] == "balanced"
    assert data["presets"]["balanced"]["options"] == {"fusion": "weighted", "rrf_k": 60,
                                                     "weights": [0.5, 0.5]}
    result = runner.invoke(main, ["presets", "--store", store, "--set-default", "nope"])
    assert result.exit_code == 2 and "unknown search preset 'nope'" in result.output


def test_a_reader_that_stops_early_ends_the_command_quietly(
    runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    # `enginelib list | head -1`: the reader goes away; the command must end as `cat` does
    # (status 141, nothing on stderr), not with "Error: the command failed: Broken pipe"
    import os
    import subprocess
    import sys

    store = str(tmp_path / "store")
    assert invoke(runner, "ingest", str(corpus), "--store", store, "--no-progress").exit_code == 0
    repo = Path(__file__).resolve().parents[1]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a line
    try:
        result = subprocess.run(
            [sys.executable, "-m", "enginelib.cli.main", "stats", "--store", store],
            stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=repo, timeout=120,
            env={**os.environ, "PYTHONPATH": str(repo), "ENGINELIB_EMBEDDER": "hashing-64"},
            check=False)
    finally:
        os.close(write_end)
    assert result.returncode == 141 and result.stderr == ""


def test_a_reader_that_stops_inside_a_json_answer_ends_it_with_141(runner: CliRunner, tmp_path: Path) -> None:
    # `enginelib list --json | head -c 100`: the JSON went out in one write, the pipe took
    # 64 KiB of it, Python dropped the rest without an error and the command ended 0
    import subprocess
    import sys

    store = str(tmp_path / "store")
    records = tmp_path / "many.jsonl"
    records.write_text("".join(json.dumps({"id": f"doc-{i:04d}", "text": f"brake pad note {i}"}) + "\n"
                               for i in range(1000)), encoding="utf-8")
    assert invoke(runner, "ingest", str(records), "--store", store, "--no-progress").exit_code == 0
    repo = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "enginelib.cli.main", "list", "--store", store, "--json"]
    whole = subprocess.run(command, capture_output=True, cwd=repo, timeout=120, check=False,
                           env={**os.environ, "PYTHONPATH": str(repo)})
    assert whole.returncode == 0 and len(whole.stdout) > 4 * 65536  # more than a pipe holds
    assert len(json.loads(whole.stdout)) == 1000
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=repo,
                          env={**os.environ, "PYTHONPATH": str(repo)}) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(100)
        process.stdout.close()  # the reader is gone while the command still writes
        stderr = process.stderr.read()
        assert process.wait(timeout=120) == 141 and stderr == b""


def test_help_shows_no_range_for_an_unbounded_integer() -> None:
    # click printed an IntRange without bounds as "[default: 16; x<=None]"
    for args in (["export", "postgres"], ["reindex"], ["snapshot", "create"]):
        shown = CliRunner().invoke(main, [*args, "--help"], terminal_width=200)
        assert shown.exit_code == 0 and "None" not in shown.output, shown.output
    assert "[default: 16]" in CliRunner().invoke(main, ["export", "postgres", "--help"],
                                                 terminal_width=200).output


def test_every_command_takes_store_the_same_way(runner: CliRunner, corpus: Path, tmp_path: Path) -> None:
    # `ingest --store S` and then `list S` was the only way: the six commands that took the
    # store as an argument now take --store too (and still the argument), never both
    store = str(tmp_path / "store")
    assert invoke(runner, "ingest", str(corpus), "--store", store, "--no-progress").exit_code == 0
    by_flag = json.loads(invoke(runner, "list", "--store", store, "--json").output)
    assert json.loads(invoke(runner, "list", store, "--json").output) == by_flag
    assert {row["document_id"] for row in by_flag} == {"brakes.md", "gdpr.md", "notes.txt"}
    assert invoke(runner, "jobs", "--store", store).exit_code == 0
    two = runner.invoke(main, ["list", store, "--store", str(tmp_path / "other")])
    assert two.exit_code == 2 and "two stores named" in two.output
    updated = json.loads(invoke(runner, "update", "notes.txt", "--store", store, "--tag", "x",
                                "--json").output)
    assert updated["tags"] == ["x"]
    assert json.loads(invoke(runner, "update", store, "notes.txt", "--tag", "y",
                             "--json").output)["tags"] == ["y"]
    assert invoke(runner, "delete", "notes.txt", "--store", store).output == "deleted 1 document\n"
    assert invoke(runner, "delete", store, "gdpr.md").output == "deleted 1 document\n"
    left = json.loads(invoke(runner, "list", "--store", store, "--json").output)
    assert [row["document_id"] for row in left] == ["brakes.md"]
    many = runner.invoke(main, ["update", "a", "b", "--store", store, "--tag", "x"])
    assert many.exit_code == 2 and "one document id" in many.output


def test_a_writing_command_waits_for_another_writer_when_asked(corpus: Path, tmp_path: Path) -> None:
    # another process holds the store's writer lock: by default a writing command fails at
    # once saying how to wait; with `enginelib --wait` (or $ENGINELIB_WAIT) it waits for it
    import os
    import subprocess
    import sys

    store = tmp_path / "store"
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo), "ENGINELIB_EMBEDDER": "hashing-64"}

    def cli(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "enginelib.cli.main", *args], cwd=repo,
                              capture_output=True, text=True, timeout=120, check=False,
                              env={**env, **(extra or {})})

    def holder() -> subprocess.Popen[str]:
        """A process holding the store's writer lock until it reads a line."""
        code = ("import sys; from pathlib import Path; "
                "from enginelib.core.lock import acquire_writer_lock; "
                "lock = acquire_writer_lock(Path(sys.argv[1]), 0.0); print('held', flush=True); "
                "sys.stdin.readline(); lock.release()")
        proc = subprocess.Popen([sys.executable, "-c", code, str(store)], cwd=repo, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return proc

    def while_held(*args: str, extra: dict[str, str] | None = None,
                   release_after: float = 6.0) -> tuple[str, str, int]:
        """Run the CLI while another process writes; that writer finishes ``release_after``
        seconds later (a command that does not wait has failed by then)."""
        with holder() as lock_holder:
            proc = subprocess.Popen([sys.executable, "-m", "enginelib.cli.main", *args], cwd=repo,
                                    env={**env, **(extra or {})}, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            try:
                out, err = proc.communicate(timeout=release_after)  # finished: it did not wait
            except subprocess.TimeoutExpired:
                assert lock_holder.stdin is not None
                lock_holder.stdin.write("go\n")
                lock_holder.stdin.flush()
                out, err = proc.communicate(timeout=120)
        return out, err, proc.returncode

    assert cli("init", "--store", str(store)).returncode == 0
    out, err, code = while_held("ingest", str(corpus), "--store", str(store), "--no-progress",
                                release_after=60.0)
    assert code == 2 and "enginelib --wait SECONDS" in err
    out, err, code = while_held("--wait", "60", "ingest", str(corpus), "--store", str(store),
                                "--no-progress")
    assert code == 0 and out.startswith("added 3"), err
    out, err, code = while_held("delete", "notes.txt", "--store", str(store),
                                extra={"ENGINELIB_WAIT": "60"})
    assert code == 0 and out == "deleted 1 document\n", err
    bad = cli("stats", "--store", str(store), extra={"ENGINELIB_WAIT": "soon"})
    assert bad.returncode == 2 and "ENGINELIB_WAIT must be a number" in bad.stderr


def test_an_ingest_that_finds_nothing_says_so(runner: CliRunner, corpus: Path, tmp_path: Path) -> None:
    # a typo in --include read exactly like a successful ingest of nothing
    store = str(tmp_path / "store")
    result = invoke(runner, "ingest", str(corpus), "--store", store, "--include", "*.mdd",
                    "--no-progress")
    assert result.exit_code == 0
    assert "nothing to ingest" in result.stderr and "--include '*.mdd'" in result.stderr
    found = invoke(runner, "ingest", str(corpus), "--store", store, "--include", "*.md",
                   "--no-progress")
    assert found.output.startswith("added 2") and "nothing to ingest" not in found.stderr


def test_ctrl_c_exits_130_saying_what_was_committed() -> None:
    # click's "Aborted!" exited 1, which is our "nothing relevant"
    import click

    from enginelib.cli.options import INTERRUPTED_EXIT, handle_errors

    @click.command()
    @handle_errors
    def slow() -> None:
        stop = KeyboardInterrupt()
        stop.add_note("enginelib: 256 document(s) of this ingest were committed before it stopped")
        raise stop

    result = CliRunner().invoke(slow, [])
    assert result.exit_code == INTERRUPTED_EXIT == 130
    assert "interrupted: the store keeps what was committed" in result.output
    assert "  256 document(s) of this ingest were committed" in result.output
    assert "Aborted" not in result.output


def test_a_command_a_message_tells_to_run_pastes_with_an_odd_store_path(tmp_path: Path) -> None:
    import subprocess

    # `run enginelib init --store my store` would have made a store named "my"
    store = tmp_path / "my 'odd' store"
    result = CliRunner().invoke(main, ["search", "brakes", "--store", str(store)])
    assert result.exit_code == 2
    command = result.output.split("create it with `", 1)[1].split("`", 1)[0]
    words = subprocess.run(["bash", "-c", command.replace("enginelib", "printf '%s\\n'", 1)],
                           capture_output=True, text=True).stdout.splitlines()
    assert words == ["init", "--store", str(store)]
