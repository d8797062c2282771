"""Folder sync through the Python API: ``ingest_path(..., prune=True)`` deletes the documents
whose file under a folder given is gone, and nothing else."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from enginelib import PruneRefusedError, Store
from enginelib.errors import DocumentNotFoundError, InvalidInputError
from enginelib.prune import PRUNED, stale_documents
from tests.helpers import doc, open_test_store

REPO = Path(__file__).resolve().parent.parent


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def docs_folder(root: Path, name: str = "docs") -> Path:
    folder = root / name
    write(folder / "brakes.md", "# Brakes\n\nReplace the pads when thinner than 2 mm.\n")
    write(folder / "guides" / "rotor.md", "# Rotor\n\nA scored rotor hums zircadium.\n")
    write(folder / "notes.txt", "Plain notes about caliper bolts.\n")
    return folder


def ids(store: Store) -> set[str]:
    return {d["document_id"] for d in store.list_documents()}


def found(store: Store, query: str) -> set[str]:
    response = store.search(query, strategy="fulltext", answerability_threshold=None)
    return {h.document_id for h in response.hits}


def test_a_renamed_file_replaces_its_old_document(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        assert found(store, "zircadium") == {"guides/rotor.md"}
        (folder / "guides" / "rotor.md").rename(folder / "guides" / "disc.md")
        report = store.ingest_path(folder, prune=True)
        assert report.added == ("guides/disc.md",) and report.pruned == ("guides/rotor.md",)
        assert ids(store) == {"brakes.md", "guides/disc.md", "notes.txt"}
        assert found(store, "zircadium") == {"guides/disc.md"}


def test_a_removed_file_is_pruned_and_its_history_kept(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        (folder / "notes.txt").unlink()
        report = store.ingest_path(folder, prune=True)
        assert report.pruned == ("notes.txt",) and report.unchanged == ("brakes.md", "guides/rotor.md")
        with pytest.raises(DocumentNotFoundError):
            store.get_document("notes.txt")
        assert [(h["version"], h["change_summary"]) for h in store.history("notes.txt")] == [
            ("1.0.0", PRUNED)]
        assert "caliper bolts" in store.version_text("notes.txt", "1.0.0")
        assert store.ingest_path(folder, prune=True).pruned == ()  # nothing left to do


def test_without_prune_nothing_is_deleted(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        (folder / "notes.txt").unlink()
        report = store.ingest_path(folder)
        assert report.pruned == () and "notes.txt" in ids(store)


def test_a_file_that_fails_to_load_is_kept(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        (folder / "brakes.md").write_bytes(b"\x00\x01binary now")  # loads no more, still there
        (folder / "notes.txt").write_text("   \n", encoding="utf-8")  # empty now
        write(folder / "logo.png", "not a document")  # unsupported: skipped
        report = store.ingest_path(folder, prune=True)
        assert len(report.skipped) == 3 and report.pruned == ()
        assert ids(store) == {"brakes.md", "guides/rotor.md", "notes.txt"}
        assert found(store, "pads") == {"brakes.md"}


def test_a_file_that_cannot_be_checked_is_kept(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    real_lstat = os.lstat

    def lstat(path: str | os.PathLike[str], *args: object, **kwargs: object) -> os.stat_result:
        if str(path).endswith("locked.md"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_lstat(path)

    monkeypatch.setattr(os, "lstat", lstat)
    rows = [("locked.md", str(folder / "locked.md")), ("gone.md", str(folder / "gone.md"))]
    assert stale_documents(rows, [folder]) == {folder: ["gone.md"]}



def test_a_linked_folder_whose_target_is_gone_keeps_its_documents(tmp_path: Path) -> None:
    # docs/usb -> a folder on a drive: unmounted, the link leads nowhere and every file
    # behind it read as gone, so a sync deleted them all while the link was still there.
    folder = docs_folder(tmp_path)
    drive = tmp_path / "media" / "usb"
    write(drive / "docs" / "manual.md", "# Manual\n\nOn the drive.\n")
    write(drive / "docs" / "deep" / "spec.md", "# Spec\n\nAlso on the drive.\n")
    (folder / "usb").symlink_to(drive / "docs")
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        assert {"usb/manual.md", "usb/deep/spec.md"} <= ids(store)
        drive.rename(tmp_path / "media" / "unmounted")
        report = store.ingest_path(folder, prune=True)
        assert report.pruned == ()
        assert [s.reason for s in report.skipped] == [
            f"{folder / 'usb'}: a symbolic link to {str(drive / 'docs')!r}, which does not exist"]
        assert {"usb/manual.md", "usb/deep/spec.md"} <= ids(store)
        # the drive back with one file removed: that one goes; the link removed: all go
        (tmp_path / "media" / "unmounted").rename(drive)
        (drive / "docs" / "manual.md").unlink()
        assert store.ingest_path(folder, prune=True).pruned == ("usb/manual.md",)
        (folder / "usb").unlink()
        assert store.ingest_path(folder, prune=True).pruned == ("usb/deep/spec.md",)
        assert ids(store) == {"brakes.md", "guides/rotor.md", "notes.txt"}

def test_a_source_path_that_is_a_url_is_no_file(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    rows = [("u", "https://example.com/a.md"), ("s", "s3://bucket/b.md"), ("f", "gone.md")]
    assert stale_documents(rows, [tmp_path]) == {tmp_path: ["f"]}


def test_a_sibling_folder_sharing_a_prefix_is_never_pruned(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path)
    sibling = tmp_path / "docsx"
    write(sibling / "other.md", "# Other\n\nSibling text.\n")
    write(tmp_path / "docs2" / "more.md", "# More\n\nSecond folder.\n")
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(docs)
        store.ingest_path(sibling)
        store.ingest_path(tmp_path / "docs2")
        (sibling / "other.md").unlink()
        (tmp_path / "docs2" / "more.md").unlink()
        write(sibling / "keep.md", "# Keep\n\nSo docsx is no empty folder.\n")
        assert store.ingest_path(docs, prune=True).pruned == ()
        assert {"other.md", "more.md"} <= ids(store)
        assert store.ingest_path(sibling, prune=True).pruned == ("other.md",)
        assert "more.md" in ids(store)


def test_the_same_folder_by_another_path_or_a_symlink(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = docs_folder(tmp_path)
    (tmp_path / "link").symlink_to(folder)
    monkeypatch.chdir(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path("link")
        (folder / "notes.txt").unlink()
        assert store.ingest_path("./docs/../docs", prune=True).pruned == ("notes.txt",)
        (folder / "brakes.md").unlink()
        assert store.ingest_path(str(tmp_path / "link"), prune=True).pruned == ("brakes.md",)


def test_a_path_recorded_relative_is_read_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stores written before source paths were absolute hold the path as typed.
    docs_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_documents([doc("old.md", "Old text.", source_path="docs/old.md"),
                                doc("elsewhere.md", "Text.", source_path="docsx/elsewhere.md")])
        assert store.ingest_path("docs", prune=True).pruned == ("old.md",)
        assert "elsewhere.md" in ids(store)


def test_an_empty_or_unmounted_folder_refuses_the_prune(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    other = tmp_path / "other"
    write(other / "a.md", "# A\n\nText.\n")
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder, other)
        (other / "a.md").unlink()
        write(other / "b.md", "# B\n\nText.\n")
        for file in (folder / "brakes.md", folder / "notes.txt", folder / "guides" / "rotor.md"):
            file.unlink()
        write(folder / ".mountpoint", "hidden files are not walked")
        with pytest.raises(PruneRefusedError, match=r"holds no file now, but the store has 3 "
                                                    r"document\(s\) from it") as refused:
            store.ingest_path(folder, other, prune=True)
        assert refused.value.report is not None and refused.value.report.added == ("b.md",)
        # nothing pruned, from either folder
        assert ids(store) == {"brakes.md", "guides/rotor.md", "notes.txt", "a.md", "b.md"}


def test_an_empty_folder_the_store_has_nothing_from_is_no_refusal(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(docs_folder(tmp_path))
        assert store.ingest_path(tmp_path / "empty", prune=True).pruned == ()
        assert len(ids(store)) == 3


def test_a_missing_folder_or_a_bad_flag_fails_before_anything(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        (folder / "notes.txt").unlink()
        with pytest.raises(Exception, match="no such file or folder"):
            store.ingest_path(folder, tmp_path / "missing", prune=True)
        with pytest.raises(InvalidInputError, match="prune must be True or False"):
            store.ingest_path(folder, prune="yes")
        assert "notes.txt" in ids(store)


def test_a_folder_gone_by_prune_time_refuses(tmp_path: Path) -> None:
    from enginelib.prune import prune_missing

    folder = docs_folder(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        folder.rename(tmp_path / "moved")
        with pytest.raises(PruneRefusedError, match="no longer a folder"):
            prune_missing(store, [folder])
        assert len(ids(store)) == 3


def test_files_given_directly_are_not_pruned_against(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        (folder / "notes.txt").unlink()
        report = store.ingest_path(folder / "brakes.md", prune=True)
        assert report.pruned == () and "notes.txt" in ids(store)


def test_jsonl_documents_go_only_with_their_file(tmp_path: Path) -> None:
    folder = docs_folder(tmp_path)
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"r{i}", "text": f"Record {i} text."}) + "\n"
                              for i in range(3)), encoding="utf-8")
    with open_test_store(tmp_path / "s") as store:
        store.ingest_path(folder)
        # r2 now comes from a file outside the folder: its current version is not corpus's
        store.ingest_path(write(tmp_path / "elsewhere.jsonl",
                                json.dumps({"id": "r2", "text": "Record two, moved."}) + "\n"))
        corpus.write_text(json.dumps({"id": "r0", "text": "Record 0 text."}) + "\n",
                          encoding="utf-8")
        assert store.ingest_path(folder, prune=True).pruned == ()  # a removed line: kept
        assert {"r0", "r1", "r2"} <= ids(store)
        corpus.unlink()
        assert store.ingest_path(folder, prune=True).pruned == ("r0", "r1")
        assert "r2" in ids(store)


_PRUNER = textwrap.dedent(
    """
    import sys
    import enginelib
    from tests.helpers import SMALL_CHUNKS
    store = enginelib.open(sys.argv[1], embedder=enginelib.HashingEmbedder(64), chunking=SMALL_CHUNKS)
    print(store.ingest_path(sys.argv[2], prune=True).pruned)
    store.close()
    """
)


@pytest.mark.parametrize("step", ["before_catalog_commit", "after_catalog_commit",
                                  "mid_vector_save", "after_manifest"])
def test_a_kill_during_the_prune_loses_nothing_and_a_rerun_completes_it(
    tmp_path: Path, step: str
) -> None:
    folder = docs_folder(tmp_path)
    path = tmp_path / "s"
    with open_test_store(path) as store:
        store.ingest_path(folder)
    (folder / "notes.txt").unlink()
    (folder / "guides" / "rotor.md").unlink()
    # nothing to ingest: the first commit step reached is the prune's
    result = subprocess.run([sys.executable, "-c", _PRUNER, str(path), str(folder)], cwd=REPO,
                            env={**os.environ, "ENGINELIB_CRASH_AT": step}, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == -9, result.stderr
    with open_test_store(path) as store:
        for document in store.list_documents():  # every committed document searchable
            assert found(store, document["title"]) >= {document["document_id"]}
        left = ids(store)
        assert left == ({"brakes.md"} if step != "before_catalog_commit"
                        else {"brakes.md", "notes.txt", "guides/rotor.md"})
        assert store.ingest_path(folder, prune=True).pruned == tuple(sorted(left - {"brakes.md"}))
        assert ids(store) == {"brakes.md"} and found(store, "zircadium") == set()
        assert store.check().ok
