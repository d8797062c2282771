"""The regulatory questions over the laws as Markdown files, ingested the way a user ingests
a folder: ``enginelib ingest ../shared/datasets/regulatory --include '*.md'`` (English) and
the French text's folder ``benchmarks/data/regulatory_fr`` (French, English over French).

``regulatory_eval`` asks over one document per article or recital (``corpus.jsonl``, and the
French text cut at its units). A user who points the engine at the folder of the laws'
Markdown text gets one document per file (GDPR and AI Act, articles and recitals), cut by the
chunker at their ``####`` headings. Here a hit
counts as the unit its chunk's heading path ends in ("Article 17 — ...", "Recital (65)",
"ANNEX III — ..."), the first three distinct units are the top 3, and the gate decides as it
does for a user.

    python -m benchmarks.regulatory_markdown                 # test split, both configs
    python -m benchmarks.regulatory_markdown --split all --failures
    python -m benchmarks.regulatory_markdown --articles-only   # a recital that answers not counted
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import enginelib
from enginelib.search import gate

from . import regulatory_eval as R
from .vector_cache import DEFAULT_CACHE, CachingEmbedder, VectorCache

FOLDERS = {"en": R.ENGLISH_CORPUS.parent, "fr": R.FRENCH_TEXT}
FILES = {  # file -> (corpus, unit id prefix, heading pattern)
    "gdpr.md": ("en", "gdpr", r"Article (\d+)\b"),
    "gdpr_recitals.md": ("en", "gdpr", r"Recital \((\d+)\)"),
    "eu_ai_act.md": ("en", "euaiact", r"(?:Article (\d+)\b|ANNEX ([IVXLC]+)\b)"),
    "eu_ai_act_recitals.md": ("en", "euaiact", r"Recital \((\d+)\)"),
    "rgpd.md": ("fr", "gdpr", r"Article (\d+)\b"),
    "rgpd_considerants.md": ("fr", "gdpr", r"Considérant \((\d+)\)"),
}
RECITAL_FILES = {"gdpr_recitals.md", "eu_ai_act_recitals.md", "rgpd_considerants.md"}
TOP_CHUNKS = 40  # deep enough for three distinct units when an article has many chunks


def open_markdown_store(embedder: Any, corpus: str) -> enginelib.Store:
    cached = CachingEmbedder(embedder, VectorCache.for_embedder(DEFAULT_CACHE, embedder))
    files = [FOLDERS[corpus] / name for name, (where, *_) in FILES.items() if where == corpus]
    return R.cached_store(R.CACHE / embedder.name / f"{corpus}-markdown", cached,
                          lambda store: store.ingest_path(*files, truth_level="L1",
                                                          language=corpus))


def unit_of(hit: Any) -> str | None:
    """The article, annex or recital a hit's chunk belongs to, by its heading path."""
    name = Path(hit.citation.source_path or hit.document_id).name
    if name not in FILES:
        return None
    _, prefix, pattern = FILES[name]
    for heading in reversed((hit.heading_path or "").split(" > ")):
        match = re.match(pattern, heading.strip())
        if match:
            number, annex = match.group(1), match.group(2) if match.lastindex == 2 else None
            if name in RECITAL_FILES:
                return f"{prefix}-rct-{number}"
            return f"{prefix}-anx-{annex}" if annex else f"{prefix}-art-{number}"
    return None


def expected(question: dict[str, Any], articles_only: bool) -> tuple[str, ...]:
    """The units that count; with ``articles_only``, the articles and annexes among them
    (the issue's "expected article"), where the question names one."""
    units = tuple(question.get("expected", ()))
    articles = tuple(unit for unit in units if "-rct-" not in unit)
    return articles if articles_only and articles else units


def run(store: enginelib.Store, embedder: Any, questions: list[dict[str, Any]],
        options: dict[str, Any], articles_only: bool = False) -> list[R.Outcome]:
    texts = [q["question"] for q in questions]
    responses = store.search_batch(
        texts, query_vectors=R.query_vectors(embedder, texts), limit=TOP_CHUNKS,
        answerability_threshold=R.GATHER_ONLY, log=False, cache=False, **options)
    outcomes = []
    for q, response in zip(questions, responses, strict=True):
        units: list[str] = []
        for hit in response.hits:
            unit = unit_of(hit)
            if unit is not None and unit not in units:
                units.append(unit)
        evidence = response.gate.evidence if response.gate is not None else gate.GateEvidence()
        outcomes.append(R.Outcome(q["id"], q["question"], q.get("split", "test"),
                                  expected(q, articles_only), tuple(units), evidence))
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "test", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "all"], default="test")
    parser.add_argument("--failures", action="store_true")
    parser.add_argument("--articles-only", action="store_true",
                        help="count the article alone where a question names one, not a recital")
    args = parser.parse_args(argv)
    split = None if args.split == "all" else args.split
    embedder = R.harness_embedder(R.DEFAULT_EMBEDDER)
    stores = {corpus: open_markdown_store(embedder, corpus) for corpus in FOLDERS}
    results: dict[str, Any] = {}
    for config, options in R.CONFIGS.items():
        for group, in_set, off_set, corpus in R.GROUPS[:3]:
            inside = [q for q in R.load_questions(in_set) if split in (None, q["split"])]
            outside = [q for q in R.load_questions(off_set) if split in (None, q["split"])]
            if inside or outside:
                results[f"{config}/{group}"] = {
                    "in": run(stores[corpus], embedder, inside, options, args.articles_only),
                    "off": run(stores[corpus], embedder, outside, options)}
    for store in stores.values():
        store.close()
    print(f"## Questions over the laws' Markdown files, {embedder.name}, {args.split} split\n")
    print(R.regulatory_table(results))
    if args.failures:
        print("\n" + R.failures(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
