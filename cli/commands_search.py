"""`enginelib search`: readable cited results for people, stable JSON for programs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from enginelib import SearchResponse
from enginelib.search.filters import DATE_FILTER_FIELDS
from enginelib.search.gate import shown_words
from enginelib.types import TRUTH_LEVELS

from .options import (
    EXIT_NOTHING_RELEVANT,
    GivenPath,
    emit_json,
    given_search_options,
    handle_errors,
    json_option,
    open_store,
    printable,
    search_request_options,
    snapshot_option,
    store_option,
)

_LIST_FIELDS = {"truth_level", "domain", "source_type", "document_type", "author", "language",
                "tenant_id", "namespace", "source_id", "document_id", "tags"}


def parse_filters(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` pairs: commas make lists; ``tags:all=a,b``; ``created_at.gte=2024-01-01``.

    A field given twice is refused, as a JSON key given twice is by serve: the second pair
    replaced the first unseen (``domain=a`` then ``domain=b`` filtered on b alone), and a
    date field given whole and as a bound failed with a raw TypeError. A date field's
    different bounds (``.gte`` and ``.lt``) make one range."""
    filters: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r} is not FIELD=VALUE", param_hint="--filter")
        key, value = (part.strip() for part in pair.split("=", 1))
        if "." in key and key.split(".", 1)[0] in DATE_FILTER_FIELDS:
            field, op = key.split(".", 1)
            bounds = filters.setdefault(field, {})
            if not isinstance(bounds, dict) or op in bounds:
                raise _given_twice(key if isinstance(bounds, dict) else field)
            bounds[op] = value
            continue
        field = "tags" if key.startswith("tags:") else key
        if field in filters:
            raise _given_twice(field)
        if key.startswith("tags:"):
            filters["tags"] = {key.split(":", 1)[1]: [v for v in value.split(",") if v]}
        elif key in _LIST_FIELDS:
            filters[key] = [v for v in value.split(",") if v]
        else:
            filters[key] = value
    for field, value in filters.items():
        if field.rstrip("<>!") in DATE_FILTER_FIELDS and not isinstance(value, dict):
            raise _not_bounds(field.rstrip("<>!"))
    return filters


def _not_bounds(field: str) -> click.BadParameter:
    """A date field given whole (``created_at=2024-01-01``) or with a comparison typed in
    (``created_at>=2024-01-01``): the library's refusal spoke of a Python dict ({'gte': ...})
    or an unknown field, and neither said how to write a range on a command line."""
    return click.BadParameter(
        f"{field} takes bounds, each its own --filter: {field}.gte=2024-01-01 (from that day) "
        f"and {field}.lt=2025-01-01 (before that day); the bounds are gte, gt, lte, lt, and a "
        "date alone is its whole day", param_hint="--filter")


def _given_twice(field: str) -> click.BadParameter:
    if field.split(".")[0] in DATE_FILTER_FIELDS:
        date = field.split(".")[0]
        fix = f"give each bound once: {date}.gte=2024-01-01 and {date}.lt=2025-01-01 make a range"
    else:
        fix = f"give each field once, several values comma-separated ({field}=a,b)"
    return click.BadParameter(f"{field!r} is given more than once: {fix}", param_hint="--filter")


@click.command("search")
@click.argument("query", required=False)
@store_option
@snapshot_option
@search_request_options
@click.option("--explain", is_flag=True, help="Show each method's rank and score and the citation.")
@click.option("--vector-file", type=GivenPath(path_type=Path, exists=True, dir_okay=False,
                                             allow_dash=True),
              default=None, help="The query's own vector (JSON list or .npy; - reads it from "
              "standard input) for vector/hybrid search, e.g. on a store without a model; QUERY "
              "may then be left out (vector only).")
@json_option
@handle_errors
def search_command(
    query: str | None, store_path: Path, snapshot: str | None, explain: bool,
    vector_file: Path | None, as_json: bool, **request_options: Any,
) -> None:
    """Search the store; every hit comes with its citation (document, offsets, truth level).

    Exit status: 0 with hits, 1 when the search is refused (NO_RELEVANT_SOURCES, the
    reason printed), 2 on a usage or library error.
    """
    # One query: threads cannot pay for themselves, and on a busy machine they cost seconds.
    os.environ.setdefault("ENGINELIB_EMBED_THREADS", "1")
    options = given_search_options(request_options)
    if "filters" in options:
        options["filters"] = parse_filters(options["filters"]) or None
    strategy = request_options["strategy"]
    vector = None
    if vector_file is not None:
        from .vector_input import load_vector_file

        vector = load_vector_file(vector_file)
    if query is None:
        if vector is None:
            raise click.UsageError("give a QUERY, or --vector-file with --strategy vector")
        if strategy != "vector":
            raise click.UsageError(
                f"--strategy {strategy} needs the query's words; without QUERY use --strategy vector"
            )
        # no words: the gate weighs the vector's similarity alone, and the quotes open the
        # hits (a label such as "vector from q.json" was read as the user's words)
        query = ""
    with open_store(store_path, read_only=True, snapshot=snapshot) as store:
        if vector is not None:
            from .vector_input import check_dimension

            options["query_vector"] = check_dimension(vector, store, vector_file or Path())
        response = store.search(query, **options)
    if as_json:
        emit_json(response_json(response))
    else:
        print_response(response, explain=explain)
    if not response.ok:  # a script must tell "nothing relevant" from hits (grep's 1)
        raise SystemExit(EXIT_NOTHING_RELEVANT)


