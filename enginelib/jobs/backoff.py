"""The retry schedule: the seed's formula, as a pure function."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

MAX_DELAY_S = 3600
BASE_DELAY_S = 15
MAX_DOUBLINGS = 8
JITTER_S = 10
DEFAULT_MAX_ATTEMPTS = 5


def retry_delay(attempts: int, rand: Callable[[], float] = random.random) -> int:
    """Seconds to wait after the ``attempts``-th failed attempt (attempts counts from 1):
    ``min(3600, 15 * 2**min(attempts, 8) + floor(random() * 10))``.

    So the first retry waits 30..39 s, the second 60..69 s, and from the eighth on 3600 s.
    """
    if attempts < 0:
        raise ValueError(f"attempts must be >= 0, got {attempts}")
    return min(MAX_DELAY_S, BASE_DELAY_S * 2 ** min(attempts, MAX_DOUBLINGS)
               + math.floor(rand() * JITTER_S))


def delay_bounds(attempts: int) -> tuple[int, int]:
    """The smallest and largest delay ``retry_delay(attempts)`` can return."""
    low = BASE_DELAY_S * 2 ** min(attempts, MAX_DOUBLINGS)
    return min(MAX_DELAY_S, low), min(MAX_DELAY_S, low + JITTER_S - 1)
