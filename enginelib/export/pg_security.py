"""Secure defaults of the export: the tenant of the caller, row level security, grants.

Supabase exposes schemas through PostgREST with the roles ``anon`` (no sign-in),
``authenticated`` (a signed-in user) and ``service_role`` (the server key, BYPASSRLS).
A Supabase project's default privileges hand ``anon`` and ``authenticated`` every
privilege on new tables in ``public``, and Postgres grants EXECUTE on every new function
to PUBLIC. So the export revokes all of that first and grants only what is meant:

- ``authenticated``: USAGE on the schema (never CREATE), SELECT on the tables, EXECUTE on
  the search functions; row level security limits what it sees to its tenant (and shared
  rows). Of the ``exports`` bookkeeping only the columns a client needs to embed its query
  (EXPORT_API_COLUMNS): the store path is a folder of the exporting machine, the settings
  and engine version are the operator's business.
- ``anon``: nothing, unless ``public_read`` (then the same as ``authenticated``; without
  a tenant claim it sees only shared rows).
- ``service_role``: everything (it bypasses RLS in Supabase).

Writes by API roles are refused twice: no write privilege, and no write policy.

The tenant comes from the JWT claims PostgREST puts in ``request.jwt.claims`` (what
Supabase's ``auth.jwt()`` reads); without any JWT, from ``app.tenant_id`` (plain
Postgres). A JWT that lacks the claim gets no tenant: it never falls back to
``app.tenant_id``.
"""

from __future__ import annotations

from ._psycopg import sql
from .options import ExportOptions
from .pg_schema import SCHEMA_COMMENT, Names, SqlText

API_READERS = ("anon", "authenticated")
SERVICE_ROLE = "service_role"
# Tables with a tenant_id column (document_versions too, under its own rule); the others are
# shared reference data or statistics.
TENANT_TABLES = ("documents", "chunks")
SHARED_TABLES = ("sources", "exports", "text_stats", "term_stats", "code_stats")
ALL_TABLES = (*TENANT_TABLES, "document_versions", *SHARED_TABLES)
# What API readers may read of ``exports``: which model and dimension to embed a query with.
EXPORT_API_COLUMNS = ("id", "exported_at", "embedding_model", "embedding_dim")


def tenant_function(names: Names, options: ExportOptions) -> sql.Composed:
    """``current_tenant()``: the caller's tenant (NULL when it has none)."""
    path = sql.Literal("{" + ",".join(options.claim_path) + "}")
    # Both settings, as auth.jwt() does: older PostgREST versions set request.jwt.claim.
    return sql.SQL(
        """CREATE OR REPLACE FUNCTION {fn}() RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = '' AS $fn$
  SELECT CASE
    WHEN claims IS NOT NULL THEN nullif(claims::jsonb #>> {path}, '')
    ELSE nullif(pg_catalog.current_setting('app.tenant_id', true), '')
  END
  FROM (SELECT coalesce(
    nullif(pg_catalog.current_setting('request.jwt.claim', true), ''),
    nullif(pg_catalog.current_setting('request.jwt.claims', true), '')) AS claims) AS jwt
$fn$"""
    ).format(fn=names.table("current_tenant"), path=path)


def _policy_config(options: ExportOptions) -> str:
    # "versions=own": older exports showed a version to whoever sees its document now; the
    # changed comment makes a re-export replace that policy.
    return (f"enginelib tenant policy: claim={options.tenant_claim} "
            f"shared_rows={options.shared_rows} versions=own")


def rls_statements(names: Names, options: ExportOptions) -> list[SqlText]:
    """RLS on every table with one read policy each; no write policy at all.

    A policy is (re)created only when missing or made with other options (its comment
    records them), because CREATE/DROP POLICY and ENABLE RLS take a lock that would
    block readers for the rest of the export transaction.
    """
    tenant = sql.SQL("(SELECT {}())").format(names.table("current_tenant"))
    own = sql.SQL("tenant_id = {}").format(tenant)
    visible = sql.SQL("({} OR tenant_id IS NULL)").format(own) if options.shared_rows else own
    rules: dict[str, SqlText] = {t: visible for t in TENANT_TABLES}
    # An archived version is its own tenant's (a document id re-ingested for another tenant
    # showed the new tenant the old one's text), and only while its document is visible too.
    rules["document_versions"] = sql.SQL(
        "{} AND EXISTS (SELECT 1 FROM {} d WHERE d.document_id = {}.document_id)"
    ).format(visible, names.table("documents"), names.table("document_versions"))
    for table in SHARED_TABLES:
        rules[table] = sql.SQL("true")
    config = sql.Literal(_policy_config(options))
    statements: list[SqlText] = []
    for table in ALL_TABLES:
        policy = names.local("read")
        statements.append(sql.SQL(
            """DO $rls$
DECLARE current_config text;
BEGIN
  IF NOT (SELECT relrowsecurity FROM pg_catalog.pg_class WHERE oid = to_regclass({regclass})) THEN
    ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
  END IF;
  -- The policy of older exports keyed on app.tenant_id only.
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_policy WHERE polrelid = to_regclass({regclass})
             AND polname = {old_name}) THEN
    DROP POLICY {old} ON {table};
  END IF;
  SELECT pg_catalog.obj_description(p.oid, 'pg_policy') INTO current_config
    FROM pg_catalog.pg_policy p WHERE p.polrelid = to_regclass({regclass}) AND p.polname = {name};
  IF NOT FOUND OR current_config IS DISTINCT FROM {config} THEN
    DROP POLICY IF EXISTS {policy} ON {table};
    CREATE POLICY {policy} ON {table} AS PERMISSIVE FOR SELECT USING ({rule});
    COMMENT ON POLICY {policy} ON {table} IS {config};
  END IF;
END $rls$"""
        ).format(
            regclass=names.regclass(table), table=names.table(table), policy=policy,
            name=sql.Literal(names.prefix + "read"), config=config, rule=rules[table],
            old=names.local("tenant_isolation"),
            old_name=sql.Literal(names.prefix + "tenant_isolation"),
        ))
    return statements


