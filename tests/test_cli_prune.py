"""`enginelib ingest DOCS/ --prune`: exact output, JSON fields, refusals, a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture()
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    return CliRunner()


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "guides").mkdir(parents=True)
    (folder / "brakes.md").write_text("# Brake pads\n\nReplace pads under 2 mm.\n", encoding="utf-8")
    (folder / "guides" / "rotor.md").write_text("# Rotor\n\nA scored rotor hums zircadium.\n",
                                                encoding="utf-8")
    (folder / "notes.txt").write_text("Plain text about caliper bolts.\n", encoding="utf-8")
    return folder


def invoke(runner: CliRunner, *args: str) -> click.testing.Result:
    return runner.invoke(main, [*args, "--no-progress"] if args[0] == "ingest" else list(args),
                         catch_exceptions=False)


def stored_ids(store: Path) -> set[str]:
    with enginelib.open(store, read_only=True) as opened:
        return {d["document_id"] for d in opened.list_documents()}


def test_a_renamed_file_is_pruned_and_listed(runner: CliRunner, corpus: Path,
                                             tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    assert invoke(runner, "ingest", str(corpus), "--store", store).exit_code == 0
    (corpus / "guides" / "rotor.md").rename(corpus / "guides" / "disc.md")
    result = invoke(runner, "ingest", str(corpus), "--store", store, "--prune")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "added 1, updated 0, unchanged 2, skipped 0, pruned 1 documents; 1 chunks written "
        "(0 embedded, 1 from cache)",
        "  pruned guides/rotor.md",
    ]
    found = json.loads(invoke(runner, "search", "zircadium", "--store", store, "--json",
                              "--strategy", "fulltext").output)
    assert [h["document_id"] for h in found["hits"]] == ["guides/disc.md"]


def test_without_prune_nothing_is_deleted_and_the_line_is_as_before(
    runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    invoke(runner, "ingest", str(corpus), "--store", store)
    (corpus / "notes.txt").unlink()
    result = invoke(runner, "ingest", str(corpus), "--store", store)
    assert result.stdout == ("added 0, updated 0, unchanged 2, skipped 0 documents; 0 chunks "
                             "written (0 embedded, 0 from cache)\n")
    assert "notes.txt" in stored_ids(tmp_path / "store")


def test_json_carries_the_pruned_ids_and_the_listing_is_capped(
    runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    for n in range(23):
        (corpus / f"n{n:02}.md").write_text(f"# Note {n}\n\nText {n}.\n", encoding="utf-8")
    invoke(runner, "ingest", str(corpus), "--store", store)
    for n in range(23):
        (corpus / f"n{n:02}.md").unlink()
    (corpus / "notes.txt").unlink()
    data = json.loads(invoke(runner, "ingest", str(corpus), "--store", store, "--prune",
                             "--json").output)
    assert data["pruned"] == 24 and data["unchanged"] == 2
    assert data["pruned_ids"] == [f"n{n:02}.md" for n in range(23)] + ["notes.txt"]
    (corpus / "brakes.md").unlink()
    for n in range(22):
        (corpus / f"m{n:02}.md").write_text(f"# More {n}\n\nText {n}.\n", encoding="utf-8")
    invoke(runner, "ingest", str(corpus), "--store", store)
    for n in range(22):
        (corpus / f"m{n:02}.md").unlink()
    lines = invoke(runner, "ingest", str(corpus), "--store", store, "--prune").stdout.splitlines()
    assert lines[0].startswith("added 0, updated 0, unchanged 1, skipped 0, pruned 23 documents;")
    assert lines[1:] == ["  pruned brakes.md", *(f"  pruned m{n:02}.md" for n in range(19)),
                         "  and 3 more (--json lists them all)"]


def test_a_file_that_fails_to_load_is_kept(runner: CliRunner, corpus: Path,
                                           tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    invoke(runner, "ingest", str(corpus), "--store", store)
    (corpus / "notes.txt").write_bytes(b"\x00binary")
    result = invoke(runner, "ingest", str(corpus), "--store", store, "--prune")
    assert result.stdout.startswith("added 0, updated 0, unchanged 2, skipped 1, pruned 0 ")
    assert "notes.txt" in stored_ids(tmp_path / "store")


def test_an_emptied_folder_is_refused_with_exit_2(runner: CliRunner, corpus: Path,
                                                  tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    invoke(runner, "ingest", str(corpus), "--store", store)
    for file in (corpus / "brakes.md", corpus / "notes.txt", corpus / "guides" / "rotor.md"):
        file.unlink()
    result = invoke(runner, "ingest", str(corpus), "--store", store, "--prune")
    assert result.exit_code == 2
    assert result.stdout.startswith("added 0, updated 0, unchanged 0, skipped 0, pruned 0 ")
    assert result.stderr.splitlines()[-1].startswith(
        f"Error: {corpus}: the folder holds no file now, but the store has 3 document(s) from it")
    assert len(stored_ids(tmp_path / "store")) == 3


def test_prune_with_queue_is_a_usage_error(runner: CliRunner, corpus: Path,
                                           tmp_path: Path) -> None:
    result = invoke(runner, "ingest", str(corpus), "--store", str(tmp_path / "store"),
                    "--queue", "--prune")
    assert result.exit_code == 2 and "--prune is for a direct ingest" in result.output


def test_the_program_prunes_a_folder_given_by_another_relative_path(corpus: Path,
                                                                     tmp_path: Path) -> None:
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing-64", "PYTHONPATH": str(REPO)}
    store = str(tmp_path / "store")

    def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "enginelib.cli.main", *args, "--store",
                               store, "--no-progress"], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=120, check=False)

    assert cli("ingest", "docs", cwd=tmp_path).returncode == 0
    (corpus / "notes.txt").unlink()
    result = cli("ingest", "../../docs/", "--prune", cwd=corpus / "guides")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == ["  pruned notes.txt"]
    assert stored_ids(tmp_path / "store") == {"brakes.md", "guides/rotor.md"}
