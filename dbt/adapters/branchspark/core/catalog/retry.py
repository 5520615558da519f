"""Bounded retries with jittered exponential backoff, as Nessie's CommitRetry does.

    for attempt in CommitRetry():
        try:
            return try_commit()
        except StaleHead:
            continue        # the next iteration sleeps first
    raise ...               # out of attempts or time

Attempts are bounded by count and by total time; each wait is a random
fraction of a doubling cap ("full jitter"), so writers that collided do not
collide again in lockstep. Clock, sleep and randomness are injectable for tests.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass
class CommitRetry:
    max_attempts: int = 100
    max_seconds: float = 300.0
    first_delay: float = 0.005
    max_delay: float = 0.5
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)
    attempts: int = 0  # how many attempts the last iteration started

    def delay(self, attempt: int) -> float:
        """The wait before attempt number `attempt` (2, 3, ...): uniform in [0, min(cap, first * 2^(n-2))]."""
        cap = min(self.max_delay, self.first_delay * (2 ** (attempt - 2)))
        return self.rng.uniform(0, cap)

    def __iter__(self) -> Iterator[int]:
        started = self.clock()
        self.attempts = 0
        while self.attempts < self.max_attempts:
            if self.attempts:
                wait = self.delay(self.attempts + 1)
                if self.clock() - started + wait > self.max_seconds:
                    return
                self.sleep(wait)
            self.attempts += 1
            yield self.attempts
