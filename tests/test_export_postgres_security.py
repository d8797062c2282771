"""Secure defaults of the Postgres export, proven in a database set up like a Supabase project.

The fixture reproduces what matters of Supabase: the API roles ``anon``, ``authenticated``
and ``service_role`` (BYPASSRLS), the default privileges that hand them every privilege on
new tables, sequences and functions, ``auth.jwt()`` reading ``request.jwt.claims`` (what
PostgREST sets per request), pgvector in the ``extensions`` schema, and a project that
already follows the well-known hybrid-search guide (``public.documents`` and
``public.hybrid_search``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import enginelib
from enginelib import HashingEmbedder, Store
from enginelib.errors import InvalidInputError
from enginelib.export import ExportOptions, export_postgres, write_sql
from tests.helpers import doc, open_test_store
from tests.pg_server import PgServer, pg_dsn, pg_server  # noqa: F401 - pytest fixtures

TABLES = ("documents", "chunks", "document_versions", "sources", "exports", "text_stats", "term_stats",
          "code_stats")
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
HYBRID = "enginelib.hybrid_search(text, extensions.vector, integer, integer, jsonb, integer)"

_SUPABASE = """
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'anon') THEN CREATE ROLE anon NOLOGIN NOINHERIT; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticated') THEN
    CREATE ROLE authenticated NOLOGIN NOINHERIT; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'service_role') THEN
    CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS; END IF;
END $$;
CREATE SCHEMA extensions;
CREATE EXTENSION vector WITH SCHEMA extensions;
GRANT USAGE ON SCHEMA extensions TO anon, authenticated, service_role;
GRANT USAGE ON SCHEMA public TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON SEQUENCES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON FUNCTIONS TO anon, authenticated, service_role;
-- Stricter than a real project: the same defaults for every schema, so the export's own
-- schema gets them too and only its explicit revokes protect it.
ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES GRANT ALL ON FUNCTIONS TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES GRANT ALL ON SCHEMAS TO anon, authenticated, service_role;
CREATE SCHEMA auth;
GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role;
CREATE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('request.jwt.claim', true), ''),
                  nullif(current_setting('request.jwt.claims', true), ''))::jsonb
$$;
-- The hybrid-search guide's objects, already in the project.
CREATE TABLE public.documents (id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, content text,
  fts tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
  embedding extensions.vector(64));
INSERT INTO public.documents (content) VALUES ('the project''s own row');
CREATE FUNCTION public.hybrid_search(query_text text, query_embedding extensions.vector(64),
  match_count int, full_text_weight float = 1, semantic_weight float = 1, rrf_k int = 50)
