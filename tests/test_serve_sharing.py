"""`serve` searches while its worker embeds a job, and the model takes one caller at a time.

The worker used to hold the store for a whole job: a search sent meanwhile waited for the
job's last chunk (minutes for a long PDF). Now readers go on while the job's passages are
embedded; writers (a delete) wait for the job; the model is shared in turns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from enginelib.embedders import HashingEmbedder
from enginelib.embedders.path import embed_passages, embed_queries
from enginelib.embedders.sharing import MAX_TURN_TEXTS, next_turn, readers_admitted
from enginelib.errors import EmbeddingError
from enginelib.jobs import NewJob
from enginelib.web.service import Service
from tests.helpers import doc, open_test_store, paragraphs

WAIT_S = 30.0  # the longest a step may take before the test calls it hung


class HeldEmbedder(HashingEmbedder):
    """The hashing embedder, whose passage embedding stops, once armed, until released:
    a job caught in the middle of its embedding, for as long as the test needs."""

    def __init__(self) -> None:
        super().__init__(64)
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.release.wait(WAIT_S), "the test never released the embedding"
        return super().embed(texts, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed(texts)


def _in_thread(action: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = action()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Service, HeldEmbedder, Path]]:
    path = tmp_path / "store"
    with open_test_store(path) as store:
        store.ingest_documents([doc("pads.md", "Brake pads squeal when worn.\n\n" + paragraphs(4))])
    embedder = HeldEmbedder()
    from enginelib import open as open_store
    from tests.helpers import SMALL_CHUNKS

    service = Service(open_store(path, embedder=embedder, chunking=SMALL_CHUNKS), poll_s=0.05)
    source = tmp_path / "rotors.md"
    source.write_text("Rotors warp under heat.\n\n" + paragraphs(6, "rotors"), encoding="utf-8")
    try:
        yield service, embedder, source
    finally:
        embedder.release.set()
        service.stop()


def test_a_search_goes_on_while_the_worker_embeds_a_job(
    held: tuple[Service, HeldEmbedder, Path],
) -> None:
    service, embedder, source = held
    # Its query vector is now in the store's query cache: the search below needs no model.
    before = service.search({"query": "brake pads squeal"})
    assert [h["document_id"] for h in before["hits"]][:1] == ["pads.md"]
    embedder.armed = True
    with service.lock:
        service.queue.enqueue([NewJob(str(source), "rotors.md", {})])
    service.start()
    service.worker.wake.set()
    assert embedder.entered.wait(WAIT_S), "the worker never started embedding the job"

    hybrid, hybrid_out = _in_thread(lambda: service.search({"query": "brake pads squeal"}))
    text, text_out = _in_thread(
        lambda: service.search({"query": "pads", "strategy": "fulltext"}))
    jobs, jobs_out = _in_thread(lambda: service.jobs())
    for thread in (hybrid, text, jobs):
        thread.join(WAIT_S)
    # All three answered while the job is still held in its embedding.
    assert not embedder.release.is_set()
    assert "error" not in hybrid_out and "error" not in text_out and "error" not in jobs_out
    assert [h["document_id"] for h in hybrid_out["value"]["hits"]][:1] == ["pads.md"]
    assert {h["document_id"] for h in text_out["value"]["hits"]} == {"pads.md"}
    assert jobs_out["value"]["counts"]["RUNNING"] == 1

    embedder.release.set()
    deadline = time.monotonic() + WAIT_S
    while service.jobs()["counts"]["DONE"] != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    found = service.search({"query": "rotors warp", "strategy": "fulltext"})
    assert "rotors.md" in {h["document_id"] for h in found["hits"]}


def test_a_delete_waits_for_the_job_it_would_change(
    held: tuple[Service, HeldEmbedder, Path],
) -> None:
    service, embedder, source = held
    embedder.armed = True
    with service.lock:
        service.queue.enqueue([NewJob(str(source), "rotors.md", {})])
    service.start()
    service.worker.wake.set()
    assert embedder.entered.wait(WAIT_S)
    delete, delete_out = _in_thread(lambda: service.delete("pads.md"))
    delete.join(0.5)
    # Held by the job: the documents the job read before embedding stay as it read them.
    assert delete.is_alive()
    embedder.release.set()
    delete.join(WAIT_S)
    assert not delete.is_alive() and "error" not in delete_out
    listed = {d["document_id"] for d in service.documents({})}
    assert listed == {"rotors.md"}


class CountingEmbedder(HashingEmbedder):
    """Records how many calls are inside it at once, and how many texts each call got."""

    def __init__(self) -> None:
        super().__init__(64)
        self.inside = 0
        self.most_inside = 0
        self.sizes: list[int] = []
        self._count = threading.Lock()

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        with self._count:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
            self.sizes.append(len(texts))
        time.sleep(0.002)  # long enough for another thread to try its way in
        try:
            return super().embed(texts, progress)
        finally:
            with self._count:
                self.inside -= 1


def _embed_while(embedder: HashingEmbedder, passages: list[str], *, shared: bool) -> None:
    """Passages and 20 queries from 21 threads at once; ``shared``: as serve's worker
    embeds them, letting readers in."""
    def passages_thread() -> None:
        with readers_admitted(nullcontext) if shared else nullcontext():
            embed_passages(embedder, passages)

    threads = [threading.Thread(target=passages_thread),
               *(threading.Thread(target=embed_queries, args=(embedder, [f"query {i}"]))
                 for i in range(20))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)


def test_the_model_takes_one_caller_at_a_time_in_turns_while_readers_are_let_in() -> None:
    passages = [f"passage {i} on brake rotors" for i in range(MAX_TURN_TEXTS * 5 + 3)]
    embedder = CountingEmbedder()
    _embed_while(embedder, passages, shared=True)
    assert embedder.most_inside == 1
    # 323 passages in turns of at most 64, beside the 20 queries
    assert len(embedder.sizes) >= 26 and max(embedder.sizes) <= MAX_TURN_TEXTS
    # The same vectors, in turns or not.
    whole = embed_passages(HashingEmbedder(64), passages)
    with readers_admitted(nullcontext):
        np.testing.assert_array_equal(embed_passages(embedder, passages), whole)
    alone = CountingEmbedder()
    _embed_while(alone, passages, shared=False)
    # Nobody let in: one call with every passage (the embedder's own batching), still
    # never two callers inside the model at once.
    assert alone.most_inside == 1 and len(passages) in alone.sizes
    assert sorted(alone.sizes) == sorted([1] * 20 + [len(passages)])


def test_turns_follow_the_models_pace() -> None:
    assert next_turn(1, 2.0) == 1  # e5-small on two cores: a chunk a turn
    assert next_turn(1, 0.01) == 50
    assert next_turn(8, 0.001) == MAX_TURN_TEXTS
    assert next_turn(64, 0.0) == MAX_TURN_TEXTS


class ShortEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        return super().embed(texts[:-1], progress)


def test_an_embedder_that_returns_too_few_vectors_is_a_typed_error() -> None:
    with pytest.raises(EmbeddingError, match="2 vectors for 3 texts"):
        embed_passages(ShortEmbedder(64), ["a", "b", "c"])
