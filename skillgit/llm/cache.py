"""The call journal: a content-addressed store of finished model calls, so that no call is ever paid for twice.

Contract:
- Key: a sha256 over the call's *model identity* and everything else that determines its answer (the full
  request for a chat model; skill text + item + sample for a student, plus the student's `cache_material(item)`
  when it has one: an agent student's task spec, resolved workspace revision and agent settings; a chat student's
  sampling settings that are set — temperature, max_tokens, seed, reasoning effort, thinking budget). The identity
  names the model, never the transport: an explicit `identity=` (the config's `model.<role>.cache_identity`),
  else the backend's `cache_identity` attribute, else its `id` with an endpoint suffix (`@host:port`,
  `@https://...`) removed — so a local server restarted on another port keeps its answers. Two different models
  served under the same name on two servers do share answers: set `cache_identity` to tell them apart.
- Storage: one SQLite file (`.git/skillgit/cache/calls.sqlite`) in WAL mode, indexed by key, in the compact format
  of `llm/journal.py` (keys as 32 bytes, runs by id, meta without defaults: ~160 bytes a call besides its reply).
  Opening it reads no entry (O(1) in their number); replies are zlib-compressed above `COMPRESS_ABOVE` bytes.
  In-memory when `path` is None.
- Durability: a `put` that returned is committed to the WAL file with `synchronous=NORMAL`, i.e. written to the
  operating system before `put` returns but not fsync'ed per call. It survives the process being killed at any
  instant (SIGKILL, OOM killer, Ctrl-C). On power loss or a kernel crash the calls committed since the last
  checkpoint (at most ~4 MB of WAL) may be lost — never corrupted: those calls are simply paid again.
- Size cap: a reply whose text + trace exceeds `max_reply_chars` is never stored; `put` stores a small
  *tombstone* for the key and raises `ReplyTooLarge` (an `LLMError`, kind "bad_reply", not retryable) that
  names the size and `env.max_reply_chars`. A later `get` of that key raises the same error again (a resumed run
  does not pay for the call again) unless the cap has since been raised above the recorded size.
- Only successful calls and tombstones are stored; other errors are never journaled, so a resumed run retries them.
- Provenance: `bind_run(run_id)` tags every later `put` and every hit with that run; `prune(keep_runs)` deletes
  the entries no kept run used (including entries never bound to a run) and VACUUMs.
- Per-run keys: `bind_run(run_id, salt=…, chat_salt=…)` with the run's salt (recorded on its run ref at its
  start: `loop/evidence.py`) adds `salt` to every student key and `chat_salt` to every chat key (the teacher's
  calls and a judge's) made while bound, so a run's scorings — the incumbent's too — are its own measurements,
  never another run's journaled answers, while a resumed run (same salt) replays every call it finished.
  Judges: a rubric judge grading the same output again (a temperature-0 student answers a new run as it answered
  the last) is a new draw of the judge, as the student's own call is; replaying an earlier run's draw would make
  a noisy judge's old verdict look like a fresh measurement of the incumbent. Teachers: a new run (`train
  --new`) is an independent attempt from its tip; replaying an earlier run's reflections would have it propose
  the very edits that run proposed and pay its students to score them again, so its teacher is asked afresh too
  (the cost: a new run pays its teacher calls even when an earlier run from the same tip asked the same prompts).
  A journal bound to no run or to an empty salt keeps run-free keys: `eval`, `check` (its `check:<base>:<head>`
  round keeps re-checking the same pair free), a run begun before runs had a salt, and — for chat keys only — a
  run begun before its chat calls were salted (`Evidence.chats`), so every run resumes on the keys it began with.
- One call per key at a time: `through(key, call)` (what both wrappers use) makes a missed call once however many
  threads ask the same key together (a judge grading a deterministic student's identical repeats, in parallel):
  the others wait for it and are answered by its stored reply; if it fails (nothing stored) the next of them makes
  the call itself.
- Thread-safe: writes go through one connection under one lock held only around the SQL statements (compression
  and the model call itself happen outside it); reads use one connection per thread and take no lock (WAL readers
  see every committed put and never wait for the writer). Several processes may share the file (SQLite's own
  locking, 30 s busy timeout). Every ~4 MB of WAL a commit also checkpoints it into the database (two fsyncs).
- Migration: a database of an earlier schema is rewritten to the current one in place at its first open, under
  SQLite's write lock, keeping every entry, count and run tag (`journal.upgrade`). A `calls.jsonl` journal from
  an earlier skillgit next to the database is imported once at open (streamed line by line, torn lines and
  replies over the cap skipped) and renamed `calls.jsonl.imported`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgit.errors import SkillgitError
from skillgit.llm import journal as J
from skillgit.llm.base import LLM, LLMError, Reply, Request, Student
from skillgit.recent import Recent
from skillgit.types import Item, Usage

DB_NAME = "calls.sqlite"
LEGACY_NAME = "calls.jsonl"
SCHEMA_VERSION = J.SCHEMA_VERSION
DEFAULT_MAX_REPLY_CHARS = 1_000_000
COMPRESS_ABOVE = J.COMPRESS_ABOVE
_IMPORT_BATCH = (500, 8 << 20)  # rows, stored bytes: an import commits (and frees) a batch at either bound
MARKED_MEMO = 4096  # keys remembered as already tagged with the bound run (forgotten ones are tagged again: a no-op)
_READER_CACHE_KIB = 256  # page cache of each thread's read connection (SQLite's default: 2 MiB; the OS caches the file)
WAL_PAGES = 256  # pages written to the WAL before it is folded into the database (SQLite's default: 1,000)


# ---------------------------------------------------------------------------------------------- keys
def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_PORT = re.compile(r":\d{1,5}$")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_DOMAIN = re.compile(r"^[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}$", re.IGNORECASE)


def _looks_like_endpoint(text: str) -> bool:
    """`host:port`, a URL, localhost, an IP or a dotted domain — not a model version such as `20240620`/`v1.5`."""
    if _SCHEME.match(text):
        return True
    host = text.split("/", 1)[0]
    if _PORT.search(host) or host.startswith("["):
        return True
    return host.lower() == "localhost" or bool(_IPV4.match(host)) or bool(_DOMAIN.match(host))


def strip_endpoint(backend_id: str) -> str:
    """`openai:qwen@localhost:8000` -> `openai:qwen`; ids without an endpoint part are returned unchanged
    (`anthropic:claude-3-5-sonnet@20240620` keeps its version)."""
    head, sep, tail = backend_id.rpartition("@")
    return head if sep and head and _looks_like_endpoint(tail) else backend_id


def model_identity(inner: Any, identity: str | None = None) -> str:
    """What a wrapper keys `inner`'s calls on: `identity` when given, else `inner.cache_identity` when the backend
    has one, else `inner.id` without its endpoint."""
    if identity:
        return identity
    own = getattr(inner, "cache_identity", None)
    if isinstance(own, str) and own:
        return own
    return strip_endpoint(str(inner.id))


def llm_key(identity: str, request: Request, salt: str = "") -> str:
    """`salt`: the training run's chat salt (see the module contract); empty outside a run, where keys stay as
    they were."""
    return _digest("llm", identity, request.cache_key_material(), *((f"run-salt:{salt}",) if salt else ()))


def student_key(identity: str, skill: str, item: Item, sample: int, material: str = "", salt: str = "") -> str:
    """`material`: what else decides the run (an agent student's task workspace/setup/verify spec, resolved
    revision and agent settings: `AgentStudent.cache_material`); empty for other students, whose keys stay as
    they were. `salt`: the training run's own (see the module contract); empty outside a run."""
    parts = (skill, item.id, item.input, str(sample), *((material,) if material else ()),
             *((f"run-salt:{salt}",) if salt else ()))
    return _digest("student", identity, *parts)


