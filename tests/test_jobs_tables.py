"""Job tables of another layout (a hand edit, a damaged catalog): check reports, repair mends."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from enginelib import IntegrityError, maintenance
from enginelib.cli.main import main
from enginelib.core import layout
from enginelib.jobs import DLQ, DONE, FAILED, PENDING, Worker
from enginelib.jobs.shape import LOST_STATUS
from tests.helpers import catalog_rows, disk_full, open_test_store, paragraphs


@pytest.fixture()
def queued(tmp_path: Path) -> Path:
    """A store with three jobs: one DONE, one FAILED (on a full disk), one PENDING."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "brakes.md").write_text("# Brakes\n\n" + paragraphs(3), encoding="utf-8")
    (src / "pads.md").write_text("# Pads\n\n" + paragraphs(2, "pads"), encoding="utf-8")
    (src / "tyres.txt").write_text(paragraphs(2, "tyres"), encoding="utf-8")
    root = tmp_path / "store"
    with open_test_store(root) as store:
        store.enqueue_paths(src / "brakes.md", src / "pads.md")
        worker = Worker(store, store.jobs())
        worker.run_once()
        with disk_full():
            worker.run_once()
        store.enqueue_paths(src / "tyres.txt")
    return root


def damage(root: Path, *statements: str) -> None:
    """Edit the catalog by hand, as a user with the duckdb shell would."""
    con = duckdb.connect(str(layout.catalog_path(root)))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()



def test_a_jobs_table_that_lost_a_column_is_reported_refused_and_mended_keeping_its_rows(
    queued: Path,
) -> None:
    damage(queued, "DROP INDEX jobs_status", "ALTER TABLE jobs DROP COLUMN last_error",
           "ALTER TABLE jobs ALTER attempts TYPE VARCHAR")
    report = maintenance.check(queued, snapshots=False)
    assert not report.ok
    [problem] = report.problems
    assert "job table jobs lacks column(s) last_error; attempts is VARCHAR, not INTEGER" in problem
    assert problem.endswith(f"run `enginelib repair --store {queued}`")
    # The queue refuses to run on it, saying what to do (it was a DuckDB binder error).
    with open_test_store(queued) as store, pytest.raises(
            IntegrityError, match=r"jobs lacks column\(s\) last_error.*run `enginelib repair"):
        store.jobs()

    repaired = maintenance.repair(queued)
    assert repaired.ok
    [note] = repaired.facts["job_tables_mended"]
    assert "set aside as jobs_damaged_" in note and "(3 rows), created anew with 3 of them" in note
    aside = note.split("set aside as ")[1].split(" ")[0]
    assert catalog_rows(queued, f'SELECT count(*) FROM "{aside}"') == [(3,)]  # kept whole
    assert catalog_rows(queued, "SELECT document_id, status, attempts FROM jobs ORDER BY job_id") == [
        ("brakes.md", DONE, 1), ("pads.md", FAILED, 1), ("tyres.txt", PENDING, 0)]
    assert maintenance.check(queued, snapshots=False).ok
    with open_test_store(queued) as store:
        queue = store.jobs()
        [outcome] = Worker(store, queue).run_until_idle()  # the FAILED one waits its backoff
        assert (outcome.source.endswith("tyres.txt"), outcome.status) == (True, DONE)
        assert queue.purge_done() == 2
        assert store.enqueue_paths(Path(outcome.source)) == [4]  # ids go on, none reused


def test_a_job_whose_status_was_lost_waits_in_the_dlq_and_rows_without_a_source_stay_aside(
    queued: Path,
) -> None:
    damage(queued, "DROP INDEX jobs_status", "ALTER TABLE jobs DROP COLUMN status",
           "ALTER TABLE jobs ALTER source DROP NOT NULL",
           "UPDATE jobs SET source = NULL WHERE document_id = 'brakes.md'")
    assert "jobs lacks column(s) status" in maintenance.check(queued, snapshots=False).problems[0]
    [note] = maintenance.repair(queued).facts["job_tables_mended"]
    assert "created anew with 2 of them" in note
    assert "1 row(s) lacked source or document_id" in note
    with open_test_store(queued) as store:
        queue = store.jobs()
        jobs = queue.jobs()
        # Run again unasked, a job already DONE could bring back a document deleted since.
        assert [(j["document_id"], j["status"], j["last_error"]) for j in jobs] == [
            ("pads.md", DLQ, LOST_STATUS), ("tyres.txt", DLQ, LOST_STATUS)]
        assert queue.retry_dlq() == 2


