"""In-memory stores, the shipped pytest plugin and its fixtures, and the README's user test."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import enginelib
from enginelib import HashingEmbedder, InvalidInputError, StoreError
from enginelib.catalog_mend import PENDING_NAME
from enginelib.edge import map_error
from enginelib.errors import JobNotFoundError, JobStateError, StorageError
from enginelib.memory_store import MEMORY_DIR_ENV, MemoryStore
from enginelib.testing import enginelib_store, enginelib_store_factory  # noqa: F401
from tests.helpers import open_test_store

ROOT = Path(__file__).resolve().parents[1]
RECORDS = [
    {"id": "pads", "text": "Replace the brake pads when they are thinner than 3 mm.",
     "truth_level": "L1", "tags": ["brakes"]},
    {"id": "gdpr", "text": "Personal data shall be processed lawfully and fairly.",
     "truth_level": "L2", "domain": "privacy"},
]
NO_GATE = {"answerability_threshold": None}


@pytest.fixture
def ram(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "ram"
    folder.mkdir()
    monkeypatch.setenv(MEMORY_DIR_ENV, str(folder))
    return folder


def test_open_memory_is_a_full_store_that_leaves_nothing(ram, tmp_path):
    before = set(os.listdir(Path.cwd()))
    store = enginelib.open(":memory:", embedder=HashingEmbedder(32))
    assert isinstance(store, MemoryStore)
    assert not Path(":memory:").exists()
    report = store.ingest_documents([enginelib.LoadedDocument(id="a", text="caliper torque 30 Nm")])
    assert report.added == ("a",)
    assert store.search("caliper torque", **NO_GATE).hits[0].document_id == "a"
    assert store.stats()["path"] == ":memory:"
    assert len(os.listdir(ram)) == 1  # the private folder, while open
    store.close()
    assert os.listdir(ram) == []
    assert set(os.listdir(Path.cwd())) == before


def test_memory_seeded_from_records_with_truth_levels(ram):
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(32), truth_level="L3") as store:
        assert store.get_document("pads")["truth_level"] == "L1"
        assert store.get_document("gdpr")["domain"] == "privacy"
        hits = store.search("personal data lawfully", strategy="fulltext").hits
        assert [h.document_id for h in hits] == ["gdpr"]


def test_default_truth_level_applies_to_records_without_one(ram):
    records = [{"id": "n", "text": "brake pads squeal when worn"}]
    with enginelib.memory(records, embedder=HashingEmbedder(32), truth_level="L3") as store:
        assert store.get_document("n")["truth_level"] == "L3"
        assert store.search("brake pads", **NO_GATE).status == enginelib.NO_RELEVANT_SOURCES
        assert store.search("brake pads", truth_levels=["L3"], **NO_GATE).hits[0].document_id == "n"


def test_garbage_collected_store_removes_its_folder(ram):
    store = enginelib.memory(RECORDS, embedder=HashingEmbedder(32))
    assert len(os.listdir(ram)) == 1
    del store
    gc.collect()
    assert os.listdir(ram) == []


def test_save_writes_a_folder_that_opens_normally(ram, tmp_path):
    target = tmp_path / "saved"
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(32)) as store:
        store.save(target)
        expected = store.search("brake pads thinner", **NO_GATE)
        store.ingest_documents([enginelib.LoadedDocument(id="later", text="still usable")])
    assert os.listdir(ram) == []
    with enginelib.open(target, embedder=HashingEmbedder(32), read_only=True) as saved:
        assert saved.stats()["documents"] == 2
        again = saved.search("brake pads thinner", **NO_GATE)
        assert [h.citation for h in again.hits] == [h.citation for h in expected.hits]


def test_save_refuses_a_folder_in_use(ram, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file.txt").write_text("mine")
    with enginelib.memory(embedder=HashingEmbedder(32)) as store:
        with pytest.raises(StoreError, match="not an empty folder"):
            store.save(tmp_path / "busy")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"snapshot": "2026.11.0"}, "snapshot"),
        ({"read_only": True}, "read_only"),
        ({"create": False}, "create"),
        ({"lock_timeout": 5}, "lock_timeout"),
        ({"colour": "red"}, "unknown option"),
    ],
)
def test_memory_rejects_folder_options(ram, options, message):
    with pytest.raises(InvalidInputError, match=message):
        enginelib.open(":memory:", embedder=HashingEmbedder(32), **options)
    assert os.listdir(ram) == []


def test_bad_record_names_its_position(ram):
    with pytest.raises(InvalidInputError, match="record 2: no 'text'"):
        enginelib.memory([RECORDS[0], {"id": "x"}], embedder=HashingEmbedder(32))
    with pytest.raises(InvalidInputError, match="record 1 is a str"):
        enginelib.memory(["just text"], embedder=HashingEmbedder(32))
    assert os.listdir(ram) == []


@pytest.mark.parametrize("records", [RECORDS[0], "just text"])
def test_one_record_not_in_a_list_says_to_wrap_it(ram, records):
    # a dict was iterated as its keys: "record 1 is a str", which did not say what was wrong
    with pytest.raises(InvalidInputError, match=r"wrap it in a list, e.g. memory\(\[record\]\)"):
        enginelib.memory(records, embedder=HashingEmbedder(32))
    assert os.listdir(ram) == []


def test_a_closed_store_refuses_every_use(ram, tmp_path):
    # close() releases the writer lock: a write after it could race another process
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(32))
    store.ingest_documents([enginelib.LoadedDocument(id="a", text="brake pads wear fast")])
    store.close()
    calls = [lambda: store.search("brake"), lambda: store.list_documents(),
             lambda: store.get_document("a"), lambda: store.stats(),
             lambda: store.ingest_documents([enginelib.LoadedDocument(id="b", text="tyres")]),
             lambda: store.delete_document("a"),
             # these three read the folder beside the catalog: list_snapshots() listed a
             # closed store's and diff() looked its snapshots up
             store.check, store.list_snapshots, lambda: store.diff("before")]
    for call in calls:
        with pytest.raises(StoreError, match="closed"):
            call()
    store.close()  # closing twice is fine
    with enginelib.open(tmp_path / "s", embedder=HashingEmbedder(32)) as again:
        assert [d["document_id"] for d in again.list_documents()] == ["a"]


def test_an_empty_batch_is_an_empty_answer(ram):
    store = enginelib.memory(RECORDS, embedder=HashingEmbedder(32))
    assert store.search_batch([]) == []  # was a ZeroDivisionError
    with pytest.raises(InvalidInputError, match="limit must be within"):
        store.search_batch([], limit=0)  # its options are checked all the same
    store.close()


def test_a_seed_record_the_store_refuses_fails_the_seed(ram, enginelib_store_factory):
    # a fixture is what a test asserts against: a record skipped on the quiet (here an
    # unknown truth level) left a store one document short and no word about it
    records = [{"id": "ok", "text": "brake pads"}, {"id": "odd", "text": "t", "truth_level": "L7"}]
    with pytest.raises(InvalidInputError, match=r"seed record cannot be stored \(document 'odd'"):
        enginelib.memory(records, embedder=HashingEmbedder(16))
    with pytest.raises(InvalidInputError, match="every record or none"):
        enginelib_store_factory(records=records)
    assert not list(ram.iterdir())  # the refused store left nothing behind


def test_snapshots_inside_a_memory_store_live_and_die_with_it(ram):
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(32)) as store:
        info = store.create_snapshot("s1")
        assert [s.name for s in store.list_snapshots()] == [info.name]
    assert os.listdir(ram) == []


def test_fixtures_give_empty_and_seeded_stores(enginelib_store, enginelib_store_factory):
    assert enginelib_store.stats()["documents"] == 0
    assert enginelib_store.embedder.name == "hashing-64"
    seeded = enginelib_store_factory(records=RECORDS, truth_level="L2")
    assert seeded.stats()["documents"] == 2
    other = enginelib_store_factory(embedder=HashingEmbedder(16))
    assert other.manifest.embedding_dim == 16


@pytest.mark.parametrize("embedder", ["", 0, False])
def test_the_factory_refuses_a_falsy_embedder_as_memory_does(enginelib_store_factory,
                                                             embedder: object) -> None:
    # it took `embedder or test_embedder()`: "", 0 and False gave a hashing-64 store unseen
    with pytest.raises(InvalidInputError, match="embedder"):
        enginelib_store_factory(embedder=embedder)
    with pytest.raises(InvalidInputError, match="embedder"):
        enginelib.memory(embedder=embedder)
    assert enginelib_store_factory(embedder=None).embedder.name == "hashing-64"


@pytest.mark.slow  # a second Python process
def test_readme_user_test_runs_with_the_plugin_and_leaves_nothing(tmp_path):
    ram = tmp_path / "ram"
    ram.mkdir()
    env = {**os.environ, MEMORY_DIR_ENV: str(ram), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "enginelib.testing", "-p", "no:cacheprovider",
         str(ROOT / "examples" / "test_with_enginelib.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed" in result.stdout
    assert os.listdir(ram) == []
    assert sorted(os.listdir(tmp_path)) == ["ram"]


def test_readme_shows_the_example_file_verbatim():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = "<!-- examples/test_with_enginelib.py -->\n```python\n"
    assert marker in readme
    shown = readme.split(marker, 1)[1].split("```\n", 1)[0]
    assert shown == (ROOT / "examples" / "test_with_enginelib.py").read_text(encoding="utf-8")


def test_exports_to_a_named_file_work_from_memory(ram, tmp_path):
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(32)) as store:
        report = store.to_sql(tmp_path / "out.sql")
    sql = (tmp_path / "out.sql").read_text(encoding="utf-8")
    assert "CREATE TABLE" in sql and "pads" in sql
    assert report is not None
    assert os.listdir(ram) == []


def test_a_killed_process_folder_is_swept_by_the_next_store(ram):
    script = (
        "import os, signal, enginelib\n"
        "store = enginelib.memory(embedder=enginelib.HashingEmbedder(16))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, MEMORY_DIR_ENV: str(ram), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], env=env, timeout=300)
    assert result.returncode != 0
    assert len(os.listdir(ram)) == 1  # no finalizer ran
    with enginelib.memory(embedder=HashingEmbedder(16)):
        assert [name.split("-")[2] for name in os.listdir(ram)] == [str(os.getpid())]
    assert os.listdir(ram) == []


def test_a_live_store_whose_pid_is_not_seen_here_is_not_swept(ram: Path) -> None:
    """The sweep took a pid this process cannot see for a dead one: a process in another pid
    namespace (a container sharing /dev/shm) opening an in-memory store removed the folder of
    a live one (reproduced with `unshare --pid`), whose next call said its catalog was gone.
    Such a store is the one below: named after a pid not alive here, holding its writer."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True, timeout=60)
    unseen = int(finished.stdout)  # exited: not alive to this process
    live = ram / f"enginelib-mem-{unseen}-elsewhere" / "store"
    live.parent.mkdir()
    with enginelib.open(live, embedder=HashingEmbedder(16)) as other:
        other.ingest_documents([enginelib.LoadedDocument(id="a", text="brake pads")])
        with enginelib.memory(embedder=HashingEmbedder(16)):  # sweeps at its open
            pass
        assert other.search("brake pads", **NO_GATE).hits[0].document_id == "a"
        other.ingest_documents([enginelib.LoadedDocument(id="b", text="rotor")])
    with enginelib.memory(embedder=HashingEmbedder(16)):  # its writer gone: swept as before
        assert [name.split("-")[2] for name in os.listdir(ram)] == [str(os.getpid())]


