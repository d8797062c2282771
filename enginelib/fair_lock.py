"""A re-entrant lock that its waiters get in the order they came: the store's write lock.

A worker lets go of the write lock after each job and asks for it again at once. A plain
``threading.RLock`` goes to whoever takes it first once it is free, mostly the thread that
just let go of it (it is already running; a waiter must first be woken), so a delete, an
update or a ``close`` sent while a queue drained came after a few more jobs, or after all
of them. Here a thread that asks while others wait goes behind them: a waiting writer gets
the next turn, and waits for the job in progress only.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType


class FairRLock:
    """First come, first served; re-entrant for the thread that holds it (a writer calling
    another writer, a worker's job calling the store's ingest). Waiters sleep on a
    condition, woken when it is let go. The interface of ``threading.RLock``."""

    def __init__(self) -> None:
        self._state = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._line: deque[object] = deque()  # one ticket per waiting thread, oldest first

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = threading.get_ident()
        with self._state:
            if self._owner == me:
                self._depth += 1
                return True
            if self._owner is None and not self._line:
                self._owner, self._depth = me, 1
                return True
            if not blocking:
                return False
            ticket = object()
            self._line.append(ticket)
            got = False
            try:
                got = self._state.wait_for(
                    lambda: self._owner is None and self._line[0] is ticket,
                    None if timeout < 0 else timeout)
            finally:
                self._line.remove(ticket)
                if got:
                    self._owner, self._depth = me, 1
                else:  # timed out or interrupted: whoever is next now must not wait on it
                    self._state.notify_all()
            return got

    def release(self) -> None:
        with self._state:
            if self._owner != threading.get_ident():
                raise RuntimeError("cannot release a FairRLock this thread does not hold")
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._state.notify_all()

    def held_by_me(self) -> bool:
        """Whether the calling thread holds it."""
        return self._owner == threading.get_ident()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.release()
