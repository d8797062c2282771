"""Store.add_source: each field is checked at the edge, and a refused one changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from enginelib.errors import InvalidInputError
from tests.helpers import open_test_store


@pytest.mark.parametrize(("fields", "message"), [
    # a DuckDB binder error (BackendError) in the upsert's COALESCE
    ({"peer_reviewed": [1]}, "source peer_reviewed must be True or False, got [1]"),
    # stored as true: DuckDB casts the string
    ({"peer_reviewed": "yes"}, "source peer_reviewed must be True or False, got 'yes'"),
    # a bare ValueError from float()
    ({"authority_score": "abc"}, "source authority_score must be a number, got 'abc'"),
    ({"authority_score": True}, "source authority_score must be a number, got True"),
    ({"authority_score": 101}, "source authority_score must be a finite number within 0..100"),
    ({"name": 5}, "source name must be a string, got int"),
    ({"evidence_level": {"level": "rct"}}, "source evidence_level must be a string, got dict"),
    ({"institution": "x" * 2_000}, "source institution is 2,000 characters; the maximum is 1,024"),
    ({"tier": ["gold"]}, "source tier ['gold'] is not one of ['gold', 'silver', 'bronze']"),
    ({"rank": 1}, "unknown source field(s) ['rank']"),
])
def test_a_source_field_of_the_wrong_type_or_range_is_refused(
    tmp_path: Path, fields: dict[str, Any], message: str,
) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.add_source("who", name="WHO", tier="gold", authority_score=90, peer_reviewed=True)
        with pytest.raises(InvalidInputError) as caught:
            store.add_source("who", **fields)
        assert message in str(caught.value)
        [row] = store._catalog.con.execute(
            "SELECT name, tier, authority_score, peer_reviewed FROM sources").fetchall()
    assert row == ("WHO", "gold", 90.0, True)


def test_good_source_fields_are_stored(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.add_source("who", name="WHO", tier="silver", evidence_level="rct",
                         authority_score=0, institution="UN", peer_reviewed=False)
        [row] = store._catalog.con.execute(
            "SELECT name, tier, evidence_level, authority_score, institution, peer_reviewed "
            "FROM sources").fetchall()
    assert row == ("WHO", "silver", "rct", 0.0, "UN", False)


_ROW_SQL = ("SELECT name, tier, evidence_level, authority_score, institution, peer_reviewed "
            "FROM sources WHERE source_id = ?")


def test_updating_a_source_changes_only_the_fields_given(tmp_path: Path) -> None:
    """Every field not passed was reset to NULL (peer_reviewed to false): naming a source's
    institution erased the tier and score the authority boosts read."""
    with open_test_store(tmp_path / "store") as store:
        store.add_source("who", name="WHO", tier="gold", evidence_level="rct",
                         authority_score=90, peer_reviewed=True)
        store.add_source("who", institution="UN")
        store.add_source("who", authority_score=75)
        [row] = store._catalog.con.execute(_ROW_SQL, ["who"]).fetchall()
    assert row == ("WHO", "gold", "rct", 75.0, "UN", True)


def test_a_field_given_as_none_is_cleared_and_a_new_source_takes_the_defaults(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.add_source("who", name="WHO", tier="gold", authority_score=90, peer_reviewed=True)
        store.add_source("who", tier=None, peer_reviewed=None)
        store.add_source("cdc", tier="silver")
        store.add_source("nih")
        store.add_source("nih")  # nothing named: nothing changes
        rows = store._catalog.con.execute(
            "SELECT source_id, name, tier, evidence_level, authority_score, institution, "
            "peer_reviewed FROM sources ORDER BY source_id").fetchall()
    assert rows == [("cdc", None, "silver", None, None, None, False),
                    ("nih", None, None, None, None, None, False),
                    ("who", "WHO", None, None, 90.0, None, False)]


def test_an_update_keeps_the_source_created_at(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.add_source("who", tier="gold")
        [(first,)] = store._catalog.con.execute("SELECT created_at FROM sources").fetchall()
        store.add_source("who", tier="silver")
        [(then,)] = store._catalog.con.execute("SELECT created_at FROM sources").fetchall()
    assert then == first
