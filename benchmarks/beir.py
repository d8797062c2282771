"""Load a BEIR-layout dataset folder: corpus.jsonl(.gz), queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import gzip
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
