"""`enginelib snapshot ...`: create, list, show, diff, restore, delete, pin, retention."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from enginelib import snapshots as snap
from enginelib.utc import stamp_instant

from .options import (
    Integer,
    emit_json,
    emit_mapping,
    handle_errors,
    json_option,
    printable,
    store_option,
)


@click.group("snapshot")
def snapshot() -> None:
    """Immutable, portable copies of the store: time travel, diff and roll back."""


@snapshot.command("create")
@store_option
@click.argument("name", required=False)
@click.option("--keep", type=Integer(), default=None,
              help=f"Keep this many newest unpinned snapshots from now on (default {snap.DEFAULT_KEEP}).")
@click.option("--pin", is_flag=True, help="Pin it: retention never removes a pinned snapshot.")
@json_option
@handle_errors
def create(store_path: Path, name: str | None, keep: int | None, pin: bool, as_json: bool) -> None:
    """Snapshot the live store (default NAME: the next YYYY.MM.patch, the month in UTC)."""
    # what this command's retention removed, not every name gone meanwhile (another
    # process's delete or create was reported as removed by this one's retention)
    info, pruned = snap.create_and_prune(store_path, name, keep=keep, pin=pin)
    removed = sorted(pruned)
    if as_json:
        emit_json({**info.to_dict(), "removed_by_retention": removed})
        return
    click.echo(f"created snapshot {info.name} (generation {info.generation}, "
               f"{info.documents} documents, {info.chunks} chunks)" + (", pinned" if pin else ""))
    if removed:
        click.echo(f"removed by retention: {', '.join(removed)}")


@snapshot.command("list")
@store_option
@json_option
@handle_errors
def list_(store_path: Path, as_json: bool) -> None:
    """Snapshots, oldest first."""
    found = snap.list_snapshots(store_path)
    if as_json:
        emit_json([s.to_dict() for s in found])
        return
    if not found:
        click.echo("no snapshots")
        return
    rows: list[tuple[str, ...]] = [
        ("NAME", "CREATED", "GENERATION", "INDEX VERSION", "DOCUMENTS", "CHUNKS", "PINNED")
    ]
    rows += [(s.name, shown_time(s.created_at), str(s.generation), s.index_version, str(s.documents),
              str(s.chunks), "yes" if s.pinned else "") for s in found]
    _table(rows)


@snapshot.command("show")
@store_option
@click.argument("name")
@json_option
@handle_errors
def show(store_path: Path, name: str, as_json: bool) -> None:
    """One snapshot's generation, counts, model and size."""
    emit_mapping(snap.get_snapshot(store_path, name).to_dict(), as_json)


@snapshot.command("diff")
@store_option
@click.argument("a")
@click.argument("b", default=snap.LIVE)
@json_option
@handle_errors
def diff(store_path: Path, a: str, b: str, as_json: bool) -> None:
    """Documents added, removed and changed from A to B (snapshot names; B defaults to live)."""
    result = snap.diff_snapshots(store_path, a, b)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"{a} -> {b}: {len(result.added)} added, {len(result.removed)} removed, "
               f"{len(result.changed)} changed, {result.unchanged} unchanged; "
               f"documents {result.documents_a} -> {result.documents_b}, "
               f"chunks {result.chunks_a} -> {result.chunks_b}")
    for c in result.added:
        click.echo(f"+ {printable(c.document_id)} {c.version_b} ({c.chunks_b} chunks)")
    for c in result.removed:
        click.echo(f"- {printable(c.document_id)} {c.version_a} ({c.chunks_a} chunks)")
    for c in result.changed:
        what = "content" if c.content_changed else "metadata"
        click.echo(f"~ {printable(c.document_id)} {c.version_a} -> {c.version_b} ({what}; "
                   f"chunks {c.chunks_a} -> {c.chunks_b})")


@snapshot.command("restore")
@store_option
@click.argument("name")
@json_option
@handle_errors
def restore(store_path: Path, name: str, as_json: bool) -> None:
    """Make the live store equal to snapshot NAME (a new generation; history is kept)."""
    report = snap.restore_snapshot(store_path, name)
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"restored snapshot {name} as generation {report.generation} "
               f"({report.documents} documents, {report.chunks} chunks; "
               f"{report.archived} live versions archived)")
    if report.catalog_was_missing:
        click.echo(f"the catalog file was missing: the store starts again from snapshot {name}; "
                   "documents committed after it are lost unless a copy of the file turns up")
    if report.damaged_catalog:
        click.echo(f"the damaged catalog was moved to {report.damaged_catalog} (kept): documents "
                   f"committed after snapshot {name} are only there; ingest them again")


@snapshot.command("delete")
@store_option
@click.argument("name")
@handle_errors
def delete(store_path: Path, name: str) -> None:
    """Delete snapshot NAME (unpin it first if pinned)."""
    snap.delete_snapshot(store_path, name)
    click.echo(f"deleted snapshot {name}")


@snapshot.command("pin")
@store_option
@click.argument("name")
@click.option("--unpin", is_flag=True, help="Remove the pin instead.")
@handle_errors
def pin(store_path: Path, name: str, unpin: bool) -> None:
    """Pin snapshot NAME so retention never deletes it (or --unpin)."""
    snap.pin_snapshot(store_path, name, not unpin)
    click.echo(f"{'unpinned' if unpin else 'pinned'} snapshot {name}")


@snapshot.command("retention")
@store_option
@click.argument("keep", type=Integer(), required=False)
@json_option
@handle_errors
def retention(store_path: Path, keep: int | None, as_json: bool) -> None:
    """Show, or set to KEEP, how many newest unpinned snapshots are kept."""
    removed: list[str] = []
    if keep is None:
        keep = snap.retention(store_path)
    else:
        removed = snap.set_retention(store_path, keep)
    if as_json:
        emit_json({"keep": keep, "removed": removed})
        return
    click.echo(f"keep {keep} newest unpinned snapshots"
               + (f"; removed {', '.join(removed)}" if removed else ""))


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def shown_time(stamp: str) -> str:
    """A snapshot's creation in UTC, said: stamps written before they were UTC are this
    machine's local time, and one column of both mixed two clocks. Unreadable: as written."""
    moment = stamp_instant(stamp)
    if moment == datetime.min.replace(tzinfo=UTC):
        return stamp[:19]
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")

