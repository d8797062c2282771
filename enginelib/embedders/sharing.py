"""Sharing the model and the store while passages are embedded.

Embedding is most of an ingest (about 95 % of its time), and the store needs no lock
meanwhile: the batch's reads are done and its writes wait for the vectors. A writer that
lets readers in during that time (serve's worker: searches go on while a job embeds)
says how with ``readers_admitted``; ``vectors_with_cache`` opens that window around the
model and nothing else.

The model itself is not shared that freely: a Hugging Face tokenizer or a ctypes engine
may not take two threads at once, so each call into an embedder waits its turn
(``model_turn``), and while readers are let in, passages go in turns of about ``TURN_S``;
a waiting query goes before the next turn, so a search waits for one turn of a job's
embedding, not all of it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

# While readers are let in, passages go to the model in turns of about this long (sized
# from the last turn's pace): a search's query waits for one turn at most. e5-small
# embeds 2-3 chunks a second on two cores and gains nothing from batches over one, so
# its turns are a chunk or two; MiniLM's grow to MAX_TURN_TEXTS.
TURN_S = 0.5
MAX_TURN_TEXTS = 64

Window = Callable[[], AbstractContextManager[Any]]

# Per thread (a ContextVar): only the writer that declared a window opens it.
_WINDOW: ContextVar[Window | None] = ContextVar("enginelib_embedding_window", default=None)


class Turn:
    """Who calls into one embedder now. One call at a time; a query waiting for its turn
    goes before the next turn of passages: a plain lock went back to the thread that had
    just let go of it (it needs no wake-up), so a search waited for a job's whole
    embedding anyway. Reentrant for the thread inside (a wrapper calling into itself)."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._owner: int | None = None
        self._depth = 0
        self._queries_waiting = 0

    @contextmanager
    def for_query(self) -> Iterator[None]:
        with self._state:
            self._queries_waiting += 1
            try:
                self._enter(lambda: True)
            finally:
                self._queries_waiting -= 1
        try:
            yield
        finally:
            self._leave()

    @contextmanager
    def for_passages(self) -> Iterator[None]:
        with self._state:
            self._enter(lambda: self._queries_waiting == 0)
        try:
            yield
        finally:
            self._leave()

    def _enter(self, may_start: Callable[[], bool]) -> None:
        me = threading.get_ident()
        if self._owner != me:  # held by this thread already: reentrant, no wait
            self._state.wait_for(lambda: self._owner is None and may_start())
            self._owner = me
        self._depth += 1

    def _leave(self) -> None:
        with self._state:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._state.notify_all()


_TURNS: weakref.WeakKeyDictionary[Any, Turn] = weakref.WeakKeyDictionary()
_TURNS_GUARD = threading.Lock()
# For an embedder that cannot key a weak dictionary (unhashable, or no weak references):
# its calls share one turn with every other such embedder, which is safe, only slower.
_SHARED_TURN = Turn()


def model_turn(embedder: Any) -> Turn:
    """The turn every call into ``embedder`` waits for."""
    with _TURNS_GUARD:
        try:
            return _TURNS.setdefault(embedder, Turn())
        except TypeError:
            return _SHARED_TURN


@contextmanager
def readers_admitted(window: Window) -> Iterator[None]:
    """Within this block, this thread's embedding of passages runs inside ``window()``
    (e.g. with the store's lock released and taken back after)."""
    token = _WINDOW.set(window)
    try:
        yield
    finally:
        _WINDOW.reset(token)


@contextmanager
def also_released(lock: Any) -> Iterator[None]:
    """Within this block, a declared window lets go of ``lock`` too (the store's own lock,
    which its ingest holds; None: none to let go). It is let go first and taken back last,
    the reverse of how a reader takes the two: no cycle. Without a declared window, nothing
    changes."""
    declared = _WINDOW.get()
    if declared is None or lock is None:
        yield
        return

    @contextmanager
    def both() -> Iterator[None]:
        with released(lock), declared():
            yield

    token = _WINDOW.set(both)
    try:
        yield
    finally:
        _WINDOW.reset(token)


@contextmanager
def released(lock: Any) -> Iterator[None]:
    """``lock`` (held by this thread) let go for the block and taken back after. A
    reentrant lock this thread holds more than once stays held: no window, as before."""
    lock.release()
    try:
        yield
    finally:
        lock.acquire()


def sharing_declared() -> bool:
    """Whether this thread's writer lets readers in while it embeds."""
    return _WINDOW.get() is not None


def next_turn(texts: int, seconds: float) -> int:
    """How many passages the next turn takes, after one of ``texts`` took ``seconds``."""
    return max(1, min(MAX_TURN_TEXTS, int(texts * TURN_S / max(seconds, 1e-6))))


def embedding_window() -> AbstractContextManager[Any]:
    """The window this thread's writer declared, or one that changes nothing."""
    window = _WINDOW.get()
    return nullcontext() if window is None else window()
