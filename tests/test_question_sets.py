"""The regulatory question sets and the French text the evaluation harness reads: sizes, ids
that exist in the corpus each set is asked over, a train/test split, and no duplicates."""

from __future__ import annotations

import json

import pytest

from benchmarks import regulatory_eval as ev
from tests.helpers import DATASETS


def _english_ids() -> set[str]:
    with open(DATASETS / "regulatory" / "corpus.jsonl", encoding="utf-8") as handle:
        return {json.loads(line)["_id"] for line in handle}


@pytest.mark.parametrize("name, minimum", [
    ("regulatory_en", 60), ("regulatory_fr", 60), ("regulatory_en_over_fr", 60),
    ("off_domain_en", 40), ("off_domain_fr", 40),
])
def test_question_sets_are_large_enough_split_and_unique(name: str, minimum: int) -> None:
    questions = ev.load_questions(name)
    assert len(questions) >= minimum
    assert len({q["id"] for q in questions}) == len(questions)
    assert len({q["question"] for q in questions}) == len(questions)
    assert {q["split"] for q in questions} == {"train", "test"}
    if name.startswith("off_domain"):
        assert all(q["expected"] == [] for q in questions)
    else:
        assert all(q["expected"] for q in questions)


def test_expected_ids_exist_in_the_corpus_each_set_is_asked_over() -> None:
    english = _english_ids()
    french = {d.id for d in ev.french_units()}
    for q in ev.load_questions("regulatory_en"):
        assert set(q["expected"]) <= english, q
    for name in ("regulatory_fr", "regulatory_en_over_fr"):
        for q in ev.load_questions(name):
            assert set(q["expected"]) & french, q  # at least one expected unit is in the French text


def test_french_text_has_the_english_structure() -> None:
    units = ev.french_units()
    articles = [u for u in units if u.id.startswith("gdpr-art-")]
    recitals = [u for u in units if u.id.startswith("gdpr-rct-")]
    assert [u.id for u in articles] == [f"gdpr-art-{n}" for n in range(1, 24)]
    assert len(recitals) == 173 and all(u.language == "fr" for u in units)
    erasure = next(u for u in articles if u.id == "gdpr-art-17")
    assert "effacement" in (erasure.title or "") and erasure.text.startswith("1. La personne concernée")
