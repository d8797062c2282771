"""Laws a query asks about by name: "under the Digital Services Act", "selon eIDAS",
"la directive sur les lanceurs d'alerte".

A question about a law the store does not hold reads, word by word, like one it does hold:
"What are the penalties under the Digital Services Act?" shares "penalties", "digital",
"services" and "act" with the GDPR and the AI Act, and a multilingual model puts it close
to their penalty articles. What tells it apart is the name: no passage mentions it. The
gate (answerability.py) refuses a query when it names a law and no passage mentions any of
the names it gives.

Only names said the way laws are named are read, so that a word the corpus lacks is not
mistaken for one (an acronym alone, "the DPIA", "the CNIL", is no law's name):

- capitalised words before Act / Directive / Regulation ("the Data Act", "the NIS2
  Directive", "AI Act"), or an acronym or several capitalised words before the lowercase
  word ("the DORA regulation");
- an acronym after "under", "pursuant to", "according to", "selon", "au titre de", "en
  vertu de" ("under MiCA", "selon le RGPD");
- French: "règlement" / "directive" followed by an acronym ("la directive NIS2") or by
  "sur" / "relatif à" / "concernant" and the subject ("le règlement sur les services
  numériques").

Each name comes with the spellings that count as mentioning it, any one of which will do:
the name as written, its tail without leading words ("EU AI Act": "AI Act"; titles and
texts drop "EU" / "European"), and the initials of a spelled-out name ("General Data
Protection Regulation": "GDPR", the way a corpus's titles often say it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .highlights import is_function_word

_TYPES = ("act", "directive", "regulation")
# Capitalised words that begin a sentence or point back, never a law's own name.
_NOT_NAMES = frozenset(
    "the this that these those which what whose whichever such said same any each every "
    "another other its their our your new old relevant applicable proposed current previous "
    "corresponding respective following above present".split()
)
_TOKEN = re.compile(r"[^\W_](?:[\w’'-]*\w)?")
# Small words inside a law's name: "the Freedom of Information Act" is no "Information Act".
# Never its first word: "of Information Act" is no name ("and" joins two laws, not words).
_JOINERS = frozenset(("of", "on", "for"))
_ACRONYM = re.compile(r"^(?=(?:[^A-Z]*[A-Z]){2})[A-Za-z][A-Za-z0-9]{1,9}$")
# Case-blind for the words around, case-true for the acronym (two capitals at least).
_LEGAL_CONTEXT = re.compile(
    r"\b(?i:under|pursuant\s+to|according\s+to|selon|au\s+titre\s+d[eu]|en\s+vertu\s+d[eu])"
    r"(?:\s+(?i:the|le|la|les|l['’]|de\s+la|de\s+l['’]))?\s*([A-Za-z][A-Za-z0-9]{1,9})\b"
)
_FRENCH_TYPE = re.compile(
    r"\b(?i:règlement|directive)(?:\s+(?i:général|générale|européen|européenne))?\s+"
    r"(?:(?P<acronym>(?=[a-z0-9]*[A-Z])[A-Za-z][A-Za-z0-9]{1,9})\b"
    r"|(?P<link>(?i:sur|relatif\s+à|relative\s+à|concernant))\s+"
    r"(?i:les\s+|la\s+|le\s+|l['’]|des\s+)?"
    r"(?P<subject>[^\W\d_][\w’'-]*(?:\s+(?:d['’]|de\s+|des\s+|du\s+)?[^\W\d_][\w’'-]*){0,3}))"
)
# Where a French subject ends: the words that start the rest of the question.
_SUBJECT_STOPS = frozenset(
    "pour selon et ou en dans qui que quand avec sans par est sont doit doivent peut peuvent "
    "impose imposent prévoit prévoient exige exigent concernant".split()
)
# "Regulation (EU) 2024/1689", "Directive 95/46/EC", "Regulation No 1049/2001": a law cited
# by its number, which names it; the capitalised word before is the sentence's ("Summarise
# Regulation (EU) 2024/1689"). Numbers are not looked up.
_NUMBERED = re.compile(r"\s*(?:\((?:EU|EC|EEC|Euratom)\)\s*)?(?:No\.?\s*)?\d+/\d+")
_TYPE_NEXT = re.compile(r"\s+(?i:act|regulation|directive)\b")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_ARTICLES = frozenset("la le les l' l’".split())
MIN_INITIALS = 3
# A core phrase in at least this share of the passages is what the store is about: "data
# protection" is in 13 % of the GDPR and AI Act's chunks, "artificial intelligence" in 2 %,
# "data governance" 1.1 %; "digital services", "cyber resilience", "product safety", the
# cores of other laws the AI Act cites in passing, in one to five of its 1,042 chunks (0.5 %).
# Lenient on purpose: a wrong refusal costs more than a near miss answered.
SUBJECT_SHARE = 0.01


@dataclass(frozen=True)
class NamedSource:
    """A name as the query gives it, the phrases any of which counts as mentioning it, and
    its ``core``: the name without its Act / Directive / Regulation ("Data Protection").

    A core says the law is the store's own where the corpus writes it often (an acronym it
    holds, "the AI Regulation"; or a phrase in at least ``SUBJECT_SHARE`` of its passages,
    "the Data Protection Regulation" over the GDPR) though it never writes the name: the
    gate reads that. A one-word core is no evidence: "data" is in every GDPR passage, and
    the Data Act is another law."""

    name: str
    spellings: tuple[str, ...]
    core: str | None = None

    def is_acronym(self) -> bool:
        """Named by an acronym alone ("under MiCA", "selon le RGPD")."""
        return _is_acronym(self.name)

    def core_is_acronym(self) -> bool:
        return self.core is not None and _is_acronym(self.core)

    def core_is_phrase(self) -> bool:
        return self.core is not None and len(self.core.split()) >= 2

    def core_tails(self) -> tuple[NamedSource, ...]:
        """The core and each shorter tail of it, each as its own name and core ("Summarise
        GDPR": "GDPR"): a tail spells the name (the module docstring), so its core says the
        law is held as well; a title-case question's own word may lead the name ("Summarise
        GDPR Regulation")."""
        words = (self.core or "").split()
        tails = (" ".join(words[k:]) for k in range(len(words)))
        return tuple(NamedSource(tail, (tail,), tail) for tail in tails
                     if tail.split(" ", 1)[0].casefold() not in _JOINERS)


# A law's own long name where a text states it: "(General Data Protection Regulation)",
# "(règlement général sur la protection des données)", "le règlement sur l'intelligence
# artificielle". The short name a question uses ("the GDPR", "selon le RGPD", "le RIA") is
# often only their initials: official texts never write it.
_LONG_NAME_EN = re.compile(
    r"\b((?:[A-Z][\w’'-]*\s+(?:(?:of|on|for|and|the)\s+)?){1,6}(?:Regulation|Directive|Act))\b")
_LONG_NAME_FR = re.compile(
    r"\b((?i:règlement|directive)\s+(?:(?i:général|générale|européen|européenne)\s+)?"
    r"(?i:sur|relatif\s+à|relative\s+à|concernant)\s+[^()\[\],.;:!?\n]{3,80})")
_ELISION = re.compile(r"^(?:[ldjmnst]|qu)['’]", re.IGNORECASE)
MAX_NAME_WORDS = 8


def long_name_initials(text: str) -> set[str]:
    """The initials (upper case) of the law names ``text`` states, of every beginning of a
    French one (where it ends, no pattern tells: "... données, et abrogeant") and every
    ending of an English one (its first capitalised words may be the sentence's)."""
    found: set[str] = set()
    for m in _LONG_NAME_EN.finditer(text):
        letters = _content_initials(m.group(1).split())
        found.update(letters[k:] for k in range(len(letters) - MIN_INITIALS + 1))
    for m in _LONG_NAME_FR.finditer(text):
        letters = _content_initials(m.group(1).split()[:MAX_NAME_WORDS])
        found.update(letters[:k] for k in range(MIN_INITIALS, len(letters) + 1))
    return found


_LETTERS = re.compile(r"[^\W\d_][\w’'-]*")


# A proper name of several capitalised words ("European Data Protection Board", "AI Office"
# is one word and an acronym already), small joining words allowed inside.
_PROPER_NAME = re.compile(
    r"\b[A-Z][\w’'-]*(?:\s+(?:(?:of|on|for|and|the|de|du|des|la|le|l['’])\s+)?"
    r"[A-Z][\w’'-]*){1,5}")


def proper_name_initials(text: str) -> set[str]:
    """The initials of each multi-word proper name ``text`` writes ("the European Data
    Protection Board": EDPB), three letters or more."""
    found = set()
    for m in _PROPER_NAME.finditer(text):
        letters = _content_initials(m.group().split())
        if len(letters) >= MIN_INITIALS:
            found.add(letters)
    return found


def spelled_out(acronym: str, text: str) -> bool:
    """Whether ``text`` holds consecutive words (stop words skipped) whose initials spell
    ``acronym``: "the DPO" in a passage on the "data protection officer", "the EDPB" on the
    "European Data Protection Board". A code with a digit ("PSD2") is spelled by no words."""
    letters = acronym.upper()
    if not letters.isalpha() or len(letters) < 2:
        return False
    initials = _content_initials(_LETTERS.findall(text))
    return letters in initials


def _content_initials(words: list[str]) -> str:
    kept = [_ELISION.sub("", w) for w in words]
    return "".join(w[0].upper() for w in kept if w and not is_function_word(w))


# One small word may join a phrase's two content words: "right to erasure", "protection des
# données", "responsable du traitement".
_PHRASE_LINKS = frozenset("of to for on de des du d' d’ à au aux".split())


def question_phrases(query: str, names: list[str]) -> list[str]:
    """The phrases of two content words ``query`` asks in, outside the ``names`` it gives,
    each once: "Are toys under the Toy Safety Directive high-risk AI systems?" asks in "AI
    systems". A question on a law the store does not hold that asks in the store's own
    terms asks what the store says of that law ("the Machinery Regulation" in the AI Act's
    "safety component"); a near miss asks in its law's ("crypto-asset white paper")."""
    text = query
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(re.escape(name) + r"(?:['’]s)?", " | ", text)
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    # "the European Data Innovation Board's role": a capitalised word past the first is a
    # proper name's, which names a body as a law's name does: no term the store asks in.
    # Unless every word is capitalised ("Are AI Safety Components Of Machinery High-Risk?"):
    # in title case a capital says nothing.
    words = [word for word, _, _ in tokens if not is_function_word(word)]
    title_case = len(words) >= 2 and all(_capitalised(word) or _is_acronym(word)
                                         for word in words)

    def proper(word: str) -> bool:
        return not title_case and _capitalised(word)

    phrases: list[str] = []
    for i, (word, _, _) in enumerate(tokens[:-1]):
        if is_function_word(word) or (i > 0 and proper(word)):
            continue
        nxt = tokens[i + 1][0]
        if proper(nxt):
            continue
        if not is_function_word(nxt) and _next_to(text, tokens, i):
            phrases.append(f"{word} {nxt}")
        elif (nxt.casefold() in _PHRASE_LINKS and i + 2 < len(tokens)
              and not is_function_word(tokens[i + 2][0]) and not proper(tokens[i + 2][0])
              and _next_to(text, tokens, i) and _next_to(text, tokens, i + 1)):
            phrases.append(f"{word} {nxt} {tokens[i + 2][0]}")
    return list(dict.fromkeys(phrases))


def _capitalised(word: str) -> bool:
    return word[0].isupper() and not _is_acronym(word)


def named_sources(query: str, language: str | None = None) -> list[NamedSource]:
    """The laws ``query`` names (see the module docstring), each once, in order. A French
    question (``language`` "fr") that names a law by its English name ("Selon l'AI Act, ...")
    names it in a language its French text does not write: such a name is not read."""
    found: dict[str, NamedSource] = {}
    caseless = not any(c.isupper() for c in query) or query.isupper()
    english = [] if (language or "").startswith("fr") else (
        _caseless_names(query) if caseless else _english_names(query) + [
            # "What are the penalties under the digital services act?": a name typed in
            # lowercase in a question that has its capital
            name for name in _caseless_names(query) if name.name.islower()])
    for source in (*english, *_context_acronyms(query), *_french_names(query)):
        key = source.name.casefold()
        if not any(f" {key} " in f" {k} " for k in found):
            found[key] = source
    return list(found.values())[:MAX_NAMES]


# The names read from one query, the first ones: each is looked up in the index (its spellings,
# its core), a question names a few, and a pasted page of 19,000 characters named 544 (a
# second of look-ups on the laws' 1,067 chunks, more on a large store).
MAX_NAMES = 32


# "the GDPR", "du RGPD": an acronym with an article may be a law's name, or not ("the DPO",
# "la CNIL"): where the store holds it, it counts as a law the question names and the store
# holds ("Does the GDPR or the DSA govern ads?" asks about one the store holds).
_ARTICLE_ACRONYM = re.compile(r"\b(?i:the|le|la|les|l['’]|du|des)\s*([A-Za-z][A-Za-z0-9]{1,9})\b")


def articled_acronyms(query: str) -> list[str]:
    """Acronyms after an article, each once: names only where the store holds them."""
    # Three letters at least: "the EU", "the UK" are places, held by every law's text.
    return list(dict.fromkeys(m.group(1) for m in _ARTICLE_ACRONYM.finditer(query)
                              if _is_acronym(m.group(1)) and len(m.group(1)) >= 3))


def _is_acronym(word: str) -> bool:
    return bool(_ACRONYM.match(word))


def _is_name_word(word: str) -> bool:
    if word.casefold() in _NOT_NAMES or word.casefold() in _TYPES:
        return False
    # A stop or question word is the sentence's, capitalised where it begins one or where the
    # question is in title case ("Does Regulation 2016/679 apply", "Fines Under GDPR
    # Regulation"); written as an acronym, it may be one ("the IT Act"). A question all in
    # capitals is read by _caseless_names.
    if is_function_word(word) and not _is_acronym(word):
        return False
    return word[0].isupper() or _is_acronym(word) or any(c.isupper() for c in word[1:])


def _next_to(query: str, tokens: list[tuple[str, int, int]], j: int) -> bool:
    """Whether token ``j`` and the next stand next to each other: a comma or a bracket
    between two words ends a name."""
    return not query[tokens[j][2]:tokens[j + 1][1]].strip()


def _english_names(query: str) -> list[NamedSource]:
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(query)]
    names = []
    for i, (word, _, end) in enumerate(tokens):
        # "the Radio Equipment Directive's requirements": a possessive is still the name
        word = _POSSESSIVE.sub("", word)
        if word.casefold() not in _TYPES or _NUMBERED.match(query, end):
            continue
        run: list[str] = []
        j = i - 1
        while (j >= 0 and _is_name_word(tokens[j][0]) and _next_to(query, tokens, j)):
            run.insert(0, tokens[j][0])
            j -= 1
            if (j >= 1 and tokens[j][0] in _JOINERS and _next_to(query, tokens, j)
                    and _next_to(query, tokens, j - 1)
                    and _is_name_word(tokens[j - 1][0])):
                run.insert(0, tokens[j][0])
                j -= 1
        run = run[-5:]
        while run and run[0] in _JOINERS:
            run.pop(0)
        if not run:
            continue
        if word[0].isupper():
            words = [*run, word]
            tails = [words[k:] for k in range(len(run)) if words[k] not in _JOINERS]
            spellings = [" ".join(tail) for tail in tails]
            # Initials of a spelled-out tail: "EU General Data Protection Regulation", GDPR
            spellings += [_content_initials(tail) for tail in tails
                          if len(tail) >= MIN_INITIALS and not any(_is_acronym(w) for w in tail)]
            core = " ".join(run)
        elif len(run) >= 2 or _is_acronym(run[0]):
            # "the DORA regulation": the lowercase word is the speaker's, not the name's
            words = run
            spellings = [" ".join(run[k:]) for k in range(max(1, len(run) - 1))]
            core = None
        else:
            continue
        names.append(NamedSource(" ".join(words), tuple(dict.fromkeys(spellings)), core))
    return names