RETURNS SETOF public.documents LANGUAGE sql AS $$ SELECT * FROM public.documents LIMIT match_count $$;
"""


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


@pytest.fixture()
def supabase_dsn(pg_dsn: str) -> str:
    with connect(pg_dsn) as conn:
        conn.execute(_SUPABASE)
    return pg_dsn


def tenant_store(path: Path) -> Store:
    store = open_test_store(path)
    store.ingest_documents([
        doc("a-doc", "brake pads for tenant a", metadata={"tenant_id": "A"}),
        doc("b-doc", "brake pads for tenant b", metadata={"tenant_id": "B"}),
        doc("shared-doc", "brake pads for everyone"),
    ])
    return store


@contextmanager
def as_role(dsn: str, role: str, claims: dict[str, Any] | None = None,
            app_tenant: str | None = None) -> Iterator[psycopg.Connection[Any]]:
    """A transaction running as ``role`` with the settings PostgREST would make."""
    with connect(dsn) as conn, conn.transaction():
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
        if claims is not None:
            conn.execute("SELECT set_config('request.jwt.claims', %s, true)", [json.dumps(claims)])
        if app_tenant is not None:
            conn.execute("SELECT set_config('app.tenant_id', %s, true)", [app_tenant])
        yield conn


def visible(dsn: str, role: str, vector: str, **settings: Any) -> tuple[set[str], set[str], set[str]]:
    """Document ids ``role`` sees through documents, chunks and hybrid_search."""
    with as_role(dsn, role, **settings) as conn:
        docs = {r[0] for r in conn.execute("SELECT document_id FROM enginelib.documents")}
        chunks = {r[0] for r in conn.execute("SELECT document_id FROM enginelib.chunks")}
        hits = {r[0] for r in conn.execute(
            "SELECT document_id FROM enginelib.hybrid_search('brake pads', %s::extensions.vector, 10)",
            [vector])}
    return docs, chunks, hits


def query_vector(store: Store) -> str:
    values = store.query_embeddings.embed(["brake pads"])[0]
    return "[" + ",".join(f"{float(x):.9g}" for x in values) + "]"


def test_anon_has_no_access_and_tenants_see_their_own_and_shared_rows(tmp_path: Path, supabase_dsn: str) -> None:
    store = tenant_store(tmp_path / "store")
    export_postgres(store, supabase_dsn)  # beside public.documents and public.hybrid_search
    vector = query_vector(store)
    store.close()
    with connect(supabase_dsn) as conn:
        # The project's objects are untouched.
        assert conn.execute("SELECT content FROM public.documents").fetchall() == [("the project's own row",)]
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'hybrid_search'").fetchone() == (2,)
        for table in TABLES:
            for privilege in PRIVILEGES:
                assert conn.execute("SELECT has_table_privilege('anon', %s, %s)",
                                    [f"enginelib.{table}", privilege]).fetchone() == (False,), (table, privilege)
            for privilege in PRIVILEGES[1:]:  # authenticated reads, never writes
                assert conn.execute("SELECT has_table_privilege('authenticated', %s, %s)",
                                    [f"enginelib.{table}", privilege]).fetchone() == (False,), (table, privilege)
        assert conn.execute("SELECT has_function_privilege('anon', %s, 'EXECUTE'), "
                            "has_function_privilege('authenticated', %s, 'EXECUTE'), "
                            "has_schema_privilege('anon', 'enginelib', 'USAGE')",
                            [HYBRID, HYBRID]).fetchone() == (False, True, False)
    with as_role(supabase_dsn, "anon", claims={"role": "anon"}) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT count(*) FROM enginelib.chunks")
    with as_role(supabase_dsn, "anon", claims={"role": "anon"}) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("DELETE FROM enginelib.documents")

    a_and_shared = {"a-doc", "shared-doc"}
    claims_a = {"role": "authenticated", "tenant_id": "A"}
    assert visible(supabase_dsn, "authenticated", vector, claims=claims_a) == (a_and_shared,) * 3
    # A JWT without the claim gets shared rows only, even with app.tenant_id set.
    no_claim = {"role": "authenticated", "sub": "u1"}
    assert visible(supabase_dsn, "authenticated", vector, claims=no_claim) == ({"shared-doc"},) * 3
    assert visible(supabase_dsn, "authenticated", vector, claims=no_claim, app_tenant="A") == ({"shared-doc"},) * 3
    # Plain Postgres (no JWT at all): app.tenant_id.
    assert visible(supabase_dsn, "authenticated", vector, app_tenant="B") == ({"b-doc", "shared-doc"},) * 3
    with as_role(supabase_dsn, "authenticated", claims=claims_a) as conn:
        # Our tenant function agrees with Supabase's auth.jwt().
        assert conn.execute("SELECT enginelib.current_tenant(), auth.jwt() ->> 'tenant_id'").fetchone() == ("A", "A")
    for statement in ("DELETE FROM enginelib.chunks", "UPDATE enginelib.documents SET title = 'x'",
                      "INSERT INTO enginelib.sources (source_id) VALUES ('x')", "TRUNCATE enginelib.chunks"):
        with as_role(supabase_dsn, "authenticated", claims=claims_a) as conn, \
                pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
    # service_role (BYPASSRLS in Supabase) sees and may change everything.
    with as_role(supabase_dsn, "service_role", claims={"role": "service_role"}) as conn:
        assert conn.execute("SELECT count(*) FROM enginelib.documents").fetchone() == (3,)
        conn.execute("UPDATE enginelib.documents SET title = title")


def test_supabase_linter_checks_pass(tmp_path: Path, supabase_dsn: str) -> None:
    store = tenant_store(tmp_path / "store")
    export_postgres(store, supabase_dsn)
    store.close()
    with connect(supabase_dsn) as conn:
        # function_search_path_mutable: every function has a fixed search_path.
        mutable = conn.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'enginelib' AND NOT EXISTS (SELECT 1 FROM unnest(coalesce(p.proconfig, '{}')) c "
            "WHERE c LIKE 'search_path=%')").fetchall()
        definer = conn.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'enginelib' AND p.prosecdef").fetchall()
        functions = conn.execute(
            "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'enginelib'").fetchone()
        # rls_disabled_in_public (applied to our schema) and policy_exists_rls_disabled.
        no_rls = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'enginelib' AND c.relkind = 'r' AND NOT c.relrowsecurity").fetchall()
        tables = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'enginelib' AND c.relkind = 'r'").fetchone()
        # extension_in_public.
        in_public = conn.execute(
            "SELECT e.extname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE n.nspname = 'public'").fetchall()
        trgm = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                            "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").fetchone()
    assert mutable == [] and definer == [] and functions is not None and functions[0] == 6
    assert no_rls == [] and tables == (len(TABLES),)
    assert in_public == [] and trgm == ("extensions",)


def test_shared_rows_option_public_read_and_nested_claim(tmp_path: Path, supabase_dsn: str) -> None:
    store = tenant_store(tmp_path / "store")
    vector = query_vector(store)
    export_postgres(store, supabase_dsn, shared_rows=False, tenant_claim="app_metadata.tenant_id")
    claims_a = {"role": "authenticated", "app_metadata": {"tenant_id": "A"}}
    assert visible(supabase_dsn, "authenticated", vector, claims=claims_a) == ({"a-doc"},) * 3
    assert visible(supabase_dsn, "authenticated", vector, claims={"role": "authenticated"}) == (set(),) * 3
    # A top-level claim is not the configured one.
    assert visible(supabase_dsn, "authenticated", vector,
                   claims={"role": "authenticated", "tenant_id": "A"}) == (set(),) * 3
    # Changing the options rewrites the policies (not a no-op re-export).
    report = export_postgres(store, supabase_dsn, public_read=True)
    store.close()
    assert "unchanged" not in report.changes
    assert visible(supabase_dsn, "anon", vector, claims={"role": "anon"}) == ({"shared-doc"},) * 3
    with as_role(supabase_dsn, "anon", claims={"role": "anon"}) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("DELETE FROM enginelib.chunks")
    with pytest.raises(InvalidInputError, match="tenant claim"):
        ExportOptions(tenant_claim="tenant'; drop table x")


def test_export_into_public_revokes_supabase_default_grants(tmp_path: Path, supabase_dsn: str) -> None:
    store = tenant_store(tmp_path / "store")
    export_postgres(store, supabase_dsn, schema="public", table_prefix="kb_")
    store.close()
    with connect(supabase_dsn) as conn:
        for table in TABLES:
            granted = conn.execute(
                "SELECT array_agg(p) FILTER (WHERE has_table_privilege('anon', %s, p)) FROM unnest(%s::text[]) p",
                [f"public.kb_{table}", list(PRIVILEGES)]).fetchone()
            assert granted == (None,), table
        assert conn.execute(
            "SELECT has_function_privilege('anon', 'public.kb_hybrid_search(text, extensions.vector, integer, "
            "integer, jsonb, integer)', 'EXECUTE')").fetchone() == (False,)


def test_sql_file_loads_beside_the_guides_hybrid_search(tmp_path: Path, pg_server: PgServer,
                                                        supabase_dsn: str) -> None:
    store = tenant_store(tmp_path / "store")
    vector = query_vector(store)
    out = tmp_path / "export.sql"
    write_sql(store, out)
    store.close()
    result = subprocess.run([str(pg_server.psql), "-X", "-q", "-f", str(out), supabase_dsn],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    claims_a = {"role": "authenticated", "tenant_id": "A"}
    assert visible(supabase_dsn, "authenticated", vector, claims=claims_a) == ({"a-doc", "shared-doc"},) * 3


def test_api_roles_cannot_create_objects_in_the_export_schema(tmp_path: Path, supabase_dsn: str) -> None:
    # The project's default privileges grant ALL on new schemas: authenticated (and anon
    # with public_read) kept CREATE on the export's schema beside the USAGE granted.
    store = tenant_store(tmp_path / "store")
    export_postgres(store, supabase_dsn, public_read=True)
    store.close()
    with connect(supabase_dsn) as conn:
        assert conn.execute(
            "SELECT has_schema_privilege('authenticated', 'enginelib', 'CREATE'), "
            "has_schema_privilege('anon', 'enginelib', 'CREATE'), "
            "has_schema_privilege('anon', 'enginelib', 'USAGE')").fetchone() == (False, False, True)
    with as_role(supabase_dsn, "authenticated", claims={"role": "authenticated", "tenant_id": "A"}) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("CREATE TABLE enginelib.v2_documents (document_id text)")


@pytest.mark.parametrize("schema", ["api"])
def test_exporting_into_a_schema_the_project_already_uses_keeps_its_roles_reach(
        tmp_path: Path, supabase_dsn: str, schema: str) -> None:
    # The export revoked every privilege on its target schema from anon: exported into a
    # schema that was already there (the project's own "api"; Supabase's "extensions",
    # beside pgvector, is now refused as a target), anon could no longer read the project's tables in it or name the vector
    # type its own functions take.
    with connect(supabase_dsn) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS api")
        conn.execute("CREATE TABLE api.things (x int)")
        conn.execute("INSERT INTO api.things VALUES (1)")
        conn.execute("GRANT USAGE ON SCHEMA api TO anon, authenticated")
        conn.execute("GRANT SELECT ON api.things TO anon, authenticated")
    store = tenant_store(tmp_path / "store")
    export_postgres(store, supabase_dsn, schema=schema)
    export_postgres(store, supabase_dsn, schema=schema)  # a no-op re-export changes nothing
    store.close()
    with as_role(supabase_dsn, "anon", claims={"role": "anon"}) as conn:
        assert conn.execute("SELECT x FROM api.things").fetchall() == [(1,)]
        assert conn.execute("SELECT count(*) FROM public.hybrid_search("
                            "'x', array_fill(0.1::real, ARRAY[64])::extensions.vector(64), 3)").fetchone() == (1,)
    with connect(supabase_dsn) as conn:
        # The export's own objects stay closed to anon, and no API role may create beside them.
        for table in TABLES:
            assert conn.execute("SELECT has_table_privilege('anon', %s, 'SELECT')",
                                [f"{schema}.{table}"]).fetchone() == (False,), table
        assert conn.execute(
            "SELECT has_function_privilege('anon', %s, 'EXECUTE'), has_schema_privilege('anon', %s, 'CREATE'), "
            "has_schema_privilege('authenticated', %s, 'CREATE')",
            [HYBRID.replace("enginelib.", f"{schema}."), schema, schema]).fetchone() == (False, False, False)
        # The project's USAGE grant on its schema stays.
        assert conn.execute("SELECT has_schema_privilege('anon', %s, 'USAGE')", [schema]).fetchone() == (True,)
    # A schema the export creates is its own: anon gets nothing on it, not even USAGE.
    store = open_test_store(tmp_path / "store")
    export_postgres(store, supabase_dsn)
    store.close()
    with connect(supabase_dsn) as conn:
        assert conn.execute("SELECT has_schema_privilege('anon', 'enginelib', 'USAGE'), "
                            "obj_description('enginelib'::regnamespace, 'pg_namespace')").fetchone() == (
            False, "created by enginelib export: its privileges are managed by the export")


def test_objects_planted_in_the_extension_schema_never_run_as_the_exporter(
        tmp_path: Path, supabase_dsn: str) -> None:
    # Whoever may CREATE in the extension schema (here an API role) plants overloads of
    # built-ins the export calls: cardinality(text[]) matches closer than pg_catalog's
    # cardinality(anyarray). They ran as the exporting owner when the export's search_path
    # held that schema (before pg_catalog): a path to superuser.
    with connect(supabase_dsn) as conn:
        conn.execute("CREATE TABLE public.planted_calls (who text)")
        conn.execute("GRANT INSERT ON public.planted_calls TO PUBLIC")
        conn.execute("GRANT CREATE ON SCHEMA extensions TO authenticated")
    with as_role(supabase_dsn, "authenticated", claims={"role": "authenticated"}) as conn:
        for signature, body in (("cardinality(text[])", "pg_catalog.cardinality($1)"),
                                ("cardinality(anyarray)", "pg_catalog.cardinality($1)"),
                                ("to_regclass(text)", "pg_catalog.to_regclass($1)")):
            returns = "regclass" if signature.startswith("to_regclass") else "integer"
            conn.execute(
                f"CREATE FUNCTION extensions.{signature} RETURNS {returns} LANGUAGE plpgsql AS $$ BEGIN "
                "INSERT INTO public.planted_calls VALUES (current_user); "
                f"RETURN {body}; END $$")
    store = tenant_store(tmp_path / "store")
    export_postgres(store, supabase_dsn)
    store.ingest_documents([doc("c-doc", "brake pads for tenant c", metadata={"tenant_id": "C"})])
    export_postgres(store, supabase_dsn)  # a re-export runs the upserts too
    store.close()
    with connect(supabase_dsn) as conn:
        assert conn.execute("SELECT who FROM public.planted_calls").fetchall() == []
        assert conn.execute("SELECT count(*) FROM enginelib.documents").fetchone() == (4,)


def _versions_seen(dsn: str, tenant: str) -> list[tuple[str, str]]:
    with as_role(dsn, "authenticated", claims={"role": "authenticated", "tenant_id": tenant}) as conn:
        return conn.execute("SELECT document_id, content FROM enginelib.document_versions "
                            "ORDER BY document_id, version").fetchall()


def test_an_archived_version_is_seen_by_its_own_tenant_only(tmp_path: Path,
                                                            supabase_dsn: str) -> None:
    """A version was shown to whoever could see its document now: an id re-ingested for
    tenant B (a file name two tenants share) showed B tenant A's earlier text."""
    store = tenant_store(tmp_path / "store")
    store.ingest_documents([doc("x", "secret plan of tenant a", metadata={"tenant_id": "A"})])
    export_postgres(store, supabase_dsn)
    store.ingest_documents([doc("x", "public note of tenant b", metadata={"tenant_id": "B"})])
    export_postgres(store, supabase_dsn)
    store.ingest_documents([doc("x", "second note of tenant b", metadata={"tenant_id": "B"})])
    export_postgres(store, supabase_dsn)
    store.close()
    seen_by_b = _versions_seen(supabase_dsn, "B")
    assert ("x", "public note of tenant b") in seen_by_b  # B's own earlier version
    assert not any("tenant a" in text for _, text in seen_by_b), seen_by_b
    assert _versions_seen(supabase_dsn, "A") == []  # A no longer sees the document at all
    with connect(supabase_dsn) as conn:  # nothing was lost: the owner keeps every version
        assert conn.execute("SELECT tenant_id FROM enginelib.document_versions "
                            "WHERE document_id = 'x' ORDER BY version").fetchall() == [("A",), ("B",)]


