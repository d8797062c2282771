"""YAML front matter of Markdown files (Jekyll, Hugo, Obsidian, MkDocs): metadata, not text.

A file that opens with a ``---`` line and closes the block with ``---`` (or ``...``) carries
its title, tags, author and dates there. Indexed as text, that block became the first chunk's
words, and its closing ``---`` made the line above it a setext heading. It is read as the
document's metadata instead (``tags``, ``author``, ``language``... set their columns as a JSONL
record's keys do) and the stored text starts after it, so every offset counts in the text
that is stored. A block that is not a YAML mapping (a thematic break, prose between rules)
stays text: nothing is dropped on a guess.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import yaml

# Where the closing line is looked for: front matter is a header, not a document.
MAX_FRONT_MATTER_CHARS = 64 * 1024
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_OPEN = re.compile(r"---[ \t]*\n")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(metadata, body) of a Markdown text; ``({}, text)`` when it has no front matter."""
    opening = _OPEN.match(text)
    if opening is None:
        return {}, text
    closing = _CLOSE.search(text, opening.end(), opening.end() + MAX_FRONT_MATTER_CHARS)
    if closing is None:
        return {}, text
    try:
        data = yaml.safe_load(text[opening.end():closing.start()])
    except Exception:  # noqa: BLE001 - only the parse of the block is inside
        # Not only YAMLError: PyYAML's constructors raise ValueError, IndexError,
        # AttributeError... for a value its resolver took for a date or number it cannot
        # build ("date: 2023-02-30", "!!int big", "!!int" alone), and deep nesting exhausts
        # the stack. Each stopped the ingest of a whole folder; such a block is not
        # metadata we can read.
        return {}, text
    if not isinstance(data, dict) or not data:
        return {}, text
    title = data.get("title")
    if not isinstance(title, (str, list, dict, type(None))):  # a number, a date, true...
        written = _as_written(text[opening.end():closing.start()], "title")
        data["title"] = title if written is None else written
    budget = [MAX_VALUES]
    try:
        metadata = {str(key): _json_value(value, budget, 0) for key, value in data.items()}
    except _TooLarge:
        return {}, text
    return metadata, text[closing.end():].lstrip("\n")


def _as_written(block: str, key: str) -> str | None:
    """The scalar value of ``key`` as the block writes it. YAML reads "title: 1984" as the
    number 1984, "title: Yes" as true and "title: 1:20" as 80 (base 60): such a title was
    dropped without a word for the file's name, and its text is the title its author wrote."""
    written = None
    node = yaml.compose(block, Loader=yaml.SafeLoader)  # parsed once already: cannot fail
    for key_node, value_node in getattr(node, "value", ()):
        if key_node.value == key and isinstance(value_node, yaml.ScalarNode):
            written = value_node.value  # the last of repeated keys, as safe_load keeps
    return written


# YAML aliases let a few lines stand for a huge tree ("billion laughs"): the copy into JSON
# values stops past this many values or this depth, and the block then stays text.
MAX_VALUES = 10_000
MAX_DEPTH = 32


class _TooLarge(Exception):
    pass


def _json_value(value: Any, budget: list[int], depth: int) -> Any:
    """YAML's types as JSON's: dates as ISO text, anything else exotic as its text."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise _TooLarge
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (list, tuple, set)):
        return [_json_value(v, budget, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v, budget, depth + 1) for k, v in value.items()}
    return str(value)
