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