# ---------------------------------------------------------------------------------------------- values
class ReplyTooLarge(LLMError):
    """A reply over `env.max_reply_chars`: not stored, not retried; `usage` is what the call cost (0 on replay)."""

    def __init__(self, key: str, chars: int, limit: int, *, usage: Usage | None = None, replayed: bool = False):
        when = "an earlier call returned" if replayed else "the model returned"
        super().__init__(
            f"{when} a reply of {chars:,} characters, over env.max_reply_chars ({limit:,}); it was not journaled "
            f"(call journal key {key[:16]})",
            f"raise env.max_reply_chars above {chars:,} if replies this long are expected (the call is then made "
            "again), or ask for shorter answers", kind="bad_reply", retryable=False)
        self.key = key
        self.chars = chars
        self.limit = limit
        self.usage = usage or Usage()
        self.replayed = replayed


@dataclass(frozen=True)
class CacheStats:
    """Counters of this process (hits, misses, refused, saved_usage) and of the file (entries, tombstones,
    repeated_puts: stored calls paid more than once, disk_bytes: database + WAL)."""

    hits: int = 0
    misses: int = 0
    refused: int = 0
    saved_usage: Usage = field(default_factory=Usage)
    entries: int = 0
    tombstones: int = 0
    repeated_puts: int = 0
    disk_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "refused": self.refused,
                "saved_usage": self.saved_usage.to_dict(), "entries": self.entries, "tombstones": self.tombstones,
                "repeated_puts": self.repeated_puts, "disk_bytes": self.disk_bytes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CacheStats:
        return cls(**{**data, "saved_usage": Usage.from_dict(data.get("saved_usage", {}))})


