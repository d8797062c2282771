"""`serve`'s upload against a hostile client: what an upload may carry is bounded, and what the
API answers about uploads and jobs names no path of the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from enginelib.cli.main import main
from enginelib.validation import MAX_TAGS
from enginelib.web.api import MAX_UPLOAD_FIELD_BYTES
from tests.test_web import make_client, wait_for

FILE = {"file": ("pads.md", b"# Pads\n\nReplace the brake pads under 3 mm.")}


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with make_client(tmp_path / "store", max_upload_bytes=4 * 1024 * 1024) as test_client:
        yield test_client


def test_upload_tags_are_bounded_in_count_and_size_naming_the_limit(client: TestClient) -> None:
    """20,000 tags were taken (and stored in the job's options and on the document)."""
    many = ",".join(f"t{i}" for i in range(MAX_TAGS + 1))
    response = client.post("/api/upload", files=FILE, data={"tags": many})
    assert response.status_code == 400
    assert response.json()["error"].startswith(f"{MAX_TAGS + 1} tags given; a document takes "
                                               f"at most {MAX_TAGS}")
    response = client.post("/api/upload", files=FILE, data={"tags": "x" * 1025})
    assert response.status_code == 400 and "the maximum is 1,024" in response.json()["error"]
    huge = "a," * MAX_UPLOAD_FIELD_BYTES  # too big to parse at all, whatever its count
    response = client.post("/api/upload", files=FILE, data={"tags": huge})
    assert response.status_code == 413
    assert f"over {MAX_UPLOAD_FIELD_BYTES:,} bytes: tags take at most {MAX_TAGS}" in (
        response.json()["error"])
    assert client.get("/api/jobs").json()["total"] == 0  # nothing was queued

    exactly = ",".join(f"t{i}" for i in range(MAX_TAGS))
    assert client.post("/api/upload", files=FILE, data={"tags": exactly}).status_code == 202
    wait_for(client, lambda d: d["counts"]["DONE"] == 1)
    [document] = client.get("/api/documents").json()
    assert len(document["tags"]) == MAX_TAGS


def test_the_tag_bound_holds_for_every_way_in(tmp_path: Path) -> None:
    source = tmp_path / "pads.md"
    source.write_text("# Pads\n\nReplace the brake pads under 3 mm.", encoding="utf-8")
    tags = [arg for i in range(MAX_TAGS + 1) for arg in ("--tag", f"t{i}")]
    for queue in ([], ["--queue"]):
        result = CliRunner().invoke(main, ["ingest", "--store", str(tmp_path / "s"), *queue,
                                           *tags, str(source)],
                                    env={"ENGINELIB_EMBEDDER": "hashing"})
        assert result.exit_code == 2
        assert f"{MAX_TAGS + 1} tags given; a document takes at most {MAX_TAGS}" in result.output
