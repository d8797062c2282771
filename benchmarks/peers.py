"""Peer systems run on the same chunks and the same vectors as our store.

Each peer is a small class with ``build(corpus)`` and ``search(query, vector, k)`` returning
chunk rows (indexes into the corpus arrays), best first, with scores. Peers import their
package lazily: they are benchmark-only dependencies (the ``.[bench]`` extra).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class Corpus:
    """The chunks our store produced, in label order, with their stored vectors."""

    labels: np.ndarray
    document_ids: list[str]
    texts: list[str]  # title + heading + content: what our embedder saw
    vectors: np.ndarray  # (n, dim) float32, L2-normalized


class Peer(Protocol):
    name: str
    kind: str  # vector | fulltext | hybrid
    config: str

    def build(self, corpus: Corpus) -> None: ...

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]: ...

    def close(self) -> None: ...


class ExactNumpy:
    """Brute-force cosine (dot product of normalized vectors): the ANN recall reference."""

    name, kind, config = "exact-numpy", "vector", "float32 matrix @ query, argpartition"

    def build(self, corpus: Corpus) -> None:
        self.matrix = np.ascontiguousarray(corpus.vectors, dtype=np.float32)

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        scores = self.matrix @ vector
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(i), float(scores[i])) for i in top]

    def close(self) -> None:
        pass


class Bm25s:
    """bm25s (Lucene BM25, k1=1.5, b=0.75), English stop words; stemming when PyStemmer exists."""

    name, kind = "bm25s", "fulltext"

    def __init__(self) -> None:
        try:
            import Stemmer  # type: ignore[import-not-found]

            self.stemmer: Any = Stemmer.Stemmer("english")
        except ImportError:
            self.stemmer = None
        self.config = "method=lucene, stopwords=en, " + (
            "stemmer=snowball-en" if self.stemmer else "no stemmer (PyStemmer not installed)"
        )

    def build(self, corpus: Corpus) -> None:
        import bm25s

        self.bm25s = bm25s
        tokens = bm25s.tokenize(corpus.texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.size = len(corpus.texts)

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        tokens = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = self.retriever.retrieve(
            tokens, k=min(k, self.size), show_progress=False, n_threads=1
        )
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def close(self) -> None:
        pass


class _Lance:
    """One LanceDB table (vector column + native FTS index) shared by the three modes."""

    tables: dict[int, Any] = {}

    @classmethod
    def table(cls, corpus: Corpus, folder: Path) -> Any:
        key = id(corpus)
        if key not in cls.tables:
            import lancedb
            import pyarrow as pa

            db = lancedb.connect(str(folder))
            data = pa.table({
                "row": pa.array(np.arange(len(corpus.texts), dtype=np.int64)),
                "text": pa.array(corpus.texts),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(corpus.vectors.reshape(-1), type=pa.float32()), corpus.vectors.shape[1]
                ),
            })
            table = db.create_table("chunks", data=data, mode="overwrite")
            table.create_fts_index("text", replace=True)
            cls.tables = {key: table}
        return cls.tables[key]


class LanceVector:
    name, kind = "lancedb-vector", "vector"
    config = "flat (no ANN index: exact at this size), metric=cosine"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def build(self, corpus: Corpus) -> None:
        self.table = _Lance.table(corpus, self.folder)

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        rows = (self.table.search(vector, vector_column_name="vector").metric("cosine")
                .select(["row"]).limit(k).to_arrow())
        return list(zip(rows["row"].to_pylist(), (1 - rows["_distance"].to_numpy()).tolist(), strict=True))

    def close(self) -> None:
        pass


class LanceFts:
    name, kind = "lancedb-fts", "fulltext"
    config = "native FTS index, default tokenizer"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def build(self, corpus: Corpus) -> None:
        self.table = _Lance.table(corpus, self.folder)

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        rows = self.table.search(query, query_type="fts").select(["row"]).limit(k).to_arrow()
        return list(zip(rows["row"].to_pylist(), rows["_score"].to_pylist(), strict=True))

    def close(self) -> None:
        pass


class LanceHybrid:
    name, kind = "lancedb-hybrid", "hybrid"
    config = "vector (flat, cosine) + native FTS, RRFReranker(k=60)"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def build(self, corpus: Corpus) -> None:
        from lancedb.rerankers import RRFReranker

        self.table = _Lance.table(corpus, self.folder)
        self.reranker = RRFReranker(K=60)

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        rows = (
            self.table.search(query_type="hybrid", vector_column_name="vector")
            .vector(vector).text(query).metric("cosine").rerank(reranker=self.reranker)
            .select(["row"]).limit(k).to_arrow()
        )
        return list(zip(rows["row"].to_pylist(), rows["_relevance_score"].to_pylist(), strict=True))

    def close(self) -> None:
        pass


class ChromaVector:
    name, kind = "chroma-vector", "vector"
    config = "in-process client, hnsw space=cosine (Chroma defaults M=16, ef_search=100)"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def build(self, corpus: Corpus) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(
            path=str(self.folder), settings=Settings(anonymized_telemetry=False)
        )
        self.collection = self.client.create_collection(
            "chunks", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        ids = [str(i) for i in range(len(corpus.texts))]
        step = 4000
        for start in range(0, len(ids), step):
            self.collection.add(
                ids=ids[start : start + step],
                embeddings=corpus.vectors[start : start + step],
            )

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        result = self.collection.query(query_embeddings=[vector], n_results=k, include=["distances"])
        return [(int(i), 1.0 - float(d)) for i, d in zip(result["ids"][0], result["distances"][0], strict=True)]

    def close(self) -> None:
        pass


PEER_NAMES = ("exact-numpy", "bm25s", "lancedb-vector", "lancedb-fts", "lancedb-hybrid", "chroma-vector")


def make_peers(names: tuple[str, ...], work: Path) -> list[Peer]:
    lance = work / "lancedb"
    registry: dict[str, Any] = {
        "exact-numpy": ExactNumpy,
        "bm25s": Bm25s,
        "lancedb-vector": lambda: LanceVector(lance),
        "lancedb-fts": lambda: LanceFts(lance),
        "lancedb-hybrid": lambda: LanceHybrid(lance),
        "chroma-vector": lambda: ChromaVector(work / "chroma"),
    }
    unknown = set(names) - set(registry)
    if unknown:
        raise ValueError(f"unknown peer(s) {sorted(unknown)}; expected some of {', '.join(registry)}")
    for sub in ("lancedb", "chroma"):
        shutil.rmtree(work / sub, ignore_errors=True)
    return [registry[name]() for name in names]


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="enginelib-peers-"))
