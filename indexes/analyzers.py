"""Text analysis for the tantivy backend: per-language stemming analyzers and the
"code" tokens (part numbers, identifiers) that must match exactly.

Why a separate code field: the stemming analyzers split on every non-alphanumeric
character, so ``JWT_token`` becomes ``jwt`` + ``token`` and ``gdpr-art-17`` becomes three
words; a stemmer may also trim a code that ends like an inflection. Code-like tokens are
therefore copied verbatim (lowercased) into one extra field, searched alongside the
stemmed fields, so an exact code match adds a rare-term score and ranks first.
"""

from __future__ import annotations

import functools
import re

import tantivy

from enginelib.errors import InvalidInputError

# ISO 639-1 code -> tantivy (Snowball) stemmer name.
STEMMERS: dict[str, str] = {
    "ar": "arabic", "da": "danish", "de": "german", "el": "greek", "en": "english",
    "es": "spanish", "fi": "finnish", "fr": "french", "hu": "hungarian", "it": "italian",
    "nl": "dutch", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sv": "swedish", "ta": "tamil", "tr": "turkish",
}
# Documents in a language without a configured stemmer go to fields with this suffix,
# analyzed without stemming.
PLAIN = "plain"
CODE_ANALYZER = "enginelib_code"
# Tokens of this many UTF-8 bytes or more are dropped by the analyzers (tantivy keeps a
# token shorter than its limit). Lucene's 255: a SHA-1 or SHA-256 hex digest, a dotted class
# name, a long German compound is a word a user searches for exactly, and under tantivy's
# default of 40 such a search matched nothing. Longer runs are blobs, not words.
MAX_TOKEN_CHARS = 256
# The limit of indexes written before the limit was stamped: such an index keeps it (its
# query words are cut as its documents were) until it is rebuilt, e.g. by `enginelib repair`.
LEGACY_MAX_TOKEN_CHARS = 40

# A code token: word characters joined by single - . / separators ("gdpr-art-17",
# "v1.2.3", "JWT_token"), never ending on a separator so "3512C." yields "3512C". The
# Rust pattern (tantivy's regex tokenizer) and the Python one must cut text identically.
CODE_PATTERN_RUST = r"[\p{L}\p{N}_]+(?:[-./][\p{L}\p{N}_]+)*"
_CODE_RE = re.compile(r"\w+(?:[-./]\w+)*")
# The word pieces tantivy's simple tokenizer produces (it splits on non-alphanumerics,
# underscore included).
_WORD_RE = re.compile(r"[^\W_]+")


def analyzer_name(language: str) -> str:
    return f"enginelib_{language}"


def normalize_language(language: str | None, languages: tuple[str, ...]) -> str:
    """Map a document language ("en", "fr-CA", "French"...) to a field suffix."""
    code = (language or "").strip().lower().replace("_", "-").split("-")[0]
    if code not in STEMMERS:
        code = next((iso for iso, name in STEMMERS.items() if name == code), code)
    return code if code in languages else PLAIN


def build_analyzers(languages: tuple[str, ...],
                    max_token: int = MAX_TOKEN_CHARS) -> dict[str, tantivy.TextAnalyzer]:
    """Analyzers to register on the index under ``analyzer_name(lang)`` / CODE_ANALYZER."""
    analyzers: dict[str, tantivy.TextAnalyzer] = {}
    for lang in (*languages, PLAIN):
        # Accents are folded before stemming so that "mouillee" and "mouillée" (users
        # often type French without accents) reach the stemmer as the same word.
        builder = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(max_token))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.ascii_fold())
        )
        if lang != PLAIN:
            builder = builder.filter(tantivy.Filter.stemmer(STEMMERS[lang]))
        analyzers[analyzer_name(lang)] = builder.build()
    analyzers[CODE_ANALYZER] = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(CODE_PATTERN_RUST))
        .filter(tantivy.Filter.remove_long(max_token))
        .filter(tantivy.Filter.lowercase())
        .build()
    )
    return analyzers


def stopword_analyzers(languages: tuple[str, ...]) -> list[tantivy.TextAnalyzer]:
    """One analyzer per language that drops its stop words (where tantivy has a list)."""
    analyzers = []
    for lang in languages:
        try:
            # tantivy-py 0.27 names a language without a list (ar, el, ro, ta, tr) only
            # when the filter is added, not when it is made
            analyzers.append(
                tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                .filter(tantivy.Filter.lowercase())
                .filter(tantivy.Filter.stopword(STEMMERS[lang]))
                .build()
            )
        except ValueError:
            continue  # no stop-word list for this language: nothing is a stop word
    return analyzers


@functools.cache
def every_stopword_analyzer() -> tuple[tantivy.TextAnalyzer, ...]:
    """Stop-word analyzers of every language tantivy has a list for (the store's or not)."""
    return tuple(stopword_analyzers(tuple(STEMMERS)))


def is_stopword_anywhere(word: str) -> bool:
    """True when ``word`` is a stop word of some language tantivy knows."""
    return any(not analyzer.analyze(word) for analyzer in every_stopword_analyzer())


def check_languages(languages: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [lang for lang in languages if lang not in STEMMERS]
    if unknown:
        raise InvalidInputError(
            f"no stemmer for language(s) {unknown}; choose among {sorted(STEMMERS)}"
        )
    return tuple(dict.fromkeys(languages))


_CODE_MARK = re.compile(r"[\d_\-./]")


def is_code(token: str) -> bool:
    """A token worth exact matching: it has a digit, an underscore or a joiner."""
    return _CODE_MARK.search(token) is not None


def code_tokens(text: str) -> list[str]:
    """The code-like tokens of ``text``, in order, as written."""
    return [tok for tok in _CODE_RE.findall(text) if is_code(tok)]


def word_parts(text: str) -> list[str]:
    """The pieces the stemming analyzers would see before lowercasing."""
    return _WORD_RE.findall(text)