# Typed all in lowercase or all in capitals, a question gives no capital to tell a name by:
# "what are the penalties under the digital services act?". A name is then two to five words
# between "the" or "under" and the type word, so that a sentence's own words are not read as
# one ("how should controllers act", "the regulation of ai"); a one-word name ("the data
# act") is left unread. "act" followed by "as", "on", "in" ... or an adverb is the verb
# ("when does the joint controller act as a processor", "MUST A PROCESSOR ACT ONLY ON").
_CASELESS_LEAD = frozenset(("the", "under"))
_VERB_ACT_NEXT = frozenset(
    "as on upon in for against with within without together alone like if when".split())


def _caseless_names(query: str) -> list[NamedSource]:
    """The names of a question without capitals to read (see above), as the user wrote them."""
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(query)]
    folded = [token[0].casefold() for token in tokens]
    names = []
    for i, (token, _, end) in enumerate(tokens):
        word = _POSSESSIVE.sub("", token)
        if word.casefold() not in _TYPES or _NUMBERED.match(query, end):
            continue
        following = folded[i + 1] if i + 1 < len(tokens) else ""
        if (word.casefold() == "act"
                and (following in _VERB_ACT_NEXT or following.endswith("ly"))):
            continue
        j = i - 1
        while j >= 0 and _is_caseless_name_word(tokens[j][0]) and _next_to(query, tokens, j):
            j -= 1
        run = [token[0] for token in tokens[j + 1:i]]
        if not 2 <= len(run) <= 5 or j < 0 or folded[j] not in _CASELESS_LEAD:
            continue
        if not _next_to(query, tokens, j):
            continue
        words = [*run, word]
        tails = [words[k:] for k in range(len(run))]
        spellings = [" ".join(tail) for tail in tails]
        spellings += [_content_initials(tail) for tail in tails if len(tail) >= MIN_INITIALS]
        names.append(NamedSource(" ".join(words), tuple(dict.fromkeys(spellings)),
                                 " ".join(run)))
    return names


