"""Times on a server not set to UTC: filter bounds and stored times are UTC all the same."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib import manifest as mf
from enginelib import snapshot_files as sf
from enginelib import utc
from enginelib.catalog import utcnow
from enginelib.cli.main import main
from enginelib.core.layout import SNAPSHOT_INFO_NAME, SNAPSHOTS_DIR
from enginelib.snapshots import list_snapshots
from tests.helpers import doc, open_test_store

PLUS_TWO = timezone(timedelta(hours=2))


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process in New York (UTC-5 in March): DuckDB's session zone follows ``TZ`` for
    every connection opened meanwhile."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.fixture
def reports(tmp_path: Path, new_york: None) -> Iterator[enginelib.Store]:
    """Two reports, 07:00 and 09:00 UTC on March 1 2024, given with a Z."""
    store = open_test_store(tmp_path / "store")
    store.ingest_documents([
        doc("early", "Brake pads wear, early report.",
            metadata={"created_at": "2024-03-01T07:00:00Z", "truth_level": "L1"}),
        doc("late", "Brake pads wear, late report.",
            metadata={"created_at": "2024-03-01T09:00:00Z", "truth_level": "L1"}),
    ])
    yield store
    store.close()


def found(store: enginelib.Store, **bounds: object) -> set[str]:
    hits = store.search("brake pads", strategy="fulltext", answerability_threshold=None,
                        log=False, filters={"created_at": bounds}).hits
    return {h.document_id for h in hits}


def test_a_bound_with_an_offset_is_compared_in_utc(reports: enginelib.Store) -> None:
    # 10:00+02:00 is 08:00 UTC, between the two. It was compared with the stored times read
    # in New York's zone (07:00 as 12:00 UTC): "lt" found nothing, "gte" found both.
    assert found(reports, lt="2024-03-01T10:00:00+02:00") == {"early"}
    assert found(reports, gte="2024-03-01T10:00:00+02:00") == {"late"}
    assert found(reports, gt=datetime(2024, 3, 1, 10, tzinfo=PLUS_TWO)) == {"late"}
    assert found(reports, lte="2024-03-01T03:00:00-05:00") == {"early"}  # New York's own


def test_a_bound_without_an_offset_is_utc(reports: enginelib.Store) -> None:
    assert found(reports, gte="2024-03-01T08:00:00") == {"late"}
    assert found(reports, lt=datetime(2024, 3, 1, 8)) == {"early"}
    assert found(reports, gte="2024-03-01", lte="2024-03-01") == {"early", "late"}


def test_a_bound_past_the_last_utc_instant_is_an_open_end(reports: enginelib.Store) -> None:
    # 9999-12-31T23:00-05:00 is in the year 10000 in UTC, past what a datetime holds
    assert found(reports, lte="9999-12-31T23:00:00-05:00") == {"early", "late"}
    assert found(reports, gt="9999-12-31T23:00:00-05:00") == set()


def test_a_bound_before_the_first_utc_instant_is_an_open_end(reports: enginelib.Store) -> None:
    # 0001-01-01T00:00+05:00 is in the year 0 in UTC, before what a datetime holds
    assert found(reports, gte="0001-01-01T00:00:00+05:00") == {"early", "late"}
    assert found(reports, lt="0001-01-01T00:00:00+05:00") == set()


@pytest.mark.parametrize("moment", [
    "0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00",
    datetime(1, 1, 1, tzinfo=PLUS_TWO),
])
def test_a_created_at_outside_the_utc_years_is_refused(tmp_path: Path, moment: object) -> None:
    # its UTC falls outside years 1 to 9999: that was a raw OverflowError from astimezone,
    # out of the whole ingest; now the document is skipped, as one with a garbled date is
    with open_test_store(tmp_path / "store") as store:
        report = store.ingest_documents([
            doc("far", "Brake pads wear.", metadata={"created_at": moment}),
            doc("near", "Rotors warp.", metadata={"created_at": "2024-03-01T10:00:00+02:00"}),
        ])
        assert report.added == ("near",)
        [skipped] = report.skipped
        assert skipped.path == "far"
        assert f"created_at {moment!r} falls outside years 1 to 9999" in skipped.reason
        assert store.stats()["documents"] == 1


def test_the_cli_filter_takes_an_offset(tmp_path: Path, reports: enginelib.Store) -> None:
    reports.close()
    result = CliRunner().invoke(main, [
        "search", "brake pads", "--store", str(tmp_path / "store"), "--strategy", "fulltext",
        "--filter", "created_at.gte=2024-03-01T10:00:00+02:00", "--no-gate", "--json",
    ], env={"ENGINELIB_EMBEDDER": "hashing-64"})
    assert result.exit_code == 0, result.output
    assert {h["document_id"] for h in json.loads(result.output)["hits"]} == {"late"}


def test_a_source_is_stamped_in_utc(tmp_path: Path, new_york: None) -> None:
    # sources.created_at took DuckDB's current_timestamp: New York's clock, 5 hours behind
    with open_test_store(tmp_path / "store") as store:
        before = utcnow()
        store.add_source("who", name="WHO", tier="gold")
        after = utcnow()
        (stamp,) = store._catalog.con.execute(
            "SELECT created_at FROM sources WHERE source_id = 'who'").fetchall()[0]
        # the default a hand-made row gets is UTC too (stores made from now on)
        store._catalog.con.execute("INSERT INTO sources (source_id) VALUES ('by-hand')")
        (default,) = store._catalog.con.execute(
            "SELECT created_at FROM sources WHERE source_id = 'by-hand'").fetchall()[0]
    assert before <= stamp <= after
    assert before <= default <= utcnow()


def test_the_query_log_is_stamped_in_utc(tmp_path: Path, new_york: None) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([doc("pads", "Brake pads wear under 3 mm.")])
        before = utcnow()
        store.search("brake pads", answerability_threshold=None)
        store.query_log.flush(store._catalog)
        # an entry stamped with an offset: DuckDB's cast to TIMESTAMP dropped the offset
        store._catalog.log_queries([({
            "query_text": "rotor", "strategy": "hybrid", "filters": None, "latency_ms": 1.0,
            "chunks_retrieved": 0, "reranked_count": 0, "result_count": 0, "status": "OK",
            "created_at": datetime(2024, 3, 1, 10, tzinfo=PLUS_TWO)}, [])])
        logged = {row["query_text"]: row["created_at"]
                  for row in store._catalog.logged_queries()}
    assert before <= logged["brake pads"] <= utcnow()
    assert logged["rotor"] == datetime(2024, 3, 1, 8)


def _utc_stamp(stamp: str, before: datetime) -> None:
    moment = datetime.fromisoformat(stamp)
    assert stamp.endswith("+00:00"), stamp
    assert moment.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= moment <= datetime.now(UTC)


def test_the_manifest_and_a_snapshot_are_stamped_in_utc(tmp_path: Path, new_york: None) -> None:
    # both took datetime.now(): New York's clock, 5 hours behind, with no zone said
    before = datetime.now(UTC)
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([doc("pads", "Brake pads wear under 3 mm.")])
        info = store.create_snapshot("s1")
    manifest = mf.read_manifest(tmp_path / "store")
    assert manifest is not None
    _utc_stamp(manifest.created_at, before)
    _utc_stamp(info.created_at, before)
    [listed] = list_snapshots(tmp_path / "store")
    assert listed.created_at == info.created_at


def test_a_snapshot_stamped_in_local_time_still_lists_in_order(tmp_path: Path) -> None:
    # Tokyo, 9 hours ahead: a snapshot written before stamps were UTC says local time, so its
    # text sorted after a newer UTC one, and retention would have pruned the newer one first
    tokyo = timezone(timedelta(hours=9))
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([doc("pads", "Brake pads wear under 3 mm.")])
        store.create_snapshot("old")
        store.create_snapshot("new")
    old = tmp_path / "store" / SNAPSHOTS_DIR / "old"
    data = sf.read_info(old)
    an_hour_before = datetime.fromisoformat(sf.read_info(old.parent / "new")["created_at"]) \
        - timedelta(hours=1)
    data["created_at"] = an_hour_before.astimezone(tokyo).replace(tzinfo=None).isoformat()
    (old / SNAPSHOT_INFO_NAME).write_text(json.dumps(sf.seal(data)), encoding="utf-8")
    with _process_zone("Asia/Tokyo"):
        listed = list_snapshots(tmp_path / "store")
    assert [s.name for s in listed] == ["old", "new"]
    assert listed[0].created_at == data["created_at"]  # read as it was written


@contextmanager
def _process_zone(zone: str) -> Iterator[None]:
    """The whole process in ``zone`` (``TZ``, which time's and DuckDB's local clocks read),
    put back as it was after."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = previous
        time.tzset()


