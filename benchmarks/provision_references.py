"""Questions that name a provision ("GDPR Art. 6", "Recital 26", "considérant (26)"): is the
named provision the first hit, with and without the rule that puts candidates inside a named
provision first (``enginelib/references.py``)?

    ENGINELIB_DATASETS=... HF_HUB_OFFLINE=1 python -m benchmarks.provision_references [--seed 0]

Questions are generated, not picked: a seeded sample of the units of each law, each asked
in one of a few phrasings a user types (rotating), in English over the English text and in
French over the French text. Four stores, default embedder and configuration (gate on):

- units EN / FR: one document per article or recital, its number in the title (the
  question-set stores of ``regulatory_eval``);
- files EN / FR: the Markdown files as a user ingests a folder, the article in each
  chunk's heading path.

A hit is right when it lies in the named law's file (files) or is the named unit (units)
and, for files, its heading path names the provision.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from enginelib.references import provisions_of
from enginelib.search import stages
from enginelib.types import LoadedDocument

from . import regulatory_eval as reg

ENGLISH_FILES = reg.beir.SHARED_DATASETS / "regulatory"
# file -> (law as the English questions name it, kind of its units)
ENGLISH_LAWS = {
    "gdpr.md": ("GDPR", "article"), "gdpr_recitals.md": ("GDPR", "recital"),
    "eu_ai_act.md": ("AI Act", "article"), "eu_ai_act_recitals.md": ("AI Act", "recital"),
}
FRENCH_LAWS = {"rgpd.md": ("RGPD", "article"), "rgpd_considerants.md": ("RGPD", "recital")}
PHRASINGS = {
    ("en", "article"): ("Article {n} {law}", "{law} Art. {n}", "What does Article {n} of the {law} say?",
                        "{law} Article {n}(1)", "art {n} {law}"),
    ("en", "recital"): ("Recital {n} {law}", "{law} recital ({n})", "What does recital {n} of the {law} explain?"),
    ("fr", "article"): ("article {n} du {law}", "Art. {n} {law}", "Que prévoit l'article {n} du {law} ?",
                        "{law} article {n}, paragraphe 1"),
    ("fr", "recital"): ("considérant {n} du {law}", "considérant ({n})", "Que dit le considérant {n} ?"),
}
PER_KIND = 20  # units sampled per (law, kind)


@contextmanager
def rule(on: bool) -> Iterator[None]:
    saved = stages.PROVISION_REFERENCES
    stages.PROVISION_REFERENCES = on
    try:
        yield
    finally:
        stages.PROVISION_REFERENCES = saved


def unit_numbers(units: list[LoadedDocument], prefix: str) -> list[str]:
    return [u.id[len(prefix):] for u in units if u.id.startswith(prefix) and u.id[len(prefix):].isdigit()]


def questions(language: str, units: list[LoadedDocument], laws: dict[str, tuple[str, str]],
              rng: random.Random) -> list[dict[str, Any]]:
    """Seeded sample of units per (law, kind), each in the next phrasing of its kind."""
    out = []
    prefixes = {("GDPR", "article"): "gdpr-art-", ("GDPR", "recital"): "gdpr-rct-",
                ("AI Act", "article"): "euaiact-art-", ("AI Act", "recital"): "euaiact-rct-",
                ("RGPD", "article"): "gdpr-art-", ("RGPD", "recital"): "gdpr-rct-"}
    for file, (law, kind) in laws.items():
        prefix = prefixes[(law, kind)]
        numbers = unit_numbers(units, prefix)
        phrasings = PHRASINGS[(language, kind)]
        for i, n in enumerate(sorted(rng.sample(numbers, min(PER_KIND, len(numbers))), key=int)):
            out.append({"question": phrasings[i % len(phrasings)].format(n=n, law=law),
                        "unit": prefix + n, "file": file, "provision": (kind, n)})
    return out


def files_store(embedder: Any, name: str, folder: Path, files: list[str]) -> Any:
    def documents() -> list[LoadedDocument]:
        return [LoadedDocument(id=f, text=(folder / f).read_text(encoding="utf-8"), title=None,
                               language=name[-2:]) for f in files]
    cache = reg.VectorCache.for_embedder(reg.DEFAULT_CACHE, embedder)
    cached = reg.CachingEmbedder(embedder, cache)
    return reg._build(reg.CACHE / embedder.name / name, cached, documents)


def score(store: Any, embedder: Any, qs: list[dict[str, Any]], files: bool) -> dict[str, float]:
    texts = [q["question"] for q in qs]
    vectors = reg.query_vectors(embedder, texts)
    responses = store.search_batch(texts, query_vectors=vectors, limit=3, log=False, cache=False)
    top1 = top3 = refused = 0
    for q, response in zip(qs, responses, strict=True):
        if not response.hits:
            refused += 1
            continue
        right = [(h.document_id == q["file"] and q["provision"] in provisions_of(h.heading_path, ""))
                 if files else h.document_id == q["unit"] for h in response.hits]
        top1 += right[0]
        top3 += any(right[:3])
    n = len(qs)
    return {"questions": n, "top-1": top1 / n, "top-3": top3 / n, "refused": refused / n}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    embedder = reg.harness_embedder(reg.DEFAULT_EMBEDDER)
    en_units, fr_units = reg.english_units(), reg.french_units()
    rng = random.Random(args.seed)
    en_qs = questions("en", en_units, ENGLISH_LAWS, rng)
    fr_qs = questions("fr", fr_units, FRENCH_LAWS, rng)
    stores = {
        "units EN": (reg.open_store(embedder, "en"), en_qs, False),
        "units FR": (reg.open_store(embedder, "fr"), fr_qs, False),
        "files EN": (files_store(embedder, "files-en", ENGLISH_FILES, list(ENGLISH_LAWS)), en_qs, True),
        "files FR": (files_store(embedder, "files-fr", reg.FRENCH_TEXT, list(FRENCH_LAWS)), fr_qs, True),
    }
    print(f"seed {args.seed}; e.g. {en_qs[0]['question']!r}, {fr_qs[-1]['question']!r}")
    print("| store | questions | top-1 without | top-1 with | top-3 without | top-3 with | refused without | refused with |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (store, qs, files) in stores.items():
        with rule(False):
            off = score(store, embedder, qs, files)
        with rule(True):
            on = score(store, embedder, qs, files)
        print(f"| {name} | {on['questions']} | {off['top-1']:.1%} | {on['top-1']:.1%} | {off['top-3']:.1%} "
              f"| {on['top-3']:.1%} | {off['refused']:.1%} | {on['refused']:.1%} |")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
