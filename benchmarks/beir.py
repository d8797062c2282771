"""Load a BEIR-layout dataset folder: corpus.jsonl(.gz), queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from enginelib import LoadedDocument
from enginelib.evaluation import Qrels, read_qrels, read_queries

# $ENGINELIB_DATASETS, else the shared folder beside the checkout (../shared/datasets).
SHARED_DATASETS = Path(
    os.environ.get("ENGINELIB_DATASETS")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)


@dataclass(frozen=True)
class BeirDataset:
    name: str
    path: Path
    documents: tuple[LoadedDocument, ...]
    queries: dict[str, str]  # only the queries judged in ``qrels``
    qrels: Qrels
    split: str


def resolve(dataset: str) -> Path:
    """A dataset name under the shared folder (scifact, nfcorpus) or a folder path."""
    path = Path(dataset)
    if path.is_dir():
        return path
    shared = SHARED_DATASETS / dataset
    if shared.is_dir():
        return shared
    raise FileNotFoundError(f"no BEIR dataset {dataset!r}: give a name under {SHARED_DATASETS} or a folder")


def iter_corpus(folder: Path) -> Iterator[LoadedDocument]:
    plain, packed = folder / "corpus.jsonl", folder / "corpus.jsonl.gz"
    path = plain if plain.exists() else packed
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            text = (row.get("text") or "").strip()
            title = (row.get("title") or "").strip() or None
            if not text:
                text = title or ""
            if text:
                yield LoadedDocument(id=str(row["_id"]), text=text, title=title, language="en")


def load(dataset: str, split: str = "test") -> BeirDataset:
    folder = resolve(dataset)
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
    queries = {qid: text for qid, text in read_queries(folder / "queries.jsonl").items() if qid in qrels}
    missing = set(qrels) - set(queries)
    if missing:
        raise ValueError(f"{len(missing)} judged queries have no text in queries.jsonl, e.g. {sorted(missing)[:3]}")
    return BeirDataset(folder.name, folder, tuple(iter_corpus(folder)), queries, qrels, split)


def subsample(data: BeirDataset, max_docs: int) -> BeirDataset:
    """A deterministic smaller corpus for slow models on small machines.

    The documents judged relevant to some query are kept first (all of them when they fill at
    most half of ``max_docs``, else a sample), the rest is filled with other documents; both
    samples follow the sha256 of the document id, so every embedder sees the same subset.
    Judgments are restricted to the kept documents and queries left with no relevant
    document are dropped. Figures on a subset compare embedders with each other, not with
    full-corpus figures.
    """
    if max_docs <= 0 or max_docs >= len(data.documents):
        return data

    def order(doc_id: str) -> str:
        return hashlib.sha256(doc_id.encode("utf-8")).hexdigest()

    relevant = {d for judged in data.qrels.values() for d, grade in judged.items() if grade > 0}
    by_id = {d.id: d for d in data.documents}
    wanted = sorted((d for d in relevant if d in by_id), key=order)[: max_docs // 2]
    others = sorted((d for d in by_id if d not in set(wanted)), key=order)
    kept = set(wanted) | set(others[: max_docs - len(wanted)])
    qrels = {q: {d: g for d, g in judged.items() if d in kept} for q, judged in data.qrels.items()}
    qrels = {q: judged for q, judged in qrels.items() if any(g > 0 for g in judged.values())}
    documents = tuple(d for d in data.documents if d.id in kept)
    queries = {q: t for q, t in data.queries.items() if q in qrels}
    return BeirDataset(f"{data.name}-{len(documents)}docs", data.path, documents, queries, qrels, data.split)