@pytest.mark.parametrize("chosen", ["/etc/passwd", "/nonexistent/enginelib-dir"])
def test_a_memory_folder_that_is_not_a_writable_folder_is_named(monkeypatch: pytest.MonkeyPatch,
                                                                 chosen: str) -> None:
    """A raw NotADirectoryError / FileNotFoundError came out of enginelib.memory()."""
    monkeypatch.setenv(MEMORY_DIR_ENV, chosen)
    with pytest.raises(StorageError, match=r"\$ENGINELIB_MEMORY_DIR is .* not a folder"):
        enginelib.memory([{"id": "a", "text": "brake pads"}], embedder=HashingEmbedder(16))


def test_a_save_killed_half_way_leaves_no_store_at_the_target(tmp_path: Path) -> None:
    """copytree straight into the target: a kill (or a full disk) left a folder with a
    manifest and part of a catalog, which no open could use and no later save would take."""
    target = tmp_path / "saved"
    code = ("import sys, enginelib; s = enginelib.memory([{'id': 'a', 'text': 'brake pads'}], "
            "embedder=enginelib.HashingEmbedder(16)); s.save(sys.argv[1])")
    killed = subprocess.run([sys.executable, "-c", code, str(target)], check=False,
                            env={**os.environ, "ENGINELIB_CRASH_AT": "save_before_rename"})
    assert killed.returncode == -9
    assert not target.exists()
    with enginelib.memory([{"id": "a", "text": "brake pads"}], embedder=HashingEmbedder(16)) as store:
        store.save(target)
        (tmp_path / "file.txt").write_text("not a folder")
        with pytest.raises(StorageError, match="goes through .*file.txt, which is a file"):
            store.save(tmp_path / "file.txt" / "below")  # a parent that cannot be a folder
    with enginelib.open(target, embedder=HashingEmbedder(16)) as saved:
        assert [d["document_id"] for d in saved.list_documents()] == ["a"]


