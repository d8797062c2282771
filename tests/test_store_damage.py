"""Damaged store files: every answer is right or a typed error naming the file and the fix.

A derived file (chunk texts, index segments) damaged under a store is read around or rebuilt
from the catalog; `check` reports what it finds and `repair` rewrites it. Never a citation
of another chunk's text, never a bare dependency exception.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import enginelib
from enginelib import HashingEmbedder, maintenance
from enginelib.errors import BackendError, CorruptStoreError, TokenizerError
from tests.helpers import SMALL_CHUNKS, doc, open_test_store, paragraphs

REPO = Path(__file__).resolve().parent.parent
QUERIES = {"hybrid": "brakes1 pads caliper", "fulltext": "brakes2 rotor",
           "vector": "brakes3 torque piston"}


def _make(path: Path, topic: str = "brakes") -> None:
    with open_test_store(path) as store:
        store.ingest_documents([doc(f"{topic}-{i}", f"# {topic} {i}\n\n" + paragraphs(5 + i, f"{topic}{i}"))
                                for i in range(4)])
        store.search("pads", limit=1)  # the chunk texts are written when first read


def _segment(path: Path) -> Path:
    (segment,) = (path / "texts").glob("seg-*.txts")
    return segment


def _assert_cited_exactly(store: enginelib.Store) -> int:
    """Every hit's text is its document's text at its offsets; the number of hits."""
    count = 0
    for strategy, query in QUERIES.items():
        for hit in store.search(query, strategy=strategy, limit=5, answerability_threshold=None).hits:
            text = store.get_document(hit.document_id)["content"]
            assert text[hit.start_offset:hit.end_offset] == hit.content, (strategy, hit.label)
            quote = hit.citation
            assert text[quote.quote_start:quote.quote_end] == str(quote.quote)
            count += 1
    return count


def _search_everywhere(path: Path) -> None:
    with enginelib.open(path, read_only=True) as reader:
        assert _assert_cited_exactly(reader) == 15
    with enginelib.open(path) as writer:
        assert _assert_cited_exactly(writer) == 15


def test_flipped_bytes_in_a_text_segment_are_never_cited(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    segment = _segment(path)
    data = bytearray(segment.read_bytes())
    for at in range(100, len(data) // 2, 37):  # inside the texts, the length unchanged
        data[at] ^= 0x01
    segment.write_bytes(bytes(data))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with enginelib.open(path, read_only=True) as reader:
            assert _assert_cited_exactly(reader) == 15
    assert any(segment.name in str(w.message) and "repair" in str(w.message) for w in caught)
    problems = maintenance.check(path).problems
    assert any(segment.name in p and "enginelib repair" in p for p in problems), problems
    assert maintenance.repair(path).ok
    assert maintenance.check(path).ok
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _search_everywhere(path)


def test_another_stores_text_segment_under_this_ones_name_is_not_read(tmp_path: Path) -> None:
    path, other = tmp_path / "s", tmp_path / "other"
    _make(path)
    _make(other, "tyres")
    shutil.copyfile(_segment(other), _segment(path))
    _search_everywhere(path)
    assert maintenance.check(path).ok


def test_a_catalog_from_another_store_is_not_cited_with_this_ones_texts(tmp_path: Path) -> None:
    # Both stores at the same generation: the segments beside the catalog look current.
    path, other = tmp_path / "s", tmp_path / "other"
    _make(path)
    _make(other, "tyres")
    shutil.copyfile(other / "catalog.duckdb", path / "catalog.duckdb")

    with pytest.warns(RuntimeWarning, match="do not match"):
        with enginelib.open(path, read_only=True) as reader:
            assert _assert_cited_exactly(reader) > 0
    problems = maintenance.check(path).problems
    assert any("hold other texts than the catalog's" in p for p in problems), problems
    assert maintenance.repair(path).ok and maintenance.check(path).ok


def test_a_damaged_label_column_of_the_text_index_is_a_typed_error_and_a_check_problem(
        tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    (fast,) = (path / "indexes" / "text" / "tantivy").glob("*.fast")
    data = bytearray(fast.read_bytes())
    for at in range(8):
        data[at] ^= 0x5A
    fast.write_bytes(bytes(data))

    with enginelib.open(path, read_only=True) as reader:
        with pytest.raises(BackendError, match="enginelib repair"):
            reader.search("brakes2 rotor", strategy="fulltext", answerability_threshold=None)
    problems = maintenance.check(path).problems
    assert any("text index is damaged" in p for p in problems), problems
    assert maintenance.repair(path).ok and maintenance.check(path).ok
    _search_everywhere(path)


def test_a_flipped_header_of_the_vector_graph_is_rebuilt_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    (graph,) = (path / "indexes" / "vectors").glob("gen-*/vectors.hnsw")
    data = bytearray(graph.read_bytes())
    for at in range(8):
        data[at] ^= 0x5A
    graph.write_bytes(bytes(data))
    # hnswlib loaded such a file and the process died (SIGSEGV): run it apart
    script = textwrap.dedent(f"""
        import enginelib
        from tests.test_store_damage import _assert_cited_exactly
        with enginelib.open({str(path)!r}, read_only=True) as reader:
            assert _assert_cited_exactly(reader) == 15
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    _search_everywhere(path)
    assert maintenance.check(path).ok


