"""A call journal written by an earlier skillgit (schema 1: hex keys as text, verbose meta JSON, runs named in every
tag) is migrated in place when it is opened (`skillgit/llm/journal.py`), answers every call it holds, keeps each
entry's provenance and payment count, and a run stopped with such a journal resumes paying no finished call twice.

`write_schema_1` writes a journal exactly as skillgit wrote it before the compact format (the schema and the meta
documents of `llm/cache.py` at 0707164, frozen here)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import zlib
from pathlib import Path

from skillgit.cli.demo import create_project
from skillgit.llm import journal
from skillgit.llm.base import Reply
from skillgit.llm.cache import CallCache, ReplyTooLarge
from skillgit.types import Score, Usage
from tests.conftest import git, run_cli

SCHEMA_1 = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, kind INTEGER NOT NULL, chars INTEGER NOT NULL, puts INTEGER NOT NULL,
    created REAL NOT NULL, codec INTEGER NOT NULL, meta TEXT NOT NULL, trace BLOB NOT NULL, text BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS uses (key TEXT NOT NULL, run TEXT NOT NULL, PRIMARY KEY (key, run)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS uses_by_run ON uses (run);
"""
HEX = ["%064x" % (i * 0x9E3779B97F4A7C15 + 12345) for i in range(6)]
USAGE = Usage(calls=1, prompt_tokens=84, completion_tokens=8, cost_usd=0.00125)


def meta_1(model: str, usage: Usage, score: Score | None = None, timings: dict | None = None) -> str:
    extra: dict = {}
    if score is not None:
        extra["score"] = score.to_dict()
    if timings:
        extra["timings"] = timings
    return json.dumps({"model": model, "usage": usage.to_dict(), **extra}, separators=(",", ":"))


def write_schema_1(path: Path, rows: list[tuple], uses: list[tuple[str, str]]) -> None:
    """rows: (key, kind, chars, puts, created, codec, meta, trace, text) as schema 1 stored them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(f"BEGIN; {SCHEMA_1} PRAGMA user_version=1; COMMIT;")
    con.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.executemany("INSERT INTO uses VALUES (?, ?)", uses)
    con.close()


def to_schema_1(path: Path) -> int:
    """Rewrite a journal this skillgit wrote as schema 1 wrote it (same entries, runs and counts); returns the
    number of entries."""
    con = sqlite3.connect(path)
    rows = con.execute(f"SELECT {journal.COLUMNS} FROM calls ORDER BY id").fetchall()
    uses = con.execute("SELECT c.key, r.name FROM uses u JOIN calls c ON c.id = u.call "
                       "JOIN runs r ON r.id = u.run").fetchall()
    con.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    old = []
    for key, kind, chars, puts, created, codec, meta, trace, text in rows:
        if kind == journal.TOMBSTONE:
            doc = json.loads(meta)
            meta_v1 = json.dumps({"model": doc.get("m", ""), "limit": doc["l"]}, separators=(",", ":"))
        else:
            m = journal.decode_meta(meta)
            meta_v1 = meta_1(m.model, m.usage, m.score, dict(m.timings or {}))
        old.append((journal.key_text(key), kind, chars, puts, created, codec, meta_v1, trace, text))
    write_schema_1(path, old, [(journal.key_text(k), run) for k, run in uses])
    return len(old)


def schema_1_journal(path: Path) -> dict[str, Reply]:
    """Six entries as schema 1 held them: plain, compressed, scored with timings, paid twice, a tombstone and a
    key that is not a sha256; three runs. Returns what `get` must answer for each reply."""
    long_text = " ".join(f"word{i % 97}" for i in range(3000))
    replies = {
        HEX[0]: Reply("5", usage=USAGE, model="sim-student", trace="t"),
        HEX[1]: Reply(long_text, usage=USAGE, model="qwen-2024"),
        HEX[2]: Reply("ok", usage=USAGE, model="agent", score=Score(1.0, 0.5, "fine"),
                      timings={"agent": 1.5, "verify": 0.25}),
        HEX[3]: Reply("twice", usage=Usage(calls=1), model="m"),
        "legacy-key": Reply("plain key", model="m"),
    }
    rows = []
    for n, (key, r) in enumerate(replies.items()):
        zipped = len(r.text) > 512
        text = zlib.compress(r.text.encode()) if zipped else r.text.encode()
        rows.append((key, 0, len(r.text) + len(r.trace), 2 if key == HEX[3] else 1, 1000.0 + n, int(zipped),
                     meta_1(r.model, r.usage, r.score, dict(r.timings) or None), r.trace.encode(), text))
    rows.append((HEX[4], 1, 7_000, 1, 1010.0, 0, json.dumps({"model": "m", "limit": 5_000}, separators=(",", ":")),
                 b"", b""))
    uses = [(HEX[0], "run-a"), (HEX[1], "run-a"), (HEX[1], "run-b"), (HEX[2], "run-b"), (HEX[4], "run-c"),
            ("legacy-key", "run-c")]
    write_schema_1(path, rows, uses)
    return replies


def test_a_schema_1_journal_is_migrated_in_place_and_answers_every_call(tmp_path):
    path = tmp_path / "calls.sqlite"
    replies = schema_1_journal(path)
    cache = CallCache(path, max_reply_chars=5_000)
    for key, want in replies.items():
        got = cache.get(key)
        assert got is not None and got.cached and got.usage == Usage()
        assert (got.text, got.trace, got.model, got.score, dict(got.timings), got.saved) == \
            (want.text, want.trace, want.model, want.score, dict(want.timings), want.usage)
    try:
        cache.get(HEX[4])
        raise AssertionError("the tombstone was not replayed")
    except ReplyTooLarge as err:
        assert err.replayed and err.chars == 7_000
    stats = cache.stats()
    assert (stats.entries, stats.tombstones, stats.repeated_puts) == (5, 1, 1)  # HEX[3] was paid twice before
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == journal.SCHEMA_VERSION
    keys = [k for (k,) in con.execute("SELECT key FROM calls ORDER BY id")]
    assert keys == [*(bytes.fromhex(k) for k in HEX[:4]), "legacy-key", bytes.fromhex(HEX[4])]  # order kept
    metas = [m for (m,) in con.execute("SELECT meta FROM calls ORDER BY id")]
    assert metas[0] == '{"m":"sim-student","u":[1,84,8,0,0,0.00125]}' and metas[5] == '{"m":"m","l":5000}'
    tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master")}
    con.close()
    assert not tables & {"calls_v1", "uses_v1", "uses_by_run"}
    # provenance survived: run-b keeps what it used (HEX[1], HEX[2]) and nothing else
    report = cache.prune({"run-b"})
    assert (report.entries_deleted, report.entries_kept) == (4, 2)
    assert cache.get(HEX[1]) is not None and cache.get(HEX[2]) is not None and cache.get(HEX[0]) is None


def test_processes_opening_an_old_journal_at_once_migrate_it_once(tmp_path):
    path = tmp_path / "calls.sqlite"
    replies = schema_1_journal(path)
    opened: list[CallCache] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_it() -> None:
        try:
            start.wait()
            opened.append(CallCache(path))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(opened) == 4
    assert all(c.get(HEX[1]).text == replies[HEX[1]].text for c in opened)
    assert opened[0].stats().entries == 5 and opened[0].stats().repeated_puts == 1


def _paid(folder: Path) -> list[tuple[str, int]]:
    """(reply text, times paid) of every journaled call. Replies, not keys, are compared across two projects: a
    run's student keys carry its own salt (`loop/evidence.py`), and the simulated world answers alike."""
    con = sqlite3.connect(folder / ".git" / "skillgit" / "cache" / "calls.sqlite")
    try:
        return [(journal.unpack(bool(codec & journal.TEXT_ZLIB), text), puts)
                for codec, text, puts in con.execute("SELECT codec, text, puts FROM calls")]
    finally:
        con.close()