def _is_caseless_name_word(word: str) -> bool:
    folded = word.casefold()
    return not (folded in _NOT_NAMES or folded in _TYPES or is_function_word(word)
                or word.isdigit())


def _context_acronyms(query: str) -> list[NamedSource]:
    # "under the NIS2 Directive", "selon l'AI Act": the acronym begins a longer name, read
    # whole by the English names (or not at all in a French question)
    return [NamedSource(m.group(1), (m.group(1),)) for m in _LEGAL_CONTEXT.finditer(query)
            if _is_acronym(m.group(1)) and not _TYPE_NEXT.match(query, m.end())]


def _french_names(query: str) -> list[NamedSource]:
    names = []
    for m in _FRENCH_TYPE.finditer(query):
        # a capital is enough after the type word: "la directive ePrivacy", "NIS2", "Omnibus"
        if m.group("acronym"):
            names.append(NamedSource(m.group("acronym"), (m.group("acronym"),)))
        elif m.group("subject"):
            subject = _subject(m.group("subject"))
            if subject and not _said_about(query, m):
                names.append(NamedSource(m.group(0)[: m.start("subject") - m.start()] + subject,
                                         _subject_spellings(subject)))
    return names


# "Que dit le règlement sur les données de santé ?" asks what the law says about a topic:
# "dire ... sur" is "say about", as in English, and the "sur" is the verb's, not a title's.
_SAYING = re.compile(r"\b(?i:dit|disent|dire|dis|dites|disait|disaient|dira|diront)\b")
_SUR = re.compile(r"\b(?i:sur)\b")


