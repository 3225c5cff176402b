"""A content-addressed call cache, so that no finished model call is ever paid for twice.

Contract: a call's key is a sha256 over everything that determines its answer (backend/model id, the full
request or, for students, skill text + item + sample). Only successful calls are stored; errors are never
cached, so a resumed run retries them. The cache is an append-only JSON-lines journal under the repository's
git dir (`.git/skillgit/cache/calls.jsonl`): each finished call is flushed as soon as it returns, so a run
killed mid-stage keeps every call that finished before the kill. A torn last line (kill during the write) is
ignored on load.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict
from pathlib import Path

from skillgit.llm.base import LLM, Reply, Request, Student
from skillgit.types import Item, Usage


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


class CallCache:
    """Thread-safe append-only journal of replies keyed by content hash."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, dict] = {}
        self.hits = 0
        self.misses = 0
        self.saved_usage = Usage()
        if path is not None and path.exists():
            with path.open("r", encoding="utf-8") as fh:
                for line in fh:
                    try:
                        record = json.loads(line)
                        self._entries[record["k"]] = record
                    except (ValueError, KeyError, TypeError):
                        continue  # a torn line from a killed writer; the call will simply be made again

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Reply | None:
        with self._lock:
            record = self._entries.get(key)
            if record is None:
                self.misses += 1
                return None
            self.hits += 1
            usage = Usage.from_dict(record.get("usage", {}))
            self.saved_usage = self.saved_usage + usage
        return Reply(text=record["text"], usage=Usage(), model=record.get("model", ""),
                     trace=record.get("trace", ""), cached=True)

    def put(self, key: str, reply: Reply) -> None:
        record = {"k": key, "text": reply.text, "model": reply.model, "trace": reply.trace,
                  "usage": asdict(reply.usage)}
        with self._lock:
            self._entries[key] = record
            if self.path is None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())


class CachedLLM:
    """Wraps an `LLM`; identical requests to the same backend id are answered from the cache."""

    def __init__(self, inner: LLM, cache: CallCache):
        self.inner = inner
        self.cache = cache

    @property
    def id(self) -> str:
        return self.inner.id

    def complete(self, request: Request) -> Reply:
        key = _digest("llm", self.inner.id, request.cache_key_material())
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        reply = self.inner.complete(request)
        self.cache.put(key, reply)
        return reply


class CachedStudent:
    """Wraps a `Student`; the same skill text, item and sample index are run once."""

    def __init__(self, inner: Student, cache: CallCache):
        self.inner = inner
        self.cache = cache

    @property
    def id(self) -> str:
        return self.inner.id

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        key = _digest("student", self.inner.id, skill, item.id, item.input, str(sample))
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        reply = self.inner.run(skill, item, sample)
        self.cache.put(key, reply)
        return reply
