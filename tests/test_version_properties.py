"""A stateful sweep of the versioning promises (hypothesis, derandomized): random sequences of
ingests (new, same, changed text, changed metadata by option or record), updates, deletes,
re-ingests of deleted ids, snapshots, restores, diffs and folder syncs that remove or rename
files, checked after every step against a small model kept here:

- a new current version is above every version the id ever had (never reused);
- every version ever current reads back (``version_text``) with exactly its text;
- ``history`` lists each version once, in order, each with a change summary;
- the live documents (text, version, truth level, tags, custom fields) equal the model's,
  and a search's citation names the live version;
- a snapshot searched later answers as the store did when it was taken;
- a restore makes live equal to the snapshot, archiving what it replaces or removes; the
  same restore again changes nothing;
- a diff names exactly the documents added, removed and changed between two states.

A kill at the crash points of each operation (before or after its catalog commit) leaves the
state before or the state after, never one in between: ``test_a_killed_operation...`` below.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import enginelib
from enginelib import HashingEmbedder, LoadedDocument
from enginelib.errors import PruneRefusedError

REPO = Path(__file__).resolve().parent.parent
RECORD_IDS = ("alpha", "beta", "gamma")
FILE_IDS = ("f0.txt", "f1.txt", "f2.txt")
LEVELS = ("L1", "L2", "L3")
TAG_SETS: tuple[tuple[str, ...], ...] = ((), ("brakes",), ("brakes", "safety"), ("tyres",))
CUSTOMS: tuple[dict[str, Any], ...] = ({}, {"region": "eu"}, {"region": "us"})
WORDS = ("pads", "rotor", "caliper", "fluid", "torque", "piston", "wear", "noise")


def text_of(doc_id: str, variant: int) -> str:
    """A text per (id, variant): a unique word per id to search by, a few variants each (a
    change may go back to an earlier text)."""
    token = "zq" + doc_id.split(".")[0]
    body = " ".join(WORDS[(variant * 3 + i) % len(WORDS)] for i in range(12 + variant))
    return f"Document {token} revision {variant}: the {body} need checking.\n"


def semver(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(x) for x in version.split("."))
    return (major, minor, patch)


@dataclass(frozen=True)
class Doc:
    text: str
    ingest: tuple[Any, ...]  # what its last ingest brought (the ingest fingerprint's input)
    level: str
    tags: tuple[str, ...]
    custom: str  # sorted JSON
    version: str

    def key(self) -> tuple[Any, ...]:
        """What a diff compares and what a restore keeps a document for."""
        return (self.text, self.ingest, self.level, self.tags, self.custom)


def custom_json(custom: dict[str, Any]) -> str:
    return json.dumps(custom, sort_keys=True)


class VersionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="versions-"))
        self.docs = self.tmp / "docs"
        self.docs.mkdir()
        self.store = enginelib.open(self.tmp / "s", embedder=HashingEmbedder(16))
        self.live: dict[str, Doc] = {}
        self.seen: dict[tuple[str, str], str] = {}  # (id, version) -> its text
        self.top: dict[str, str] = {}  # id -> highest version it ever had
        self.snapshots: dict[str, dict[str, Doc]] = {}
        self.files: dict[str, str] = {}

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the model's steps ---------------------------------------------------------------

    def _show(self, doc_id: str, doc: Doc) -> None:
        """``doc`` becomes current: its version is above all the id had, or it is kept."""
        previous = self.top.get(doc_id)
        assert previous is None or semver(doc.version) > semver(previous), (
            f"{doc_id}: version {doc.version} after {previous}")
        self.top[doc_id] = doc.version
        self.seen[(doc_id, doc.version)] = doc.text
        self.live[doc_id] = doc

    def _next(self, doc_id: str, *, content: bool) -> str:
        top = self.top.get(doc_id)
        if top is None:
            return "1.0.0"
        major, minor, patch = semver(top)
        return f"{major}.{minor + 1}.0" if content else f"{major}.{minor}.{patch + 1}"

    def _expect_ingest(self, doc_id: str, text: str, ingest: tuple[Any, ...], level: str,
                       tags: tuple[str, ...], custom: str) -> None:
        old = self.live.get(doc_id)
        if old is not None and old.ingest == ingest:
            return  # unchanged input: a no-op (an update since is kept)
        content = old is None or old.text != text
        version = self._next(doc_id, content=content)
        self._show(doc_id, Doc(text, ingest, level, tags, custom, version))

    # -- rules ---------------------------------------------------------------------------

    @rule(doc_id=st.sampled_from(RECORD_IDS), variant=st.integers(0, 2),
          level=st.sampled_from((None, *LEVELS)), tags=st.sampled_from(TAG_SETS),
          custom=st.sampled_from(CUSTOMS), by_record=st.booleans())
    def ingest(self, doc_id: str, variant: int, level: str | None, tags: tuple[str, ...],
               custom: dict[str, Any], by_record: bool) -> None:
        text = text_of(doc_id, variant)
        metadata: dict[str, Any] = dict(custom)
        options: dict[str, Any] = {}
        if by_record:
            if level is not None:
                metadata["truth_level"] = level
            if tags:
                metadata["tags"] = list(tags)
        else:
            options = {"truth_level": level, "tags": list(tags)}
        self.store.ingest_documents([LoadedDocument(id=doc_id, text=text, metadata=metadata)],
                                    **options)
        level = level or "L2"
        ingest = (text, level, tags, custom_json(custom))
        self._expect_ingest(doc_id, text, ingest, level, tags, custom_json(custom))

    @rule(variants=st.lists(st.tuples(st.sampled_from(RECORD_IDS), st.integers(0, 2)),
                            min_size=2, max_size=4))
    def ingest_batch(self, variants: list[tuple[str, int]]) -> None:
        """Several documents in one call; an id given twice is two versions in a row."""
        self.store.ingest_documents([LoadedDocument(id=i, text=text_of(i, v)) for i, v in variants])
        for doc_id, variant in variants:
            text = text_of(doc_id, variant)
            self._expect_ingest(doc_id, text, (text, "L2", (), "{}"), "L2", (), "{}")

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = enginelib.open(self.tmp / "s", embedder=HashingEmbedder(16))

    @precondition(lambda self: self.live)
    @rule(data=st.data(), level=st.sampled_from((None, *LEVELS)),
          tags=st.sampled_from((None, *TAG_SETS)), custom=st.sampled_from((None, *CUSTOMS[1:])))
    def update(self, data: st.DataObject, level: str | None, tags: tuple[str, ...] | None,
               custom: dict[str, Any] | None) -> None:
        if level is None and tags is None and custom is None:
            level = "L3"
        doc_id = data.draw(st.sampled_from(sorted(self.live)))
        self.store.update_document(doc_id, truth_level=level,
                                   tags=list(tags) if tags is not None else None, metadata=custom)
        old = self.live[doc_id]
        merged = {**json.loads(old.custom), **(custom or {})}
        new = replace(old, level=level or old.level, tags=old.tags if tags is None else tags,
                      custom=custom_json(merged))
        if new.key() != old.key():
            self._show(doc_id, replace(new, version=self._next(doc_id, content=False)))

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        doc_id = data.draw(st.sampled_from(sorted(self.live)))
        self.store.delete_document(doc_id)
        del self.live[doc_id]

    @rule(name=st.sampled_from(FILE_IDS), variant=st.integers(0, 2))
    def write_file(self, name: str, variant: int) -> None:
        text = text_of(name, variant)
        (self.docs / name).write_text(text, encoding="utf-8")
        self.files[name] = text

    @precondition(lambda self: self.files)
    @rule(data=st.data(), rename_to=st.sampled_from((None, *FILE_IDS)))
    def remove_or_rename_file(self, data: st.DataObject, rename_to: str | None) -> None:
        name = data.draw(st.sampled_from(sorted(self.files)))
        text = self.files.pop(name)
        if rename_to is None or rename_to == name:
            (self.docs / name).unlink()
        else:
            os.replace(self.docs / name, self.docs / rename_to)
            self.files[rename_to] = text

    @rule()
    def sync_folder(self) -> None:
        from_folder = [d for d in self.live if d in FILE_IDS]
        if not self.files and from_folder:
            with pytest.raises(PruneRefusedError):
                self.store.ingest_path(self.docs, prune=True)
            return
        report = self.store.ingest_path(self.docs, prune=True)
        for name, text in sorted(self.files.items()):
            ingest = (text, "L2", (), "{}", str((self.docs / name).resolve()))
            self._expect_ingest(name, text, ingest, "L2", (), "{}")
        gone = sorted(d for d in from_folder if d not in self.files)
        assert sorted(report.pruned) == gone
        for doc_id in gone:
            del self.live[doc_id]

    @rule()
    def snapshot(self) -> None:
        name = f"s{len(self.snapshots)}"
        self.store.create_snapshot(name, pin=True)  # pinned: retention never removes it
        self.snapshots[name] = dict(self.live)

    @precondition(lambda self: self.snapshots)
    @rule(data=st.data(), twice=st.booleans())
    def restore(self, data: st.DataObject, twice: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.snapshots)))
        frozen = self.snapshots[name]
        report = self.store.restore_snapshot(name)
        replaced = [d for d, doc in self.live.items()
                    if d not in frozen or frozen[d].key() != doc.key()]
        assert report.archived == len(replaced), (report, replaced)
        live: dict[str, Doc] = {}
        for doc_id, doc in frozen.items():
            old = self.live.get(doc_id)
            if old is not None and old.key() == doc.key():
                live[doc_id] = old  # equal to the snapshot's: kept as it is
            else:
                live[doc_id] = replace(doc, version=self._next(doc_id, content=True))
                self._show(doc_id, live[doc_id])
        self.live = live
        if twice:
            before = self._dump()
            again = self.store.restore_snapshot(name)
            assert again.archived == 0
            assert self._dump() == before

    @precondition(lambda self: self.snapshots)
    @rule(data=st.data())
    def diff(self, data: st.DataObject) -> None:
        names = [*sorted(self.snapshots), "live"]
        a = data.draw(st.sampled_from(names))
        b = data.draw(st.sampled_from(names))
        left = self.snapshots.get(a, self.live)
        right = self.snapshots.get(b, self.live)
        found = self.store.diff(a, b)
        assert [c.document_id for c in found.added] == sorted(set(right) - set(left))
        assert [c.document_id for c in found.removed] == sorted(set(left) - set(right))
        changed = sorted(d for d in set(left) & set(right) if left[d].key() != right[d].key())
        assert [c.document_id for c in found.changed] == changed
        for change in found.changed:
            doc_id = change.document_id
            assert change.content_changed == (left[doc_id].text != right[doc_id].text)
            assert (change.version_a, change.version_b) == (
                left[doc_id].version, right[doc_id].version)

    @precondition(lambda self: self.snapshots)
    @rule(data=st.data())
    def search_snapshot(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.snapshots)))
        with enginelib.open(self.store.path, snapshot=name) as frozen:
            self._check_documents(frozen, self.snapshots[name])

    # -- invariants ----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for doc_id in (*RECORD_IDS, *FILE_IDS):
            if doc_id in self.top:
                out[doc_id] = [(v["version"], v["change_summary"], v["content_hash"])
                               for v in self.store.history(doc_id)]
        return out

    def _check_documents(self, store: enginelib.Store, expected: dict[str, Doc]) -> None:
        listed = {d["document_id"] for d in store.list_documents()}
        assert listed == set(expected)
        for doc_id, want in expected.items():
            got = store.get_document(doc_id)
            assert (got["content"], got["version"], got["truth_level"], tuple(got["tags"] or ()),
                    custom_json(got["custom"] or {})) == (
                want.text, want.version, want.level, want.tags, want.custom), doc_id
            token = want.text.split()[1]  # a renamed file keeps the word of its first name
            response = store.search(token, strategy="fulltext", limit=5,
                                    truth_levels=list(LEVELS), answerability_threshold=None)
            hits = [h for h in response.hits if h.document_id == doc_id]
            assert hits, (doc_id, response.status)
            for hit in hits:
                assert hit.citation.document_version == want.version
                assert hit.citation.index_version == got["index_version"]

    @invariant()
    def live_equals_the_model(self) -> None:
        self._check_documents(self.store, self.live)

    @invariant()
    def every_version_reads_back_and_history_lists_each_once(self) -> None:
        for (doc_id, version), text in self.seen.items():
            assert self.store.version_text(doc_id, version) == text, (doc_id, version)
        for doc_id in self.top:
            history = self.store.history(doc_id)
            versions = [h["version"] for h in history]
            assert len(versions) == len(set(versions)), (doc_id, versions)
            assert versions == sorted(versions, key=semver), (doc_id, versions)
            assert set(versions) == {v for d, v in self.seen if d == doc_id}, (doc_id, versions)
            assert all(h["change_summary"] for h in history)
            current = [h["version"] for h in history if h["current"]]
            live = self.live.get(doc_id)
            assert current == ([live.version] if live else []), (doc_id, history)


VersionMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("VERSION_SWEEP_EXAMPLES", "10")), stateful_step_count=25,
    deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    # VERSION_SWEEP_NO_SHRINK=1: report the first failure as found (shrinking takes minutes)
    phases=[Phase.generate] if os.environ.get("VERSION_SWEEP_NO_SHRINK") else list(Phase),
)
test_versioning_promises_hold_under_random_operations = pytest.mark.slow(VersionMachine.TestCase)


# -- a kill mid-operation leaves the state before or the state after ----------------------

_OPERATIONS: dict[str, str] = {
    "ingest_changed": "store.ingest_documents([doc('alpha', TEXTS['alpha2']), doc('gamma', TEXTS['gamma'])])",
    "ingest_metadata": "store.ingest_documents([doc('beta', TEXTS['beta'])], truth_level='L1', tags=['x'])",
    "ingest_deleted_again": "store.ingest_documents([doc('delta', TEXTS['delta'])])",
    "update": "store.update_document('alpha', truth_level='L3', tags=['y'], metadata={'k': 1})",
    "delete": "store.delete_document('beta')",
    "restore": "store.restore_snapshot('base')",
    "prune": "store.ingest_path(sys.argv[2], prune=True)",
}
_KILLS = {
    "ingest_changed": ("before_catalog_commit", "after_catalog_commit", "after_vector_save"),
    "ingest_metadata": ("before_catalog_commit", "after_catalog_commit"),
    "ingest_deleted_again": ("before_catalog_commit", "after_catalog_commit"),
    "update": ("after_vector_save", "before_manifest_rename"),
    "delete": ("before_catalog_commit", "after_catalog_commit"),
    "restore": ("restore_before_catalog_commit", "restore_after_catalog_commit"),
    "prune": ("before_catalog_commit", "after_catalog_commit"),
}
_TEXTS = {"alpha": text_of("alpha", 0), "alpha1": text_of("alpha", 1), "alpha2": text_of("alpha", 2),
          "beta": text_of("beta", 0), "gamma": text_of("gamma", 0), "delta": text_of("delta", 0)}
_KILLED_WRITER = textwrap.dedent("""
    import sys
    import enginelib
    from enginelib import HashingEmbedder, LoadedDocument
    TEXTS = {texts!r}
    def doc(doc_id, text):
        return LoadedDocument(id=doc_id, text=text)
    store = enginelib.open(sys.argv[1], embedder=HashingEmbedder(16))
    {operation}
    store.close()
