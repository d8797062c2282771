"""The job queue against unlucky or hostile input: odd file names, odd rows, odd timing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from enginelib.cli.main import main
from enginelib.errors import InvalidInputError
from tests.helpers import open_test_store, paragraphs

ENV = {"ENGINELIB_EMBEDDER": "hashing"}


def write(path: Path | bytes, text: str = "") -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text or paragraphs(2))


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_path_that_is_not_utf8_is_refused_naming_it(tmp_path: Path, where: str) -> None:
    """A file name with a Latin-1 byte was refused without naming the file (a folder of
    thousands: find it by hand); under such a folder, DuckDB's encoding error said to run
    `check` and `repair`, which find nothing."""
    src = tmp_path / "src"
    src.mkdir()
    write(src / "fine.md")
    odd = os.fsencode(src) + (b"/caf\xe9.txt" if where == "file" else b"/caf\xe9")
    if where == "folder":
        os.mkdir(odd)
        write(odd + b"/inside.txt")
    else:
        write(odd)
    shown = odd.decode("utf-8", "backslashreplace") + ("" if where == "file" else "/inside.txt")
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError) as caught:
            store.enqueue_paths(src)
        assert str(caught.value) == (
            f"{shown}: its path is not valid UTF-8, and the jobs table holds text: rename it "
            "(or leave it out with --exclude); nothing was queued")
        assert store.jobs().jobs() == []
        assert len(store.enqueue_paths(src, exclude=["caf*"])) == 1
    result = CliRunner().invoke(main, ["ingest", "--store", str(tmp_path / "store"), "--queue",
                                       str(src)], env=ENV)
    assert result.exit_code == 2 and f"Error: {shown}: its path is not valid UTF-8" in (
        result.output)


def test_a_file_whose_name_has_a_newline_is_named_on_one_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    write(src / "a\nb.md")
    result = CliRunner().invoke(main, ["ingest", "--store", str(tmp_path / "store"), "--queue",
                                       str(src)], env=ENV)
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {src}/a\\nb.md: its document id contains a control character ('\\n' at "
        "position 1): rename the file, or give the record another id; nothing was queued\n")
