"""Re-ingest and versions: a metadata change keeps its predecessor readable, and a file whose
path is only written another way is the same document, unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

import enginelib
from enginelib import LoadedDocument
from enginelib.embedders import HashingEmbedder


def open_store(path: Path) -> enginelib.Store:
    return enginelib.open(path, embedder=HashingEmbedder(32))


def test_a_metadata_change_at_re_ingest_archives_the_version_it_replaces(tmp_path: Path) -> None:
    # The re-ingest made version 1.0.1 and dropped 1.0.0 without a trace: a citation taken
    # before it named a version `history --text` could not find.
    with open_store(tmp_path / "s") as store:
        store.ingest_documents([LoadedDocument(id="a", text="Brake pads wear.")])
        store.ingest_documents([LoadedDocument(id="a", text="Brake pads wear.")], tags=["x"])
        versions = [(v["version"], v["change_summary"]) for v in store.history("a")]
        assert versions == [("1.0.0", "metadata changed"), ("1.0.1", "current")]
        assert store.version_text("a", "1.0.0") == "Brake pads wear."
        store.ingest_documents([LoadedDocument(id="a", text="Brake pads wear fast.")], tags=["x"])
        assert [v["change_summary"] for v in store.history("a")] == [
            "metadata changed", "content changed", "current"]


def test_a_path_written_another_way_for_the_same_file_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store ingested before source paths were absolute recorded the path as typed; the
    # first re-ingest after that rewrote every document as a new version.
    from enginelib.loaders import walk

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nBrake pads wear.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    load = walk._load
    with open_store(tmp_path / "s") as store:
        with monkeypatch.context() as old:  # the loader as it was: the path as typed
            old.setattr(walk, "_load", lambda path, doc_id, max_bytes, source:
                        load(path, doc_id, max_bytes, path))
            assert store.ingest_path("docs").added == ("a.md",)
        assert store.get_document("a.md")["source_path"] == "docs/a.md"
        again = store.ingest_path("./docs")
        assert again.unchanged == ("a.md",) and again.updated == ()
        assert [v["version"] for v in store.history("a.md")] == ["1.0.0"]
        # another file under the same id is a change, recorded with its absolute path
        other = tmp_path / "other"
        other.mkdir()
        (other / "a.md").write_text("# A\n\nBrake pads wear.\n", encoding="utf-8")
        assert store.ingest_path("other").updated == ("a.md",)
        assert store.get_document("a.md")["source_path"] == str(other / "a.md")


def test_a_version_the_document_never_had_is_named_as_such(tmp_path: Path) -> None:
    # version_text("a", "1.0") said "no document with id 'a@1.0' in this store": an id nobody
    # gave, for a document that is there, and no word of the versions it has
    from enginelib.errors import DocumentNotFoundError, VersionNotFoundError

    with open_store(tmp_path / "s") as store:
        store.ingest_documents([LoadedDocument(id="a", text="Brake pads wear.")])
        store.ingest_documents([LoadedDocument(id="a", text="Brake pads wear fast.")])
        with pytest.raises(VersionNotFoundError) as missing:
            store.version_text("a", "1.0")
        assert str(missing.value) == ("document 'a' has no version '1.0'; its versions are "
                                      "1.0.0, 1.1.0 (`enginelib history a` lists them)")
        assert missing.value.version == "1.0" and missing.value.document_id == "a"
        store.delete_document("a")  # a deleted document's history still answers
        with pytest.raises(VersionNotFoundError, match="its versions are 1.0.0, 1.1.0 "):
            store.version_text("a", "2.0.0")
        with pytest.raises(DocumentNotFoundError, match="no document with id 'b'"):
            store.version_text("b", "1.0.0")
