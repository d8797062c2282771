"""Translate the user query language into a tantivy query string that cannot misparse.

The language users get: words, ``"exact phrases"``, ``AND`` / ``OR`` / ``NOT``, ``+must``
/ ``-exclude``, ``( groups )`` and ``field:term`` for the fields ``content``, ``title``
and ``headings``. Everything else is text: ``What is 5-HT? (serotonin)`` searches the
words, not a range or a boost.

How: a small lexer recognises only those constructs; every word is re-emitted inside
double quotes (so ``?``, ``:``, ``^``, ``'``, ``<`` ... can never reach tantivy's grammar),
user field names are expanded to the per-language internal fields, and code-like words
(``1K0615301M``, ``JWT_token``) also target the exact-match code field.

``word*`` is a prefix: it matches every indexed word that starts like ``word`` (expanded
through a ``Lexicon`` to at most a few dozen terms, each scored by BM25). With a lexicon,
a bare word the index does not know is replaced by its closest indexed word (a typo:
``GPDR`` -> ``gdpr``); the translation lists those corrections.

A query with no operator, phrase, prefix or field (the common natural-language case)
is "plain": parentheses are treated as punctuation, so it never fails. A query that does
use the syntax must be well formed (balanced quotes and parentheses, operators with
operands); otherwise ``QuerySyntaxError`` says what is wrong. ``plain=True`` translates
any text as plain words (the lenient fallback).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from enginelib.indexes.analyzers import code_tokens, word_parts
from enginelib.text import excerpt

USER_FIELDS = ("content", "title", "headings")
_OPERATORS = {"AND", "OR", "NOT"}
_FIELD_RE = re.compile(r"^(\w+):(.*)$", re.DOTALL)


class QuerySyntaxError(ValueError):
    """The query uses the query language but is malformed (message says how to fix)."""


class Lexicon(Protocol):
    """What the translator may ask of the index's vocabulary (see tantivy_lexicon)."""

    def correct(self, word: str) -> _Correction | None: ...

    def expand_prefix(self, prefix: str) -> list[str]: ...


class _Correction(Protocol):
    @property
    def word(self) -> str: ...

    @property
    def replacement(self) -> str: ...


@dataclass(frozen=True)
class Translation:
    text: str  # tantivy query string
    terms: tuple[str, ...]  # words and phrases the query looks for (not the excluded ones)
    uses_syntax: bool
    corrections: Mapping[str, str] = field(default_factory=dict)  # typed word -> searched word


# Distinct words of one query checked for a typo (each unknown one scans the vocabulary,
# ~0.5 ms): a question has a handful, a pasted page thousands (1.3 s for 2,700).
MAX_LOOKED_UP = 64
# ``word*`` prefixes of one query expanded to indexed words (each up to MAX_PREFIX_TERMS of
# them, and a dictionary scan where the prefix is new): a question has one or two. Past this
# a prefix is searched as its word: "a* " pasted 6,000 times made 300,000 clauses and took
# minutes on a large vocabulary.
MAX_EXPANDED_PREFIXES = 64
# Groups inside groups: a question has two or three; past this the query is refused (600
# levels overflowed the parser's recursion, reported as a broken index to be repaired).
MAX_GROUP_DEPTH = 32


@dataclass(frozen=True)
class _Tok:
    kind: str  # WORD STAR PHRASE LP RP OP PREFIX FIELD  (STAR: a ``word*`` prefix query)
    value: str = ""


def translate(
    query: str,
    *,
    field_map: Mapping[str, Sequence[str]],
    code_field: str,
    plain: bool = False,
    lexicon: Lexicon | None = None,
) -> Translation:
    """Translate ``query``; raise QuerySyntaxError when it is malformed."""
    tokens = _lex(query, plain=plain)
    uses_syntax = any(t.kind in _SYNTAX_KINDS for t in tokens)
    if not uses_syntax:
        tokens = [t for t in tokens if t.kind not in ("LP", "RP")]
    parser = _Parser(tokens, field_map, code_field, query, lexicon)
    text = parser.parse()
    if not text.strip():
        raise QuerySyntaxError(
            f"query {short_query(query)} has no searchable words; type at least one word or code"
        )
    return Translation(text=text, terms=tuple(dict.fromkeys(parser.terms)),
                       uses_syntax=uses_syntax, corrections=parser.corrections)


_SYNTAX_KINDS = frozenset({"PHRASE", "OP", "PREFIX", "FIELD", "STAR"})


def uses_syntax(query: str) -> bool:
    """Whether ``query`` is written in the query language (a phrase, an operator, ``+`` /
    ``-``, a field, a prefix) and lexes; a query that does not is searched as plain words
    (parentheses are punctuation there), or refused."""
    try:
        return any(t.kind in _SYNTAX_KINDS for t in _lex(query, plain=False))
    except QuerySyntaxError:
        return False