def test_an_older_catalogs_versions_get_the_tenant_of_their_document(
        tmp_path: Path, supabase_dsn: str) -> None:
    """A catalog made before versions carried a tenant: its export (read as it is) and a
    writer's open (which adds the column) take the tenant its document has now, all that
    catalog can tell."""
    store = tenant_store(tmp_path / "store")
    store.ingest_documents([doc("a-doc", "brake pads for tenant a, revised",
                                metadata={"tenant_id": "A"})])
    store._catalog.con.execute("ALTER TABLE document_versions DROP COLUMN tenant_id")
    store.close()
    reader = enginelib.open(tmp_path / "store", embedder=HashingEmbedder(64), read_only=True)
    export_postgres(reader, supabase_dsn)  # a reader cannot add the column: read either shape
    reader.close()
    assert _versions_seen(supabase_dsn, "A") == [("a-doc", "brake pads for tenant a")]
    assert _versions_seen(supabase_dsn, "B") == []
    store = open_test_store(tmp_path / "store")  # a writer's open adds and fills the column
    assert store._catalog.con.execute(
        "SELECT document_id, tenant_id FROM document_versions").fetchall() == [("a-doc", "A")]
    store.close()


def test_rls_cannot_be_switched_off() -> None:
    from enginelib.export.options import options_from

    assert options_from({"with_rls": True}) == ExportOptions()  # the old flag, now the default
    with pytest.raises(InvalidInputError, match="always on"):
        options_from({"with_rls": False})