def _said_about(query: str, match: re.Match[str]) -> bool:
    """Whether the "sur" after the law's type word is a saying verb's before it; with a second
    "sur" after the subject, that one is the verb's and the first the title's ("Que dit le
    règlement sur les services numériques sur la publicité ?")."""
    if (match.group("link") or "").casefold() != "sur":
        return False
    return (bool(_SAYING.search(query, 0, match.start()))
            and not _SUR.search(query, match.start("subject")))


def _subject(text: str) -> str:
    """The subject's words up to where the question goes on ("lanceurs d'alerte pour les
    entreprises": "lanceurs d'alerte"), without a dangling "de"."""
    kept: list[str] = []
    for word in text.split():
        # "lanceurs d'alerte de la protection": an article past the first word starts the
        # question's own words
        if word.casefold() in _SUBJECT_STOPS or (kept and word.casefold() in _ARTICLES):
            break
        kept.append(word)
    while kept and kept[-1].casefold() in {"de", "des", "du", "d'", "d’"}:
        kept.pop()
    return " ".join(kept)


# The small words that join a subject's nouns ("données de santé", "droit à l'oubli").
_LINKERS = frozenset("de des du d' d’ à au aux".split())


def _subject_spellings(subject: str) -> tuple[str, ...]:
    """The subject and its shorter beginnings down to two words besides "de", "à": where the
    subject ends no list of words tells ("la protection des données oblige les ...": a
    verb), and a title's first two words already name its law ("services numériques")."""
    words = subject.split()
    spellings = [subject]
    for end in range(len(words) - 1, 0, -1):
        head = words[:end]
        while head and head[-1].casefold() in _LINKERS:
            head.pop()
        if len([w for w in head if w.casefold() not in _LINKERS]) >= 2:
            spellings.append(" ".join(head))
    return tuple(dict.fromkeys(spellings))