def _lex(query: str, *, plain: bool) -> list[_Tok]:
    tokens: list[_Tok] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch.isspace():
            i += 1
        elif ch == '"' and not plain:
            end = query.find('"', i + 1)
            if end < 0:
                raise QuerySyntaxError(
                    f"unbalanced double quote in query {short_query(query)}: close the phrase with "
                    f'another " or remove the quote'
                )
            tokens.append(_Tok("PHRASE", query[i + 1:end]))
            i = end + 1
        elif ch in "()\"":
            if not plain:
                tokens.append(_Tok("LP" if ch == "(" else "RP"))
            i += 1
        else:
            j = i
            while j < n and not query[j].isspace() and query[j] not in '()"':
                j += 1
            run = query[i:j]
            i = j
            if plain:
                tokens.append(_Tok("WORD", run))
                continue
            next_opens = i < n and query[i] in '("'
            tokens.extend(_lex_run(run, next_opens))
    return tokens


def _lex_run(run: str, next_opens: bool) -> list[_Tok]:
    if run in _OPERATORS:
        return [_Tok("OP", run)]
    out: list[_Tok] = []
    # "+word" / "-word" are operators only before a letter, a phrase or a group, so that
    # numbers such as "-3" or "+1" stay words.
    if run[0] in "+-" and (
        (len(run) > 1 and run[1].isalpha()) or (len(run) == 1 and next_opens)
    ):
        out.append(_Tok("PREFIX", run[0]))
        run = run[1:]
    match = _FIELD_RE.match(run)
    if match and match.group(1).lower() in USER_FIELDS and (match.group(2) or next_opens):
        out.append(_Tok("FIELD", match.group(1).lower()))
        run = match.group(2)
    if run:
        # "word*" is a prefix query; a "*" alone (or after punctuation) is just punctuation.
        star = run.endswith("*") and bool(word_parts(run))
        out.append(_Tok("STAR", run.rstrip("*")) if star else _Tok("WORD", run))
    return out


def short_query(query: str) -> str:
    """The query for a message: a long one cut, so the message stays readable (a refusal
    quoted a 20,000-character query whole, in every syntax error and in serve's 400)."""
    return excerpt(query, 80)


def _quote(text: str) -> str:
    # Inside double quotes tantivy takes text literally; only the quote and the escape
    # character itself could end or alter the phrase.
    return '"' + text.replace("\\", " ").replace('"', " ") + '"'