def grant_statements(names: Names, options: ExportOptions, functions: dict[str, sql.Composed],
                     internal: tuple[str, ...]) -> list[SqlText]:
    """Revoke what defaults handed out, then grant the API roles what they need.

    ``functions``: name -> signature of every function of the export; ``internal``: those
    only the export itself calls (the archive trigger), never granted to API roles.
    """
    tables = sql.SQL(", ").join(names.table(t) for t in ALL_TABLES)
    readable = sql.SQL(", ").join(names.table(t) for t in ALL_TABLES if t != "exports")
    export_columns = sql.SQL(", ").join(sql.Identifier(c) for c in EXPORT_API_COLUMNS)
    every = sql.SQL(", ").join(functions.values())
    callable_ = sql.SQL(", ").join(sig for name, sig in functions.items() if name not in internal)
    readers = [r for r in API_READERS if r == "authenticated" or options.public_read]
    denied = [r for r in API_READERS if r not in readers]
    sequence = sql.SQL("pg_catalog.pg_get_serial_sequence({}, 'id')").format(names.regclass("exports"))
    body: list[SqlText] = [sql.SQL(
        """  REVOKE ALL ON {tables} FROM PUBLIC;
  REVOKE ALL ON FUNCTION {every} FROM PUBLIC;
  EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM PUBLIC', {sequence});"""
    ).format(tables=tables, every=every, sequence=sequence)]
    for role in (*API_READERS, SERVICE_ROLE):
        grants: list[SqlText] = [
            sql.SQL("REVOKE ALL ON {} FROM {};").format(tables, sql.Identifier(role)),
            sql.SQL("REVOKE ALL ON FUNCTION {} FROM {};").format(every, sql.Identifier(role)),
            sql.SQL("EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM %I', {}, {});").format(
                sequence, sql.Literal(role)),
        ]
        if role in denied and options.schema != "public":
            # Default privileges can grant schemas too; public's USAGE is the project's, and
            # so is that of any schema the export did not create (its own objects, auth.jwt()
            # or pgvector's type in extensions, stay reachable): there only CREATE goes.
            grants.append(sql.SQL(
                "IF pg_catalog.obj_description({schema}::regnamespace, 'pg_namespace') "
                "IS NOT DISTINCT FROM {comment} THEN\n"
                "      REVOKE ALL ON SCHEMA {ident} FROM {role};\n"
                "    ELSE\n      REVOKE CREATE ON SCHEMA {ident} FROM {role};\n    END IF;"
            ).format(schema=sql.Literal(names.schema_ident.as_string()),
                     comment=sql.Literal(SCHEMA_COMMENT), ident=names.schema_ident,
                     role=sql.Identifier(role)))
        elif role in API_READERS and options.schema != "public":
            # Such defaults hand out CREATE too: a reader could add its own tables and
            # functions beside ours, or the tables a later export with another prefix
            # writes into (their triggers then run as the exporter). It only reads.
            grants.append(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {};").format(
                names.schema_ident, sql.Identifier(role)))
        if role in readers or role == SERVICE_ROLE:
            target = sql.Identifier(role)
            grants.append(sql.SQL("GRANT USAGE ON SCHEMA {}, {} TO {};").format(
                names.schema_ident, sql.Identifier(names.ext), target))
            if role == SERVICE_ROLE:
                grants.append(sql.SQL("GRANT ALL ON {} TO {};").format(tables, target))
            else:
                # The REVOKE ALL above took back the table-wide SELECT older exports granted.
                grants += [
                    sql.SQL("GRANT SELECT ON {} TO {};").format(readable, target),
                    sql.SQL("GRANT SELECT ({}) ON {} TO {};").format(
                        export_columns, names.table("exports"), target),
                ]
            grants.append(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {};").format(callable_, target))
            if role == SERVICE_ROLE:
                grants.append(sql.SQL("EXECUTE format('GRANT ALL ON SEQUENCE %s TO %I', {}, {});").format(
                    sequence, sql.Literal(role)))
        # Supabase's roles are granted only where they exist, so plain Postgres works too.
        body.append(sql.SQL(
            "  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = {}) THEN\n    {}\n  END IF;"
        ).format(sql.Literal(role), sql.SQL("\n    ").join(grants)))
    return [sql.SQL("DO $grants$\nBEGIN\n{}\nEND $grants$").format(sql.SQL("\n").join(body))]