""")


def _state(store: enginelib.Store) -> dict[str, Any]:
    """Everything the versioning promises are about: live rows, histories, archived texts."""
    ids = ("alpha", "beta", "gamma", "delta", "f0.txt", "f1.txt")
    live = {d: store.get_document(d) for d in store.present_documents(ids)}
    state: dict[str, Any] = {"live": {d: (r["version"], r["content"], r["truth_level"],
                                          tuple(r["tags"] or ()), custom_json(r["custom"] or {}))
                                      for d, r in live.items()}}
    for doc_id in ids:
        try:
            history = store.history(doc_id)
        except enginelib.errors.DocumentNotFoundError:
            continue
        state[doc_id] = [(h["version"], h["change_summary"],
                          store.version_text(doc_id, h["version"])) for h in history]
    return state


def _base_store(tmp: Path) -> Path:
    docs = tmp / "docs"
    docs.mkdir()
    for name in ("f0.txt", "f1.txt"):
        (docs / name).write_text(text_of(name, 0), encoding="utf-8")
    path = tmp / "s"
    with enginelib.open(path, embedder=HashingEmbedder(16)) as store:
        store.ingest_documents([LoadedDocument(id=i, text=_TEXTS[i])
                                for i in ("alpha", "beta", "delta")])
        store.ingest_path(docs)
        store.create_snapshot("base")
        store.ingest_documents([LoadedDocument(id="alpha", text=_TEXTS["alpha1"])])
        store.update_document("beta", tags=["t"])
        store.delete_document("delta")
    (docs / "f1.txt").unlink()  # for the prune
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("operation", "step"),
                         [(op, step) for op, steps in _KILLS.items() for step in steps])
def test_a_killed_operation_leaves_the_state_before_or_after(
    tmp_path: Path, operation: str, step: str
) -> None:
    path = _base_store(tmp_path)
    script = _KILLED_WRITER.format(texts=_TEXTS, operation=_OPERATIONS[operation])
    args = [sys.executable, "-c", script]
    with enginelib.open(path, embedder=HashingEmbedder(16)) as store:
        before = _state(store)
    finished = tmp_path / "finished"
    shutil.copytree(path, finished)
    done = subprocess.run([*args, str(finished), str(tmp_path / "docs")], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with enginelib.open(finished, embedder=HashingEmbedder(16)) as store:
        after = _state(store)
    assert after != before

    killed = subprocess.run([*args, str(path), str(tmp_path / "docs")], cwd=REPO,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "ENGINELIB_CRASH_AT": step})
    assert killed.returncode == -9, killed.stderr
    with enginelib.open(path, embedder=HashingEmbedder(16)) as store:
        assert store.check().ok, store.check().problems
        state = _state(store)
    committed = "before_catalog_commit" not in step
    assert state == (after if committed else before)