def test_a_closed_memory_store_says_its_documents_are_gone(ram: Path) -> None:
    # it said "open it again with enginelib.open(path)", naming the private folder close()
    # had removed: following the advice made a new, empty store there
    store = enginelib.memory(RECORDS, embedder=HashingEmbedder(32))
    folder, queue = store.path, store.jobs()
    store.close()
    for call in (lambda: store.search("brake pads"), lambda: store.list_documents(),
                 queue.counts,
                 lambda: store.save(ram.parent / "kept"),
                 # check() failed an assert (its folder gone), list_snapshots() said there
                 # was no store at the private folder
                 store.check, store.list_snapshots, lambda: store.diff("before"),
                 lambda: store.ingest_documents([enginelib.LoadedDocument(id="b", text="t")])):
        with pytest.raises(StoreError, match="in-memory store is closed, and its documents "
                                             r"went with it: .*save\(path\) it first") as caught:
            call()
        assert str(folder) not in str(caught.value)
    assert not (ram.parent / "kept").exists()


@pytest.mark.parametrize("as_objects", [False, True])
def test_seed_records_that_share_an_id_are_refused(ram: Path, as_objects: bool) -> None:
    # the second was ingested as a new version of the first: one document where the test
    # counted two, the first record's text gone from every search, without a word
    records = [{"id": "pads", "text": "Replace the pads at 3 mm."},
               {"id": "disc", "text": "Discs are replaced in pairs."},
               {"id": "pads", "text": "Tyres are rotated every 10,000 km."}]
    seed = ([enginelib.LoadedDocument(id=r["id"], text=r["text"]) for r in records]
            if as_objects else records)
    with pytest.raises(InvalidInputError, match="records 1 and 3 both have the id 'pads'"):
        enginelib.memory(seed, embedder=HashingEmbedder(16))
    assert os.listdir(ram) == []
    # records without an id are numbered, never taken for one another
    with enginelib.memory([{"text": "a b"}, {"text": "c d"}], embedder=HashingEmbedder(16)) as store:
        assert store.stats()["documents"] == 2


