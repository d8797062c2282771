"""SIGKILL the writer at every named step of the commit protocol; the store must survive."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from enginelib.faults import COMMIT_STEPS
from tests.helpers import doc, open_test_store, paragraphs

REPO = Path(__file__).resolve().parent.parent

_WRITER = textwrap.dedent(
    """
    import sys
    import enginelib
    from tests.helpers import SMALL_CHUNKS, doc, paragraphs
    store = enginelib.open(sys.argv[1], embedder=enginelib.HashingEmbedder(64), chunking=SMALL_CHUNKS)
    store.ingest_documents([doc("replaced", paragraphs(9, "newtopic")), doc("added", paragraphs(6, "fresh"))])
    store.close()
    print("finished")
    """
)


@pytest.mark.parametrize("step", COMMIT_STEPS)
def test_kill_at_each_commit_step(tmp_path: Path, step: str) -> None:
    path = tmp_path / "s"
    store = open_test_store(path)
    store.ingest_documents([doc(f"keep{i}", paragraphs(3, f"k{i}")) for i in range(5)]
                           + [doc("replaced", paragraphs(4, "oldtopic"))])
    old_replaced = store.get_document("replaced")["content"]
    store.close()

    result = subprocess.run(
        [sys.executable, "-c", _WRITER, str(path)], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "ENGINELIB_CRASH_AT": step}, timeout=120,
    )
    assert result.returncode in (-9, 0), result.stderr
    killed = result.returncode == -9

    store = open_test_store(path)
    catalog_labels = set(store._catalog.all_labels().tolist())
    assert set(store._vector_index.labels().tolist()) == catalog_labels
    assert set(store._text_index.labels().tolist()) == catalog_labels
    assert store._vector_index.generation == store._text_index.generation == store.generation
    assert store.manifest.generation == store.generation

    documents = {d["document_id"] for d in store._catalog.list_documents()}
    assert {f"keep{i}" for i in range(5)} <= documents
    committed = step not in ("before_catalog_commit",) or not killed
    replaced = store.get_document("replaced")["content"]
    if committed:
        assert "added" in documents and replaced != old_replaced
    else:
        assert "added" not in documents and replaced == old_replaced
    for document_id in documents:  # whole documents only
        chunks = store._catalog.chunks_of(document_id)
        document = store.get_document(document_id)
        assert len(chunks) == document["total_chunks"]
        assert chunks[-1]["end_offset"] == len(document["content"])
        hits = store.search(document["content"][:60], strategy="fulltext", limit=50,
                            filters={"document_id": document_id}, answerability_threshold=None)
        assert hits.ok and {h.document_id for h in hits.hits} == {document_id}
    store.close()