def _clocks_stopped_at(instant: datetime) -> tuple[type[date], type[datetime]]:
    """``date`` and ``datetime`` whose ``today()`` and ``now()`` answer ``instant``: the date
    there in the process's zone (``TZ``), and the moment in the zone asked for."""

    class LocalDate(date):
        @classmethod
        def today(cls) -> date:
            return datetime.fromtimestamp(instant.timestamp()).date()

    class Clock(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:
            return instant.astimezone(tz) if tz else datetime.fromtimestamp(instant.timestamp())

    return LocalDate, Clock


@pytest.mark.parametrize(("zone", "instant", "expected"), [
    # 21:30 on November 30 in New York: named 2026.11.0, created_at December 1
    ("America/New_York", datetime(2026, 12, 1, 2, 30, tzinfo=UTC), "2026.12"),
    # 02:00 on December 1 in Kiritimati (UTC+14): named 2026.12.0, created_at November 30
    ("Pacific/Kiritimati", datetime(2026, 11, 30, 12, 0, tzinfo=UTC), "2026.11"),
])
def test_an_auto_named_snapshot_is_named_for_the_utc_month(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zone: str, instant: datetime, expected: str,
) -> None:
    """The clocks stopped at one instant: the local one (``date.today()``) that names read,
    the UTC one stamps read; the name's month was the server's, created_at's UTC's."""
    local_date, clock = _clocks_stopped_at(instant)
    monkeypatch.setattr(mf, "date", local_date, raising=False)  # what names read before
    monkeypatch.setattr(utc, "datetime", clock)
    with _process_zone(zone):
        with open_test_store(tmp_path / "store") as store:
            store.ingest_documents([doc("pads", "Brake pads wear under 3 mm.")])
            info = store.create_snapshot()
        made = CliRunner().invoke(main, ["snapshot", "create", "--store", str(tmp_path / "store"),
                                         "--json"])
    assert made.exit_code == 0, made.output
    assert info.name == f"{expected}.0"
    assert json.loads(made.output)["name"] == f"{expected}.1"
    assert datetime.fromisoformat(info.created_at).strftime("%Y.%m") == expected
    assert info.index_version == f"{expected}.0"
