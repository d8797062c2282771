"""The `enginelib` command line: a thin shell over enginelib's public API."""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from typing import Any, TextIO

import click

from enginelib.core.lock import set_minimum_wait
from enginelib.errors import PruneRefusedError
from enginelib.jobs import DEFAULT_MAX_ATTEMPTS
from enginelib.jobs.queue import MAX_ATTEMPTS
from enginelib.types import IngestReport

from .commands_search import search_command
from .options import (
    FiniteRange,
    GivenPath,
    Integer,
    embedder_option,
    emit_json,
    emit_mapping,
    handle_errors,
    json_option,
    open_store,
    parse_key_values,
    printable,
    snapshot_option,
    store_option,
    vector_dim_option,
    writer_wait,
)

# Every command outside this module, registered by name -> (module, attribute). A module is
# imported when one of its commands runs (or for `--help`), so `enginelib search` does not pay
# for maintenance, snapshots, eval, jobs, export and serve at start. A module that fails to
# import is an error when its command is asked for, never a command that silently disappears.
_COMMANDS: dict[str, tuple[str, str]] = {
    "history": ("commands_history", "history"),
    "snapshot": ("commands_snapshot", "snapshot"),
    "check": ("commands_maintenance", "check"),
    "repair": ("commands_maintenance", "repair"),
    "reindex": ("commands_maintenance", "reindex"),
    "export": ("commands_export", "export"),
    "eval": ("commands_eval", "eval_command"),
    "worker": ("commands_jobs", "worker"),
    "jobs": ("commands_jobs", "jobs"),
    "list": ("commands_documents", "list_command"),
    "delete": ("commands_documents", "delete"),
    "update": ("commands_documents", "update"),
    "serve": ("commands_serve", "serve"),
}
# Pruned ids listed one a line by `ingest --prune`; the rest are counted (--json has all).
SHOWN_PRUNED = 20


