"""The store's write lock: re-entrant, and its waiters get it in the order they came."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from enginelib.fair_lock import FairRLock

WAIT_S = 30.0


def _in_line(lock: FairRLock, count: int) -> None:
    """Until ``count`` threads wait for ``lock`` (its line is private: the order cannot be
    seen from outside without it)."""
    deadline = time.monotonic() + WAIT_S
    while len(lock._line) != count:
        assert time.monotonic() < deadline, f"{count} waiters never lined up"
        time.sleep(0.001)


def _thread(action: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


def test_the_thread_that_lets_go_and_asks_again_goes_behind_the_waiters() -> None:
    lock = FairRLock()
    order: list[str] = []

    def take(name: str) -> None:
        with lock:
            order.append(name)

    lock.acquire()
    waiters = []
    for name in ("first", "second", "third"):
        waiters.append(_thread(lambda name=name: take(name)))
        _in_line(lock, len(waiters))
    lock.release()
    again = lock.acquire(timeout=WAIT_S)  # as a worker between two jobs
    order.append("again")
    lock.release()
    for waiter in waiters:
        waiter.join(WAIT_S)
    assert again and order == ["first", "second", "third", "again"]


def test_it_is_reentrant_for_its_holder_and_refuses_a_release_by_another() -> None:
    lock = FairRLock()
    with lock, lock:
        assert lock.held_by_me()
        out: dict[str, object] = {}

        def other() -> None:
            out["got"] = lock.acquire(blocking=False)
            with pytest.raises(RuntimeError, match="does not hold"):
                lock.release()
            out["held"] = lock.held_by_me()

        _thread(other).join(WAIT_S)
        assert out == {"got": False, "held": False}
    assert not lock.held_by_me()
    taken = threading.Event()
    _thread(lambda: lock.acquire(blocking=False) and taken.set()).join(WAIT_S)
    assert taken.is_set()  # let go as often as taken: free for another thread


def test_a_waiter_that_gives_up_leaves_the_line_to_the_next() -> None:
    lock = FairRLock()
    out: dict[str, bool] = {}
    lock.acquire()
    impatient = _thread(lambda: out.update(impatient=lock.acquire(timeout=0.2)))
    _in_line(lock, 1)
    patient = _thread(lambda: out.update(patient=lock.acquire(timeout=WAIT_S)))
    impatient.join(WAIT_S)
    _in_line(lock, 1)  # the patient one, now first
    lock.release()
    patient.join(WAIT_S)
    assert out == {"impatient": False, "patient": True}
