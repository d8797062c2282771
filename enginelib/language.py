"""A tiny language guesser: English / French for picking stemmers and text-search configs,
and a few other EU languages on the query side, to tell a question asked in them from
the store's English or French text (the gate and fusion then read it as cross-lingual)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-zàâçéèêëîïôûùüÿœæ']+", re.IGNORECASE)
# Any letters (ä, ö, ß, ñ, ò...), apostrophes split off: "dell'IA" is "dell", "IA".
_OTHER_WORD = re.compile(r"[^\W\d_]+")
_FRENCH = frozenset(
    "le la les des du de un une et est sont dans pour sur avec par au aux ce cette qui que "
    "pas plus être été ou leur leurs nous vous il elle ils elles ne se sa son ses".split()
)
_ENGLISH = frozenset(
    "the of and to in is are was were for on with by as that this be at from or an which "
    "not have has it its their been".split()
)
DEFAULT_LANGUAGE = "en"

# Function words of other EU languages that English and French do not hold as words ("de",
# "la", "die", "was", "per", "come", "si", "ai", "i" are left out: each is a word of English
# or French text too). One listed under two of them counts for both and decides neither. A
# question in one of these languages is told by them.
_OTHER: dict[str, frozenset[str]] = {
    "de": frozenset(
        "der das und ist sind nicht ein eine einen einem einer eines mit von zu auf für bei "
        "wer wie wann welche welcher welches welchen welchem muss müssen kann können darf "
        "dürfen haben wird werden oder auch sich ich wir ihr ihre ihrer ihren dem den im zum "
        "zur nach über unter aus vom durch ob wenn dass sein seine seiner nur noch schon "
        "sehr wenig viel viele alle kein keine keinen diese dieser dieses ohne gegen um da "
        "nächste".split()),
    "es": frozenset(
        "el los las del al por para está están cuando cuándo qué cuál cuáles quién debe "
        "deben puede pueden hay también este esta estos estas sus como cómo más pero una "
        "unos unas sin hasta es cuánto cuánta cuántos cuántas cada su".split()),
    "it": frozenset(
        "il gli della delle dello degli dei del al nel nella nelle nei sono è che quando "
        "quali quale chi deve devono può possono essere anche questo questa questi queste "
        "alla alle allo agli dal dalla dai sul sulla sull dell nell all dall ed oppure "
        "perché cosa una di ci quanto quanta quanti quante da su e".split()),
    "nl": frozenset(
        "het een niet zijn wanneer moet moeten welke worden wordt voor bij ook kunnen "
        "mag mogen wat hoe wie wij onze hun dat deze dit naar van".split()),
    "pt": frozenset(
        "os não em um uma são quando deve devem pode podem também nas nos dos pelo pela "
        "pelos pelas ao aos seu sua seus suas para como quais qual é da cada e".split()),
}
# French function words that Spanish, Italian or Portuguese also use: they do not count for
# French against those languages.
_FRENCH_SHARED = frozenset("de la que se un il ne son ou sa".split())
# A question is in one of them only with at least this many of its words, and more than
# of English's, French's own or any other's: one loanword ("über", "el") says nothing.
MIN_OTHER_WORDS = 2


def detect_language(text: str, sample_chars: int = 20_000, min_words: int = 3) -> str:
    """"fr" when French function words clearly outnumber English ones, else "en".

    A user who knows better passes ``language=`` at ingest; this only picks a stemmer.
    ``min_words``: French function words needed at least (a short query has one or two).
    """
    words = [w.lower() for w in _WORD.findall(text[:sample_chars])]
    french = sum(w in _FRENCH for w in words)
    english = sum(w in _ENGLISH for w in words)
    if french > english * 1.2 and french >= min_words:
        return "fr"
    return DEFAULT_LANGUAGE


def query_language(text: str) -> str | None:
    """The language of a short query, or None when it has no function word of any language
    known here ("plaquettes frein 1K0615301M", "GDPR fines"): keywords say nothing of it.
    English or French as ``detect_language`` says, unless ``other_language`` finds another.
    A keyword query with French's own small words, "à" or an elided article ("droit à
    l'effacement", "délai d'effacement"), is French: no other language here writes them."""
    other = other_language(text)
    if other is not None:
        return other
    words = [w.lower() for w in _WORD.findall(text)]
    if not any(w in _FRENCH or w in _ENGLISH or w in _QUESTION_WORDS for w in words):
        return "fr" if _FRENCH_MARK.search(text) else None
    return detect_language(text, min_words=1)


# Question words, auxiliaries and pronouns that tell a question's language though its
# text holds no article ("What legal bases make processing lawful besides consent?"). Read
# by queries only: ingest's passage guess keeps its own lists.
_QUESTION_WORDS = frozenset(
    "what who whom whose when where why how does do did must can could should would shall "
    "may might my our your we you they i if than into about under there these those "
    "quel quelle quels quelles comment combien pourquoi quand où doit doivent peut peuvent "
    "faut je".split()
)


# "à", or an elided French article or pronoun ("l'", "d'", "qu'"...) with either apostrophe.
_FRENCH_MARK = re.compile(
    r"(?<![^\W\d_])(?:à(?![^\W\d_])|(?:l|d|qu|n|s|c|j|m|t|jusqu|lorsqu|puisqu)['’](?=[^\W\d_]))",
    re.IGNORECASE)


def other_language(text: str) -> str | None:
    """German, Spanish, Italian, Dutch or Portuguese when the text's function words say so
    clearly (``MIN_OTHER_WORDS``, more than any other language's), else None."""
    words = [w.lower() for w in _OTHER_WORD.findall(text)]
    counts = {language: sum(w in listed for w in words) for language, listed in _OTHER.items()}
    ranked = sorted(counts.values(), reverse=True)
    best = max(counts, key=lambda language: counts[language])
    if ranked[0] < MIN_OTHER_WORDS or ranked[0] == ranked[1]:
        return None
    english = sum(w in _ENGLISH for w in words)
    french = sum(w in _FRENCH and w not in _FRENCH_SHARED for w in words)
    return best if ranked[0] > max(english, french) else None


def function_words(language: str | None) -> frozenset[str]:
    """The function words listed for German, Spanish, Italian, Dutch or Portuguese (empty
    for any other language: English and French stop words are the text index's own)."""
    return _OTHER.get(language or "", frozenset())


HIT_SAMPLE_CHARS = 2000  # of a hit's text, read for its language


def hit_language(recorded: str | None, text: str, asked: str | None) -> str | None:
    """The language to compare a query's (``asked``) with for one hit: the one its document
    recorded at ingest (English or French: ingest tells no other), unless the query is in another
    language and the hit's own words say they are that language too (a German question
    over German text is not cross-lingual, though that text was recorded as English)."""
    if asked is None or asked in ("en", "fr"):
        return recorded
    return other_language(text[:HIT_SAMPLE_CHARS]) or recorded

