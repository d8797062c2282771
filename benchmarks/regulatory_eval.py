"""Issue 10's "Must show" figures in one command: the regulatory question sets (EN, FR,
EN over FR; in-domain and off-domain) under the default configuration and ``--preset
keyword``, plus the gate's refusal rate and nDCG@10 on SciFact/NFCorpus test queries.

    python -m benchmarks.regulatory_eval                   # regulatory table (e5-small)
    python -m benchmarks.regulatory_eval --beir scifact,nfcorpus
    python -m benchmarks.regulatory_eval --calibrate       # sweep the gate on the train split
    python -m benchmarks.regulatory_eval --split fresh     # questions written after every choice
    python -m benchmarks.regulatory_eval --embedder e5-minilm

Splits: ``train`` chooses constants, ``test`` reports them, ``fresh`` (2026-11-23) was written
after every constant was chosen and is only ever reported, never used to choose. ``fresh2``
(2026-11-27: 41 English questions on articles the other splits barely ask about, then 31
French ones on the French text's Articles 1-23 with their English translations for EN>FR)
was written before anything was tried on it; it names the article only, never a recital,
so it reads lower than the other splits where a recital that answers also counts.

Stores are built once under ``benchmarks/.cache/regulatory/<embedder>/`` (vectors cached by
content in ``benchmarks/.cache/vectors``) and rebuilt when the default chunking changes.
Each question is searched once with a gate that refuses nothing (threshold 0: the evidence
is gathered, every hit kept), so the ranking (top 3) and the gate's evidence come from the
same search; the decision is ``gate.decide`` on that evidence at the default threshold,
which is exactly what a gated search decides.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import enginelib
from enginelib.chunker import ChunkingConfig
from enginelib.embedders.joined import JoinedEmbedder
from enginelib.embedders.path import embed_queries
from enginelib.embedders.registry import DEFAULT_EMBEDDER, embedder_names, make_embedder
from enginelib.errors import IncompatibleStoreError, StoreNotFoundError
from enginelib.search import fusion, gate, rewrite
from enginelib.search.request import ANSWERABILITY_THRESHOLD
from enginelib.store import remove_store
from enginelib.types import LoadedDocument

from . import beir
from .vector_cache import DEFAULT_CACHE, CachingEmbedder, VectorCache

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions"
FRENCH_TEXT = HERE / "data" / "regulatory_fr"
CACHE = HERE / ".cache" / "regulatory"
ENGLISH_CORPUS = beir.SHARED_DATASETS / "regulatory" / "corpus.jsonl"
# Landed figures (benchmarks/RESULTS.md, default RRF with all-MiniLM-L6-v2) the new default
# must not fall below beyond noise.
LANDED_NDCG = {"scifact": 0.716, "nfcorpus": 0.353}
CONFIGS = {"default": {}, "keyword": {"preset": "keyword"}}
# (group, in-domain set, off-domain set, corpus)
GROUPS = (
    ("EN", "regulatory_en", "off_domain_en", "en"),
    ("FR", "regulatory_fr", "off_domain_fr", "fr"),
    ("EN>FR", "regulatory_en_over_fr", "off_domain_en", "fr"),
    # German, Spanish and Italian questions over the English text (test split only): no
    # target of issue 10's, held to its cross-lingual bar.
    ("EU>EN", "regulatory_eu_over_en", "off_domain_eu", "en"),
)
TARGETS = {  # issue 10: answered, refused, top-3 per group
    "EN": (0.95, 0.90, 0.90), "FR": (0.95, 0.90, 0.85), "EN>FR": (0.95, 0.90, 0.70),
    "EU>EN": (0.95, 0.90, 0.70),
}


# -- the embedder ---------------------------------------------------------------------


def query_vectors(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """Queries through the embedding path a store uses (e5's "query: " role included)."""
    return embed_queries(embedder, list(texts))


@contextmanager
def landed_fusion() -> Iterator[None]:
    """The fusion and rewriting as landed before issue 10's retrieval work: plain RRF (no
    evidence weights, no sibling evidence), no definitions twin, every acronym twin. The
    peer measured in the same run."""
    saved = (fusion.EVIDENCE_WEIGHTING, fusion.SIBLING_WEIGHT, rewrite.DEFINITION_TWINS,
             rewrite.MIN_ACRONYM_IDF)
    fusion.EVIDENCE_WEIGHTING, fusion.SIBLING_WEIGHT = False, 0.0
    rewrite.DEFINITION_TWINS, rewrite.MIN_ACRONYM_IDF = False, 0.0
    rewrite._TABLES.clear()  # acronym tables are cached with the cap applied
    try:
        yield
    finally:
        (fusion.EVIDENCE_WEIGHTING, fusion.SIBLING_WEIGHT, rewrite.DEFINITION_TWINS,
         rewrite.MIN_ACRONYM_IDF) = saved
        rewrite._TABLES.clear()


# -- corpora and questions ------------------------------------------------------------


def english_units() -> list[LoadedDocument]:
    docs = []
    with open(ENGLISH_CORPUS, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            meta = row.get("metadata") or {}
            # The corpus's titles already end with the article's heading ("GDPR Article 39 —
            # Tasks of the data protection officer"): the title is taken as a loader takes it.
            title = row["title"]
            heading = meta.get("heading")
            if heading and not title.endswith(heading):
                title += f" — {heading}"
            docs.append(LoadedDocument(id=row["_id"], text=row["text"], title=title, language="en"))
    return docs


_UNIT = re.compile(r"^#### (?:Article (\d+)|Considérant \((\d+)\))(?: — (.*))?$", re.MULTILINE)


def french_units(folder: Path = FRENCH_TEXT) -> list[LoadedDocument]:
    """One document per ``#### Article N — Titre`` / ``#### Considérant (N)`` unit."""
    docs = []
    for path in sorted(folder.glob("*.md")):
        if path.name == "SOURCE.md":
            continue
        text = path.read_text(encoding="utf-8")
        marks = list(_UNIT.finditer(text))
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
            body = re.split(r"^#{1,3} ", text[mark.end():end], flags=re.MULTILINE)[0].strip()
            if mark.group(1):
                doc_id, title = f"gdpr-art-{mark.group(1)}", f"RGPD Article {mark.group(1)}"
                title += f" — {mark.group(3)}" if mark.group(3) else ""
            else:
                doc_id, title = f"gdpr-rct-{mark.group(2)}", f"RGPD Considérant {mark.group(2)}"
            docs.append(LoadedDocument(id=doc_id, text=body, title=title, language="fr"))
    return docs


def load_questions(name: str) -> list[dict[str, Any]]:
    with open(QUESTIONS / f"{name}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def harness_embedder(name: str) -> Any:
    """A built-in embedder by name; a joined one gets its parts through their own vector
    caches (their vectors are the same whether joined or alone)."""
    embedder = make_embedder(name)
    if isinstance(embedder, JoinedEmbedder):
        first, second = embedder.first, embedder.second
        embedder = JoinedEmbedder(
            CachingEmbedder(first, VectorCache.for_embedder(DEFAULT_CACHE, first)),
            CachingEmbedder(second, VectorCache.for_embedder(DEFAULT_CACHE, second)))
    return embedder


# Bumped when what a corpus's documents are changes (not their chunking, which the store
# checks itself): a store cached from the old documents is then left aside, not reused.
# en 2: the English titles no longer carry their heading twice (2026-11-27).
CORPUS_VERSIONS = {"en": 2, "fr": 1}


def store_path(embedder_name: str, corpus: str) -> Path:
    version = CORPUS_VERSIONS[corpus]
    return CACHE / embedder_name / (corpus if version == 1 else f"{corpus}-v{version}")


def open_store(embedder: Any, corpus: str) -> enginelib.Store:
    path = store_path(embedder.name, corpus)
    cached = CachingEmbedder(embedder, VectorCache.for_embedder(DEFAULT_CACHE, embedder))
    return _build(path, cached, lambda: english_units() if corpus == "en" else french_units())


def _build(path: Path, embedder: Any, documents: Any) -> enginelib.Store:
    """Open the cached store of ``documents()``, built if need be (``cached_store``)."""
    return cached_store(path, embedder,
                        lambda store: store.ingest_documents(documents(), truth_level="L1"))


def cached_store(
    path: Path, embedder: Any, fill: Callable[[enginelib.Store], Any]
) -> enginelib.Store:
    """Open the cached store, rebuilding it with ``fill`` when missing, when the code's
    chunking no longer matches (the default ``ChunkingConfig``: a store chunked otherwise is
    refused at open), or when its build never finished. A build stopped half-way leaves a
    store that opens with the documents committed so far: without ``built_marker`` it was
    reused as the whole corpus (SciFact with 3,072 of its 5,183 documents scored 0.584)."""
    marker = built_marker(path)
    try:
        store = enginelib.Store.open(path, embedder=embedder, create=False,
                                     chunking=ChunkingConfig())
        if _marked_count(marker) == store.stats()["documents"]:
            return store
        store.close()
        print(f"{path.name}: an unfinished build, rebuilt", file=sys.stderr)
        remove_store(path)
    except (IncompatibleStoreError, StoreNotFoundError):
        if (path / "manifest.json").exists():
            remove_store(path)
    marker.unlink(missing_ok=True)
    store = enginelib.Store.open(path, embedder=embedder)
    started = time.perf_counter()
    try:
        fill(store)
    except BaseException:  # Ctrl-C included: what was committed stays, unmarked
        store.close()
        raise
    documents = store.stats()["documents"]
    marker.write_text(f"{documents}\n", encoding="utf-8")
    print(f"built {path.name}: {documents} documents in "
          f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return store


def built_marker(path: Path) -> Path:
    """Beside the store, written once its build is done: the number of documents it holds."""
    return path.with_name(f"{path.name}.built")


def _marked_count(marker: Path) -> int | None:
    try:
        return int(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# -- running --------------------------------------------------------------------------

# A gate that weighs the evidence but refuses nothing: a search with the gate off
# (threshold None) skips gathering it, and the harness decides on it afterwards.
GATHER_ONLY = 0.0


@dataclass(frozen=True)
class Outcome:
    qid: str
    question: str
    split: str
    expected: tuple[str, ...]
    top: tuple[str, ...]  # document ids of the first hits, best first
    evidence: gate.GateEvidence


def run_questions(
    store: enginelib.Store, embedder: Any, questions: list[dict[str, Any]], options: dict[str, Any]
) -> list[Outcome]:
    texts = [q["question"] for q in questions]
    vectors = query_vectors(embedder, texts)
    responses = store.search_batch(
        texts, query_vectors=vectors, limit=10, answerability_threshold=GATHER_ONLY, log=False,
        chunks_per_doc=1, cache=False, **options,
    )
    outcomes = []
    for q, response in zip(questions, responses, strict=True):
        evidence = response.gate.evidence if response.gate is not None else gate.GateEvidence()
        outcomes.append(Outcome(
            q["id"], q["question"], q.get("split", "test"), tuple(q.get("expected", ())),
            tuple(h.document_id for h in response.hits), evidence,
        ))
    return outcomes


def answered(outcome: Outcome, threshold: float = ANSWERABILITY_THRESHOLD) -> bool:
    if not outcome.top:
        return False
    return gate.decide(outcome.evidence, threshold).answerable


def in_top(outcome: Outcome, k: int = 3) -> bool:
    return any(doc in outcome.expected for doc in outcome.top[:k])


def share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else float("nan")


def regulatory(embedder: Any, split: str | None, peer: bool = False) -> dict[str, Any]:
    """Every group under every config; with ``peer``, the landed fusion too (its keys are
    prefixed "landed ")."""
    stores = {corpus: open_store(embedder, corpus) for corpus in ("en", "fr")}
    results: dict[str, Any] = {}
    if peer:
        with landed_fusion():
            results.update({f"landed {k}": v for k, v in _regulatory(stores, embedder, split).items()})
    results.update(_regulatory(stores, embedder, split))
    for store in stores.values():
        store.close()
    return results


def _regulatory(stores: dict[str, Any], embedder: Any, split: str | None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for config, options in CONFIGS.items():
        for group, in_set, off_set, corpus in GROUPS:
            inside = [q for q in load_questions(in_set) if split in (None, q["split"])]
            outside = [q for q in load_questions(off_set) if split in (None, q["split"])]
            if not inside and not outside:
                continue
            store = stores[corpus]
            results[f"{config}/{group}"] = {
                "in": run_questions(store, embedder, inside, options),
                "off": run_questions(store, embedder, outside, options),
            }
    return results


# Questions about other EU laws (the DSA, NIS2, MiCA...): the corpus's domain, not its
# laws. Reported, not calibrated on (stop 34: a baseline for the gate's near misses). The
# split "near" was read while the named-law rule was written (stop 35); "near2" was written
# after it, and only ever reported; "near3" (stop 36) after the rule that answers a question
# on a cited law asked in the store's own terms.
NEAR_MISS = (
    ("EN", "near_miss_en", "en"), ("FR", "near_miss_fr", "fr"), ("EN>FR", "near_miss_en", "fr"),
)


def near_miss(embedder: Any) -> str:
    """How many near-miss questions the default search refuses, per group, and each one's
    evidence."""
    stores = {corpus: open_store(embedder, corpus) for corpus in ("en", "fr")}
    lines = ["| near-miss group | split | questions | refused |", "| --- | --- | ---: | ---: |"]
    details = []
    for group, name, corpus in NEAR_MISS:
        questions = load_questions(name)
        outcomes = run_questions(stores[corpus], embedder, questions, {})
        refused = [not answered(o) for o in outcomes]
        for split in sorted({q["split"] for q in questions}):
            flags = [no for q, no in zip(questions, refused, strict=True) if q["split"] == split]
            lines.append(f"| {group} | {split} | {len(flags)} | {share(flags):.1%} |")
        for outcome, no in zip(outcomes, refused, strict=True):
            e = outcome.evidence
            details.append(f"  {group} {outcome.qid} {'refused ' if no else 'ANSWERED'} "
                           f"sim {_num(e.similarity)} cov {_num(e.coverage)} "
                           f"agr {_num(e.agreement)}: {outcome.question}")
    for store in stores.values():
        store.close()
    return "\n".join(lines + details)


def regulatory_table(results: dict[str, Any], threshold: float = ANSWERABILITY_THRESHOLD) -> str:
    lines = [
        "| config | group | in-domain | answered | top-3 | answered and top-3 | off-domain | refused |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, value in results.items():
        config, group = key.split("/")
        inside, off = value["in"], value["off"]
        target_answer, target_refuse, target_top = TARGETS[group]
        ans = share([answered(o, threshold) for o in inside])
        top = share([in_top(o) for o in inside])
        both = share([answered(o, threshold) and in_top(o) for o in inside])
        ref = share([not answered(o, threshold) for o in off])
        lines.append(
            f"| {config} | {group} | {len(inside)} | {_pct(ans, target_answer)} | "
            f"{_pct(top, target_top)} | {both:.1%} | {len(off)} | {_pct(ref, target_refuse)} |"
        )
    return "\n".join(lines)


def failures(results: dict[str, Any], k: int = 3) -> str:
    """Every in-domain question whose expected article is not in the top ``k``: what it
    asked, what it expected and what came first (to see why it fails, not to fit it)."""
    lines = []
    for key, value in results.items():
        for o in value["in"]:
            if not in_top(o, k):
                lines.append(f"{key} {o.qid}: {o.question}\n    expected {', '.join(o.expected)}; "
                             f"got {', '.join(o.top[:5]) or '-'}")
    return "\n".join(lines)


def _pct(value: float, target: float) -> str:
    mark = "" if math.isnan(value) else (" ✓" if value >= target else " ✗")
    return f"{value:.1%}{mark}"


# -- SciFact / NFCorpus ----------------------------------------------------------------


def beir_eval(
    embedder: Any, name: str, split: str, max_docs: int = 0, *, options: dict[str, Any] | None = None,
    stores: Path = CACHE, vectors_root: Path = DEFAULT_CACHE,
) -> dict[str, Any]:
    """nDCG@10 and the gate's decision per query on a BEIR dataset's queries. ``max_docs`` keeps
    the judged documents plus the first others up to that many (for a quick, smaller run: its
    nDCG is then not comparable with the full corpus's). The store depends on the corpus only,
    so every split (test, dev, train) searches the same one; query vectors are cached too.
    ``options`` go to the search (e.g. ``{"strategy": "vector"}``)."""
    from enginelib.evaluation import documents_by_best_chunk, ndcg

    data = beir.load(name, split)
    documents = list(data.documents)
    if max_docs:
        judged = {doc for judgments in data.qrels.values() for doc in judgments}
        others = [d for d in documents if d.id not in judged][: max(0, max_docs - len(judged))]
        documents = [d for d in documents if d.id in judged] + others
    # A subset depends on the split's judgments, the whole corpus does not.
    path = stores / embedder.name / (f"beir-{data.name}-{split}-{max_docs}" if max_docs else f"beir-{data.name}-all")
    cached = CachingEmbedder(embedder, VectorCache.for_embedder(vectors_root, embedder))
    store = _build(path, cached, lambda: documents)
    ids = list(data.queries)
    texts = [data.queries[q] for q in ids]
    vectors = cached.embed_queries(texts)
    per_query: dict[str, float] = {}
    decisions: dict[str, gate.GateDecision] = {}
    for start in range(0, len(ids), 64):
        batch = slice(start, start + 64)
        responses = store.search_batch(
            texts[batch], query_vectors=vectors[batch], limit=100, chunks_per_doc=1,
            answerability_threshold=GATHER_ONLY, log=False, cache=False, **(options or {}),
        )
        for qid, response in zip(ids[batch], responses, strict=True):
            ranking = [d for d, _ in documents_by_best_chunk(
                (h.document_id, h.scores.fused) for h in response.hits)]
            per_query[qid] = ndcg(ranking, data.qrels[qid], 10)
            decisions[qid] = (gate.no_match(ANSWERABILITY_THRESHOLD) if response.gate is None
                              else gate.decide(response.gate.evidence, ANSWERABILITY_THRESHOLD))
    store.close()
    refused = sum(not d.answerable for d in decisions.values())
    return {"dataset": data.name, "split": split, "queries": len(ids), "documents": len(documents),
            "embedder": embedder.name, "ndcg@10": float(np.mean(list(per_query.values()))),
            "refused": refused / len(ids), "per_query": per_query, "decisions": decisions,
            "texts": dict(zip(ids, texts, strict=True))}


def beir_over_regulatory(embedder: Any, name: str, split: str) -> dict[str, Any]:
    """A BEIR dataset's queries asked of the English regulatory store: short medical titles or
    claims about a law corpus, off-domain by construction. The regulatory off-domain sets are
    whole questions; these are the short queries a gate tuned to answer NFCorpus titles could
    let through, so a change meant to answer more BEIR queries is checked here too (use a
    non-test split: NFCorpus dev, SciFact train)."""
    data = beir.load(name, split)
    store = open_store(embedder, "en")
    questions = [{"id": q, "question": t, "split": split} for q, t in data.queries.items()]
    outcomes = run_questions(store, embedder, questions, {})
    store.close()
    return {"dataset": name, "split": split, "queries": len(outcomes),
            "refused": share([not answered(o) for o in outcomes])}


def refusals(out: dict[str, Any]) -> str:
    """The refused queries of a BEIR run: reason codes and the gate's numbers, one a line."""
    lines = []
    for qid, d in out["decisions"].items():
        if d.answerable:
            continue
        e = d.evidence
        lines.append(
            f"  {qid} {d.reason_code} score {d.score:.2f} sim {_num(e.similarity)} z {_num(e.similarity_z)} "
            f"sem {_num(e.semantic)} cov {_num(e.coverage)} agr {_num(e.agreement)} "
            f"missing {','.join(e.missing_words[:4]) or '-'}: {out['texts'][qid][:70]!r}"
        )
    return "\n".join(lines)


def reason_counts(out: dict[str, Any]) -> str:
    counts: dict[str, int] = {}
    for d in out["decisions"].values():
        if not d.answerable:
            counts[d.reason_code] = counts.get(d.reason_code, 0) + 1
    return "(" + ", ".join(f"{code} {n}" for code, n in sorted(counts.items())) + ")" if counts else ""


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def randomisation_p(diffs: Sequence[float], rounds: int = 10_000, seed: int = 0) -> float:
    """Two-sided sign-flip randomisation test of a mean paired difference (Smucker et al.
    2007): how often random signs give a mean at least as far from 0 as the observed one."""
    values = np.asarray(diffs, dtype=np.float64)
    if not len(values) or not np.any(values):
        return 1.0
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(rounds, len(values)))
    observed = abs(values.mean())
    return float((np.abs((signs * values).mean(axis=1)) >= observed - 1e-12).mean())


def paired_test(per_query: dict[str, float], baseline: dict[str, float] | float) -> str:
    """Paired t-test per query against a baseline run, or a one-sample test against a figure."""
    from statistics import mean, stdev

    ids = sorted(per_query)
    if isinstance(baseline, dict):
        diffs = [per_query[q] - baseline.get(q, 0.0) for q in ids]
    else:
        diffs = [per_query[q] - baseline for q in ids]
    d, s = mean(diffs), stdev(diffs)
    t = d / (s / math.sqrt(len(diffs))) if s > 0 else (0.0 if d == 0 else float("inf"))
    changed = sum(1 for x in diffs if x != 0)
    return (f"mean diff {d:+.4f}, t = {t:.2f}, randomisation p = {randomisation_p(diffs):.3f} "
            f"(n = {len(diffs)}, {changed} differ)")


# -- calibration ------------------------------------------------------------------------


def calibrate(results: dict[str, Any]) -> str:
    """Answered/refused rates over thresholds on the split given, every group pooled."""
    rows = ["| threshold | in-domain answered (min over groups) | off-domain refused (min) |",
            "| ---: | ---: | ---: |"]
    for threshold in np.arange(0.2, 0.95, 0.05):
        answered_min = min(share([answered(o, threshold) for o in v["in"]]) for v in results.values())
        refused_min = min(share([not answered(o, threshold) for o in v["off"]]) for v in results.values())
        rows.append(f"| {threshold:.2f} | {answered_min:.1%} | {refused_min:.1%} |")
    return "\n".join(rows)


def evidence_dump(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, value in results.items():
        for kind in ("in", "off"):
            for o in value[kind]:
                e = o.evidence
                rows.append({"key": key, "kind": kind, "qid": o.qid, "split": o.split,
                             "top3": in_top(o), "similarity": e.similarity, "z": e.similarity_z,
                             "coverage": e.coverage, "agreement": e.agreement,
                             "cross_lingual": e.cross_lingual,
                             "missing": list(e.missing_words)})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=embedder_names(), default=DEFAULT_EMBEDDER)
    parser.add_argument("--split", choices=["train", "test", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "all"], default="test",
                        help="question split to report (train is for choosing constants)")
    parser.add_argument("--beir", default="", help="comma-separated BEIR datasets, e.g. scifact,nfcorpus")
    parser.add_argument("--beir-split", default="test")
    parser.add_argument("--beir-max-docs", type=int, default=0,
                        help="judged documents plus others up to this many (0: the whole corpus)")
    parser.add_argument("--calibrate", action="store_true", help="threshold sweep on the split")
    parser.add_argument("--failures", action="store_true",
                        help="print the in-domain questions that miss the top 3")
    parser.add_argument("--dump", type=Path, help="write every question's gate evidence as JSON")
    parser.add_argument("--skip-regulatory", action="store_true")
    parser.add_argument("--peer", action="store_true",
                        help="also run the landed fusion (plain RRF, no definitions twin) in the "
                             "same run; BEIR then gets a per-query paired test against it")
    parser.add_argument("--peer-embedder", choices=embedder_names(), default="all-MiniLM-L6-v2",
                        help="the landed configuration's embedder for the BEIR peer run")
    parser.add_argument("--near-miss", action="store_true",
                        help="ask the near-miss sets (other EU laws than the corpus's) and "
                             "report how many the gate refuses")
    parser.add_argument("--refusals", action="store_true",
                        help="list the BEIR queries the gate refuses, with its numbers")
    parser.add_argument("--beir-over-regulatory", action="store_true",
                        help="also ask the BEIR queries of --beir-split of the English regulatory "
                             "store (off-domain short queries) and report the refusal rate")
    parser.add_argument("--beir-dump", type=Path,
                        help="folder for per-query nDCG@10 and gate decisions as JSON")
    args = parser.parse_args(argv)
    embedder = harness_embedder(args.embedder)
    split = None if args.split == "all" else args.split
    if not args.skip_regulatory:
        results = regulatory(embedder, split, args.peer)
        print(f"## Regulatory corpus, {embedder.name}, {args.split} split, gate threshold "
              f"{ANSWERABILITY_THRESHOLD}\n")
        print(regulatory_table(results))
        if args.calibrate:
            print("\n" + calibrate(results))
        if args.failures:
            print("\n" + failures(results))
        if args.dump:
            args.dump.write_text(json.dumps(evidence_dump(results), indent=1))
    if args.near_miss:
        print("\n" + near_miss(embedder))
    peer_embedder = make_embedder(args.peer_embedder) if args.peer else None
    for name in [n for n in args.beir.split(",") if n]:
        out = beir_eval(embedder, name, args.beir_split, args.beir_max_docs)
        print(f"\n{name} {args.beir_split} ({out['documents']} documents): nDCG@10 {out['ndcg@10']:.4f} "
              f"(landed figure {LANDED_NDCG.get(name, float('nan'))}, one-sample: "
              f"{paired_test(out['per_query'], LANDED_NDCG.get(name, 0.0))}), "
              f"gate refuses {out['refused']:.1%} of {out['queries']} queries {reason_counts(out)}")
        if peer_embedder is not None:
            with landed_fusion():
                landed = beir_eval(peer_embedder, name, args.beir_split, args.beir_max_docs)
            print(f"{name}: landed configuration ({peer_embedder.name}, landed fusion) nDCG@10 "
                  f"{landed['ndcg@10']:.4f}, gate refuses {landed['refused']:.1%}; default vs landed, "
                  f"paired per query: {paired_test(out['per_query'], landed['per_query'])}")
        if args.refusals:
            print(refusals(out))
        if args.beir_over_regulatory:
            off = beir_over_regulatory(embedder, name, args.beir_split)
            print(f"{name} {args.beir_split} queries over the regulatory corpus (off-domain): "
                  f"gate refuses {off['refused']:.1%} of {off['queries']}")
        if args.beir_dump:
            args.beir_dump.mkdir(parents=True, exist_ok=True)
            runs = [("default", out)] + ([("landed", landed)] if peer_embedder is not None else [])
            for label, run in runs:
                rows = {q: {"ndcg@10": run["per_query"][q], **run["decisions"][q].to_dict()}
                        for q in run["per_query"]}
                target = args.beir_dump / f"{name}-{args.beir_split}-{label}-{run['embedder']}.json"
                target.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
