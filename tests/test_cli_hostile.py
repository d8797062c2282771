"""Hostile input through the command line: every failure is one `Error: ...` line and exit
status 2, never a traceback (unless --debug), never a dead process."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main
from enginelib.errors import StorageError
from tests.reporting import say

REPO = Path(__file__).resolve().parent.parent
ENV = {"ENGINELIB_EMBEDDER": "hashing-32"}
OUTCOMES: Counter[str] = Counter()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("cli")
    corpus = folder / "corpus.md"
    corpus.write_text("# Brakes\n\nBrake pads wear and rotors warp under heat.\n\n"
                      "## Fluid\n\nBrake fluid absorbs water over two years.\n", encoding="utf-8")
    path = folder / "store"
    result = CliRunner(env=ENV).invoke(main, ["ingest", str(corpus), "--store", str(path),
                                              "--no-progress"])
    assert result.exit_code == 0, result.output
    yield path
    say(request, "hostile CLI runs: " + ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES.items()))
        + f"; raw exceptions {OUTCOMES['raw exception']}")


def run_cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner(env=ENV).invoke(main, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        OUTCOMES["raw exception"] += 1
        raise AssertionError(f"{args}: raw {result.exception!r}")
    return result.exit_code, result.output


BAD_SEARCHES = [
    ["--offset", str(10**9)], ["--offset", str(10**10)], ["--offset", str(10**18)],
    ["--offset", "-1"], ["--limit", "0"], ["--limit", str(10**30)], ["--min-score", "nan"],
    ["--min-score", "inf"], ["--truth-level", "L9"], ["--truth-level", ""],
    ["--filter", "nope=1"], ["--filter", "created_at>=yesterday"], ["--preset", "nope"],
    ["--filter", "domain"], ["--snapshot", "bad\nname"], ["--snapshot", "../../etc"],
]


@pytest.mark.parametrize("extra", BAD_SEARCHES, ids=lambda a: " ".join(a)[:40])
def test_bad_search_options_fail_cleanly(store: Path, extra: list[str]) -> None:
    code, output = run_cli(["search", "brake pads", "--store", str(store), *extra])
    assert code == 2, output
    assert output.startswith(("Error: ", "Usage: ")) and "Traceback" not in output
    OUTCOMES["exit 2"] += 1


@pytest.mark.parametrize("query", ["", "   ", '"unbalanced', "(", "NOT pads", "a" * 30_000])
def test_bad_queries(store: Path, query: str) -> None:
    code, output = run_cli(["search", query, "--store", str(store)])
    assert code == 2 and output.startswith("Error: ") and "Traceback" not in output
    OUTCOMES["exit 2"] += 1


@pytest.mark.parametrize("args", [
    ["snapshot", "create", "bad\n"], ["snapshot", "create", "a/b"], ["snapshot", "delete", "nope"],
    ["snapshot", "restore", "..\x01"], ["show", "no-such-doc"], ["history", "no-such-doc"],
    ["export", "postgres", "--sql-file", "/proc/version"],
    ["export", "postgres", "--sql-file", "/proc/nonexistent/dir/out.sql"],
    ["presets", "--set-default", "nope"], ["queries", "--limit", "0"],
])
def test_bad_commands_fail_cleanly(store: Path, args: list[str]) -> None:
    code, output = run_cli([*args[:2], "--store", str(store), *args[2:]] if args[0] in
                           ("snapshot", "export") else [args[0], "--store", str(store), *args[1:]])
    assert code == 2, output
    assert output.startswith(("Error: ", "Usage: ")) and "Traceback" not in output
    OUTCOMES["exit 2"] += 1


def test_store_path_with_backslash(tmp_path: Path) -> None:
    code, output = run_cli(["init", "--store", str(tmp_path / "a\\b")])
    assert code == 2 and "backslash" in output
    assert list(tmp_path.iterdir()) == []


def test_a_store_path_that_is_not_a_folder_is_named_as_what_it_is(tmp_path: Path) -> None:
    # A file as --store: search said "no enginelib store here: create it with `enginelib
    # init`", init then "open store failed: Not a directory"; `snapshot list` of it, or of a
    # mistyped path, said "no snapshots" and exit 0.
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a store", encoding="utf-8")
    document = tmp_path / "a.md"
    document.write_text("# Pads\n\nBrake pads wear.\n", encoding="utf-8")
    targets = {a_file: "a file", Path("/dev/null"): "a character device"}
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe")
        targets[tmp_path / "pipe"] = "a named pipe (FIFO)"
    for target, kind in targets.items():
        for args in (["init"], ["search", "brake"], ["ingest", str(document), "--no-progress"],
                     ["snapshot", "list"], ["check"], ["stats"]):
            command = args[:2] if args[0] == "snapshot" else args[:1]
            code, output = run_cli([*command, "--store", str(target), *args[len(command):]])
            assert code == 2 and output == (f"Error: the store path {target} is {kind}, not a "
                                            "folder: a store is a folder (created if missing): "
                                            "give another path\n"), (args, output)
    assert a_file.read_text(encoding="utf-8") == "not a store"
    code, output = run_cli(["snapshot", "list", "--store", str(tmp_path / "typo")])
    assert code == 2 and output == f"Error: no enginelib store at {tmp_path / 'typo'}\n"
    with pytest.raises(enginelib.StoreError, match="is a file, not a folder"):
        enginelib.open(a_file)


def test_a_store_path_below_a_file_names_the_file_and_the_way_out(tmp_path: Path) -> None:
    # --store notes.txt/sub: init and ingest said "open store failed: Not a directory", a
    # search "no enginelib store here: create it with `enginelib init`" (which then failed)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a store", encoding="utf-8")
    document = tmp_path / "a.md"
    document.write_text("# Pads\n\nBrake pads wear.\n", encoding="utf-8")
    for target in (a_file / "sub", a_file / "sub" / "deeper"):
        for args in (["init"], ["search", "brake"], ["ingest", str(document), "--no-progress"],
                     ["snapshot", "list"], ["check"], ["stats"]):
            command = args[:2] if args[0] == "snapshot" else args[:1]
            code, output = run_cli([*command, "--store", str(target), *args[len(command):]])
            assert code == 2 and output == (
                f"Error: the store path {target} goes through {a_file}, which is a file, not a "
                f"folder: give a path that does not go through it, or move that file away\n"
            ), (args, output)
    assert a_file.read_text(encoding="utf-8") == "not a store"
    with pytest.raises(StorageError, match="goes through .*notes.txt, which is a file"):
        enginelib.open(a_file / "sub", embedder="hashing-32")
    with pytest.raises(StorageError, match="goes through .*notes.txt, which is a file"):
        enginelib.memory(embedder="hashing-32").save(a_file / "sub")


def test_a_store_path_that_is_a_broken_link_says_so(tmp_path: Path) -> None:
    # `init` said "open store failed: File exists", a search "no enginelib store here:
    # create it with `enginelib init`" (which then failed the same way)
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    cases = {tmp_path / "loop1": "a loop of symbolic links",
             tmp_path / "dangling": f"a symbolic link to '{tmp_path / 'nowhere'}', which does "
                                    "not exist"}
    for target, says in cases.items():
        for args in (["init"], ["search", "brake"], ["check"]):
            code, output = run_cli([args[0], "--store", str(target), *args[1:]])
            assert code == 2 and output == (f"Error: the store path {target} is {says}: give "
                                            "the folder itself, or another path\n"), (args, output)
    assert not (tmp_path / "nowhere").exists()


def test_ingest_reports_bad_records_and_strict_is_all_or_nothing(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    lines = [
        {"_id": "ok1", "text": "Brake pads wear."},
        {"_id": "lone", "text": "a lone surrogate \ud800 here"},
        {"_id": "level", "text": "truth level nine", "metadata": {"truth_level": "L9"}},
        {"_id": "date", "text": "a bad date", "metadata": {"created_at": "not a date"}},
        {"_id": "tags", "text": "tags as a number", "metadata": {"tags": 7}},
        {"_id": "domain", "text": "domain as an object", "metadata": {"domain": {"a": 1}}},
        {"_id": "id\ud800", "text": "surrogate in the id"},
        {"_id": "nul", "text": "a NUL in a metadata value", "metadata": {"note": "a\x00b"}},
        {"_id": "nulid\x00", "text": "a NUL in the id"},
        {"_id": "ok2", "text": "Rotors warp under heat."},
    ]
    body = "\n".join(json.dumps(line) for line in lines) + "\n{not json\n"
    records.write_text(body, encoding="utf-8")
    store = tmp_path / "s"
    code, output = run_cli(["ingest", str(records), "--store", str(store), "--strict",
                            "--no-progress"])
    assert code == 2 and output.startswith("Error: ") and "nothing was ingested" in output
    code, output = run_cli(["stats", "--store", str(store), "--json"])
    assert code == 0 and json.loads(output)["documents"] == 0
    code, output = run_cli(["ingest", str(records), "--store", str(store), "--json"])
    assert code == 0, output
    report = json.loads(output)
    assert report["added"] == 2 and report["skipped"] == 9, report["skipped_inputs"]
    reasons = " | ".join(s["reason"] for s in report["skipped_inputs"])
    for needle in ("'lone'", "'level'", "'date'", "'tags'", "'domain'", "\\ud800", "'nul'",
                   "nulid", "line 11"):
        assert needle in reasons, needle
    code, output = run_cli(["stats", "--store", str(store), "--json"])
    assert json.loads(output)["documents"] == 2  # the report's count is what was committed


def _subprocess(args: list[bytes | str], debug: bool = False,
                timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    cmd: list[bytes | str] = [sys.executable, "-m", "enginelib.cli.main"]
    if debug:
        cmd.append("--debug")
    return subprocess.run([*cmd, *args], cwd=REPO, capture_output=True, timeout=timeout,
                          env={**os.environ, **ENV, "PYTHONPATH": str(REPO)})


@pytest.mark.slow
def test_real_process_never_aborts_or_prints_a_traceback(store: Path) -> None:
    cases: list[list[bytes | str]] = [
        ["search", "brake", "--store", str(store), "--offset", str(10**10)],
        ["search", "brake", "--store", str(store), "--offset", str(10**18)],
        ["show", b"id\xff\xfe", "--store", str(store)],  # undecodable bytes: lone surrogates
        ["snapshot", "create", "--store", str(store), b"name\xff"],
    ]
    for args in cases:
        done = _subprocess(args)
        assert done.returncode == 2, (args, done.stderr[-2000:])
        assert done.stderr.startswith(b"Error: ") and b"Traceback" not in done.stderr
        OUTCOMES["exit 2 (subprocess)"] += 1
    done = _subprocess(cases[0], debug=True)
    assert done.returncode != 0 and b"Traceback" in done.stderr  # --debug shows it


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_or_device_given_as_an_input_file_is_refused_not_waited_on(
        store: Path, tmp_path: Path) -> None:
    """`search --vector-file PIPE`, `eval --queries PIPE`, `export verify --queries PIPE` and
    `ingest PIPE` opened the pipe and waited for a writer for good (`/dev/zero` read until
    memory ran out). Real processes with a timeout, so a regression fails, not hangs."""
    import numpy as np

    fifo = {name: tmp_path / name for name in ("q.json", "q.npy", "q.jsonl", "qrels.tsv", "a.md")}
    for path in fifo.values():
        os.mkfifo(path)
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q1", "text": "brake pads"}\n', encoding="utf-8")
    qrels = tmp_path / "judged.tsv"
    qrels.write_text("q1\tcorpus.md\t1\n", encoding="utf-8")
    vector = tmp_path / "v.npy"
    np.save(vector, np.ones(32, dtype=np.float32))
    at = ["--store", str(store)]
    cases: list[tuple[list[str], str]] = [
        (["search", *at, "--strategy", "vector", "--vector-file", str(fifo["q.json"])],
         f"--vector-file {fifo['q.json']}: cannot read it: a named pipe (FIFO)"),
        (["search", *at, "--strategy", "vector", "--vector-file", str(fifo["q.npy"])],
         f"--vector-file {fifo['q.npy']}: cannot read it: a named pipe (FIFO)"),
        (["search", "brake", *at, "--vector-file", "/dev/zero"],
         "--vector-file /dev/zero: cannot read it: a character device, not a regular file"),
        (["eval", *at, "--queries", str(fifo["q.jsonl"]), "--qrels", str(qrels)],
         f"cannot read {fifo['q.jsonl']}: a named pipe (FIFO), not a regular file"),
        (["eval", *at, "--queries", str(queries), "--qrels", str(fifo["qrels.tsv"])],
         f"cannot read {fifo['qrels.tsv']}: a named pipe (FIFO), not a regular file"),
        (["export", "verify", *at, "--dsn", "postgresql://nowhere", "--queries",
          str(fifo["q.jsonl"])],
         f"cannot read the queries file {fifo['q.jsonl']}: a named pipe (FIFO)"),
        (["ingest", str(queries), str(fifo["a.md"]), *at, "--no-progress"],
         f"{fifo['a.md']}: a named pipe (FIFO), not a file or folder"),
    ]
    for args, says in cases:
        done = _subprocess(args, timeout=60)
        stderr = done.stderr.decode()
        assert done.returncode == 2 and stderr.startswith("Error: ") and says in stderr, (
            args, stderr[-2000:])
        assert "Traceback" not in stderr
    # inside a folder the pipe is skipped, said in the summary, and the rest is ingested
    folder = tmp_path / "docs"
    folder.mkdir()
    os.mkfifo(folder / "pipe.md")
    (folder / "real.md").write_text("# Pads\n\nBrake pads wear.\n", encoding="utf-8")
    done = _subprocess(["ingest", str(folder), "--store", str(tmp_path / "s2"), "--json"],
                       timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["added"] == 1 and report["skipped_inputs"] == [{
        "path": str(folder / "pipe.md"),
        "reason": f"{folder / 'pipe.md'}: a named pipe (FIFO), not a regular file: left unread"}]
    assert all(stat.S_ISFIFO(os.stat(path).st_mode) for path in fifo.values())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_in_place_of_the_manifest_or_the_catalog_is_named_not_waited_on(
        store: Path, tmp_path: Path) -> None:
    # Every command on the store blocked for good: the manifest was read with read_text,
    # DuckDB opened the catalog's path as it was, and a writer's open tried to mend it.
    import shutil

    document = tmp_path / "a.md"
    document.write_text("# Pads\n\nBrake pads wear.\n", encoding="utf-8")
    for name, says in (("manifest.json", "is damaged: it is a named pipe (FIFO), not a file"),
                       ("catalog.duckdb", "is a named pipe (FIFO), not a file: remove it")):
        copy = tmp_path / name.split(".")[0]
        shutil.copytree(store, copy)
        (copy / name).unlink()
        os.mkfifo(copy / name)
        for args in (["search", "brake"], ["ingest", str(document), "--no-progress"],
                     ["repair"]):
            done = _subprocess([*args, "--store", str(copy)], timeout=60)
            stderr = done.stderr.decode()
            assert done.returncode == 2 and stderr.startswith("Error: ") and says in stderr, (
                name, args, stderr[-2000:])
        assert stat.S_ISFIFO(os.stat(copy / name).st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_among_the_index_files_is_rebuilt_over_not_waited_on(
        store: Path, tmp_path: Path) -> None:
    # The index files are derived: a damaged one is rebuilt from the catalog. A pipe in
    # the place of a stamp, tantivy's meta.json or .managed.json, a segment or the labels
    # blocked every command on the store instead (the readers opened it, then tantivy did).
    import shutil

    document = tmp_path / "a.md"
    document.write_text("# Rotors\n\nRotors warp under heat.\n", encoding="utf-8")
    spots = ["indexes/vectors/stamp.json", "indexes/text/stamp.json",
             "indexes/text/tantivy/meta.json", "indexes/text/tantivy/.managed.json",
             next(p.relative_to(store).as_posix() for p in store.glob("indexes/text/tantivy/*.term")),
             next(p.relative_to(store).as_posix() for p in store.glob("indexes/vectors/*/labels.npy"))]
    for n, spot in enumerate(spots):
        copy = tmp_path / f"s{n}"
        shutil.copytree(store, copy)
        (copy / spot).unlink()
        os.mkfifo(copy / spot)
        runs = [["search", "brake fluid", "--no-gate"],  # a reader: rebuilt in memory
                ["ingest", str(document), "--no-progress"],  # the writer: rebuilt on disk
                ["check"]]
        outputs = []
        for args in runs:
            done = _subprocess([*args, "--store", str(copy)], timeout=60)
            assert done.returncode == 0, (spot, args, done.stderr.decode()[-2000:])
            outputs.append(done.stdout.decode())
        assert "Brake fluid absorbs water" in outputs[0], (spot, outputs[0])
        assert "healthy" in outputs[2], (spot, outputs[2])
        left = [p for p in (copy / "indexes").rglob("*") if stat.S_ISFIFO(p.lstat().st_mode)]
        assert left == [], spot  # the writer rebuilt the index over it


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_among_the_snapshot_files_is_named_not_waited_on(
        store: Path, tmp_path: Path) -> None:
    # snapshots/settings.json as a pipe blocked snapshot create, list and delete for good;
    # a snapshot's snapshot.json as a pipe blocked check.
    import shutil

    copy = tmp_path / "s"
    shutil.copytree(store, copy)
    code, output = run_cli(["snapshot", "create", "s1", "--store", str(copy)])
    assert code == 0, output
    info = copy / "snapshots" / "s1" / "snapshot.json"
    info.unlink()
    os.mkfifo(info)
    done = _subprocess(["check", "--store", str(copy)], timeout=60)
    assert done.returncode == 1, done.stderr.decode()[-2000:]
    assert ("snapshot 's1' snapshot.json cannot be read (a named pipe (FIFO), not a regular "
            "file") in done.stdout.decode()
    settings = copy / "snapshots" / "settings.json"
    settings.unlink(missing_ok=True)
    os.mkfifo(settings)
    for args in (["snapshot", "create", "s2"], ["snapshot", "list"], ["snapshot", "delete", "s1"]):
        done = _subprocess([*args, "--store", str(copy)], timeout=60)
        stderr = done.stderr.decode()
        assert done.returncode == 2 and stderr.startswith(
            f"Error: cannot read {settings}: a named pipe (FIFO), not a regular file"), (
            args, stderr[-2000:])
        assert "delete it to return to the default retention" in stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_among_the_stores_own_notes_is_unreadable_not_waited_on(
        store: Path, tmp_path: Path) -> None:
    # A pipe as the reindex marker blocked every open; as the writer lock's holder note,
    # every writer that found the store busy; as a saved view column or a text segment,
    # the open that read them. Each is a note the store can do without: read as unreadable.
    import shutil
    import textwrap

    import enginelib

    marked = tmp_path / "marked"
    shutil.copytree(store, marked)
    os.mkfifo(marked / ".reindex.json")
    for args in (["search", "brake fluid", "--no-gate"], ["stats"]):
        done = _subprocess([*args, "--store", str(marked)], timeout=60)
        assert done.returncode == 0, (args, done.stderr.decode()[-2000:])
    busy = tmp_path / "busy"
    shutil.copytree(store, busy)
    os.mkfifo(busy / ".writer.holder.json")
    with enginelib.open(busy, embedder=enginelib.HashingEmbedder(32)):  # holds the writer lock
        done = _subprocess(["ingest", str(busy / "manifest.json"), "--store", str(busy)],
                           timeout=60)
    assert done.returncode == 2 and "another process is writing" in done.stderr.decode(), (
        done.stderr.decode()[-2000:])
    notes = tmp_path / "notes"
    (notes / "cols-1-abcdefgh").mkdir(parents=True)
    os.mkfifo(notes / "cols-1-abcdefgh" / "columns.json")
    os.mkfifo(notes / "seg-1-abcdefgh.txts")
    script = textwrap.dedent(f"""
        from pathlib import Path
        from enginelib import view_cache
        from enginelib.chunk_texts import TextSegments
        print(view_cache.load(Path({str(notes)!r}), 5))
        print(len(TextSegments(Path({str(notes)!r}), writable=False, generation=5)._segments))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and done.stdout.decode().split() == ["None", "0"], (
        done.stderr.decode()[-2000:])