@dataclass(frozen=True)
class PruneReport:
    entries_deleted: int
    entries_kept: int
    bytes_before: int
    bytes_after: int

    @property
    def bytes_freed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)

    def to_dict(self) -> dict[str, Any]:
        return {"entries_deleted": self.entries_deleted, "entries_kept": self.entries_kept,
                "bytes_before": self.bytes_before, "bytes_after": self.bytes_after, "bytes_freed": self.bytes_freed}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PruneReport:
        return cls(int(data["entries_deleted"]), int(data["entries_kept"]), int(data["bytes_before"]),
                   int(data["bytes_after"]))


# ---------------------------------------------------------------------------------------------- the journal
class _Reader:
    """A thread's own read connection; referenced by that thread only, so it is closed when the thread ends (by
    `__del__`: a connection is in a reference cycle with its statement cache, so dropping it would leave it open
    until a garbage collection, and the journal's WAL with it)."""

    __slots__ = ("__weakref__", "conn")

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __del__(self) -> None:
        self.conn.close()


class _Flight:
    """A call being made for a key: `done` is set when it returned or failed; `waiting` threads wait for it."""

    __slots__ = ("done", "waiting")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.waiting = 0


class CallCache:
    """Thread-safe journal of replies keyed by content hash (see the module contract).

    `path` is the database file (a legacy `.../calls.jsonl` path is read as `.../calls.sqlite` next to it);
    None keeps the journal in memory for the life of the object."""

    def __init__(self, path: Path | None, *, max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS):
        if path is not None and path.suffix == ".jsonl":
            path = path.with_name(DB_NAME)
        self.path = path
        self.max_reply_chars = max_reply_chars
        self._lock = threading.Lock()
        self._run: str | None = None
        self._run_id: int | None = None  # the bound run's `runs.id`
        self.salt = ""  # the bound run's salt: part of every student key (see the module contract)
        self.chat_salt = ""  # …and of every chat key (teacher, judge) when the run salts those too
        # keys lately tagged with the bound run: a hit on one needs no write (bounded: a run makes new calls every
        # step; tagging a forgotten key again is an INSERT OR IGNORE that changes nothing)
        self._marked = Recent(MARKED_MEMO)
        self._local = threading.local()
        self._flying: dict[str, _Flight] = {}  # keys being called now (`through`)
        self._readers: weakref.WeakSet[_Reader] = weakref.WeakSet()
        self.hits = 0
        self.misses = 0
        self.refused = 0
        self.saved_usage = Usage()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(":memory:" if path is None else str(path), timeout=30.0,
                                         isolation_level=None, check_same_thread=False)
            self._setup()
            legacy = None if path is None else path.with_name(LEGACY_NAME)
            if legacy is not None and legacy.is_file():
                self._import_legacy(legacy)
        except sqlite3.Error as exc:
            raise SkillgitError(f"cannot open the call journal {path}: {exc}",
                                "if another skillgit process is using it, wait for it; if the file is damaged, "
                                "move it away (the calls it holds will be paid again)") from None

    # ------------------------------------------------------------------------------------------ lifecycle
    def _setup(self) -> None:
        c = self._conn
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA synchronous=NORMAL")  # no fsync per commit: durable across a process kill (see above)
        # The WAL is folded into the database every WAL_PAGES pages (and then written over from its start), so a
        # long run's journal holds ~1 MB of WAL, not the 4 MB SQLite's default leaves on disk.
        c.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        c.execute("PRAGMA journal_size_limit=67108864")  # truncate a WAL that a burst grew, after checkpoints
        version = c.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SkillgitError(
                f"the call journal {self.path} was written by a newer skillgit (schema {version})",
                "upgrade skillgit, or delete .git/skillgit/cache/ (finished calls will be paid again)")
        if version < SCHEMA_VERSION:
            J.upgrade(c)  # a new file gets the schema; an older one is migrated in place (llm/journal.py)

    def close(self) -> None:
        """Close the file's connections; the last connection to it folds the WAL into the database and removes it."""
        with self._lock:
            for reader in list(self._readers):
                reader.conn.close()
            self._conn.close()

    def _select(self, key: str) -> tuple[Any, ...] | None:
        # fetchall, not fetchone: stepping the statement to its end closes the read transaction at once, so an
        # idle reader never pins a WAL snapshot (which would keep checkpoints from shrinking the WAL)
        if self.path is None:  # one in-memory database: only the writer connection sees it
            with self._lock:
                rows = self._conn.execute(J.SELECT, (J.stored_key(key),)).fetchall()
            return rows[0] if rows else None
        reader: _Reader | None = getattr(self._local, "reader", None)
        if reader is None:
            conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA query_only=1")
            conn.execute(f"PRAGMA cache_size=-{_READER_CACHE_KIB}")
            reader = self._local.reader = _Reader(conn)
            with self._lock:
                self._readers.add(reader)
        rows = reader.conn.execute(J.SELECT, (J.stored_key(key),)).fetchall()
        return rows[0] if rows else None

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM calls WHERE kind = 0").fetchone()[0])

    def bind_run(self, run_id: str | None, *, salt: str = "", chat_salt: str = "") -> None:
        """Tag later puts and hits with `run_id` (None: stop tagging), key later student calls with `salt` and
        later chat calls with `chat_salt` (the run's; "" for none)."""
        with self._lock:
            self._run = run_id
            self.salt = salt if run_id is not None else ""
            self.chat_salt = chat_salt if run_id is not None else ""
            self._run_id = None if run_id is None else self._run_key(run_id)
            self._marked.clear()

    def _run_key(self, run_id: str) -> int:
        # a run's row is never deleted (prune drops its tags only), so its id stays valid while a process uses it
        self._conn.execute("INSERT OR IGNORE INTO runs (name) VALUES (?)", (run_id,))
        return int(self._conn.execute("SELECT id FROM runs WHERE name = ?", (run_id,)).fetchone()[0])

    # ------------------------------------------------------------------------------------------ get / put
    def get(self, key: str) -> Reply | None:
        """The stored reply (marked `cached`, usage zero: nothing paid), or None. Raises `ReplyTooLarge` for a
        tombstone recorded above the current cap."""
        return self._get(key, count_miss=True)

    def _get(self, key: str, *, count_miss: bool) -> Reply | None:
        row = self._select(key)
        if row is not None and row[0] == J.TOMBSTONE and row[1] <= self.max_reply_chars:
            row = None  # a tombstone under today's cap: the cap was raised since, so the call is made again
        if row is None:
            if count_miss:
                with self._lock:
                    self.misses += 1
            return None
        kind, chars, codec, meta_json, trace, text = row
        if kind == J.TOMBSTONE:
            self._mark_used(key, refused=True)
            raise ReplyTooLarge(key, chars, self.max_reply_chars, replayed=True)
        meta = J.decode_meta(meta_json)
        self._mark_used(key, saved=meta.usage)
        return Reply(text=J.unpack(bool(codec & J.TEXT_ZLIB), text), usage=Usage(), model=meta.model,
                     trace=J.unpack(bool(codec & J.TRACE_ZLIB), trace), cached=True, score=meta.score,
                     timings=meta.timings or {}, saved=meta.usage)

    def put(self, key: str, reply: Reply) -> None:
        """Store `reply`; returns once it is committed. A reply over the cap is replaced by a tombstone and
        `ReplyTooLarge` is raised (carrying the reply's usage, which was paid)."""
        chars = len(reply.text) + len(reply.trace)
        if chars > self.max_reply_chars:
            self._store(key, J.Row.tombstone(reply, self.max_reply_chars))
            raise ReplyTooLarge(key, chars, self.max_reply_chars, usage=reply.usage)
        self._store(key, J.Row.of_reply(reply))

    def through(self, key: str, call: Callable[[], Reply]) -> Reply:
        """The stored reply of `key`, or `call()`'s, stored; one call at a time per key (see the module contract)."""
        while True:
            hit = self.get(key)
            if hit is not None:
                return hit
            with self._lock:
                other = self._flying.get(key)
                if other is not None:
                    other.waiting += 1
                else:
                    flight = self._flying[key] = _Flight()
            if other is not None:
                other.done.wait()  # then its reply is stored (a hit), or it failed and this thread calls
                continue
            try:
                # a call of the key that finished between this thread's miss and its flight: its reply
                hit = self._get(key, count_miss=False)
                if hit is not None:
                    return hit
                reply = call()
                self.put(key, reply)
                return reply
            finally:
                with self._lock:
                    del self._flying[key]
                flight.done.set()

    def evict(self, key: str) -> bool:
        """Forget one entry (a cached reply that led to a non-retryable failure); True if there was one."""
        with self._lock:
            stored = J.stored_key(key)
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("DELETE FROM uses WHERE call = (SELECT id FROM calls WHERE key = ?)", (stored,))
                gone = self._conn.execute("DELETE FROM calls WHERE key = ?", (stored,)).rowcount
            except BaseException:
                J.rollback(self._conn)
                raise
            self._conn.execute("COMMIT")
            self._marked.discard(key)
        return gone > 0

    def _mark_used(self, key: str, *, saved: Usage | None = None, refused: bool = False) -> None:
        with self._lock:
            if refused:
                self.refused += 1
            else:
                self.hits += 1
                self.saved_usage = self.saved_usage + (saved or Usage())
            if self._run_id is None or key in self._marked:
                return
            self._conn.execute(J.TAG, (self._run_id, J.stored_key(key)))
            self._marked.add(key)

    def _store(self, key: str, row: J.Row) -> None:
        # the entry and its provenance commit together: a prune in another process never sees one without the other
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                c.execute(J.UPSERT, row.params(key, time.time()))
                if self._run_id is not None:
                    c.execute(J.TAG, (self._run_id, J.stored_key(key)))
            except BaseException:
                J.rollback(c)
                raise
            c.execute("COMMIT")
            if self._run_id is not None:
                self._marked.add(key)
            if row.kind == J.TOMBSTONE:
                self.refused += 1

    # ------------------------------------------------------------------------------------------ maintenance
    def disk_bytes(self) -> int:
        """Size of the database with its WAL and shared-memory files (0 in memory)."""
        if self.path is None:
            return 0
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = self.path.with_name(self.path.name + suffix)
            try:
                total += p.stat().st_size
            except FileNotFoundError:
                pass
        return total

    def stats(self) -> CacheStats:
        """This process's counters and the file's totals (the totals count rows: O(entries), on demand only)."""
        with self._lock:
            entries, tombstones, repeated = self._conn.execute(
                "SELECT COALESCE(SUM(kind = 0), 0), COALESCE(SUM(kind = 1), 0), COALESCE(SUM(puts - 1), 0) "
                "FROM calls").fetchone()
            return CacheStats(self.hits, self.misses, self.refused, self.saved_usage, int(entries), int(tombstones),
                              int(repeated), self.disk_bytes())

    def prune(self, keep_runs: Iterable[str]) -> PruneReport:
        """Delete every entry that no run in `keep_runs` used (entries never bound to a run included), drop the
        provenance of the other runs, then VACUUM and truncate the WAL."""
        keep = sorted(set(keep_runs))
        with self._lock:
            c = self._conn
            before = self.disk_bytes()
            c.execute("BEGIN IMMEDIATE")
            try:
                c.execute("CREATE TEMP TABLE IF NOT EXISTS keep_runs (run TEXT PRIMARY KEY)")
                c.execute("DELETE FROM keep_runs")
                c.executemany("INSERT INTO keep_runs (run) VALUES (?)", [(r,) for r in keep])
                kept_ids = "SELECT r.id FROM runs r JOIN keep_runs k ON k.run = r.name"
                deleted = c.execute(f"DELETE FROM calls WHERE id NOT IN (SELECT call FROM uses "
                                    f"WHERE run IN ({kept_ids}))").rowcount
                c.execute(f"DELETE FROM uses WHERE run NOT IN ({kept_ids})")
                c.execute("DELETE FROM uses WHERE call NOT IN (SELECT id FROM calls)")  # tags of evicted entries
                kept = int(c.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
            except BaseException:
                J.rollback(c)
                raise
            c.execute("COMMIT")
            c.execute("VACUUM")
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if self._run not in keep:
                self._marked.clear()  # the bound run's tags were dropped with it: tag hits again
            return PruneReport(deleted, kept, before, self.disk_bytes())

    def _import_legacy(self, legacy: Path) -> None:
        """Stream an old JSON-lines journal in (torn lines and replies over the cap skipped), then rename it."""
        c = self._conn
        batch: list[tuple[Any, ...]] = []
        batch_bytes = 0

        def flush() -> None:
            # one transaction per batch keeps the WAL small for a journal of any size; the import is idempotent,
            # so a kill half-way only means the next open imports the file again
            c.execute("BEGIN IMMEDIATE")
            try:
                c.executemany(J.IMPORT, batch)
            except BaseException:
                J.rollback(c)
                raise
            c.execute("COMMIT")
            batch.clear()

        with legacy.open("r", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                    key, text, trace = record["k"], record["text"], record.get("trace", "") or ""
                    if not isinstance(key, str) or not isinstance(text, str) or not isinstance(trace, str):
                        continue
                    usage = Usage.from_dict(record.get("usage") or {})
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue  # a torn line from a killed writer: the call is simply made again
                if len(text) + len(trace) > self.max_reply_chars:
                    continue
                row = J.Row.of_reply(Reply(text=text, usage=usage, model=str(record.get("model", "")), trace=trace))
                batch.append(row.params(key, time.time()))
                batch_bytes += len(row.text) + len(row.trace)
                if len(batch) >= _IMPORT_BATCH[0] or batch_bytes >= _IMPORT_BATCH[1]:
                    flush()
                    batch_bytes = 0
        if batch:
            flush()
        try:
            legacy.replace(legacy.with_name(LEGACY_NAME + ".imported"))
        except FileNotFoundError:
            pass  # another process imported and renamed it at the same time; the import is idempotent


# ---------------------------------------------------------------------------------------------- wrappers
class _Cached:
    """What both wrappers share: the wrapped caller, the journal, the model identity keys are made from, and the
    journal's one rule (a hit is served; a miss is called once and stored)."""

    def __init__(self, inner: LLM | Student, cache: CallCache, identity: str | None = None):
        self.cache = cache
        self.identity = model_identity(inner, identity)

    def _through(self, key: str, call: Callable[[], Reply]) -> Reply:
        return self.cache.through(key, call)


class CachedLLM(_Cached):
    """Wraps an `LLM`; identical requests to the same model identity are answered from the journal."""

    def __init__(self, inner: LLM, cache: CallCache, identity: str | None = None):
        super().__init__(inner, cache, identity)
        self.inner = inner

    @property
    def id(self) -> str:
        return self.inner.id

    def key(self, request: Request) -> str:
        return llm_key(self.identity, request, self.cache.chat_salt)

    def complete(self, request: Request) -> Reply:
        return self._through(self.key(request), lambda: self.inner.complete(request))


class CachedStudent(_Cached):
    """Wraps a `Student`; the same skill text, item and sample index are run once per model identity."""

    def __init__(self, inner: Student, cache: CallCache, identity: str | None = None):
        super().__init__(inner, cache, identity)
        self.inner = inner

    @property
    def id(self) -> str:
        return self.inner.id

    def key(self, skill: str, item: Item, sample: int = 0) -> str:
        # an agent student names what else decides its run (through RetryingStudent's attribute pass-through)
        material = getattr(self.inner, "cache_material", None)
        extra = material(item) if callable(material) else ""
        return student_key(self.identity, skill, item, sample, extra if isinstance(extra, str) else "",
                           self.cache.salt)

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        return self._through(self.key(skill, item, sample), lambda: self.inner.run(skill, item, sample))