SHORT_RUN = ("--set", "train.max_steps=3", "--set", "train.batch_size=4", "--set", "evaluation.eval_test=false")


def test_a_run_stopped_with_an_old_journal_resumes_paying_no_finished_call_twice(tmp_path):
    seed = tmp_path / "seed"
    create_project(seed, 0)
    whole = tmp_path / "whole"
    shutil.copytree(seed, whole)
    done = run_cli("train", "--json", *SHORT_RUN, cwd=whole)
    assert done.returncode == 0, done.stderr[-2000:]
    paid = _paid(whole)
    assert len(paid) > 10 and all(puts == 1 for _, puts in paid)

    stopped = tmp_path / "stopped"
    shutil.copytree(seed, stopped)
    stop = run_cli("train", "--json", *SHORT_RUN, "--set", f"budget.max_calls={len(paid) // 2}", cwd=stopped)
    assert stop.returncode == 5, stop.stderr[-2000:]
    journal_path = stopped / ".git" / "skillgit" / "cache" / "calls.sqlite"
    kept = to_schema_1(journal_path)  # what an earlier skillgit left behind
    assert kept >= len(paid) // 2
    resumed = run_cli("train", "--json", *SHORT_RUN, cwd=stopped)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    usage = json.loads(resumed.stdout)["usage"]
    assert sum(role["calls"] for role in usage["by_role"].values()) == len(paid) - kept  # only the calls not made

    again = _paid(stopped)
    assert sorted(k for k, _ in again) == sorted(k for k, _ in paid)  # the same calls (replies): none extra or missing
    assert all(puts == 1 for _, puts in again)  # none paid twice
    assert git(stopped, "show", "HEAD:SKILL.md") == git(whole, "show", "HEAD:SKILL.md")