class _Commands(click.Group):
    """The top-level group: commands defined here, plus ``_COMMANDS`` loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in _COMMANDS:
            module, attribute = _COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f".{module}", __package__), attribute)
            if not isinstance(command, click.Command) or command.name != cmd_name:
                raise RuntimeError(f"{module}.{attribute} is not the command {cmd_name!r}")
            self.add_command(command)
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="enginelib")
@click.option("--debug", is_flag=True, help="Show the traceback of an error (for bug reports).")
@click.option("--wait", type=FiniteRange(0, 86400), default=None, metavar="SECONDS",
              help="A command that writes waits this long for another writer to finish "
                   "(or $ENGINELIB_WAIT; default 0: fail at once saying so).")
def main(debug: bool, wait: float | None) -> None:
    """enginelib: hybrid search with citations, in a folder, offline."""
    set_minimum_wait(writer_wait(wait))
    if not debug:  # a warning is a line for the user, not a source location
        warnings.showwarning = _show_warning


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    click.echo(f"Warning: {message}", err=True)


@main.command()
@store_option
@vector_dim_option
@embedder_option
@handle_errors
def init(store_path: Path, vector_dim: int | None, embedder_name: str | None) -> None:
    """Create an empty store (the default embedding model unless --embedder, default chunking)."""
    store = open_store(store_path, create=True, vector_dim=vector_dim, embedder=embedder_name)
    store.close()
    click.echo(f"initialized store at {store_path}")


@main.command()
@store_option
@click.argument("paths", nargs=-1, required=True, type=GivenPath(path_type=Path))
@click.option("--truth-level", default="L2", show_default=True, help="L1..L4 for these documents.")
@click.option("--domain", default=None, help="Domain label, e.g. 'brakes' or 'privacy'.")
@click.option("--source-type", default=None, help="manual, guide, faq, article, paper, regulation...")
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable).")
@click.option("--metadata", "metadata", multiple=True, help="KEY=VALUE custom field (repeatable).")
@click.option("--include", multiple=True, help="Glob of files to take when walking a folder.")
@click.option("--exclude", multiple=True, help="Glob of files to skip when walking a folder.")
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@click.option("--max-file-mb", type=FiniteRange(0.001, 64 * 1024), default=None,
              help="Largest file (or JSONL record) read, in MiB [default: 64].")
@vector_dim_option
@embedder_option
@click.option("--strict", is_flag=True,
              help="All or nothing: the first bad file or record fails the call, nothing is written.")
@click.option("--queue", is_flag=True, help="Enqueue one job per file and return; "
              "`enginelib worker` (or `serve`) ingests them, retrying failures.")
@click.option("--max-attempts", type=Integer(1, MAX_ATTEMPTS), default=None,
              help=f"With --queue: attempts of each job before it goes to the DLQ "
                   f"[default: {DEFAULT_MAX_ATTEMPTS}].")
@click.option("--prune", is_flag=True,
              help="Sync the folders given: then delete the documents whose file inside one "
                   "of them is gone (renamed or removed); their versions stay in `history`. "
                   "Files that fail to load are kept; an empty or missing folder is refused.")
@json_option
@handle_errors
def ingest(
    store_path: Path, paths: tuple[Path, ...], truth_level: str, domain: str | None,
    source_type: str | None, tags: tuple[str, ...], metadata: tuple[str, ...],
    include: tuple[str, ...], exclude: tuple[str, ...], no_progress: bool,
    max_file_mb: float | None, strict: bool, vector_dim: int | None, embedder_name: str | None,
    queue: bool, max_attempts: int | None, prune: bool, as_json: bool,
) -> None:
    """Ingest files, folders or JSONL(.gz) into the store (re-ingesting an id replaces it).

    JSONL records may carry their own embedding in `vector` (or `embedding`; `vectors` for
    one per chunk): it is used instead of the model. With --prune, a folder kept in sync
    loses the documents of its files that are gone (`enginelib ingest DOCS/ --prune`)."""
    if max_attempts is not None and not queue:
        raise click.UsageError("--max-attempts is for --queue: a direct ingest makes one "
                               "attempt, and says at once what failed")
    if queue:
        from .commands_jobs import enqueue_paths

        if prune:
            raise click.UsageError("--prune is for a direct ingest: queued files are ingested "
                                   "later, one job each, so no moment says the folder is in; "
                                   "run `enginelib ingest FOLDER --prune` without --queue")

        if max_file_mb is not None:
            raise click.UsageError("--max-file-mb is for a direct ingest; a queued job reads "
                                   "files up to the default 64 MiB")
        if strict:
            raise click.UsageError("--strict is for a direct ingest: queued files are ingested "
                                   "one job each, and a file with a bad record fails its own "
                                   "job (retried, then in the DLQ)")

        queued = enqueue_paths(store_path, paths, include=include, exclude=exclude, options=dict(
            truth_level=truth_level, domain=domain, source_type=source_type, tags=list(tags),
            metadata=parse_key_values(metadata, "--metadata")),
            vector_dim=vector_dim, embedder=embedder_name, max_attempts=max_attempts)
        if as_json:
            emit_json(queued)
        else:
            click.echo(f"queued {queued['queued']} job(s) ({queued['via']})")
        return
    with open_store(store_path, create=True, vector_dim=vector_dim,
                    embedder=embedder_name) as store:
        try:
            report = store.ingest_path(
                *paths, include=include, exclude=exclude,
                progress=not no_progress and not as_json, prune=prune,
                truth_level=truth_level, domain=domain, source_type=source_type,
                tags=list(tags), metadata=parse_key_values(metadata, "--metadata"),
                strict=strict,
                max_bytes=None if max_file_mb is None else int(max_file_mb * 1024 * 1024),
            )
        except PruneRefusedError as exc:
            if isinstance(exc.report, IngestReport):  # what the ingest did, then the refusal
                _print_ingest(exc.report, paths, include, exclude, prune=prune, as_json=as_json)
            raise
    _print_ingest(report, paths, include, exclude, prune=prune, as_json=as_json)


def _print_ingest(report: IngestReport, paths: tuple[Path, ...], include: tuple[str, ...],
                  exclude: tuple[str, ...], *, prune: bool, as_json: bool) -> None:
    data = {
        "added": len(report.added), "updated": len(report.updated),
        "unchanged": len(report.unchanged), "skipped": len(report.skipped),
        "pruned": len(report.pruned),
        "chunks_written": report.chunks_written, "chunks_embedded": report.chunks_embedded,
        "chunks_from_cache": report.chunks_from_cache,
        "skipped_inputs": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "pruned_ids": list(report.pruned),
    }
    if as_json:
        emit_json(data)
        return
    pruned = f", pruned {data['pruned']}" if prune else ""
    click.echo(
        f"added {data['added']}, updated {data['updated']}, unchanged {data['unchanged']}, "
        f"skipped {data['skipped']}{pruned} documents; {data['chunks_written']} chunks written "
        f"({data['chunks_embedded']} embedded, {data['chunks_from_cache']} from cache)"
    )
    for document_id in report.pruned[:SHOWN_PRUNED]:
        click.echo(f"  pruned {printable(document_id)}")
    if len(report.pruned) > SHOWN_PRUNED:
        click.echo(f"  and {len(report.pruned) - SHOWN_PRUNED} more (--json lists them all)")
    for skipped in report.skipped:
        # Loader reasons already start with the file they are about.
        reason = skipped.reason if skipped.reason.startswith(skipped.path) else f"{skipped.path}: {skipped.reason}"
        click.echo(f"  skipped {printable(reason)}", err=True)
    if not any(data[k] for k in ("added", "updated", "unchanged", "skipped")):
        # nothing found at all: an empty folder, or patterns that match no file (a typo in
        # --include reads exactly like success otherwise)
        patterns = "".join(f" --include {p!r}" for p in include) + "".join(
            f" --exclude {p!r}" for p in exclude)
        click.echo(f"  nothing to ingest: no file under {', '.join(map(str, paths))} is one "
                   f"enginelib reads{' and matches' + patterns if patterns else ''}", err=True)


@main.command()
@store_option
@snapshot_option
@json_option
@handle_errors
def stats(store_path: Path, snapshot: str | None, as_json: bool) -> None:
    """Counts, sizes, model and versions of a store."""
    with open_store(store_path, read_only=True, snapshot=snapshot) as store:
        data = store.stats()
    emit_mapping(data, as_json)


@main.command()
@store_option
@snapshot_option
@click.argument("document_id")
@json_option
@click.option("--text/--no-text", default=False, help="Print the stored document text too.")
@handle_errors
def show(store_path: Path, snapshot: str | None, document_id: str, as_json: bool, text: bool) -> None:
    """A document, its versions and its chunks with their offsets."""
    with open_store(store_path, read_only=True, snapshot=snapshot) as store:
        data = store.show(document_id)
    doc = data["document"]
    if as_json:
        emit_json(_show_json(data))
        return
    click.echo(f"{printable(doc['document_id'])}  {printable(doc['title'] or '')}")
    click.echo(
        f"  truth level {doc['truth_level']}  version {doc['version']}  index {doc['index_version']}"
        f"  language {doc['language']}  chunks {doc['total_chunks']}"
    )
    if doc.get("source_path"):
        click.echo(f"  source {printable(doc['source_path'])}")
    if doc.get("keywords"):
        click.echo(f"  keywords {printable(', '.join(doc['keywords'][:12]))}")
    for version in data["versions"]:
        click.echo(f"  archived version {printable(version['version'])} "
                   f"({printable(version['change_summary'])}, {version['archived_at']})")
    for chunk in data["chunks"]:
        preview = chunk["content"][:80].replace("\n", " ")
        click.echo(
            f"  [{chunk['chunk_index']}] {chunk['start_offset']}-{chunk['end_offset']} "
            f"({chunk['token_count']} tokens) {printable(chunk['heading_path'] or '')}\n"
            f"      {printable(preview)}"
        )
    if text:
        click.echo(printable(doc["content"], lines=True))


@main.command()
@store_option
@click.option("--limit", type=Integer(min=1), default=20, show_default=True)
@click.option("--zero-results", is_flag=True, help="Only searches that returned no hit.")
@json_option
@handle_errors
def queries(store_path: Path, limit: int, zero_results: bool, as_json: bool) -> None:
    """The query log, newest first: latency, strategy, results (find unanswered questions)."""
    with open_store(store_path, read_only=True) as store:
        rows = store.logged_queries(limit=limit, zero_results=zero_results)
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        # One row a line: a question pasted with its line breaks printed as several rows.
        click.echo(
            f"{row['created_at']:%Y-%m-%d %H:%M:%S}  {row['status']:<19} {row['result_count']:>3} hits "
            f"{row['latency_ms']:>8.1f} ms  {row['strategy']:<8}  {printable(row['query_text'])}"
        )


@main.command()
@store_option
@click.option("--set-default", "set_default", default=None, metavar="NAME",
              help="Make NAME the preset that searches use when they name none.")
@json_option
@handle_errors
def presets(store_path: Path, set_default: str | None, as_json: bool) -> None:
    """Named fusion presets stored in the catalog, the store's default marked with *."""
    if set_default is not None:
        with open_store(store_path) as store:
            store.set_default_search_preset(set_default)
    with open_store(store_path, read_only=True) as store:
        named, default = store.search_presets(), store.default_search_preset()
    if as_json:
        emit_json({"default": default, "presets": named})
        return
    for name, preset in named.items():
        options = preset["options"]
        mark = "*" if name == default else " "
        how = (f"rrf k={options['rrf_k']}" if options["fusion"] == "rrf"
               else f"weighted vector={options['weights'][0]} bm25={options['weights'][1]}")
        click.echo(f"{mark} {name:<12} {how:<34} {preset['description'] or ''}")


def _show_json(data: dict[str, Any]) -> dict[str, Any]:
    doc = dict(data["document"])
    doc["text"] = doc.pop("content")
    return {
        "document": doc,
        "versions": data["versions"],
        "chunks": [
            {
                "chunk_index": c["chunk_index"], "content": c["content"],
                "start_offset": c["start_offset"], "end_offset": c["end_offset"],
                "token_count": c["token_count"], "heading_path": c["heading_path"],
                "page_start": c["page_start"], "page_end": c["page_end"],
                "label": c["label"], "retrieval_count": c["retrieval_count"],
            }
            for c in data["chunks"]
        ],
    }


main.add_command(search_command)


if __name__ == "__main__":
    main()
