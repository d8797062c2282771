"""A question about a law the store does not hold: the names a query gives (pure), and the
gate's refusal on a real store of the GDPR and the AI Act (DuckDB, hnswlib, Tantivy; hashing
embedder), in the default configuration, for every strategy, the CLI included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main as cli
from enginelib.embedder import HashingEmbedder
from enginelib.search import answerability, gate
from enginelib.search.named_sources import (
    MAX_NAMES,
    long_name_initials,
    named_sources,
    proper_name_initials,
    question_phrases,
    spelled_out,
)
from enginelib.types import LoadedDocument
from tests.test_query_understanding import FRENCH, REGULATORY

# -- the names a query gives (pure) -------------------------------------------------------


@pytest.mark.parametrize(("query", "name"), [
    ("Which loans does the Consumer Credit Directive cover?", "Consumer Credit Directive"),
    ("What must issuers publish under the Prospectus Regulation?", "Prospectus Regulation"),
    ("Is a bank in scope of the NIS2 Directive?", "NIS2 Directive"),
    ("What are the Consumer Credit Directive's rules on advertising?", "Consumer Credit Directive"),
    ("What does the ePrivacy Directive say about cookies?", "ePrivacy Directive"),
    ("How is a stablecoin treated under MiCA?", "MiCA"),
    ("What may a payment institution do pursuant to PSD2?", "PSD2"),
    ("How does the DORA regulation treat cloud providers?", "DORA"),
    ("Quelles obligations impose la directive NIS2 aux banques ?", "NIS2"),
    ("Le consentement est-il exigé selon la directive ePrivacy ?", "ePrivacy"),
    ("Que prévoit le règlement sur les services numériques pour les plateformes ?",
     "règlement sur les services numériques"),
    ("Selon eIDAS, qu'est-ce qu'un cachet électronique ?", "eIDAS"),
    # small words inside a name: no "Information Act"; a comma still ends it
    ("Can I see my file under the Freedom of Information Act?", "Freedom of Information Act"),
    ("Does the Prevention of Terrorism Act cover this?", "Prevention of Terrorism Act"),
    ("Under the Freedom, of Information Act?", "Information Act"),
    ("Que prévoit la directive sur les lanceurs d'alerte de la protection ?",
     "directive sur les lanceurs d'alerte"),
])
def test_a_law_named_the_way_laws_are_named_is_read(query: str, name: str) -> None:
    assert [source.name for source in named_sources(query)] == [name]


@pytest.mark.parametrize("query", [
    "What does this Regulation say about consent?",
    "Which Regulation applies to biometric data?",
    "When is a DPIA required?",
    "Which powers does the CNIL have over a controller?",
    "What is the role of the DPO in the company?",
    "Quelles sanctions la CNIL peut-elle prononcer ?",
    "What does the regulation say about fines?",
    "What does Privacy regulation say about fines?",
    "Le règlement prévoit-il des amendes ?",
    # "dire ... sur" is "say about": the "sur" is the verb's, not a title's
    "Que dit le règlement sur les données de santé ?",
    "Que dit la directive sur la notification des violations ?",
])
def test_words_that_are_no_laws_name_are_not_read_as_one(query: str) -> None:
    assert named_sources(query) == []


def test_a_spelled_out_name_is_also_its_initials_and_its_tail() -> None:
    (source,) = named_sources("Under the EU General Data Protection Regulation, who is liable?")
    assert source.name == "EU General Data Protection Regulation"
    assert {"General Data Protection Regulation", "GDPR"} <= set(source.spellings)
    assert source.core == "EU General Data Protection"
    (data_act,) = named_sources("Does the Data Act apply to cars?")
    assert data_act.spellings == ("Data Act",)  # two initials would match anything
    assert not data_act.core_is_phrase() and not data_act.core_is_acronym()


@pytest.mark.parametrize(("query", "names"), [
    ("what are the penalties under the digital services act?", ["digital services act"]),
    ("WHAT ARE THE PENALTIES UNDER THE DIGITAL SERVICES ACT?", ["DIGITAL SERVICES ACT"]),
    ("is the eu ai act's risk list final?", ["eu ai act"]),
    # its capital, and the name in lowercase
    ("What are the penalties under the digital services act?", ["digital services act"]),
    ("When does the joint controller act as a processor?", []),
    # "act" the verb, a name's words not led by "the" / "under", one word: no name
    ("when does the joint controller act as a processor?", []),
    ("when does the joint controller act quickly?", []),
    ("MUST A PROCESSOR ACT ONLY ON THE DOCUMENTED INSTRUCTIONS OF THE CONTROLLER?", []),
    ("how should data controllers act?", []),
    ("what does the regulation of ai cover?", []),
    ("does the data act apply?", []),
])
def test_a_question_without_capitals_to_read_names_a_law_after_the(
        query: str, names: list[str]) -> None:
    assert [source.name for source in named_sources(query)] == names


@pytest.mark.parametrize(("query", "names"), [
    ("Does Regulation 2016/679 apply to small companies?", []),
    ("Explain Regulation 2016/679 rules on consent", []),
    # all in capitals no capital tells a name: two words after "THE" / "UNDER" make one
    ("HOW DOES GDPR REGULATION APPLY TO SMALL FIRMS?", []),
    ("Fines Under GDPR Regulation", ["GDPR Regulation"]),
    ("HOW DOES THE DIGITAL SERVICES ACT TREAT ADS?", ["DIGITAL SERVICES ACT"]),
    ("What does the IT Act say about data theft?", ["IT Act"]),
])
def test_a_question_word_with_a_capital_is_not_part_of_a_name(
        query: str, names: list[str]) -> None:
    # the capital is the sentence's (its first word, title case, all capitals)
    assert [source.name for source in named_sources(query)] == names


def test_a_small_word_never_begins_a_name_or_its_core() -> None:
    (source,) = named_sources("Can I see my file under the Freedom of Information Act?")
    assert "of Information Act" not in source.spellings
    assert [tail.name for tail in source.core_tails()] == ["Freedom of Information", "Information"]


def test_a_pasted_page_naming_hundreds_of_laws_reads_the_first_ones() -> None:
    # each name is looked up in the index: a page of 19,000 characters named 544
    page = " and ".join(f"under the Alpha{k} Beta{k} Act" for k in range(600))
    names = named_sources(page)
    assert [source.name for source in names] == [f"Alpha{k} Beta{k} Act"
                                                 for k in range(MAX_NAMES)]


def test_a_name_read_twice_counts_once() -> None:
    sources = named_sources("Under the NIS2 Directive and under NIS2, who reports incidents?")
    assert [source.name for source in sources] == ["NIS2 Directive"]


def test_the_phrases_a_question_asks_in_leave_out_the_names_it_gives() -> None:
    query = "Are toys under the Toy Safety Directive's rules high-risk AI systems?"
    phrases = question_phrases(query, ["Toy Safety Directive"])
    assert {"high-risk AI", "AI systems"} <= set(phrases)
    assert not any("Toy" in phrase or "Safety" in phrase for phrase in phrases)
    assert not any(phrase.startswith("s ") for phrase in phrases)  # the possessive's
    # a body's proper name is a name, not a term the store asks in
    board = question_phrases("What is the European Data Innovation Board's role under the DGA?",
                             ["DGA"])
    assert board == []
    # one small word may join the two ("protection des données", "right to erasure")
    assert "protection des données" in question_phrases(
        "Selon eIDAS, que devient la protection des données ?", ["eIDAS"])
    assert "right to erasure" in question_phrases("Under MiCA, is there a right to erasure?",
                                                  ["MiCA"])
    # a comma parts two words
    assert question_phrases("Under MiCA, issuers, reserves?", ["MiCA"]) == []


# -- the gate, on the GDPR and the AI Act ---------------------------------------------------


@pytest.fixture(scope="module")
def laws(tmp_path_factory: pytest.TempPathFactory) -> enginelib.Store:
    rows = [json.loads(line) for line in REGULATORY.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    store = enginelib.open(tmp_path_factory.mktemp("named") / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([LoadedDocument(id=r["_id"], text=r["text"], title=r["title"],
                                           language="en") for r in rows])
    return store


OTHER_LAWS = [
    "What are the penalties under the Digital Services Act?",
    "Which transactions does the Consumer Credit Directive exempt?",
    "How must a stablecoin issuer hold reserves under MiCA?",
    "What does the Accessibility Act require from online shops?",
    "How does the DORA regulation treat cloud providers?",
    "What does the EU Data Act say about cloud switching in the EU?",
]


@pytest.mark.parametrize("query", OTHER_LAWS)
@pytest.mark.parametrize("options", [{}, {"strategy": "vector"}, {"strategy": "fulltext"},
                                     {"preset": "keyword"}])
def test_a_question_about_a_law_the_store_lacks_is_refused_by_default(
        laws: enginelib.Store, query: str, options: dict[str, str]) -> None:
    response = laws.search(query, **options)
    assert not response.ok and response.gate is not None
    assert response.gate.reason_code == gate.NAMED_SOURCE_ABSENT
    assert response.gate.evidence.absent_sources == response.gate.evidence.named_sources
    (name,) = response.gate.evidence.absent_sources
    assert f"'{name}'" in (response.reason or "") and "no passage" in (response.reason or "")


LACKED = "a law the store lacks"
HELD = "the store's laws"


@pytest.mark.parametrize(("query", "about"), [
    # typed without capitals, these were answered: no name was read, and in capitals
    # "DIGITAL" and "SERVICES" looked like acronyms the store holds
    ("what are the penalties under the digital services act?", LACKED),
    ("WHAT ARE THE PENALTIES UNDER THE DIGITAL SERVICES ACT?", LACKED),
    ("What are the penalties under the digital services act?", LACKED),
    ("which transactions does the consumer credit directive exempt?", LACKED),
    ("WHAT DOES THE EU DATA ACT SAY ABOUT CLOUD SWITCHING IN THE EU?", LACKED),
    ("HOW MUST A STABLECOIN ISSUER HOLD RESERVES UNDER MICA?", LACKED),
    ("what does the general data protection regulation say about profiling?", HELD),
    ("UNDER THE GENERAL DATA PROTECTION REGULATION, WHO IS A CONTROLLER?", HELD),
    ("UNDER THE GDPR, WHEN IS CONSENT VALID?", HELD),
    ("which practices does the eu ai act prohibit?", HELD),
    ("What does the general data protection regulation say about profiling?", HELD),
    ("HOW DOES GDPR REGULATION APPLY TO SMALL FIRMS?", HELD),
    ("is an ai safety component of a machine covered by the machinery regulation high-risk?",
     HELD),
    ("IS AN AI SAFETY COMPONENT OF A MACHINE COVERED BY THE MACHINERY REGULATION HIGH-RISK?",
     HELD),
    # in title case every word has a capital: the phrases asked in ("safety component") were
    # all skipped as a proper name's, and the question refused for the Machinery Regulation
    ("Is An AI Safety Component Of A Machine Covered By The Machinery Regulation High-Risk?",
     HELD),
])
def test_a_question_in_lowercase_capitals_or_title_case_is_read_for_the_law_it_names(
        laws: enginelib.Store, query: str, about: str) -> None:
    response = laws.search(query)
    assert response.gate is not None
    assert (response.gate.reason_code == gate.NAMED_SOURCE_ABSENT) == (about == LACKED)


def _held(store: enginelib.Store, query: str) -> None:
    """``query`` names a law, and is not refused for it: the store holds it."""
    response = store.search(query)
    assert response.gate is not None and response.gate.evidence.named_sources
    assert response.gate.reason_code != gate.NAMED_SOURCE_ABSENT
    assert response.gate.evidence.absent_sources != response.gate.evidence.named_sources


@pytest.mark.parametrize("query", [
    "What are the penalties under the GDPR?",
    "Under GDPR, when is consent valid?",
    "Under the General Data Protection Regulation, who is a controller?",
    "Under the EU General Data Protection Regulation, who is a processor?",
    "What does the Data Protection Regulation say about children's consent?",
    "Which practices does the EU AI Act prohibit?",
    "What does the AI Regulation say about high-risk systems?",
    "Under the GPDR, what is the right to erasure?",  # a typo of the name
    "Does the GDPR or the Digital Services Act govern targeted advertising?",  # one is held
    # the question's own words lead the name: its tail is the store's
    "Summarize GDPR Regulation rules on consent",
    # a body the texts write out in full ("the European Data Protection Board")
    "Under the EDPB guidelines, when is consent freely given?",
])
def test_a_question_naming_the_stores_own_laws_is_not_refused_for_the_name(
        laws: enginelib.Store, query: str) -> None:
    _held(laws, query)


@pytest.mark.parametrize("query", [
    "Is an AI safety component of a machine covered by the Machinery Regulation high-risk?",
    "Which serious incidents must be notified for AI systems that are devices under the "
    "Medical Devices Regulation?",
    "What must providers of general-purpose AI models do under the Copyright Directive?",
])
def test_a_question_on_a_law_the_store_cites_asked_in_its_own_terms_is_answered(
        laws: enginelib.Store, query: str) -> None:
    # The AI Act cites those laws by number and subject, never by these names; the question
    # asks what the AI Act says of them, in its terms ("AI systems", "safety component").
    response = laws.search(query)
    assert response.gate is not None
    evidence = response.gate.evidence
    assert evidence.absent_sources == evidence.named_sources != ()
    assert evidence.own_terms and response.gate.reason_code != gate.NAMED_SOURCE_ABSENT
    runner = CliRunner(env={"ENGINELIB_EMBEDDER": "hashing-64"})
    explained = runner.invoke(cli, ["search", query, "--store", str(laws.path), "--explain"])
    assert "asked in the store's terms: " in explained.output, explained.output


def test_a_pasted_page_naming_a_law_the_store_lacks_looks_up_a_questions_phrases(
        laws: enginelib.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # each phrase is one phrase query: 2,000 distinct pairs were 2,000 queries on one search
    looked_up: list[str] = []
    count = answerability._phrase_count

    def counted(store: enginelib.Store, phrase: str, most: int, **options: bool) -> int:
        looked_up.append(phrase)
        return count(store, phrase, most, **options)

    monkeypatch.setattr(answerability, "_phrase_count", counted)
    pasted = " ".join(f"clause{k}" for k in range(2_500))[:19_000]
    response = laws.search(f"Under the Digital Services Act, {pasted}")
    assert response.gate is not None and response.gate.reason_code == gate.NAMED_SOURCE_ABSENT
    assert 0 < len([p for p in looked_up if "clause" in p]) <= answerability.MAX_PHRASES


def test_a_phrase_only_its_typo_guess_makes_the_stores_is_no_term_of_it(
        laws: enginelib.Store) -> None:
    # "persnal data" is looked up as typed: read "personal data", the store's most common
    # phrase, the engine's guess would make a near miss the store's question
    response = laws.search("Does the Chips Act say how persnal data is kept?")
    assert response.gate is not None and response.gate.evidence.own_terms == ()
    assert response.gate.reason_code == gate.NAMED_SOURCE_ABSENT


def test_the_refusal_names_the_law_as_the_user_wrote_it(laws: enginelib.Store) -> None:
    # the search corrects "Chips" to a word the corpus holds; the law asked about is still
    # the Chips Act
    response = laws.search("What does the Chips Act fund?")
    assert response.gate is not None and response.gate.reason_code == gate.NAMED_SOURCE_ABSENT
    assert response.gate.evidence.named_sources == ("Chips Act",)
    assert "'Chips Act'" in (response.reason or "")


def test_with_the_gate_off_the_name_refuses_nothing(laws: enginelib.Store) -> None:
    response = laws.search(OTHER_LAWS[0], answerability_threshold=None)
    assert response.ok and response.hits


def test_across_languages_a_law_goes_by_its_translated_name(tmp_path: Path) -> None:
    # The French text says "RGPD", never "GDPR": an English question over it is not refused
    # for a name it translates, a French one naming another law is.
    store = enginelib.open(tmp_path / "fr", embedder=HashingEmbedder(64))
    store.ingest_documents([
        LoadedDocument(id=doc_id, text=f"{title}\n\nRGPD. {text}", title=title, language="fr")
        for doc_id, title, text in FRENCH
    ])
    english = store.search("Under the GDPR, when must a data breach be notified?")
    assert english.gate is not None and english.gate.evidence.cross_lingual
    assert english.gate.reason_code != gate.NAMED_SOURCE_ABSENT
    held = store.search("Selon le RGPD, quand faut-il notifier une violation de données ?")
    assert held.gate is not None and held.gate.reason_code != gate.NAMED_SOURCE_ABSENT
    other = store.search("Selon la directive NIS2, quand faut-il notifier une violation ?")
    assert other.gate is not None and other.gate.reason_code == gate.NAMED_SOURCE_ABSENT
    store.close()


@pytest.fixture(scope="module")
def french(tmp_path_factory: pytest.TempPathFactory) -> enginelib.Store:
    store = enginelib.open(tmp_path_factory.mktemp("fr") / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([LoadedDocument(id=doc_id, text=f"{title}\n\n{text}", title=title,
                                           language="fr") for doc_id, title, text in FRENCH])
    return store


@pytest.mark.parametrize("query", [
    "Que dit le règlement général sur la protection des données sur le délégué ?",
    "Le règlement sur la protection des données s'applique-t-il aux organismes publics ?",
    "Le règlement sur la protection des données oblige-t-il à désigner un délégué ?",
])
def test_a_french_subject_that_runs_into_the_question_is_still_the_stores_law(
        french: enginelib.Store, query: str) -> None:
    # the subject's end is where the question's own words begin ("sur le ...", a verb)
    _held(french, query)
    other = french.search("Le règlement sur les services numériques s'applique-t-il aux "
                          "organismes publics ?")
    assert other.gate is not None and other.gate.reason_code == gate.NAMED_SOURCE_ABSENT


def test_what_a_french_law_says_about_a_topic_is_not_a_title(french: enginelib.Store) -> None:
    about = french.search("Que dit le règlement sur la notification des violations ?")
    assert about.gate is not None and about.gate.reason_code != gate.NAMED_SOURCE_ABSENT
    # a second "sur" is the verb's: the first one's subject is the title
    titled = french.search("Que dit le règlement sur les services numériques sur la "
                           "notification des violations ?")
    assert titled.gate is not None and titled.gate.reason_code == gate.NAMED_SOURCE_ABSENT


def test_the_cli_exits_1_and_names_the_law(laws: enginelib.Store) -> None:
    runner = CliRunner(env={"ENGINELIB_EMBEDDER": "hashing-64"})
    args = ["search", OTHER_LAWS[0], "--store", str(laws.path)]
    plain = runner.invoke(cli, args)
    assert plain.exit_code == 1, plain.output
    assert "'Digital Services Act'" in plain.output
    result = runner.invoke(cli, [*args, "--json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["gate"]["reason_code"] == gate.NAMED_SOURCE_ABSENT
    assert out["gate"]["evidence"]["absent_sources"] == ["Digital Services Act"]
    explained = runner.invoke(cli, [*args, "--explain"])
    assert "gate: refuse (NAMED_SOURCE_ABSENT)" in explained.output
    assert "not in the store: Digital Services Act" in explained.output


# -- a short name official texts never write ----------------------------------------------


def test_the_initials_of_the_law_names_a_text_states() -> None:
    french = ("RÈGLEMENT (UE) 2016/679 relatif à la protection des personnes physiques "
              "(règlement général sur la protection des données)")
    assert "RGPD" in long_name_initials(french)
    assert "RIA" in long_name_initials("le règlement sur l'intelligence artificielle dispose")
    assert "GDPR" in long_name_initials("on the free movement of such data (General Data "
                                        "Protection Regulation)")
    assert long_name_initials("This Regulation protects personal data.") == set()


def test_an_acronym_of_the_name_the_text_states_is_the_stores_law(tmp_path: Path) -> None:
    # An official text states "(règlement général sur la protection des données)" once and
    # never "RGPD", the name its readers use
    store = enginelib.open(tmp_path / "fr", embedder=HashingEmbedder(64))
    opening = ("Règlement (UE) 2016/679 du Parlement européen et du Conseil relatif à la "
               "protection des personnes physiques à l'égard du traitement des données à "
               "caractère personnel (règlement général sur la protection des données)")
    text = "\n\n".join([opening, *(f"{title}\n\n{body}" for _, title, body in FRENCH)])
    store.ingest_documents([LoadedDocument(id="rgpd", title="Règlement (UE) 2016/679",
                                           text=text, language="fr")])
    held = store.search("Selon le RGPD, quand faut-il notifier une violation de données ?")
    assert held.gate is not None and held.gate.reason_code != gate.NAMED_SOURCE_ABSENT
    # French readers call the AI Act by its English name, which its French text never writes
    english_name = store.search("Selon l'AI Act, quand faut-il notifier une violation ?")
    assert english_name.gate is not None
    assert english_name.gate.reason_code != gate.NAMED_SOURCE_ABSENT
    other = store.search("Selon eIDAS, quand faut-il notifier une violation de données ?")
    assert other.gate is not None and other.gate.reason_code == gate.NAMED_SOURCE_ABSENT
    store.close()


def test_an_acronym_the_passages_write_out_is_spelled_by_them() -> None:
    officer = "The controller shall designate a data protection officer where ..."
    assert spelled_out("DPO", officer) and spelled_out("dpo", officer)
    assert not spelled_out("DSA", officer)
    assert not spelled_out("PSD2", "payment services directive 2")  # a code, no words
    assert proper_name_initials("advice of the European Data Protection Board on") == {"EDPB"}
    assert proper_name_initials("This Regulation applies.") == set()
