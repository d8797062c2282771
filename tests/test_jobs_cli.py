"""The document and job commands through click's CliRunner: exact output, exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from enginelib.cli.main import main
from tests.helpers import paragraphs, read_only_copy
from tests.reporting import say

ENV = {"ENGINELIB_EMBEDDER": "hashing"}


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=ENV)
    return result.exit_code, result.output


def make(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "brakes.md").write_text("# Brakes\n\n" + paragraphs(3), encoding="utf-8")
    (src / "tyres.md").write_text("# Tyres\n\n" + paragraphs(2, "tyres"), encoding="utf-8")
    store = tmp_path / "store"
    code, out = run("ingest", "--store", str(store), "--queue", str(src))
    assert (code, out) == (0, "queued 2 job(s) (catalog)\n")
    return store


def test_queue_worker_jobs_list_update_delete(tmp_path: Path) -> None:
    store = make(tmp_path)
    code, out = run("jobs", str(store))
    assert code == 0 and out.splitlines()[0] == (
        "PENDING 2  RUNNING 0  DONE 0  FAILED 0  DLQ 0 | history 0")
    code, out = run("worker", str(store))
    assert code == 0 and out.splitlines()[-1] == "PENDING 0  RUNNING 0  DONE 2  FAILED 0  DLQ 0"
    code, out = run("list", str(store), "--json")
    rows = json.loads(out)
    assert [r["document_id"] for r in rows] == ["brakes.md", "tyres.md"]
    assert {r["truth_level"] for r in rows} == {"L2"} and {r["tier"] for r in rows} == {"silver"}

    code, out = run("update", str(store), "tyres.md", "--truth-level", "L1", "--tag", "winter",
                    "--meta", "reviewed=yes")
    assert (code, out) == (0, "updated tyres.md: truth level L1, tags winter, version 1.0.1\n")
    code, out = run("list", str(store), "--truth-level", "L1")
    assert code == 0 and out.startswith("tyres.md  L1 gold")
    code, out = run("update", str(store), "tyres.md")
    assert code == 2 and "nothing to update" in out  # an error, as grep has it
    code, out = run("update", str(store), "tyres.md", "--truth-level", "L9")
    assert code == 2 and "L9" in out

    code, out = run("delete", str(store), "brakes.md", "nope")
    assert code == 2 and "no document with id 'nope'" in out
    code, out = run("delete", str(store), "brakes.md")
    assert (code, out) == (0, "deleted 1 document\n")
    code, out = run("jobs", str(store), "--purge-done", "--json")
    assert json.loads(out)["purged"] == 2


def test_every_new_command_has_help() -> None:
    for name in ("worker", "jobs", "list", "delete", "update", "serve"):
        code, out = run(name, "--help")
        assert code == 0 and len(out.split("\n\n")[1].strip()) > 20, name


@pytest.mark.parametrize("args", [
    ["worker", "--lease", "inf"], ["worker", "--lease", "1e308"], ["worker", "--poll", "nan"],
    ["worker", "--max-attempts", "99999999999999999999999"],
    ["serve", "--max-upload-mb", "nan"], ["serve", "--max-attempts", "0"],
    ["--wait", "nan", "worker"],
])
def test_job_settings_that_are_not_usable_numbers_are_usage_errors(
    tmp_path: Path, args: list[str]
) -> None:
    # `--lease inf` was "unexpected OverflowError ... a bug in enginelib"; nan passed the range
    result = CliRunner().invoke(main, [*args, "--store", str(tmp_path / "s")])
    assert result.exit_code == 2, result.output
    assert "Invalid value for" in result.output and "bug" not in result.output
    assert not (tmp_path / "s").exists()


def test_queue_into_a_new_store_uses_the_embedder_asked_for(tmp_path: Path) -> None:
    # `ingest --queue --embedder hashing-16` created the store with the default model
    # (e5-small, 384 dims) without a word; the worker then embedded with that
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.md").write_text("# A\n\n" + paragraphs(1), encoding="utf-8")
    store = tmp_path / "store"
    result = CliRunner().invoke(main, ["ingest", "--store", str(store), "--queue",
                                       "--embedder", "hashing-16", str(src)])
    assert (result.exit_code, result.output) == (0, "queued 1 job(s) (catalog)\n")
    manifest = json.loads((store / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["embedding_model"], manifest["embedding_dim"]) == ("hashing-16", 16)
    own = tmp_path / "own"
    result = CliRunner().invoke(main, ["ingest", "--store", str(own), "--queue",
                                       "--vector-dim", "8", str(src)])
    assert result.exit_code == 0, result.output
    assert json.loads((own / "manifest.json").read_text(encoding="utf-8"))["embedding_dim"] == 8


def test_strict_with_queue_is_a_usage_error(tmp_path: Path) -> None:
    # --strict was dropped silently: the worker skips nothing all-or-nothing
    src = tmp_path / "a.md"
    src.write_text("# A\n\n" + paragraphs(1), encoding="utf-8")
    code, out = run("ingest", "--store", str(tmp_path / "s"), "--queue", "--strict", str(src))
    assert code == 2 and "--strict" in out
    assert not (tmp_path / "s").exists()


def test_delete_naming_an_id_twice_deletes_it_once(tmp_path: Path) -> None:
    # `delete a a` deleted a, then failed on the second a: "Error: no document with id ...
    # (it was deleted ...)", exit 2, for a delete that had happened
    store = make(tmp_path)
    run("worker", str(store))
    code, out = run("delete", "--store", str(store), "brakes.md", "brakes.md")
    assert (code, out) == (0, "deleted 1 document\n")
    code, out = run("list", str(store), "--json")
    assert [r["document_id"] for r in json.loads(out)] == ["tyres.md"]


def test_jobs_says_when_it_lists_a_page_of_them(tmp_path: Path) -> None:
    # `jobs` printed the first 1000 jobs and stopped, as if there were no others
    store = make(tmp_path)
    code, out = run("jobs", str(store), "--limit", "1")
    assert code == 0 and out.splitlines()[-1] == "(jobs 1-1 of 2; the next ones: --after 1)"
    code, out = run("jobs", str(store), "--limit", "1", "--offset", "1")
    assert code == 0 and "(jobs" not in out and out.splitlines()[-1].endswith("tyres.md")
    data = json.loads(run("jobs", str(store), "--json", "--offset", "1")[1])
    assert (data["total"], data["offset"], [j["document_id"] for j in data["jobs"]]) == (
        2, 1, ["tyres.md"])
    code, out = run("jobs", str(store), "--limit", "0")
    assert code == 2 and "--limit" in out


def test_queue_into_a_store_another_process_writes_refuses_options_a_direct_queue_refuses(
    tmp_path: Path
) -> None:
    # the inbox path queued them unchecked: the worker then set the entry aside (or, before
    # that, failed it five times into the DLQ) far from the command that said "queued"
    from tests.helpers import open_test_store

    (source := tmp_path / "brakes.md").write_text(paragraphs(2), encoding="utf-8")
    with open_test_store(tmp_path / "store") as holder:  # the writer lock, as serve holds it
        code, out = run("ingest", "--store", str(holder.path), "--queue", "--domain", "d" * 2000,
                        str(source))
        assert code == 2 and "domain is 2,000 characters" in out
        assert not (holder.path / "jobs-inbox").exists()
        code, out = run("ingest", "--store", str(holder.path), "--queue", str(source))
        assert (code, out) == (0, "queued 1 job(s) (inbox)\n")


def test_jobs_names_the_inbox_files_the_worker_set_aside(tmp_path: Path) -> None:
    # a file set aside at import was seen by nobody: its jobs were simply never run
    store = make(tmp_path)
    folder = store / "jobs-inbox"
    folder.mkdir()
    (folder / "cut.json").write_text('[{"source": "/x', encoding="utf-8")
    assert run("worker", str(store))[0] == 0
    bad = str(folder / "cut.bad")
    code, out = run("jobs", str(store))
    assert code == 0 and out.splitlines()[1] == (
        "1 inbox file(s) set aside, their jobs not queued (the worker logged why; queue those "
        f"files again, then delete these): {bad}")
    assert json.loads(run("jobs", str(store), "--json")[1])["inbox_set_aside"] == [bad]


def test_queue_into_a_held_store_whose_inbox_is_a_file_says_what_to_do(tmp_path: Path) -> None:
    from tests.helpers import open_test_store

    (source := tmp_path / "brakes.md").write_text(paragraphs(2), encoding="utf-8")
    with open_test_store(tmp_path / "store") as holder:
        (inbox_file := holder.path / "jobs-inbox").write_text("x", encoding="utf-8")
        code, out = run("ingest", "--store", str(holder.path), "--queue", str(source))
        assert code == 2 and out == (
            f"Error: {inbox_file} is a file where the store keeps a folder of the jobs queued "
            "while another process writes the store, so `ingest --queue` fails while `serve` "
            f"or a worker holds the store: run `enginelib repair --store {holder.path}` while no "
            "process writes the store (it moves the file aside, keeping it), or move it away "
            "yourself\n")


def test_jobs_history_lists_the_jobs_done_and_cancelled(tmp_path: Path) -> None:
    # once purged or cancelled, a job was only a count ("history 2"): nothing listed it
    store = make(tmp_path)
    assert run("jobs", str(store), "--cancel", "2")[0] == 0
    assert run("worker", str(store))[0] == 0
    assert run("jobs", str(store), "--purge-done")[0] == 0
    code, out = run("jobs", str(store), "--history")
    brakes, tyres = tmp_path / "src" / "brakes.md", tmp_path / "src" / "tyres.md"
    assert (code, out) == (0, "history: DONE 1  CANCELLED 1\n"
                              f"    1 DONE      1/5  {brakes}\n"
                              f"    2 CANCELLED 0/5  {tyres}  cancelled while PENDING\n")
    code, out = run("jobs", str(store), "--history", "--status", "DONE", "--json")
    data = json.loads(out)
    assert code == 0 and [(j["job_id"], j["documents"]) for j in data["jobs"]] == [
        (1, ["brakes.md"])]
    assert (data["total"], data["next_after"]) == (1, None)
    # an action acts first, then the history is listed, as `jobs` lists the queue after it
    code, out = run("jobs", str(store), "--history", "--prune", "--keep-rows", "1", "--json")
    data = json.loads(out)
    assert (data["pruned_history"], data["total"]) == (1, 1)
    code, out = run("jobs", str(store), "--help")
    assert "--history" in out


def test_jobs_history_reads_a_store_on_a_read_only_medium(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = make(tmp_path)
    assert run("jobs", str(store), "--cancel", "2")[0] == 0
    expected = json.loads(run("jobs", str(store), "--history", "--json")[1])
    with read_only_copy(store, tmp_path / "media") as (medium, how, enforced):
        say(request, f"read-only medium: {how}" + ("" if enforced else " (not enforced)"))
        code, out = run("jobs", str(medium), "--history", "--json")
        assert code == 0, out
        assert json.loads(out) == expected and expected["counts"]["CANCELLED"] == 1
        assert run("jobs", str(medium), "--json")[0] == 0  # as the queue's list does
        assert not (medium / ".writer.lock").exists()
