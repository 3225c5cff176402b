"""`Recent`: a set that remembers only its newest entries — for "already done" memos that save repeated work.

A long run adds a key per step or per call to such memos; a plain set would grow with the run (issue 22: RSS per
step). `Recent(limit)` keeps at most `limit` keys, dropping the least recently added or confirmed one, so forgetting
costs only the work the memo saved (which must therefore be safe to redo: idempotent writes). Thread-safe (one
lock per object; a run's worker threads share the repository's memo).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable


class Recent:
    """At most `limit` keys, least recently added/confirmed dropped first."""

    __slots__ = ("_keys", "_lock", "limit")

    def __init__(self, limit: int):
        if limit < 1:
            raise ValueError("Recent needs a limit of at least 1")
        self.limit = limit
        self._keys: OrderedDict[Hashable, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: Hashable) -> bool:
        """Membership; a key found is kept as if added now (a memo hit stays remembered)."""
        with self._lock:
            if key in self._keys:
                self._keys.move_to_end(key)
                return True
            return False

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: Hashable) -> None:
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self.limit:
                self._keys.popitem(last=False)

    def update(self, keys: Iterable[Hashable]) -> None:
        for key in keys:
            self.add(key)

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._keys.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()