def response_json(response: SearchResponse) -> dict[str, Any]:
    """``SearchResponse.to_dict()``, the fields a Python caller gets (the canonical Citation
    schema's names, snake_case, stable for programs), with the gate as ``gate_summary``."""
    return {**response.to_dict(), "gate": response.gate_summary()}


def _print_understanding(response: SearchResponse) -> None:
    """What the query became (search/rewrite.py), so a corrected typo is never silent."""
    if response.corrections:
        click.echo("corrected: " + printable(", ".join(
            f"{k} -> {v}" for k, v in response.corrections.items())))
    if response.expansions:
        click.echo("acronyms: " + printable(", ".join(
            f"{k} = {v}" for k, v in response.expansions.items())))


def print_response(response: SearchResponse, *, explain: bool) -> None:
    _print_understanding(response)
    if not response.ok:
        click.echo(f"NO_RELEVANT_SOURCES: {response.reason}")
        click.echo(f"(strategy {response.strategy_used}, truth levels {','.join(response.truth_levels)})")
        if explain and response.gate is not None:
            click.echo(gate_line(response))
        return
    more = "+" if response.total_is_lower_bound else ""
    click.echo(
        f"{response.total}{more} result{'' if response.total == 1 and not more else 's'}, showing {response.offset + 1}-{response.offset + len(response.hits)} "
        f"({response.strategy_used}, truth levels {','.join(response.truth_levels)}, "
        f"{response.execution_time_ms:.1f} ms)"
    )
    for hit in response.hits:
        c = hit.citation
        level = TRUTH_LEVELS[hit.truth_level].name
        click.echo("")
        click.secho(printable(c.display_text), bold=True)
        where = f"{printable(hit.document_id)} chunk {hit.chunk_index}, chars {hit.start_offset}-{hit.end_offset}"
        if c.page_start:
            where += f", page {c.page_start}" + (f"-{c.page_end}" if c.page_end != c.page_start else "")
        click.echo(f"    {where}  [{hit.truth_level} {level}]")
        if hit.heading_path:
            click.echo(f"    {printable(hit.heading_path)}")
        quote = c.quote if len(c.quote) <= 300 else c.quote[:297] + "..."
        click.echo("    \"" + printable(quote.replace("\n", " ")) + "\"")
        if explain:
            s = hit.scores
            click.echo(
                f"    vector rank {s.vector_rank} score {_fmt(s.vector_score)} | "
                f"bm25 rank {s.bm25_rank} score {_fmt(s.bm25_score)} | fused {s.fused:.5f}"
                + (f" | boost {s.boost:+.2f}" if s.boost else "")
                + (f" | similarity {s.similarity:.3f}" if s.similarity is not None else "")
            )
    if explain and response.gate is not None:
        click.echo("")
        click.echo(gate_line(response))


def gate_line(response: SearchResponse) -> str:
    """The answerability gate's decision, reason code and the numbers behind it."""
    g = response.gate
    assert g is not None
    e = g.evidence
    threshold = "off" if g.threshold is None else f"{g.threshold:.2f}"
    return (
        f"gate: {g.decision} ({g.reason_code}) score {g.score:.2f} / threshold {threshold} | "
        f"similarity {_fmt(e.similarity)} z {_fmt(e.similarity_z)} semantic {_fmt(e.semantic)} | "
        f"coverage {_fmt(e.coverage)} agreement {_fmt(e.agreement)}"
        + (f" | missing: {shown_words(e.missing_words, 20)}" if e.missing_words else "")
        + (f" | laws named: {shown_words(e.named_sources, 5)}" if e.named_sources else "")
        + (f" | not in the store: {shown_words(e.absent_sources, 5)}"
           if e.absent_sources else "")
        + (f" | asked in the store's terms: {shown_words(e.own_terms, 5)}"
           if e.own_terms else "")
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