class _Parser:
    def __init__(
        self,
        tokens: list[_Tok],
        field_map: Mapping[str, Sequence[str]],
        code_field: str,
        query: str,
        lexicon: Lexicon | None = None,
    ) -> None:
        self.tokens = tokens
        self.pos = 0
        self.field_map = field_map
        self.code_field = code_field
        self.query = query
        self.lexicon = lexicon
        self.terms: list[str] = []
        self.corrections: dict[str, str] = {}
        self._looked_up: set[str] = set()
        self._prefixes = 0
        self._groups_open = 0

    def parse(self) -> str:
        text = self._sequence(depth=0, fields=None, negated=False)
        if self.pos < len(self.tokens):  # a stray ")"
            raise QuerySyntaxError(
                f"unbalanced parenthesis in query {short_query(self.query)}: remove the extra "
                "')' or put the text in double quotes to search it literally"
            )
        return text

    def _sequence(self, depth: int, fields: Sequence[str] | None, negated: bool) -> str:
        out: list[str] = []
        last_was_clause = False
        while self.pos < len(self.tokens):
            tok = self.tokens[self.pos]
            if tok.kind == "RP":
                if depth == 0:
                    break
                self.pos += 1
                return " ".join(out)
            if tok.kind == "OP" and tok.value in ("AND", "OR"):
                self.pos += 1
                if not last_was_clause or self._at_end():
                    raise QuerySyntaxError(
                        f"{tok.value} needs a term on each side in query "
                        f"{short_query(self.query)}; "
                        f"quote it (\"{tok.value.lower()}\") to search the word"
                    )
                out.append(tok.value)
                last_was_clause = False
                continue
            clause = self._clause(fields, negated)
            if clause:
                out.append(clause)
                last_was_clause = True
            elif out and out[-1] in ("AND", "OR"):
                out.pop()  # "a AND ?" : the operand had no searchable word
                last_was_clause = bool(out)
        if depth > 0:
            raise QuerySyntaxError(
                f"unbalanced parenthesis in query {short_query(self.query)}: close the group "
                "with ')' or put the text in double quotes to search it literally"
            )
        return " ".join(out)

    def _at_end(self) -> bool:
        return self.pos >= len(self.tokens) or self.tokens[self.pos].kind == "RP"

    def _clause(self, fields: Sequence[str] | None, negated: bool) -> str:
        prefix = ""
        while self.pos < len(self.tokens) and self.tokens[self.pos].kind in ("OP", "PREFIX"):
            tok = self.tokens[self.pos]
            if tok.kind == "OP" and tok.value != "NOT":
                break
            prefix = "-" if tok.value in ("NOT", "-") else "+"
            self.pos += 1
        if self.pos < len(self.tokens) and self.tokens[self.pos].kind == "FIELD":
            fields = self.field_map[self.tokens[self.pos].value]
            self.pos += 1
        if self._at_end() or self.tokens[self.pos].kind == "OP":
            what = prefix or "field:"
            raise QuerySyntaxError(
                f"{'NOT/-' if prefix == '-' else what} must be followed by a term in query "
                f"{short_query(self.query)}"
            )
        tok = self.tokens[self.pos]
        self.pos += 1
        child_negated = negated or prefix == "-"
        if tok.kind == "LP":
            if self._groups_open >= MAX_GROUP_DEPTH:
                raise QuerySyntaxError(
                    f"query {short_query(self.query)} nests groups more than {MAX_GROUP_DEPTH} "
                    "deep: remove parentheses"
                )
            self._groups_open += 1
            inner = self._sequence(depth=1, fields=fields, negated=child_negated)
            self._groups_open -= 1
            atom = f"({inner})" if inner else ""
        elif tok.kind == "PHRASE":
            atom = self._phrase(tok.value, fields, child_negated)
        elif tok.kind == "STAR":
            atom = self._prefix_word(tok.value, fields, child_negated)
        else:
            atom = self._word(tok.value, fields, child_negated, whole=bool(prefix))
        return f"{prefix}{atom}" if atom else ""

    def _phrase(self, phrase: str, fields: Sequence[str] | None, negated: bool) -> str:
        if not word_parts(phrase):
            return ""
        if not negated:
            self.terms.append(phrase)
        return self._in_fields(_quote(phrase), fields)

    def _word(self, word: str, fields: Sequence[str] | None, negated: bool, whole: bool) -> str:
        parts = word_parts(word)
        if not parts:
            return ""  # punctuation only ("?", "-", "&")
        if not negated:
            self.terms.append(word)
        if fields is not None:
            return self._in_fields(_quote(word), fields)
        # A prefixed word must match as written (a phrase over its parts); a bare word
        # contributes each part on its own, as a BM25 bag of words would.
        if whole:
            pieces = [_quote(word)]
        else:
            pieces = [_quote(self._corrected(part, negated)) for part in parts]
        pieces += [f"{self.code_field}:{_quote(code)}" for code in code_tokens(word)]
        return pieces[0] if len(pieces) == 1 else "(" + " ".join(pieces) + ")"

    def _corrected(self, part: str, negated: bool) -> str:
        """The part, or the indexed word that replaces it when the index does not know it
        (never for excluded words: excluding a guessed word would be surprising)."""
        if self.lexicon is None or negated:
            return part
        if part not in self._looked_up:
            if len(self._looked_up) >= MAX_LOOKED_UP:  # a pasted page, not a question
                return part
            self._looked_up.add(part)
        correction = self.lexicon.correct(part)
        if correction is None:
            return part
        self.corrections[part] = correction.replacement
        self.terms.append(correction.replacement)
        return correction.replacement

    def _prefix_word(self, word: str, fields: Sequence[str] | None, negated: bool) -> str:
        """``word*``: the leading parts as words, the last one expanded to indexed terms."""
        parts = word_parts(word)
        if not negated:
            self.terms.append(word)
        *leading, last = parts
        expansions: list[str] = []
        if self.lexicon is not None and self._prefixes < MAX_EXPANDED_PREFIXES:
            self._prefixes += 1
            expansions = self.lexicon.expand_prefix(last)
        # No expansion: the prefix itself as a word, which matches what it matches.
        alternatives = [_quote(term) for term in expansions] or [_quote(last)]
        group = alternatives[0] if len(alternatives) == 1 else "(" + " ".join(alternatives) + ")"
        if fields is not None:
            group = self._in_fields(group, fields)
        pieces = [self._in_fields(_quote(part), fields) for part in leading] + [group]
        return pieces[0] if len(pieces) == 1 else "(" + " ".join(pieces) + ")"

    @staticmethod
    def _in_fields(atom: str, fields: Sequence[str] | None) -> str:
        if fields is None:
            return atom
        return "(" + " OR ".join(f"{field}:{atom}" for field in fields) + ")"
