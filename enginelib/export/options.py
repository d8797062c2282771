"""Export options, validated once: target schema, table prefix, vector index, RLS."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InvalidInputError
from ..validation import CONTROL_CHARS

# pgvector's defaults (m=16, ef_construction=64) and its documented bounds.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
HNSW_M_RANGE = (2, 100)
HNSW_EF_CONSTRUCTION_RANGE = (4, 1000)
# Rows per COPY write: large enough to amortize round trips, small enough for smooth progress.
BATCH_ROWS = 2000

INDEX_METHODS: tuple[str, ...] = ("hnsw", "ivfflat")
# How documents.source_path / file_path are exported (see ExportOptions).
SOURCE_PATH_MODES: tuple[str, ...] = ("relative", "absolute", "none")

# Postgres identifiers are at most 63 bytes (longer ones are silently truncated, which
# could make two of our names collide); the prefix gets what our longest suffix leaves.
_MAX_IDENT_BYTES = 63
# Schemas Supabase creates and manages in every project (its docs: keep your own objects
# out of them).
SUPABASE_SCHEMAS = frozenset({
    "auth", "storage", "extensions", "realtime", "_realtime", "vault", "pgsodium",
    "pgsodium_masks", "graphql", "graphql_public", "supabase_functions",
    "supabase_migrations", "net", "cron", "pgbouncer", "_analytics",
})
_LONGEST_SUFFIX = len("documents_archive_version")
_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|^$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_CLAIM = re.compile(r"^[A-Za-z0-9_\-]{1,64}(\.[A-Za-z0-9_\-]{1,64}){0,4}$")
_MEMORY = re.compile(r"^[1-9][0-9]{0,6}\s*(kB|MB|GB)$")


@dataclass(frozen=True)
class ExportOptions:
    """Where and how to export. Every name reaches SQL through psycopg.sql.Identifier.

    ``schema``: target schema (created if missing); its own by default, so nothing clashes
    with a project's tables and Supabase's REST API does not expose it unless asked.
    ``table_prefix``: prepended to every table, index, trigger and function name so several
    stores can share one schema. ``index``: "hnsw" (default) or "ivfflat".

    Security (always on): row level security on every table. A caller sees the rows of
    its tenant, read from the JWT claim ``tenant_claim`` (a dotted path such as
    ``app_metadata.tenant_id`` reaches into nested claims) as PostgREST passes it in
    ``request.jwt.claims``, or from ``app.tenant_id`` when there is no JWT (plain
    Postgres). ``shared_rows``: rows without a tenant are readable by every tenant
    (a shared corpus); False hides them from everyone but the owner and service_role.
    ``public_read``: grant ``anon`` read access (default: none).
    ``extension_schema``: where pgvector / pg_trgm are created when missing (not
    ``public``, which Supabase's linter flags); a live export uses the schema an
    already installed extension lives in.
    ``maintenance_work_mem`` / ``parallel_workers``: for the index builds of this export
    session only.
    ``source_paths``: how ``documents.source_path`` and ``file_path`` are written. Every
    reader of the table sees them, and a file's absolute path tells them the exporting
    machine's folders (``/home/alice/...``). "relative" (default): relative to the folder
    that holds every exported document's file (``gdpr/art-17.md``); "absolute": as the
    store has them; "none": left empty. A path the store holds as relative stays as it is.
    """

    schema: str = "enginelib"
    table_prefix: str = ""
    tenant_claim: str = "tenant_id"
    shared_rows: bool = True
    public_read: bool = False
    extension_schema: str = "extensions"
    maintenance_work_mem: str = "1GB"
    parallel_workers: int = 2
    index: str = "hnsw"
    hnsw_m: int = HNSW_M
    hnsw_ef_construction: int = HNSW_EF_CONSTRUCTION
    ivfflat_lists: int | None = None  # None: rows / 1000 (at least 1), pgvector's advice
    batch_rows: int = BATCH_ROWS
    source_paths: str = "relative"

    def __post_init__(self) -> None:
        # A '$' would end our dollar-quoted function bodies; quoting cannot protect it there.
        # Control characters and edge spaces quote safely but name a schema no one can type
        # (or see) in psql, a PostgREST setting or a dashboard.
        if (not self.schema.strip() or "$" in self.schema or CONTROL_CHARS.search(self.schema)
                or self.schema != self.schema.strip()):
            raise InvalidInputError(
                f"schema name {self.schema!r} must be non-empty, without '$', control characters "
                f"or spaces at its ends"
            )
        if len(self.schema.encode("utf-8")) > _MAX_IDENT_BYTES:
            raise InvalidInputError(f"schema name {self.schema!r} is longer than 63 bytes")
        for what, name in (("schema", self.schema), ("extension schema", self.extension_schema)):
            if name.startswith("pg_") or name == "information_schema":
                # Postgres refuses to create a pg_ schema and the system ones are not ours to
                # fill: say so before a load that would fail (or write) half-way
                raise InvalidInputError(
                    f"{what} {name!r} is a Postgres system schema (or reserved, 'pg_'): "
                    "export into a schema of your own, e.g. enginelib"
                )
        if self.schema in SUPABASE_SCHEMAS:
            # Supabase manages these (auth's users, storage's objects, pgvector's home): our
            # tables there would sit among its own, and the export's grants would change
            # what its API roles may do in them (a REVOKE on auth reaches auth.jwt()).
            raise InvalidInputError(
                f"schema {self.schema!r} is one Supabase manages: export into a schema of "
                "your own, e.g. enginelib (the default) or public"
            )
        if not _IDENT.match(self.extension_schema):
            raise InvalidInputError(
                f"extension schema {self.extension_schema!r} may only contain letters, digits "
                "and '_' and must not start with a digit"
            )
        if not _CLAIM.match(self.tenant_claim):
            raise InvalidInputError(
                f"tenant claim {self.tenant_claim!r} must be a claim name or a dotted path of "
                "names (letters, digits, '_' or '-'), e.g. tenant_id or app_metadata.tenant_id"
            )
        if not _MEMORY.match(self.maintenance_work_mem):
            raise InvalidInputError(
                f"maintenance_work_mem {self.maintenance_work_mem!r} must be a size such as "
                "'512MB' or '2GB'"
            )
        _check_range("parallel_workers", self.parallel_workers, (0, 64))
        if not _PREFIX.match(self.table_prefix):
            raise InvalidInputError(
                f"table prefix {self.table_prefix!r} may only contain letters, digits and '_' "
                "and must not start with a digit"
            )
        if len(self.table_prefix) + _LONGEST_SUFFIX > _MAX_IDENT_BYTES:
            raise InvalidInputError(
                f"table prefix {self.table_prefix!r} is too long: at most "
                f"{_MAX_IDENT_BYTES - _LONGEST_SUFFIX} characters"
            )
        if self.index not in INDEX_METHODS:
            raise InvalidInputError(
                f"index {self.index!r} is not one of {', '.join(INDEX_METHODS)}"
            )
        if self.source_paths not in SOURCE_PATH_MODES:
            raise InvalidInputError(
                f"source_paths {self.source_paths!r} is not one of {', '.join(SOURCE_PATH_MODES)}"
            )
        _check_range("hnsw_m", self.hnsw_m, HNSW_M_RANGE)
        _check_range("hnsw_ef_construction", self.hnsw_ef_construction, HNSW_EF_CONSTRUCTION_RANGE)
        if self.hnsw_ef_construction < 2 * self.hnsw_m:
            raise InvalidInputError(
                f"hnsw_ef_construction ({self.hnsw_ef_construction}) must be at least "
                f"2 * hnsw_m ({2 * self.hnsw_m}), as pgvector requires"
            )
        if self.ivfflat_lists is not None:
            _check_range("ivfflat_lists", self.ivfflat_lists, (1, 32768))
        _check_range("batch_rows", self.batch_rows, (1, 1_000_000))


    @property
    def claim_path(self) -> tuple[str, ...]:
        return tuple(self.tenant_claim.split("."))


def _check_range(name: str, value: int, bounds: tuple[int, int]) -> None:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{name} must be an integer within {low}..{high}, got {value!r}")


def options_from(fields: dict[str, object]) -> ExportOptions:
    """ExportOptions from keywords; ``with_rls`` (older API) is accepted when true, since
    row level security is always on now, and refused when false rather than ignored."""
    if "with_rls" in fields:
        if not fields.pop("with_rls"):
            raise InvalidInputError(
                "with_rls=False is no longer possible: row level security is always on; "
                "use shared_rows / public_read to choose who reads what"
            )
    return ExportOptions(**fields)  # type: ignore[arg-type]