@pytest.mark.parametrize("level", ["", 0, "L9"])
def test_a_seed_truth_level_that_is_no_level_is_refused(ram: Path, level: object) -> None:
    # "" and 0 were taken for "none given" (a truth test): the records went in as L2
    records = [{"id": "pads", "text": "Replace the pads at 3 mm."}]
    for seed in (records, None, []):
        with pytest.raises(enginelib.InvalidTruthLevelError, match="unknown truth level"):
            enginelib.memory(seed, embedder=HashingEmbedder(16), truth_level=level)
    assert os.listdir(ram) == []


def test_save_through_a_loop_of_links_is_refused_saying_so(ram: Path, tmp_path: Path) -> None:
    # Path.resolve() raised RuntimeError("Symlink loop from ...") on Python 3.11 and 3.12
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(16)) as store:
        with pytest.raises(InvalidInputError, match="loop of symbolic links"):
            store.save(loop / "saved")


def test_save_beside_the_store_in_its_private_folder_is_refused(ram: Path) -> None:
    # only the store folder itself was refused: a save to store.path.parent / "kept" was
    # taken, and close() removed it with the private folder around the store
    store = enginelib.memory(RECORDS, embedder=HashingEmbedder(16))
    with pytest.raises(InvalidInputError, match="inside the store's own folder .*removed on close"):
        store.save(store.path.parent / "kept")
    store.close()
    assert os.listdir(ram) == []


@pytest.mark.parametrize("leads_to", ["an empty folder", "nothing yet"])
def test_save_to_a_link_writes_where_it_leads(ram: Path, tmp_path: Path, leads_to: str) -> None:
    # renamed over the link itself: "Not a directory" for a link to an empty folder (a
    # mount point's link, say), and a link to nothing was replaced by the store
    real = tmp_path / "disk" / "stores" / "kept"
    if leads_to == "an empty folder":
        real.mkdir(parents=True)
    link = tmp_path / "kept"
    link.symlink_to(real, target_is_directory=True)
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(16)) as store:
        assert store.save(link) == link
    assert link.is_symlink() and (real / "manifest.json").is_file()
    with enginelib.open(link) as saved:
        assert saved.stats()["documents"] == len(RECORDS)


