"""`enginelib list`, `enginelib delete` and `enginelib update`: documents one by one."""

from __future__ import annotations

from pathlib import Path

import click

from .commands_jobs import store_argument
from .options import (
    Integer,
    emit_json,
    handle_errors,
    json_option,
    open_store,
    parse_key_values,
    printable,
    store_and_ids,
    store_flag,
    truth_level_list,
)


@click.command("list")
@store_argument
@click.option("--truth-level", "truth_levels", default=None, help="Comma-separated levels, e.g. L1,L2.")
@click.option("--domain", default=None, help="Only this domain.")
@click.option("--source-type", default=None, help="Only this source type.")
@click.option("--tag", default=None, help="Only documents carrying this tag.")
@click.option("--prefix", default=None, help="Only ids starting with this.")
@click.option("--limit", type=Integer(min=1), default=1000, show_default=True)
@click.option("--offset", type=Integer(min=0), default=0, show_default=True)
@json_option
@handle_errors
def list_command(store_path: Path, truth_levels: str | None, domain: str | None,
                 source_type: str | None, tag: str | None, prefix: str | None, limit: int,
                 offset: int, as_json: bool) -> None:
    """The store's documents with truth level, tier, word count and authority."""
    levels = truth_level_list(truth_levels)
    with open_store(store_path, read_only=True) as store:
        rows = store.list_documents(truth_levels=levels, domain=domain, source_type=source_type,
                                    tag=tag, prefix=prefix, limit=limit, offset=offset)
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        score = "-" if row["authority_score"] is None else f"{row['authority_score']:.0f}"
        click.echo(printable(
            f"{row['document_id']}  {row['truth_level']} {row['tier']:<6} "
            f"{row['word_count']:>7} words  authority {score:>3}  v{row['version']}  "
            f"{row['title'] or ''}"))


@click.command("delete")
@store_flag
@click.argument("document_ids", nargs=-1, required=True)
@handle_errors
def delete(store_option: Path | None, document_ids: tuple[str, ...]) -> None:
    """Delete documents by id (their versions are archived, their chunks unindexed).

    The store is --store PATH, or the first argument when it is a store folder."""
    store_path, document_ids = store_and_ids(store_option, document_ids)
    if not document_ids:
        raise click.UsageError("name at least one document id to delete")
    # an id named twice (a pasted list, a shell glob) is one document: its second delete
    # failed after the first had committed
    document_ids = tuple(dict.fromkeys(document_ids))
    with open_store(store_path) as store:
        for document_id in document_ids:
            store.get_document(document_id)  # all ids checked before the first delete
        for document_id in document_ids:
            store.delete_document(document_id)
    click.echo(f"deleted {len(document_ids)} document{'' if len(document_ids) == 1 else 's'}")


@click.command("update")
@store_flag
@click.argument("ids", nargs=-1, required=True, metavar="DOCUMENT_ID")
@click.option("--truth-level", default=None, help="New truth level L1..L4.")
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable); replaces the tags.")
@click.option("--meta", "meta", multiple=True, help="KEY=VALUE custom field (repeatable), merged.")
@json_option
@handle_errors
def update(store_option: Path | None, ids: tuple[str, ...], truth_level: str | None,
           tags: tuple[str, ...], meta: tuple[str, ...], as_json: bool) -> None:
    """Change a document's truth level, tags or metadata without re-embedding it.

    The store is --store PATH, or the first argument when it is a store folder."""
    store_path, rest = store_and_ids(store_option, ids)
    if len(rest) != 1:
        raise click.UsageError(f"update takes one document id, got {len(rest)}: {' '.join(rest)}")
    document_id = rest[0]
    with open_store(store_path) as store:
        before = store.get_document(document_id)["version"]
        doc = store.update_document(
            document_id, truth_level=truth_level, tags=list(tags) if tags else None,
            metadata=parse_key_values(meta, "--meta"),
        )
    changed = doc["version"] != before
    fields = {k: doc[k] for k in ("document_id", "truth_level", "tags", "custom", "version")}
    if as_json:
        emit_json({**fields, "changed": changed})
        return
    click.echo(f"{'updated' if changed else 'unchanged (it already had these values)'} "
               f"{doc['document_id']}: truth level {doc['truth_level']}, "
               f"tags {','.join(doc['tags'] or []) or '-'}, version {doc['version']}")