def test_a_history_table_with_its_columns_in_another_order_takes_purged_jobs_right(
    queued: Path,
) -> None:
    """The purge copied by position: each value went into another column, or failed on its
    type; check found nothing wrong with such a table."""
    layout_rows = catalog_rows(queued, "SELECT column_name, data_type FROM information_schema.columns "
                               "WHERE table_name = 'jobs_history' ORDER BY ordinal_position")
    reordered = ", ".join(f'"{name}" {kind}' for name, kind in reversed(layout_rows))
    damage(queued, "DROP TABLE jobs_history", f"CREATE TABLE jobs_history ({reordered})")
    assert maintenance.check(queued, snapshots=False).ok
    with open_test_store(queued) as store:
        assert store.jobs().purge_done() == 1
    assert catalog_rows(queued, "SELECT document_id, status, attempts FROM jobs_history") == [
        ("brakes.md", DONE, 1)]


def test_an_id_sequence_behind_the_job_ids_is_reported_and_restarted_past_them(
    queued: Path,
) -> None:
    damage(queued, "INSERT INTO jobs_history (job_id, purged_at) VALUES (40, now())")
    report = maintenance.check(queued, snapshots=False)
    assert [p.split(":")[0] for p in report.problems] == [
        "the job id sequence jobs_id_seq would hand out 4, but job ids run up to 40"]
    [note] = maintenance.repair(queued).facts["job_tables_mended"]
    assert "created anew with 3 of them" in note
    with open_test_store(queued) as store:
        assert store.enqueue_paths(store.jobs().jobs()[0]["source"]) == [41]


def test_check_and_repair_on_the_command_line(queued: Path) -> None:
    damage(queued, "DROP INDEX jobs_status", "ALTER TABLE jobs DROP COLUMN lease_owner")
    runner = CliRunner()
    listed = runner.invoke(main, ["jobs", "--store", str(queued)])
    assert listed.exit_code == 2
    assert "jobs lacks column(s) lease_owner" in listed.output
    assert "run `enginelib repair --store" in listed.output
    checked = runner.invoke(main, ["check", "--store", str(queued), "--no-snapshots"])
    assert checked.exit_code == 1
    assert "problem: job table jobs lacks column(s) lease_owner: run `enginelib repair" in (
        checked.output)
    repaired = runner.invoke(main, ["repair", "--store", str(queued)])
    assert repaired.exit_code == 0, repaired.output
    assert "mended the job queue: job table jobs lacks column(s) lease_owner: set aside as " \
        "jobs_damaged_" in repaired.output
    assert runner.invoke(main, ["jobs", "--store", str(queued)]).exit_code == 0


def test_a_store_that_never_queued_has_nothing_to_report_or_mend(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "s") as store:
        store.ingest_documents([])
    assert maintenance.check(tmp_path / "s", snapshots=False).ok
    assert maintenance.repair(tmp_path / "s").facts["job_tables_mended"] == []


def test_a_jobs_view_over_a_renamed_table_is_set_aside_and_its_rows_kept(queued: Path) -> None:
    """The renamed table still draws its ids from the sequence: repair dropped the sequence
    to restart it and failed on that dependency, though its next id was already past them."""
    damage(queued, "DROP INDEX jobs_status", "ALTER TABLE jobs RENAME TO jobs_by_hand",
           "CREATE VIEW jobs AS SELECT * FROM jobs_by_hand")
    assert maintenance.check(queued, snapshots=False).problems[0].startswith(
        "job table jobs is a view, not a table: run `enginelib repair")
    [note] = maintenance.repair(queued).facts["job_tables_mended"]
    assert "(3 rows), created anew with 3 of them" in note
    with open_test_store(queued) as store:
        assert [j["status"] for j in store.jobs().jobs()] == [DONE, FAILED, PENDING]
        assert store.enqueue_paths(store.jobs().jobs()[0]["source"]) == [4]


