"""The store state a ranking was made on, as a token a client passes back to page over it.

Within one state every page is a slice of one ranking (``search.paging``). A write in between
(an ingest, a delete, an update, a restore, a preset saved) moves the catalog generation, and
the next page is cut from another ranking: hits repeat or go missing. A response says the state
it was ranked on (``SearchResponse.ranked_at``); a search given it back is answered only in
that state, else refused with ``RankingChangedError``, so the client learns to start again
instead of reading a silently wrong page. The state is the one the response cache keys on:
the catalog generation and the index version. Clients treat the token as opaque; it is the
same for as long as the store's state is.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import InvalidInputError, RankingChangedError
from ..text import excerpt

# g<generation>-<index version>; the index version is YYYY.MM.patch, "" before the first commit
TOKEN = re.compile(r"g(0|[1-9][0-9]{0,18})-([0-9A-Za-z._]{0,64})")
# The same form for the OpenAPI schema, where "" (a form's empty field) means "left out".
TOKEN_PATTERN = rf"^({TOKEN.pattern})?$"


def state_token(generation: int, index_version: str) -> str:
    """The token of the state at catalog ``generation`` and ``index_version``."""
    return f"g{generation}-{index_version}"


def check_token(text: str) -> str:
    """``text`` if it has a token's form; otherwise InvalidInputError saying where one comes
    from (a made-up or cut token could never match, and would read as 'the store changed')."""
    if not TOKEN.fullmatch(text):
        raise InvalidInputError(
            f"ranked_at {excerpt(text)} is not a ranking's state: pass back the ranked_at of "
            "an earlier response unchanged (such as 'g12-2025.06.3'), or leave it out")
    return text


def require_state(given: str | None, current: str, *, snapshot: str | None = None,
                  path: str | Path | None = None) -> None:
    """Refuse a search whose ``given`` token is not the ``current`` state (None: no check)."""
    if given is None or given == current:
        return
    if snapshot is not None:
        # A snapshot never moves: the token came from the live store or another snapshot.
        message = (f"ranked_at {given!r} is not the state of snapshot {snapshot!r} "
                   f"({current!r}): page a snapshot with the ranked_at of its own first page")
    else:
        message = (f"the store has changed since the ranking ranked_at {given!r} names (it is "
                   f"now at {current!r}: documents added, updated or deleted, or a search preset "
                   "saved), and this page would repeat or skip hits. Start again from the first "
                   "page (offset 0) and page with the ranked_at it returns, or page over a "
                   "snapshot, which never changes")
    raise RankingChangedError(message, given=given, current=current, path=path)
