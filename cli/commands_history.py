"""`enginelib history DOC_ID`: every version of a document, and any archived version's text."""

from __future__ import annotations

from pathlib import Path

import click

from .options import (
    emit_json,
    handle_errors,
    json_option,
    open_store,
    printable,
    snapshot_option,
    store_option,
)


@click.command("history")
@store_option
@snapshot_option
@click.argument("document_id")
@click.option("--text", "version", default=None, metavar="VERSION",
              help="Print the text of this version (archived or current) instead.")
@json_option
@handle_errors
def history(store_path: Path, snapshot: str | None, document_id: str, version: str | None,
            as_json: bool) -> None:
    """Versions of a document: semver, index version, dates and change summary."""
    with open_store(store_path, read_only=True, snapshot=snapshot) as store:
        if version is not None:
            text = store.version_text(document_id, version)
            if as_json:
                emit_json({"document_id": document_id, "version": version, "text": text})
            else:
                click.echo(printable(text, lines=True))
            return
        versions = store.history(document_id)
    if as_json:
        emit_json({"document_id": document_id, "versions": versions})
        return
    rows = [("VERSION", "INDEX VERSION", "VALID FROM", "UNTIL", "CHANGE")]
    for v in versions:
        until = "-" if v["current"] else _date(v.get("archived_at"))
        change = "current" if v["current"] else (v.get("change_summary") or "")
        rows.append((printable(v["version"]), v["index_version"], _date(v.get("valid_from")),
                     until, printable(change)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    click.echo(f"{printable(document_id)}: {len(versions)} version(s)")
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _date(value: object) -> str:
    if value is None:
        return "-"
    text = value.isoformat(sep=" ", timespec="seconds") if hasattr(value, "isoformat") else str(value)
    return str(text)