def _readable_export_columns(conn: psycopg.Connection[Any], role: str) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = 'enginelib.exports'::regclass AND attnum > 0 "
        "AND NOT attisdropped AND has_column_privilege(%s, attrelid, attnum, 'SELECT')", [role])}


def test_api_roles_read_the_embedding_model_of_an_export_but_not_the_exporters_paths(
        tmp_path: Path, supabase_dsn: str) -> None:
    """exports.store_path (a folder on the exporting machine), the export settings and the
    engine version were readable by every API role; a client needs the model and dimension
    to embed its query, nothing else. An export made by the previous format loses the grant."""
    store = tenant_store(tmp_path / "store")
    export_postgres(store, supabase_dsn, public_read=True)
    needed = {"id", "exported_at", "embedding_model", "embedding_dim"}
    with connect(supabase_dsn) as conn:
        for role in ("anon", "authenticated"):
            assert _readable_export_columns(conn, role) == needed, role
        # An export of the previous format: SELECT on the whole table, its own settings.
        conn.execute("GRANT SELECT ON enginelib.exports TO anon, authenticated")
        conn.execute("UPDATE enginelib.exports SET settings = regexp_replace(settings, 'format=[0-9]+', 'format=3')")
        assert "store_path" in _readable_export_columns(conn, "authenticated")
    report = export_postgres(store, supabase_dsn, public_read=True)
    store.close()
    assert "unchanged" not in report.changes
    with connect(supabase_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM enginelib.exports").fetchone() == (2,)
        for role in ("anon", "authenticated"):
            assert _readable_export_columns(conn, role) == needed, role
        assert "store_path" in _readable_export_columns(conn, "service_role")
    for role in ("anon", "authenticated"):
        with as_role(supabase_dsn, role, claims={"role": role, "tenant_id": "A"}) as conn:
            # What the guide tells a client to read still works.
            assert conn.execute("SELECT embedding_model, embedding_dim FROM enginelib.exports "
                                "ORDER BY id DESC LIMIT 1").fetchone() == ("hashing-64", 64)
        for column in ("store_path", "settings", "enginelib_version", "*"):
            with as_role(supabase_dsn, role, claims={"role": role}) as conn, \
                    pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT {column} FROM enginelib.exports")


def _exported_paths(dsn: str, claims: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    with as_role(dsn, "authenticated", claims=claims) as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute(
            "SELECT document_id, source_path, file_path FROM enginelib.documents")}


def test_api_readers_see_source_paths_relative_to_the_corpus_folder_not_the_machines_folders(
        tmp_path: Path, supabase_dsn: str) -> None:
    """documents.source_path (the file's absolute path since folder sync) showed every reader
    of the table the exporting machine's folders: the user's name, a client's project name."""
    corpus = tmp_path / "home" / "alice" / "client-x" / "corpus"
    (corpus / "gdpr").mkdir(parents=True)
    (corpus / "gdpr" / "art-17.md").write_text("# Article 17\n\nRight to erasure of brake pads.\n")
    (corpus / "notes.md").write_text("# Notes\n\nBrake pads wear.\n")
    store = open_test_store(tmp_path / "store")
    store.ingest_path(corpus)
    ids = {d["source_path"]: d["document_id"] for d in store.list_documents()}
    art, notes = ids[str(corpus / "gdpr" / "art-17.md")], ids[str(corpus / "notes.md")]
    claims = {"role": "authenticated", "tenant_id": "A"}

    export_postgres(store, supabase_dsn)
    assert _exported_paths(supabase_dsn, claims) == {
        art: ("gdpr/art-17.md", "gdpr/art-17.md"), notes: ("notes.md", "notes.md")}
    sql_file = tmp_path / "export.sql"
    write_sql(store, sql_file)
    text = sql_file.read_text()
    assert "gdpr/art-17.md" in text and str(corpus) not in text
    # A store keeps its absolute paths: only what the export writes changed.
    assert store.get_document(art)["source_path"] == str(corpus / "gdpr" / "art-17.md")

    # Asked for, the absolute paths (an option change is a re-export, not "unchanged").
    report = export_postgres(store, supabase_dsn, source_paths="absolute")
    assert "unchanged" not in report.changes
    assert _exported_paths(supabase_dsn, claims)[art] == (str(corpus / "gdpr" / "art-17.md"),) * 2
    export_postgres(store, supabase_dsn, source_paths="none")
    assert _exported_paths(supabase_dsn, claims) == {art: (None, None), notes: (None, None)}
    with pytest.raises(InvalidInputError, match="source_paths 'home' is not one of relative"):
        export_postgres(store, supabase_dsn, source_paths="home")
    store.close()