def test_a_vector_file_bigger_than_any_vector_is_refused_unread(store: Path, tmp_path: Path) -> None:
    from enginelib.cli.vector_input import MAX_VECTOR_FILE_BYTES

    huge = tmp_path / "q.json"
    huge.write_text("[" + "0.5, " * (MAX_VECTOR_FILE_BYTES // 5) + "0.5]", encoding="utf-8")
    code, output = run_cli(["search", "--store", str(store), "--strategy", "vector",
                            "--vector-file", str(huge)])
    assert code == 2 and output.startswith(f"Error: --vector-file {huge} is over "), output


def test_a_sql_export_into_a_pipe_is_written_into_it_and_leaves_it_a_pipe(store: Path,
                                                                          tmp_path: Path) -> None:
    """The export wrote beside its target and renamed over it: `--sql-file /dev/null` (or
    /dev/full, or a FIFO) was replaced by a regular file, the device node itself as root."""
    import threading

    fifo = tmp_path / "out.sql"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, output = run_cli(["export", "postgres", "--store", str(store), "--sql-file", str(fifo),
                            "--no-progress"])
    reader.join(timeout=30)
    assert code == 0, output
    assert received and received[0].startswith(b"-- enginelib export")
    assert received[0].rstrip().endswith(b"COMMIT;")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not list(tmp_path.glob(".out.sql.*"))  # no temporary file beside it either


def test_a_sql_export_through_a_link_replaces_the_file_and_keeps_the_link(store: Path,
                                                                         tmp_path: Path) -> None:
    real = tmp_path / "real.sql"
    real.write_text("old")
    link = tmp_path / "link.sql"
    link.symlink_to(real)
    code, output = run_cli(["export", "postgres", "--store", str(store), "--sql-file", str(link),
                            "--no-progress"])
    assert code == 0, output
    assert link.is_symlink() and real.read_text().startswith("-- enginelib export")


def test_eval_names_the_file_it_cannot_read(store: Path, tmp_path: Path) -> None:
    """"could not read the judgments or queries: 'utf-8' codec can't decode..." named neither."""
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "q1", "text": "brake pads"}\n')
    qrels = tmp_path / "qrels.tsv"
    qrels.write_bytes(b"q1\tcorpus.md\t1\n\xff\xfe\n")
    code, output = run_cli(["eval", "--store", str(store), "--queries", str(queries),
                            "--qrels", str(qrels)])
    assert code == 2 and f"could not read the judgments: {qrels}: not UTF-8 text" in output
    qrels.write_text("q1\tcorpus.md\t1\n")
    queries.write_bytes(b"\xff\xfe")
    code, output = run_cli(["eval", "--store", str(store), "--queries", str(queries),
                            "--qrels", str(qrels)])
    assert code == 2 and f"could not read the queries: {queries}: not UTF-8 text" in output


def test_export_verify_names_a_queries_file_that_is_not_utf8(store: Path, tmp_path: Path) -> None:
    # "unexpected UnicodeDecodeError ... (this is a bug in enginelib)"
    queries = tmp_path / "queries.txt"
    queries.write_bytes(b"brake pads\n\xff\xfe rotors\n")
    code, output = run_cli(["export", "verify", "--store", str(store), "--dsn",
                            "postgresql://nowhere", "--queries", str(queries)])
    assert code == 2 and output.startswith(f"Error: {queries} is not UTF-8 text"), output
    assert "bug" not in output


def test_json_nested_too_deeply_in_an_input_is_a_usage_error(store: Path, tmp_path: Path) -> None:
    # json's parser recurses once per level: "unexpected RecursionError ... this is a bug"
    deep = "[" * 5000 + "]" * 5000
    vector = tmp_path / "q.json"
    vector.write_text(deep, encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q1", "text": "brake"}\n{"_id": "q2", "text": %s}\n' % deep,
                       encoding="utf-8")
    verify_queries = tmp_path / "verify.jsonl"
    verify_queries.write_text('{"text": %s}\n' % deep, encoding="utf-8")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\tcorpus.md\t1\n", encoding="utf-8")
    at = ["--store", str(store)]
    cases = [
        (["search", *at, "--strategy", "vector", "--vector-file", str(vector)],
         f"--vector-file {vector}: cannot read a vector (maximum recursion depth"),
        (["eval", *at, "--queries", str(queries), "--qrels", str(qrels)],
         f"{queries}:2: not JSON that Python reads (maximum recursion depth"),
        (["export", "verify", *at, "--dsn", "postgresql://nowhere", "--filter", deep],
         "is not JSON that Python reads: maximum recursion depth"),
        (["export", "verify", *at, "--dsn", "postgresql://nowhere", "--queries",
          str(verify_queries)], f'{verify_queries}:1: expected a JSON object with a "text"'),
    ]
    for args, says in cases:
        code, output = run_cli(args)
        assert code == 2 and output.startswith("Error: ") and says in output, (args, output)
        assert "bug" not in output


# ESC and C1 bytes a document brings through the Python API (files lose them at load):
# printed raw, OSC 0 retitles the terminal, OSC 52 writes the clipboard, CSI 2J clears the
# screen, and a newline in a title forges a line of its own (a fake citation).
HOSTILE = "\x1b]0;pwn\x07 \x1b[2J \x1b]52;c;ZXZpbA==\x07 \x9b31m"


def test_no_command_prints_a_documents_control_characters(tmp_path: Path) -> None:
    import enginelib
    from enginelib import LoadedDocument
    from enginelib.embedders import HashingEmbedder

    path = tmp_path / "store"
    with enginelib.open(path, embedder=HashingEmbedder(32)) as store:
        store.create_snapshot("before")
        store.ingest_documents([LoadedDocument(
            id="evil", title=f"Brakes {HOSTILE}\n    forged.md chunk 0, chars 0-9",
            text=f"# Pads {HOSTILE}\n\nBrake pads wear {HOSTILE} under heat.\n")])
        store.update_document("evil", metadata={f"k{HOSTILE}": 1})
        version = store.history("evil")[0]["version"]
    commands = [
        ["search", "brake pads", "--explain"], ["show", "evil", "--text"], ["history", "evil"],
        ["history", "evil", "--text", version], ["list"], ["snapshot", "diff", "before"],
    ]
    for args in commands:
        result = CliRunner(env=ENV).invoke(main, [*args, "--store", str(path)], color=True)
        assert result.exit_code == 0, (args, result.output)
        shown = result.output.replace("\x1b[1m", "").replace("\x1b[0m", "")  # our own bold
        assert not any(c in shown for c in "\x1b\x07\x9b"), (args, shown)
        assert not any(line.lstrip().startswith("forged.md") for line in shown.splitlines())
        assert "evil" in shown or "Brake pads wear" in shown, (args, shown)


@pytest.mark.parametrize("stdout_errors", ["surrogateescape", "strict"])
def test_json_naming_a_file_whose_name_is_not_utf8_is_valid_utf8(
        tmp_path: Path, stdout_errors: str) -> None:
    # `ingest --json` of a folder holding a Latin-1 named file: its skipped path was written
    # as the raw byte (JSON a strict UTF-8 reader refuses), or, on a strict stdout, the ingest
    # committed and then failed "unexpected UnicodeEncodeError ... a bug in enginelib"
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("# Tea\n\nA fine file about tea.\n", encoding="utf-8")
    odd = os.path.join(os.fsencode(folder), b"caf\xe9.md")
    with open(odd, "wb") as handle:
        handle.write(b"# Coffee\n\nA file named in Latin-1.\n")
    done = subprocess.run(
        [sys.executable, "-m", "enginelib.cli.main", "ingest", str(folder), "--store",
         str(tmp_path / "store"), "--no-progress", "--json"],
        cwd=REPO, capture_output=True, timeout=120,
        env={**os.environ, **ENV, "PYTHONPATH": str(REPO),
             "PYTHONIOENCODING": f"utf-8:{stdout_errors}"})
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.decode("utf-8"))  # strict: valid UTF-8
    assert report["added"] == 1 and report["skipped"] == 1
    assert os.fsencode(report["skipped_inputs"][0]["path"]) == odd  # the file's own bytes