def test_a_relative_memory_folder_survives_a_chdir(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # $ENGINELIB_MEMORY_DIR=rel gave the store the folder rel/enginelib-mem-.../store: after a
    # chdir its next ingest said "the catalog rel/... is gone since this process opened the
    # store", and close() removed nothing, the store left behind in rel/
    (tmp_path / "rel").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(MEMORY_DIR_ENV, "rel")
    store = enginelib.memory(RECORDS, embedder=HashingEmbedder(16))
    assert store.path.is_absolute() and store.path.is_relative_to(tmp_path / "rel")
    monkeypatch.chdir(tmp_path / "elsewhere")
    store.ingest_documents([enginelib.LoadedDocument(id="oil", text="Oil filter change.")])
    assert [d["document_id"] for d in store.list_documents()] == ["gdpr", "oil", "pads"]
    store.close()
    assert os.listdir(tmp_path / "rel") == [] and os.listdir(tmp_path / "elsewhere") == []


def test_a_memory_stores_errors_name_the_python_call_not_a_command(tmp_path: Path) -> None:
    # "no snapshot 'nope' in /dev/shm/enginelib-mem-…/store: `enginelib snapshot list --store
    # /dev/shm/…` shows them": a command for a private folder no command can be given
    store = enginelib.memory(RECORDS, embedder=HashingEmbedder(16))
    store.create_snapshot("one")
    store.pin_snapshot("one")
    said = []
    for call in (lambda: store.restore_snapshot("nope"), lambda: store.delete_snapshot("nope"),
                 lambda: store.diff("nope"), lambda: store.delete_snapshot("one"),
                 lambda: store.version_text("pads", "9.9.9")):
        with pytest.raises(enginelib.EngineError) as caught:
            call()
        said.append(str(caught.value))
    assert said[0] == ("no snapshot 'nope' in this in-memory store: store.list_snapshots() "
                       "shows them")
    assert said[3] == ("snapshot 'one' is pinned: unpin it first "
                       "(store.pin_snapshot('one', pinned=False))")
    assert said[4].endswith("(store.history('pads') lists them)")
    empty = enginelib.memory(embedder=HashingEmbedder(16))
    said.append(empty.search("brake pads").reason or "")
    assert "store.ingest_documents" in said[-1]
    (Path(store.path) / PENDING_NAME).write_text("{}")  # a mend that was interrupted
    [problem] = store.check().problems
    said.append(problem)
    assert problem.endswith(": call store.repair()"), problem
    said.append(str(map_error(duckdb.Error("boom"), "search", store.path)))
    assert said[-1].endswith("call store.check() and store.repair() if it happens again")
    for text in said:  # the backend's error names where it failed, as it does for a folder
        assert "`enginelib" not in text, text
    store.close()
    empty.close()
    # a store folder keeps its command
    with pytest.raises(enginelib.SnapshotError, match="`enginelib snapshot list --store "):
        with enginelib.open(tmp_path / "disk", embedder=HashingEmbedder(16)) as disk:
            disk.restore_snapshot("nope")


def test_a_deleted_documents_error_names_the_python_calls_in_memory(ram: Path,
                                                                     tmp_path: Path) -> None:
    # "no document with id 'pads' in this store (it was deleted: `enginelib history pads`
    # lists its versions and `--text VERSION` prints one)": a command no in-memory store can
    # be given (the CLI refuses --store :memory:)
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(16)) as store:
        store.delete_document("pads")
        for call in (lambda: store.get_document("pads"), lambda: store.show("pads"),
                     lambda: store.update_document("pads", tags=["x"]),
                     lambda: store.delete_document("pads")):
            with pytest.raises(enginelib.DocumentNotFoundError) as caught:
                call()
            assert str(caught.value) == (
                "no document with id 'pads' in this store (it was deleted: "
                "store.history('pads') lists its versions and "
                "store.version_text('pads', VERSION) returns one)")
        [version] = store.history("pads")  # the advice works
        assert "brake pads" in store.version_text("pads", version["version"])
    # a store folder keeps its command
    with enginelib.open(tmp_path / "disk", embedder=HashingEmbedder(16)) as disk:
        disk.ingest_documents([enginelib.LoadedDocument(id="pads", text="brake pads")])
        disk.delete_document("pads")
        with pytest.raises(enginelib.DocumentNotFoundError, match="`enginelib history pads`"):
            disk.get_document("pads")