def test_a_job_id_both_queued_and_in_the_history_is_reported_and_the_history_renumbered(
    queued: Path,
) -> None:
    """Only a hand edit of both tables makes one: purging that DONE job then failed on the
    history's key (and with it every purge), and `check` said nothing. The history's copy of
    the same DONE job was kept under a new id, so the history held that job twice."""
    [(done,)] = catalog_rows(queued, "SELECT job_id FROM jobs WHERE status = 'DONE'")
    damage(queued, f"INSERT INTO jobs_history SELECT *, now() FROM jobs WHERE job_id = {done}")
    report = maintenance.check(queued, snapshots=False)
    assert [p.split(":")[0] for p in report.problems] == [
        f"job id(s) {done} are both in jobs and in jobs_history"]
    with pytest.raises(IntegrityError, match="run `enginelib repair"), \
            open_test_store(queued) as store:
        store.jobs().purge_done()
    [note] = maintenance.repair(queued).facts["job_tables_mended"]
    assert note.startswith(f"job id(s) {done} are both in jobs and in jobs_history") and \
        f"the history's copies of {done}, the same DONE jobs as queued, dropped" in note
    assert maintenance.check(queued, snapshots=False).ok
    with open_test_store(queued) as store:
        queue = store.jobs()
        assert queue.purge_done() == 1
        assert store.enqueue_paths(queue.jobs()[0]["source"]) == [4]
    assert catalog_rows(queued, "SELECT job_id, status FROM jobs_history ORDER BY job_id") == [
        (done, DONE)]  # once
    assert catalog_rows(queued, "SELECT job_id, outcome FROM job_attempts WHERE job_id = 1") == [
        (1, DONE)]


def test_a_queued_job_the_history_holds_as_done_waits_in_the_dlq_not_run_again(
    queued: Path,
) -> None:
    """The same job (same file, queued at the same time) DONE in the history and PENDING in
    the queue: repair kept both, and the worker ingested it a second time."""
    [(waiting,)] = catalog_rows(queued, "SELECT job_id FROM jobs WHERE status = 'PENDING'")
    damage(queued, "INSERT INTO jobs_history SELECT * REPLACE ('DONE' AS status), now() FROM "
                   f"jobs WHERE job_id = {waiting}")
    [note] = maintenance.repair(queued).facts["job_tables_mended"]
    assert "the history's rows renumbered 4" in note and f"job(s) {waiting}, DONE in the " \
        "history already, sent to the DLQ rather than run again" in note
    with open_test_store(queued) as store:
        queue = store.jobs()
        job = next(j for j in queue.jobs() if j["job_id"] == waiting)
        assert job["status"] == DLQ and "under job 4" in job["last_error"]
        assert Worker(store, queue).run_until_idle() == []  # pads.md waits its backoff
    assert catalog_rows(queued, "SELECT job_id, document_id, status FROM jobs_history") == [
        (4, "tyres.txt", DONE)]


def test_two_jobs_that_shared_an_id_with_the_history_keep_their_own_attempts(
    queued: Path,
) -> None:
    """An id sequence that restarted behind the history's ids gave a new job the id of a
    purged one: repair renumbered the history's row but left it no attempts, the queued job
    listing the old job's as its own."""
    [(waiting,)] = catalog_rows(queued, "SELECT job_id FROM jobs WHERE status = 'PENDING'")
    damage(queued,
           f"INSERT INTO jobs_history (job_id, kind, source, document_id, options, status, "
           f"attempts, max_attempts, next_attempt_at, created_at, updated_at, finished_at, "
           f"purged_at) VALUES ({waiting}, 'file', '/gone/old.md', 'old.md', '{{}}', 'DONE', 1, "
           f"5, TIMESTAMP '2020-01-01', TIMESTAMP '2020-01-01', TIMESTAMP '2020-01-01', "
           f"TIMESTAMP '2020-01-01', TIMESTAMP '2020-01-02')",
           f"INSERT INTO job_attempts VALUES ({waiting}, 1, 1, 'w', TIMESTAMP '2020-01-01', "
           f"TIMESTAMP '2020-01-01', 'DONE', NULL, NULL)")
    [note] = maintenance.repair(queued).facts["job_tables_mended"]
    assert "the history's rows renumbered 4" in note
    with open_test_store(queued) as store:
        queue = store.jobs()
        assert [a["started_at"].year for a in queue.attempts(4)] == [2020]
        assert queue.attempts(waiting) == []
        [outcome] = Worker(store, queue).run_until_idle()
        assert (outcome.job_id, outcome.status) == (waiting, DONE)
        assert [a["attempt"] for a in queue.attempts(waiting)] == [1]


