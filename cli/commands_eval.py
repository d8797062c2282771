"""`enginelib eval`: score a store against your own judgments (nDCG@10, Recall@100, MRR@10)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from enginelib.errors import InvalidInputError
from enginelib.evaluation import (
    EVAL_DEPTH,
    RELEVANT_GRADE,
    evaluate_run,
    rank_documents,
    read_qrels,
    read_queries,
    trec_run_lines,
)
from enginelib.evaluation_inputs import query_text_problem
from enginelib.text import excerpt
from enginelib.types import FUSION_METHODS, STRATEGIES
from enginelib.validation import MAX_LIMIT

from .options import (
    CommandError,
    GivenPath,
    Integer,
    emit_json,
    handle_errors,
    json_option,
    open_store,
    snapshot_option,
    store_option,
    truth_level_list,
)
from .stdin_input import is_stdin, stdin_text

T = TypeVar("T")
STDIN_NAME = "<stdin>"  # how messages name standard input ("<stdin>:3: not JSON ...")


@click.command("eval")
@store_option
@snapshot_option
@click.option("--queries", "queries_path", required=True,
              type=GivenPath(exists=True, dir_okay=False, path_type=Path, allow_dash=True),
              help="BEIR queries.jsonl ({\"_id\", \"text\"} a line) or a qid<TAB>text file; "
              "- reads it from standard input.")
@click.option("--qrels", "qrels_path", required=True,
              type=GivenPath(exists=True, dir_okay=False, path_type=Path, allow_dash=True),
              help="Judgments: BEIR .tsv (query-id, corpus-id, score) or TREC qrels; - reads "
              "them from standard input.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="hybrid", show_default=True)
@click.option("--fusion", type=click.Choice(FUSION_METHODS), default="rrf", show_default=True)
@click.option("--truth-level", "truth_levels", default=None,
              help="Comma-separated levels to search [default: every level present in the store].")
@click.option("--depth", type=Integer(1, MAX_LIMIT), default=EVAL_DEPTH, show_default=True,
              help="Documents ranked per query.")
@click.option("--run-out", type=GivenPath(dir_okay=False, path_type=Path), default=None,
              callback=lambda _ctx, _param, path: _writable_run_out(path),
              help="Write the ranking in TREC run format (qid Q0 docid rank score tag).")
@click.option("--tag", default=None, help="Run tag in --run-out [default: enginelib-STRATEGY].")
@json_option
@handle_errors
def eval_command(
    store_path: Path, snapshot: str | None, queries_path: Path, qrels_path: Path, strategy: str,
    fusion: str, truth_levels: str | None, depth: int, run_out: Path | None, tag: str | None,
    as_json: bool,
) -> None:
    """Score the store on judged queries; documents are ranked by their best chunk.

    The judgments' corpus ids are document ids: a relevant one the store lacks counts as a
    miss (and is named on stderr); none of them in the store is an error (exit 2)."""
    if is_stdin(queries_path) and is_stdin(qrels_path):
        raise click.UsageError("--queries - and --qrels -: standard input holds one of them; "
                               "name a file for the other")
    for option, given in (("--queries", queries_path), ("--qrels", qrels_path)):
        if run_out is not None and _same_file(run_out, given):
            # written over with the ranking, the judgments (or queries) were gone for good
            raise click.UsageError(f"--run-out {run_out} is the {option} file: the run would "
                                   "be written over it; name another file for --run-out")
    qrels = _read(qrels_path, "judgments", read_qrels, "--qrels")
    all_queries = _read(queries_path, "queries", read_queries, "--queries")
    # how the messages below name them
    qrels_path, queries_path = _shown(qrels_path), _shown(queries_path)
    if not qrels:
        raise CommandError(f"{qrels_path} holds no judgments: one 'query-id corpus-id grade' "
                           "line each (a BEIR .tsv) or 'qid 0 docid grade' (TREC)")
    judged = {qid: all_queries[qid] for qid in qrels if qid in all_queries}
    no_text = sorted(set(qrels) - set(judged))
    if not judged:
        raise CommandError(
            f"none of the {len(qrels)} judged query ids in {qrels_path} is in {queries_path}"
        )
    for qid, text in judged.items():  # before the store opens: the search said which not
        problem = query_text_problem(text)
        if problem is not None:
            raise CommandError(f"judged query {qid!r} in {queries_path}: {problem}")
    levels = truth_level_list(truth_levels)
    relevant = sorted({doc for qid in judged for doc, grade in qrels[qid].items()
                       if grade >= RELEVANT_GRADE})
    with open_store(store_path, read_only=True, snapshot=snapshot) as store:
        absent = sorted(set(relevant) - store.present_documents(relevant))
        if relevant and len(absent) == len(relevant):
            # every score would be 0 and look like a ranking failure, when the ids never met
            raise CommandError(
                f"none of the {len(relevant)} documents judged relevant in {qrels_path} is in "
                f"the store (e.g. {', '.join(map(repr, absent[:3]))}): the judgments' corpus "
                "ids must be the store's document ids (see `enginelib list`; a BEIR "
                "corpus.jsonl ingested as is keeps its _id)")
        result = rank_documents(
            store, judged, strategy=strategy, truth_levels=levels, depth=depth, fusion=fusion
        )
    scores = evaluate_run(result.run, {qid: qrels[qid] for qid in judged})
    run_tag = tag or f"enginelib-{strategy}"
    if run_out is not None:
        lines = trec_run_lines(result.run, run_tag)  # checks the tag before the file is opened
        with open(run_out, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line + "\n")
    empty = sum(1 for ranked in result.run.values() if not ranked)
    data = {
        "store": str(store_path),
        "strategy": strategy,
        "fusion": fusion if strategy in ("hybrid", "auto") else None,
        "truth_levels_searched": list(result.truth_levels),
        "truth_levels_default": levels is None,
        "queries_judged": len(qrels),
        "queries_without_text": len(no_text),
        "queries_without_results": empty,
        "relevant_documents": len(relevant),
        "relevant_documents_absent": len(absent),
        **scores.summary(),
        "seconds": round(result.seconds, 3),
        "run_out": str(run_out) if run_out else None,
    }
    if as_json:
        emit_json(data)
        return
    how = "every level present in the store" if levels is None else "as asked"
    click.echo(
        f"{scores.queries} queries, strategy {strategy}"
        + (f" ({fusion})" if data["fusion"] else "")
        + f", truth levels searched {','.join(result.truth_levels) or 'none'} ({how})"
    )
    click.echo(
        f"nDCG@10 {scores.ndcg_at_10:.4f}  Recall@100 {scores.recall_at_100:.4f}  "
        f"MRR@10 {scores.mrr_at_10:.4f}"
    )
    if no_text:
        click.echo(f"warning: {len(no_text)} judged queries have no text in {queries_path} "
                   f"and were skipped, e.g. {', '.join(no_text[:3])}", err=True)
    if absent:
        click.echo(f"warning: {len(absent)} of the {len(relevant)} documents judged relevant "
                   f"are not in the store and count as misses, e.g. "
                   f"{', '.join(map(repr, absent[:3]))}", err=True)
    if empty:
        click.echo(f"note: {empty} queries returned no document (scored 0)", err=True)
    if run_out is not None:
        click.echo(f"run written to {run_out} (tag {run_tag})")


def _writable_run_out(path: Path | None) -> Path | None:
    """Refuse a ``--run-out`` that cannot be written before any query is searched: it was
    opened after the whole evaluation, which then failed ("No such file or directory"), its
    scores never printed."""
    if path is None:
        return None
    try:
        exists = path.exists()
        folder = path.parent
        is_folder = folder.is_dir()
    except OSError as exc:  # a name past the file system's limit: "File name too long"
        raise click.BadParameter(f"{excerpt(str(path))}: {exc.strerror or exc}; name a file "
                                 "you can write", param_hint="'--run-out'") from None
    if not is_folder:
        what = "is not a folder" if folder.exists() else "does not exist"
        raise click.BadParameter(f"{str(path)!r}: its folder {str(folder)!r} {what}; create "
                                 "the folder or name a file in one that exists",
                                 param_hint="'--run-out'")
    if not os.access(folder, os.W_OK | os.X_OK) or (exists and not os.access(path, os.W_OK)):
        where = path if exists else folder
        raise click.BadParameter(f"{str(path)!r}: {str(where)!r} is not writable by this "
                                 "user; name a file you can write", param_hint="'--run-out'")
    return path


def _same_file(a: Path, b: Path) -> bool:
    if is_stdin(b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # the run file not there yet
        return False


def _shown(path: Path) -> Path:
    return Path(STDIN_NAME) if is_stdin(path) else path


def _read(path: Path, what: str, read: Callable[..., T], option: str) -> T:
    """``read`` the file at ``path``, or standard input for ``-``."""
    try:
        if is_stdin(path):
            return read(STDIN_NAME, handle=stdin_text(option))
        return read(path)
    except InvalidInputError as exc:  # it names the file (and line) already, bytes not UTF-8 too
        raise CommandError(f"could not read the {what}: {exc}") from exc
    except (ValueError, KeyError) as exc:
        raise CommandError(f"could not read the {what} in {_shown(path)}: {exc}") from exc