def _job_refusals(store: enginelib.Store, source: Path) -> list[str]:
    """The messages of a queue asked to act on a job it has not, or one not in the state the
    action needs: a missing id dropped and cancelled, a waiting job dropped, a DLQ job
    cancelled."""
    queue = store.jobs()
    source.write_text("caliper torque 30 Nm")
    dead, waiting = store.enqueue_paths(source, source, max_attempts=1)
    job = queue.claim("w1")
    assert job is not None and job["job_id"] == dead
    assert queue.fail(job, "w1", "unreadable", permanent=True) == "DLQ"
    messages = []
    for call in (lambda: queue.drop(99), lambda: queue.cancel(99),
                 lambda: queue.drop(waiting), lambda: queue.cancel(dead)):
        with pytest.raises((JobNotFoundError, JobStateError)) as refused:
            call()
        messages.append(str(refused.value))
    return messages


def test_job_queue_refusals_name_the_python_call_on_a_memory_store(ram: Path,
                                                                   tmp_path: Path) -> None:
    # they said "`enginelib jobs` lists its jobs" and "drop it instead (`enginelib jobs --drop
    # ID`": a command for a store folder, and an in-memory store has none to give it
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(32)) as store:
        missing, missing_again, waiting, dlq = _job_refusals(store, tmp_path / "a.txt")
    for message in (missing, missing_again, waiting, dlq):
        assert "enginelib jobs" not in message and "`enginelib " not in message, message
    assert missing == missing_again == (
        "no job with id 99 in this store's queue: store.jobs().jobs() lists its jobs "
        "(status='DLQ' those in the DLQ)")
    assert "not in the DLQ" in waiting
    assert dlq.endswith("drop it instead (store.jobs().drop(ID))")
    # a store folder keeps the commands
    with open_test_store(tmp_path / "folder") as store:
        missing, _, _, dlq = _job_refusals(store, tmp_path / "b.txt")
    assert missing.endswith(": `enginelib jobs` lists its jobs (`--status DLQ` those in the DLQ)")
    assert "drop it instead (`enginelib jobs --drop ID`, DELETE /api/jobs/ID)" in dlq


def _failed_job_advice(store: enginelib.Store, folder: Path) -> list[str]:
    """What a worker records for a queued file deleted before its turn, and for one grown past
    the size a queued job reads."""
    from enginelib.jobs import Worker

    folder.mkdir()
    gone, grown = folder / "gone.txt", folder / "grown.txt"
    for path in (gone, grown):
        path.write_text("caliper torque 30 Nm")
    store.enqueue_paths(gone, grown)
    gone.unlink()
    os.truncate(grown, 65 * 1024 * 1024)  # sparse: nothing written
    worker = Worker(store, store.jobs())
    outcomes = [worker.run_once(), worker.run_once()]
    assert [(o.status, o.reason) for o in outcomes if o is not None] == [
        ("DLQ", "source_missing"), ("DLQ", "source_too_large")]
    return [o.error for o in outcomes if o is not None and o.error is not None]


def test_failed_job_advice_names_the_python_call_on_a_memory_store(ram: Path,
                                                                   tmp_path: Path) -> None:
    # a worker on an in-memory store recorded "re-add it and run `enginelib jobs --retry-dlq`
    # ... with `enginelib ingest --queue`" and "`enginelib ingest --max-file-mb 65 ...`":
    # commands for a store folder, and an in-memory store has none to give them
    with enginelib.memory(RECORDS, embedder=HashingEmbedder(32)) as store:
        missing, large = _failed_job_advice(store, tmp_path / "docs")
    for message in (missing, large):
        assert "`enginelib " not in message, message
    assert ("re-add it and run store.jobs().retry_dlq(), or queue the file where it is now "
            "with store.enqueue_paths(PATH)") in missing
    grown = str(tmp_path / "docs" / "grown.txt")
    assert f"(store.ingest_path({grown!r}, max_bytes={65 * 1024 * 1024}))" in large
    # a store folder keeps the commands
    with open_test_store(tmp_path / "folder") as store:
        missing, large = _failed_job_advice(store, tmp_path / "docs2")
    assert "run `enginelib jobs --retry-dlq` (Retry DLQ), or queue" in missing
    assert "with `enginelib ingest --queue` (not retried" in missing
    assert "(`enginelib ingest --max-file-mb 65 " in large
