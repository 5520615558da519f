"""Pages' data kept per the commits it was read from: a commit never changes, so what a compare, a commit's
row counts, a table at a commit or a merge preview found for given commit ids stays true. Branch names are
resolved to their heads on every request first, so a moved branch is a new key, never a stale page."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

_LIMIT = 256


class ByCommits:
    def __init__(self, limit: int = _LIMIT):
        self._found: OrderedDict[tuple, object] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def peek(self, key: tuple):
        """What was kept for `key`, or None (nothing computed)."""
        with self._lock:
            return self._found.get(key)

    def get(self, key: tuple, compute: Callable[[], object]):
        with self._lock:
            if key in self._found:
                self._found.move_to_end(key)
                return self._found[key]
        value = compute()  # outside the lock: two first requests may both compute; the results are equal
        with self._lock:
            self._found[key] = value
            while len(self._found) > self._limit:
                self._found.popitem(last=False)
        return value


class FooterRows(dict):
    """Rows per segment id read from Parquet footers (a segment never changes), forgotten all at once past
    `limit` entries so a long-running server's memory stays bounded."""

    def __init__(self, limit: int = 200_000):
        super().__init__()
        self._limit = limit

    def __setitem__(self, key, value) -> None:
        if len(self) >= self._limit:
            self.clear()
        super().__setitem__(key, value)
