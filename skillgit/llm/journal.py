"""The call journal's file format (`llm/cache.py` is the journal; this is what it writes and how old files are read).

Contract:
- Schema 2 (`PRAGMA user_version`): `calls` has an integer id and the key; a key that is a sha256 in hex (what
  `llm_key` / `student_key` make) is stored as its 32 bytes (a BLOB), any other key as the text it is (a TEXT value
  never equals a BLOB, so the two can never collide). `uses` tags an entry with a run by integer ids (`runs` names
  each run once), `WITHOUT ROWID`. Per call that is the key twice at 32 bytes (row and unique index) instead of
  four times at 64 (schema 1: row, its index, `uses` and `uses`' index by run) plus the run's name per use.
- `meta` is compact JSON without defaults (`encode_meta`): `m` model, `u` usage as a list in `USAGE_FIELDS` order
  without trailing zeros, `s` score (`[hard, soft]` or `[hard, soft, feedback]`), `t` timings, `l` a tombstone's
  cap; a key is absent when its value is empty. ~33 bytes for a typical call instead of ~140.
- Migration: a schema-1 file is rewritten to schema 2 in place on first open, in one `BEGIN IMMEDIATE`
  transaction (SQLite's write lock: the journal's lock across processes), which checks the version again once it
  holds the lock, so two processes opening the same old file migrate it once. Every entry, its reply bytes, `puts`
  and `created` and every run tag are kept: a resumed run is answered from the migrated file and pays no finished
  call twice. A kill during the migration rolls it back (the file stays schema 1 and is migrated at the next
  open). The space the old tables held is then returned to the file system (`VACUUM`, best effort).
"""

from __future__ import annotations

import json
import re
import sqlite3
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillgit.llm.base import Reply
from skillgit.types import Score, Usage

