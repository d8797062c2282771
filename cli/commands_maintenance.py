"""`enginelib check`, `repair` and `reindex`: integrity of the derived indexes, and re-embedding."""

from __future__ import annotations

from pathlib import Path

import click

from enginelib import maintenance
from enginelib.chunker import ChunkingConfig
from enginelib.indexes.analyzers import MAX_TOKEN_CHARS
from enginelib.manifest import read_manifest
from enginelib.text import shell_word

from .options import (
    Integer,
    embedder_from_env,
    emit_json,
    handle_errors,
    json_option,
    printable,
    store_option,
)


@click.command("check")
@store_option
@click.option("--no-snapshots", is_flag=True, help="Skip checking the snapshots' files.")
@json_option
@handle_errors
def check(store_path: Path, no_snapshots: bool, as_json: bool) -> None:
    """Verify catalog vs indexes (counts, labels, stamps); exit 1 when something is wrong."""
    report = maintenance.check(store_path, snapshots=not no_snapshots)
    _print_report(report, as_json, f"store {store_path} is healthy")
    if not report.ok and as_json:
        raise SystemExit(1)  # the JSON already says why; keep stdout parseable
    if not report.ok and report.facts.get("snapshot_problems") == len(report.problems):
        # repair rebuilds the live store's indexes and never touches a snapshot
        raise click.ClickException(f"{len(report.problems)} problem(s) found, all in snapshots: "
                                   f"each line says its way out")
    if not report.ok:
        raise click.ClickException(
            f"{len(report.problems)} problem(s) found: run `enginelib repair --store {shell_word(store_path)}`")


@click.command("repair")
@store_option
@json_option
@handle_errors
def repair(store_path: Path, as_json: bool) -> None:
    """Rebuild the vector and text indexes from the catalog (the source of truth), after
    mending a catalog block a killed write left half-written."""
    report = maintenance.repair(store_path)
    if report.facts.get("mend_record") and not as_json:
        click.echo(f"mended the catalog: {len(report.facts['mended_blocks'])} block(s) a killed "
                   f"checkpoint left half-written; the replaced bytes are recorded in "
                   f"{report.facts['mend_record']}")
    if not as_json:
        for note in report.facts.get("job_tables_mended") or ():
            click.echo(f"mended the job queue: {printable(note)}")
    _print_report(report, as_json, f"rebuilt indexes of {store_path} at generation "
                                   f"{report.facts.get('generation')} "
                                   f"({report.facts.get('chunks')} chunks); check passes")
    if not report.ok and as_json:
        raise SystemExit(1)
    if not report.ok:
        raise click.ClickException(f"{len(report.problems)} problem(s) remain after rebuilding")


@click.command("reindex")
@store_option
@click.option("--max-tokens", type=Integer(), default=None, help="New chunk size (default: unchanged).")
@click.option("--overlap-tokens", type=Integer(), default=None, help="New overlap (default: unchanged).")
@click.option("--min-tokens", type=Integer(), default=None, help="New minimum chunk (default: unchanged).")
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@click.option("--embedder", "embedder_name", default=None, metavar="NAME",
              help="Switch the store to this embedder (default: keep the one it has).")
@json_option
@handle_errors
def reindex(store_path: Path, max_tokens: int | None, overlap_tokens: int | None,
            min_tokens: int | None, no_progress: bool, embedder_name: str | None,
            as_json: bool) -> None:
    """Re-chunk and re-embed every document with the store's model (or --embedder's), and
    chunking options."""
    chunking = None
    changes = {k: v for k, v in (("max_tokens", max_tokens), ("overlap_tokens", overlap_tokens),
                                 ("min_tokens", min_tokens)) if v is not None}
    manifest = read_manifest(store_path)
    if changes and manifest is not None:
        chunking = ChunkingConfig.from_dict({**manifest.chunking, **changes,
                                             "structure": "sections"})
    embedder = embedder_from_env(embedder_name)  # None: the store keeps its own model
    report = maintenance.reindex(store_path, embedder=embedder, chunking=chunking,
                                 progress=not no_progress and not as_json)
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"reindexed {report.documents} documents with {report.embedding_model} "
               f"({report.embedding_dim} dims): {report.chunks_before} -> {report.chunks_after} "
               f"chunks, generation {report.generation}, index version {report.index_version}")


def _print_notes(report: maintenance.IntegrityReport) -> None:
    limit = report.facts.get("text_max_token_bytes")
    if isinstance(limit, int) and limit < MAX_TOKEN_CHARS:
        click.echo(f"note: the text index was built when words of {limit} bytes or more were "
                   f"not indexed (a SHA-1 digest, a long compound); `enginelib repair` "
                   f"rebuilds it to index words up to {MAX_TOKEN_CHARS - 1} bytes")


def _print_report(report: maintenance.IntegrityReport, as_json: bool, ok_line: str) -> None:
    if as_json:
        emit_json(report.to_dict())
    elif report.ok:
        click.echo(ok_line)
        _print_notes(report)
    else:
        for problem in report.problems:
            click.echo(f"problem: {printable(problem)}")
    older = report.facts.get("snapshots_not_checksummed")
    if older and not as_json:
        click.echo(f"note: snapshot(s) {', '.join(printable(n) for n in older)} were taken before "
                   f"per-file checksums: their index files are checked by sampling only")
    leftovers = report.facts.get("unfinished_snapshots")
    if leftovers and not as_json:
        size = report.facts.get("unfinished_snapshot_bytes", 0)
        click.echo(printable(
            f"note: {len(leftovers)} folder(s) a killed snapshot create or delete left hold "
            f"{size:,} bytes: {', '.join(leftovers)}; the store's next writer removes them (an "
            f"ingest, a snapshot create or delete, or `enginelib repair --store "
            f"{shell_word(report.path)}`)"))