def _without_key(root: Path, *statements: str) -> None:
    """The jobs table rebuilt by hand without its primary key (CREATE TABLE AS)."""
    damage(root, "DROP INDEX jobs_status", "CREATE TABLE jobs_copy AS SELECT * FROM jobs",
           *statements, "DROP TABLE jobs", "ALTER TABLE jobs_copy RENAME TO jobs")


def test_a_job_held_twice_by_a_table_without_its_key_is_reported_and_run_once(
    queued: Path,
) -> None:
    """A row inserted twice: check saw nothing, the worker took both rows as one job, and
    every purge then failed on the history's key with a raw DuckDB ConstraintException."""
    _without_key(queued, "INSERT INTO jobs_copy SELECT * FROM jobs WHERE status = 'PENDING'",
                 "INSERT INTO jobs_copy SELECT * REPLACE ('PENDING' AS status) FROM jobs "
                 "WHERE status = 'DONE'")
    report = maintenance.check(queued, snapshots=False)
    assert [p.split(" (")[0] for p in report.problems] == [
        "job id(s) 1, 3 are each held by more than one row of jobs"]
    with pytest.raises(IntegrityError, match="more than one row of jobs"), \
            open_test_store(queued) as store:
        store.jobs()
    [note] = maintenance.repair(queued).facts["job_tables_mended"]
    assert "(5 rows), created anew with 3 of them" in note
    with open_test_store(queued) as store:
        queue = store.jobs()
        # the DONE copy of brakes.md is kept: it is not ingested again
        assert [(j["job_id"], j["status"]) for j in queue.jobs()] == [
            (1, DONE), (2, FAILED), (3, PENDING)]
        assert [o.job_id for o in Worker(store, queue).run_until_idle()] == [3]
        assert queue.purge_done() == 2
        assert [len(queue.attempts(i)) for i in (1, 2, 3)] == [1, 1, 1]


def test_two_jobs_sharing_an_id_in_the_queue_are_parted_each_with_its_attempts(
    queued: Path,
) -> None:
    [(failed,)] = catalog_rows(queued, "SELECT job_id FROM jobs WHERE status = 'FAILED'")
    _without_key(
        queued,
        f"INSERT INTO jobs_copy SELECT * REPLACE ('/elsewhere/other.md' AS source, 'other.md' AS "
        f"document_id, created_at + INTERVAL 1 HOUR AS created_at, 'DLQ' AS status) FROM jobs "
        f"WHERE job_id = {failed}",
        f"INSERT INTO job_attempts SELECT job_id, 2, 1, 'w', started_at + INTERVAL 2 HOUR, "
        f"finished_at + INTERVAL 2 HOUR, 'DLQ', 'gone', NULL FROM job_attempts "
        f"WHERE job_id = {failed}")
    [note, moved] = maintenance.repair(queued).facts["job_tables_mended"]
    assert "created anew with 4 of them" in note
    assert moved.startswith("jobs that shared an id were given new ones: 1 attempt row(s)")
    with open_test_store(queued) as store:
        queue = store.jobs()
        jobs = {j["document_id"]: j for j in queue.jobs()}
        assert jobs["pads.md"]["job_id"] == failed  # queued first, it keeps its id
        other = jobs["other.md"]["job_id"]
        assert other == 4 and jobs["other.md"]["status"] == DLQ
        assert [a["outcome"] for a in queue.attempts(failed)] == [FAILED]
        assert [(a["seq"], a["outcome"]) for a in queue.attempts(other)] == [(2, DLQ)]