SCHEMA_VERSION = 2
COMPRESS_ABOVE = 512  # bytes of encoded record; smaller records are stored as they are
_ZLIB_LEVEL = 6
REPLY, TOMBSTONE = 0, 1
TEXT_ZLIB, TRACE_ZLIB = 1, 2  # bits of `codec`
USAGE_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost_usd")

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    key BLOB NOT NULL UNIQUE,   -- a sha256 key as 32 bytes, any other key as its text
    kind INTEGER NOT NULL,      -- 0 a reply, 1 a tombstone (a reply over the cap, never stored)
    chars INTEGER NOT NULL,     -- the reply's size in characters (text + trace)
    puts INTEGER NOT NULL,      -- how many times this key was paid for and stored (> 1: a call paid twice)
    created REAL NOT NULL,
    codec INTEGER NOT NULL,     -- bit 1: text is zlib-compressed, bit 2: trace is
    meta TEXT NOT NULL,         -- compact JSON (encode_meta): model, usage, score, timings (a tombstone: its cap)
    trace BLOB NOT NULL,        -- utf-8, maybe compressed
    text BLOB NOT NULL          -- utf-8, maybe compressed, last so that reading the other columns skips it
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS uses (
    call INTEGER NOT NULL,      -- calls.id
    run INTEGER NOT NULL,       -- runs.id
    PRIMARY KEY (call, run)
) WITHOUT ROWID;
"""
COLUMNS = "key, kind, chars, puts, created, codec, meta, trace, text"
SELECT = "SELECT kind, chars, codec, meta, trace, text FROM calls WHERE key = ?"
TAG = "INSERT OR IGNORE INTO uses (call, run) SELECT id, ? FROM calls WHERE key = ?"  # (run id, key)
UPSERT = (f"INSERT INTO calls ({COLUMNS}) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
          "kind = excluded.kind, chars = excluded.chars, puts = calls.puts + 1, created = excluded.created, "
          "codec = excluded.codec, meta = excluded.meta, trace = excluded.trace, text = excluded.text")
# the import is idempotent (a kill between commit and rename imports again): it never counts a second payment
IMPORT = (f"INSERT INTO calls ({COLUMNS}) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
          "chars = excluded.chars, codec = excluded.codec, meta = excluded.meta, trace = excluded.trace, "
          "text = excluded.text WHERE calls.kind = 0")

_HEX_KEY = re.compile(r"[0-9a-f]{64}")


def stored_key(key: str) -> bytes | str:
    """What the file holds for `key`: a sha256 in (lowercase) hex as its 32 bytes, anything else unchanged."""
    return bytes.fromhex(key) if len(key) == 64 and _HEX_KEY.fullmatch(key) else key


def key_text(stored: bytes | str) -> str:
    """The key `stored_key` stored (a journal's keys as callers name them)."""
    return stored.hex() if isinstance(stored, bytes) else stored


# ---------------------------------------------------------------------------------------------- meta
def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def encode_meta(*, model: str = "", usage: Usage | None = None, score: Score | None = None,
                timings: Mapping[str, float] | None = None, limit: int | None = None) -> str:
    doc: dict[str, Any] = {}
    if model:
        doc["m"] = model
    values = [_number(getattr(usage, name)) for name in USAGE_FIELDS] if usage is not None else []
    while values and not values[-1]:
        values.pop()
    if values:
        doc["u"] = values
    if score is not None:
        doc["s"] = [_number(score.hard), _number(score.soft), *((score.feedback,) if score.feedback else ())]
    if timings:
        doc["t"] = dict(timings)
    if limit is not None:
        doc["l"] = limit
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Meta:
    """A row's meta, decoded (either schema's)."""

    model: str = ""
    usage: Usage = Usage()
    score: Score | None = None
    timings: Mapping[str, float] | None = None


def decode_meta(text: str) -> Meta:
    """Schema 2's compact meta; a schema-1 document (`{"model":…, "usage": {…}, …}`) reads too."""
    doc = json.loads(text)
    if "model" in doc or "usage" in doc or "score" in doc:  # schema 1 (only ever seen while migrating)
        score = doc.get("score")
        return Meta(str(doc.get("model", "")), Usage.from_dict(doc.get("usage") or {}),
                    Score.from_dict(score) if isinstance(score, dict) else None, doc.get("timings") or None)
    values = [*(doc.get("u") or []), 0, 0, 0, 0, 0, 0][:len(USAGE_FIELDS)]
    usage = Usage(int(values[0]), int(values[1]), int(values[2]), int(values[3]), int(values[4]), float(values[5]))
    s = doc.get("s")
    score = Score(float(s[0]), float(s[1]), str(s[2]) if len(s) > 2 else "") if isinstance(s, list) else None
    return Meta(str(doc.get("m", "")), usage, score, doc.get("t") or None)


def _compact_meta(text: str) -> str:
    """A schema-1 meta document as schema 2 writes it (the migration's SQL function)."""
    doc = json.loads(text)
    if "limit" in doc:
        return encode_meta(model=str(doc.get("model", "")), limit=int(doc["limit"]))
    meta = decode_meta(text)
    return encode_meta(model=meta.model, usage=meta.usage, score=meta.score, timings=meta.timings)


# ---------------------------------------------------------------------------------------------- rows
def pack(value: str) -> tuple[bool, bytes]:
    raw = value.encode("utf-8")
    if len(raw) > COMPRESS_ABOVE:
        packed = zlib.compress(raw, _ZLIB_LEVEL)
        if len(packed) < len(raw):
            return True, packed
    return False, raw


def unpack(zipped: bool, blob: bytes) -> str:
    return (zlib.decompress(blob) if zipped else bytes(blob)).decode("utf-8")


@dataclass(frozen=True)
class Row:
    """One entry as stored (everything but key, puts and created)."""

    kind: int
    chars: int
    codec: int
    meta: str
    trace: bytes
    text: bytes

    def params(self, key: str, created: float) -> tuple[Any, ...]:
        return (stored_key(key), self.kind, self.chars, created, self.codec, self.meta, self.trace, self.text)

    @classmethod
    def of_reply(cls, reply: Reply) -> Row:
        text_zipped, text = pack(reply.text)
        trace_zipped, trace = pack(reply.trace)
        meta = encode_meta(model=reply.model, usage=reply.usage, score=reply.score, timings=reply.timings)
        return cls(REPLY, len(reply.text) + len(reply.trace),
                   (TEXT_ZLIB if text_zipped else 0) | (TRACE_ZLIB if trace_zipped else 0), meta, trace, text)

    @classmethod
    def tombstone(cls, reply: Reply, limit: int) -> Row:
        return cls(TOMBSTONE, len(reply.text) + len(reply.trace), 0, encode_meta(model=reply.model, limit=limit),
                   b"", b"")


# ---------------------------------------------------------------------------------------------- schema
def rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:  # SQLite may already have rolled back (disk full, I/O error)
        conn.execute("ROLLBACK")


def upgrade(conn: sqlite3.Connection) -> bool:
    """Bring an opened journal to `SCHEMA_VERSION` under the write lock: create it when new, migrate a schema-1
    file in place (see the module contract). True when a schema-1 file was migrated. The caller checked that the
    file is not newer than this code."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # again: another process may have upgraded it
        migrated = version == 1
        if migrated:
            _migrate_v1(conn)
        elif version == 0:
            _create(conn)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    except BaseException:
        rollback(conn)
        raise
    conn.execute("COMMIT")
    if migrated:
        try:  # the old tables' pages back to the file system, and the WAL the copy grew (a busy file keeps them)
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass
    return migrated


def _create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):  # executescript would commit the open transaction first (no ";" in comments)
        if statement.strip():
            conn.execute(statement)


def _migrate_v1(conn: sqlite3.Connection) -> None:
    conn.create_function("sg_key", 1, lambda k: stored_key(k) if isinstance(k, str) else k, deterministic=True)
    conn.create_function("sg_meta", 1, _compact_meta, deterministic=True)
    conn.execute("ALTER TABLE calls RENAME TO calls_v1")
    conn.execute("ALTER TABLE uses RENAME TO uses_v1")
    conn.execute("DROP INDEX IF EXISTS uses_by_run")
    _create(conn)
    conn.execute(f"INSERT INTO calls ({COLUMNS}) SELECT sg_key(key), kind, chars, puts, created, codec, "
                 "sg_meta(meta), trace, text FROM calls_v1 ORDER BY rowid")
    conn.execute("INSERT INTO runs (name) SELECT DISTINCT run FROM uses_v1 ORDER BY run")
    conn.execute("INSERT OR IGNORE INTO uses (call, run) SELECT c.id, r.id FROM uses_v1 u "
                 "JOIN calls c ON c.key = sg_key(u.key) JOIN runs r ON r.name = u.run")
    conn.execute("DROP TABLE calls_v1")
    conn.execute("DROP TABLE uses_v1")
