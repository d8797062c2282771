"""The catalog schema is versioned: an older store is migrated in place on a writable open."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import enginelib
from enginelib import catalog, schema, store
from enginelib.errors import IncompatibleStoreError
from tests.helpers import doc, open_test_store


def _add_reviewer_column(con: duckdb.DuckDBPyConnection, dim: int) -> None:
    con.execute("ALTER TABLE documents ADD COLUMN reviewer VARCHAR")


@pytest.fixture
def schema_v2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend this enginelib ships schema 2 with one migration from 1."""
    for module in (schema, catalog, store):
        monkeypatch.setattr(module, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(schema.MIGRATIONS, 2, _add_reviewer_column)


def _columns(path: Path) -> set[str]:
    con = duckdb.connect(str(path / "catalog.duckdb"), read_only=True)
    try:
        return {row[0] for row in con.execute("DESCRIBE documents").fetchall()}
    finally:
        con.close()


def test_older_store_is_migrated_on_a_writable_open(tmp_path: Path, schema_v2: None) -> None:
    with pytest.MonkeyPatch.context() as old:
        for module in (schema, catalog, store):
            old.setattr(module, "SCHEMA_VERSION", 1)
        s = open_test_store(tmp_path / "s")
        s.ingest_documents([doc("a", "brake pads wear out and must be replaced in pairs")])
        s.close()
    assert "reviewer" not in _columns(tmp_path / "s")

    # A reader cannot migrate (it must not write), and says how to proceed.
    with pytest.raises(IncompatibleStoreError, match="open it once for writing"):
        enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(64), read_only=True)

    s = open_test_store(tmp_path / "s")
    assert s._catalog.get_meta("schema_version") == "2"
    hits = s.search("brake pads", strategy="fulltext", answerability_threshold=None)
    assert [h.document_id for h in hits] == ["a"]  # nothing lost in the migration
    s.close()
    assert "reviewer" in _columns(tmp_path / "s")
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["schema_version"] == 2


def test_newer_store_is_refused(tmp_path: Path) -> None:
    s = open_test_store(tmp_path / "s")
    s._catalog.set_meta("schema_version", "99")
    s.close()
    with pytest.raises(IncompatibleStoreError, match="newer than this enginelib"):
        open_test_store(tmp_path / "s")


def test_check_refuses_a_store_of_a_newer_schema_as_open_does(tmp_path: Path) -> None:
    # a manifest.json saying schema_version 999: open, repair and stats raised
    # IncompatibleStoreError, `enginelib check` said "store ... is healthy" and exited 0
    from click.testing import CliRunner

    from enginelib.cli.main import main
    from enginelib.maintenance import check

    open_test_store(tmp_path / "s").close()
    path = tmp_path / "s" / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 999}))
    written = path.read_bytes()
    with pytest.raises(IncompatibleStoreError, match="uses schema 999, newer than this"):
        check(tmp_path / "s")
    for command in (["check"], ["check", "--json"], ["stats"]):
        result = CliRunner().invoke(main, [*command, "--store", str(tmp_path / "s")])
        assert result.exit_code == 2, (command, result.output)
        assert "newer than this enginelib (1): upgrade enginelib" in result.output, command
    assert path.read_bytes() == written