def test_a_catalog_cut_short_is_named_with_the_way_back(tmp_path: Path) -> None:
    # DuckDB opens it (the header is whole) and fails on the first read past the cut
    path = tmp_path / "s"
    _make(path)
    catalog = path / "catalog.duckdb"
    catalog.write_bytes(catalog.read_bytes()[: catalog.stat().st_size // 2])

    for _attempt in range(2):  # the same answer again: the failed open holds nothing open
        with pytest.raises(CorruptStoreError, match="catalog.duckdb is damaged.*snapshot"):
            enginelib.open(path, read_only=True)
        with pytest.raises(CorruptStoreError, match="catalog.duckdb is damaged"):
            maintenance.check(path)
        with pytest.raises(CorruptStoreError, match="catalog.duckdb is damaged"):
            enginelib.open(path)


def test_a_store_whose_tokenizer_is_missing_is_refused_alike_twice(tmp_path: Path) -> None:
    """The chunker was made before the open's clean-up guard: its TokenizerError kept the
    catalog and the writer lock, and the next open in this process was StoreLockedError
    'another process is writing ... its lock file was removed while it wrote'."""
    path = tmp_path / "s"
    _make(path)
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    manifest["chunking"]["encoding"] = "o200k_base"  # a store chunked with another tokenizer
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for _attempt in range(2):
        for read_only in (False, True):
            with pytest.raises(TokenizerError, match="no offline copy of tokenizer encoding"):
                enginelib.open(path, embedder=HashingEmbedder(64), read_only=read_only)
    manifest["chunking"]["encoding"] = "cl100k_base"  # put back: the store opens for writing
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with enginelib.open(path, embedder=HashingEmbedder(64)) as store:
        assert store.search("pads", answerability_threshold=None).hits


_LOCKED_CHILD = """
import sys
from enginelib import HashingEmbedder, maintenance
from enginelib.errors import StorageError
for run in (maintenance.check, maintenance.repair):
    try:
        run(sys.argv[1])
    except StorageError as exc:
        assert ".writer.lock" in str(exc) and "permissions" in str(exc), str(exc)
    else:
        raise AssertionError(f"{run.__name__} went on without the writer lock")
"""


def test_an_unreadable_writer_lock_is_named_by_check_and_repair(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    lock = path / ".writer.lock"
    lock.chmod(0)
    command = [sys.executable, "-c", _LOCKED_CHILD, str(path)]
    if os.geteuid() == 0:  # root opens a chmod 0 file anyway: drop what lets it
        setpriv = shutil.which("setpriv")
        assert setpriv, "as root this test needs util-linux's setpriv to drop CAP_DAC_OVERRIDE"
        command = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *command]
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        lock.chmod(0o644)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("kind", ["text", "vectors"])
def test_a_folder_where_an_index_stamp_belongs_is_rebuilt(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "s"
    _make(path)
    stamp = path / "indexes" / kind / "stamp.json"
    stamp.unlink()
    stamp.mkdir()
    _search_everywhere(path)
    assert stamp.is_file() and maintenance.check(path).ok


def test_an_open_that_fails_holds_nothing_open(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from enginelib.core.store_core import StoreCore

    path = tmp_path / "s"
    _make(path)
    with monkeypatch.context() as patch:
        def fail(self: StoreCore) -> None:
            raise OSError(28, "No space left on device")
        patch.setattr(StoreCore, "_sync_indexes", fail)
        with pytest.raises(enginelib.EngineError, match="no space left"):
            enginelib.open(path)
    # the lock and the catalog were let go: the next open (here, or read-only) works
    with enginelib.open(path, read_only=True) as reader:
        assert _assert_cited_exactly(reader) == 15
    with enginelib.open(path) as writer:
        assert _assert_cited_exactly(writer) == 15


def _hits(store: enginelib.Store) -> list[tuple[str, int, str]]:
    return [(hit.document_id, hit.chunk_index, hit.content)
            for strategy, query in QUERIES.items()
            for hit in store.search(query, strategy=strategy, limit=5,
                                    answerability_threshold=None).hits]


def _same_ext_file(folder: Path, other: Path, ext: str) -> tuple[Path, Path]:
    """The largest segment file ending in ``ext`` under each folder."""
    mine = max(folder.glob(f"indexes/text/tantivy/*.{ext}"), key=lambda p: p.stat().st_size)
    theirs = max(other.glob(f"indexes/text/tantivy/*.{ext}"), key=lambda p: p.stat().st_size)
    return mine, theirs


@pytest.mark.parametrize("ext", ["term", "idx", "pos"])
def test_another_indexs_tantivy_file_under_this_ones_name_is_rebuilt_not_searched(
        tmp_path: Path, ext: str) -> None:
    path, other = tmp_path / "s", tmp_path / "other"
    _make(path)
    _make(other, "tyres")
    with enginelib.open(path, read_only=True) as reader:
        expected = _hits(reader)
    mine, theirs = _same_ext_file(path, other, ext)
    assert mine.read_bytes() != theirs.read_bytes()
    shutil.copyfile(theirs, mine)

    problems = maintenance.check(path).problems
    assert any("not those its stamp names" in p for p in problems), problems
    with enginelib.open(path, read_only=True) as reader:
        assert _hits(reader) == expected
    assert maintenance.repair(path).ok and maintenance.check(path).ok
    with enginelib.open(path) as writer:
        assert _hits(writer) == expected


@pytest.mark.parametrize("content", [b"", b'{"format": 3, "files": {"x": ', b"[1]"])
def test_a_damaged_text_stamp_is_an_unreadable_index_to_check(tmp_path: Path,
                                                               content: bytes) -> None:
    path = tmp_path / "s"
    _make(path)
    (path / "indexes" / "text" / "stamp.json").write_bytes(content)
    problems = maintenance.check(path).problems
    assert any("text index is missing or unreadable" in p for p in problems), problems
    _search_everywhere(path)
    assert maintenance.check(path).ok


def test_a_flipped_byte_inside_a_tantivy_file_is_reported_by_check(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    mine = max((path / "indexes" / "text" / "tantivy").glob("*.term"),
               key=lambda p: p.stat().st_size)
    data = bytearray(mine.read_bytes())
    data[len(data) // 3] ^= 0x01
    mine.write_bytes(bytes(data))
    problems = maintenance.check(path).problems
    assert any(mine.name in p and "checksum" in p for p in problems), problems
    assert maintenance.repair(path).ok and maintenance.check(path).ok


def test_another_indexs_tantivy_file_in_a_snapshot_is_reported_and_not_searched(
        tmp_path: Path) -> None:
    path, other = tmp_path / "s", tmp_path / "other"
    _make(path)
    _make(other, "tyres")
    with open_test_store(path) as store:
        store.create_snapshot("before")
    with enginelib.open(path, snapshot="before") as snap:
        expected = _hits(snap)
    mine, theirs = _same_ext_file(path / "snapshots" / "before", other, "term")
    shutil.copyfile(theirs, mine)

    problems = maintenance.check(path).problems
    assert any("snapshot 'before' text index" in p for p in problems), problems
    with pytest.warns(RuntimeWarning, match=f"snapshot 'before'.*{mine.name}"):
        with enginelib.open(path, snapshot="before") as snap:
            assert _hits(snap) == expected


@pytest.mark.parametrize("damage", ["empty", "half", "garbage"])
def test_a_damaged_snapshot_manifest_is_reported_and_named_on_open(tmp_path: Path,
                                                                   damage: str) -> None:
    path = tmp_path / "s"
    _make(path)
    with open_test_store(path) as store:
        store.create_snapshot("before")
    manifest = path / "snapshots" / "before" / "manifest.json"
    text = manifest.read_bytes()
    manifest.write_bytes({"empty": b"", "half": text[: len(text) // 2],
                          "garbage": b"\x00" * 8 + text[8:]}[damage])

    problems = maintenance.check(path).problems
    assert any("snapshot 'before' manifest.json" in p and "delete it" in p for p in problems)
    with pytest.raises(enginelib.SnapshotError, match="snapshot delete before"):
        enginelib.open(path, snapshot="before")
    _search_everywhere(path)  # the live store is not concerned


@pytest.mark.parametrize("column", ["n-start_offset.npy", "c-document_id.npy"])
def test_flipped_bytes_in_the_saved_view_columns_are_never_cited(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str) -> None:
    from enginelib import view_cache

    monkeypatch.setattr(view_cache, "MIN_ROWS", 0)  # small stores save their columns too
    path = tmp_path / "s"
    _make(path)
    (saved,) = (path / view_cache.FOLDER).glob("cols-*")
    target = saved / column
    data = bytearray(target.read_bytes())
    for at in range(len(data) - 8, len(data) - 48, -16):  # values near the end, in place
        data[at] ^= 0x01
    target.write_bytes(bytes(data))
    _search_everywhere(path)


@pytest.mark.parametrize("content", ["[1]", '{"x": 1}', '{"generation": "4"}', "null"])
def test_a_reindex_marker_of_another_shape_is_read_as_unreadable(tmp_path: Path,
                                                                 content: str) -> None:
    path = tmp_path / "s"
    _make(path)
    (path / ".reindex.json").write_text(content)
    _search_everywhere(path)
    assert not (path / ".reindex.json").exists() and maintenance.check(path).ok


def test_a_folder_where_the_reindex_marker_belongs_is_named_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    (path / ".reindex.json").mkdir()
    with pytest.raises(enginelib.StoreError, match=r"\.reindex\.json is a folder.*remove it"):
        enginelib.open(path)
    (path / ".reindex.json").rmdir()
    _search_everywhere(path)


def test_a_reader_leaves_a_damaged_shared_text_index_to_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    stamp_path = path / "indexes" / "text" / "stamp.json"
    stamp = json.loads(stamp_path.read_text())
    del stamp["files"]  # as an older release stamped it: the files are not compared
    stamp_path.write_text(json.dumps(stamp))
    meta = path / "indexes" / "text" / "tantivy" / "meta.json"
    meta.write_bytes(b"{")
    segments = sorted(p.name for p in meta.parent.iterdir())
    with enginelib.open(path, read_only=True) as reader:
        assert _assert_cited_exactly(reader) == 15
    # a writer may be using them: the reader removed nothing
    assert sorted(p.name for p in meta.parent.iterdir()) == segments
    _search_everywhere(path)
    assert maintenance.check(path).ok


def test_an_empty_usearch_graph_is_rebuilt_and_closes_no_other_file(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with enginelib.open(path, embedder=HashingEmbedder(64), chunking=SMALL_CHUNKS,
                        index_options={"vector": {"backend": "usearch-i8"}}) as store:
        store.ingest_documents([doc(f"d{i}", paragraphs(6 + i, f"t{i}")) for i in range(4)])
    (graph,) = (path / "indexes" / "vectors").glob("gen-*/graph.usearch")
    graph.write_bytes(b"")
    with enginelib.open(path, read_only=True) as reader:
        assert reader.search("t1 pads", strategy="vector", limit=3,
                             answerability_threshold=None).hits
    # the writer lock's descriptor was closed under it: "Bad file descriptor" on release
    problems = maintenance.check(path).problems
    assert any("vector index is missing or unreadable" in p for p in problems), problems
    assert maintenance.repair(path).ok and maintenance.check(path).ok


@pytest.mark.parametrize(("table", "damage"), [("chunks", "other"), ("documents", "other"),
                                               ("chunks", "flip"), ("meta", "flip")])
def test_a_damaged_or_replaced_snapshot_table_is_reported_and_never_searched(
        tmp_path: Path, table: str, damage: str) -> None:
    path, other = tmp_path / "s", tmp_path / "other"
    for folder, topic in ((path, "brakes"), (other, "tyres")):
        _make(folder, topic)
        with open_test_store(folder) as store:
            store.create_snapshot("before")
    target = path / "snapshots" / "before" / "tables" / f"{table}.parquet"
    if damage == "other":
        shutil.copyfile(other / "snapshots" / "before" / "tables" / f"{table}.parquet", target)
    else:
        data = bytearray(target.read_bytes())
        for at in range(8, 16):  # the first values, past Parquet's magic
            data[at] ^= 0x5A
        target.write_bytes(bytes(data))

    problems = maintenance.check(path).problems
    assert any("snapshot 'before' is damaged" in p and target.name in p for p in problems)
    with pytest.raises(enginelib.SnapshotError, match="snapshot delete before"):
        enginelib.open(path, snapshot="before")
    with pytest.raises(enginelib.SnapshotError, match="is damaged"):
        with open_test_store(path) as store:
            store.restore_snapshot("before")
    _search_everywhere(path)


def _to_first_layout(segment: Path) -> None:
    """Rewrite a segment as the previous release wrote it: no nonce, no per-row checks."""
    import struct

    data = segment.read_bytes()
    _, rows, blob, _ = struct.unpack_from("<8sqq8s", data, 0)
    body = data[32 : 32 + blob + 8 * (3 * rows + 1)]
    segment.write_bytes(struct.pack("<8sqq", b"ELTXTS01", rows, blob) + body)


def test_text_segments_of_the_previous_layout_are_read_by_readers_and_rewritten_by_a_writer(
        tmp_path: Path) -> None:
    """A reader of a store last written by the previous release found no segment it could
    read and loaded every chunk text of the catalog into memory, at each read-only open."""
    from enginelib.chunk_texts import TextSegments

    path = tmp_path / "s"
    _make(path)
    segment = _segment(path)
    _to_first_layout(segment)
    old = segment.read_bytes()
    readable = TextSegments(path / "texts", writable=False, generation=10**9)
    assert len(readable) == 1 and readable.damaged() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with enginelib.open(path, read_only=True) as reader:
            assert _assert_cited_exactly(reader) == 15
    assert segment.read_bytes() == old  # a reader writes nothing
    with enginelib.open(path) as writer:
        assert _assert_cited_exactly(writer) == 15
    written = list((path / "texts").glob("seg-*.txts"))
    assert written and all(s.read_bytes()[:8] == b"ELTXTS02" for s in written)
    assert maintenance.check(path).ok
