"""The call journal (skillgit/llm/cache.py) on a real SQLite file: round trips, the reply-size cap and its
tombstones, model identity (endpoints do not count), provenance and prune, the one-time import of the old JSON-lines
journal, 32 threads at once, a writer SIGKILLed mid-put, and an open that reads no entry."""

from __future__ import annotations

import inspect
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from skillgit.config import config_from_dict
from skillgit.errors import SkillgitError
from skillgit.llm import cache as cache_mod
from skillgit.llm import journal
from skillgit.llm.base import LLMError, Message, Reply, Request
from skillgit.llm.cache import CachedLLM, CachedStudent, CallCache, ReplyTooLarge
from skillgit.llm.factory import build_student, build_teacher
from skillgit.types import Item, Usage
from tests.fake_servers import FakeLLMServer, reply

ROOT = Path(__file__).resolve().parent.parent
ASK = Request((Message("system", "Be terse."), Message("user", "What is 2+3?")), stage="reflect")
ITEM = Item(id="i1", input="2+3?")
USAGE = Usage(calls=1, prompt_tokens=40, completion_tokens=7, cost_usd=0.01)


def db(tmp_path: Path) -> Path:
    return tmp_path / ".git" / "skillgit" / "cache" / "calls.sqlite"


def prose(n_chars: int, seed: int = 0) -> str:
    """Compressible text that differs with `seed` (like model output, unlike random bytes)."""
    words = [f"w{(i * 7919 + seed * 104729) % 997}" for i in range(n_chars // 4 + 1)]
    return " ".join(words)[:n_chars]


def raw_rows(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """key -> (kind, codec, stored bytes, puts), read straight from the file."""
    con = sqlite3.connect(path)
    try:
        return {journal.key_text(k): (kind, codec, size, puts) for k, kind, codec, size, puts in
                con.execute("SELECT key, kind, codec, length(text) + length(trace) + length(meta), puts FROM calls")}
    finally:
        con.close()


class CountingLLM:
    """A model at our own seam: answers `text`, counts calls."""

    def __init__(self, text: str = "5", id: str = "openai:qwen", **attrs: str):
        self.text = text
        self._id = id
        self.calls = 0
        self.__dict__.update(attrs)

    @property
    def id(self) -> str:
        return self._id

    def complete(self, request: Request) -> Reply:
        self.calls += 1
        return Reply(text=self.text, usage=USAGE, model="qwen-2024")


class CountingStudent(CountingLLM):
    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        self.calls += 1
        return Reply(text=f"{self.text}:{sample}", usage=USAGE, model="agent", trace="ran 2 tools")


# ---------------------------------------------------------------------------------------------- round trips
def test_a_stored_call_comes_back_from_the_reopened_file_compressed_and_marked_cached(tmp_path):
    path = db(tmp_path)
    cache = CallCache(path)
    long_text = prose(20_000)
    cache.put("short", Reply("5", usage=USAGE, model="m1", trace="t"))
    cache.put("long", Reply(long_text, usage=USAGE, model="m2"))
    cache.put("traced", Reply("a", trace=prose(5_000, 9)))
    cache.close()

    again = CallCache(path)
    hit = again.get("long")
    assert hit is not None and hit.text == long_text and hit.model == "m2" and hit.cached
    assert hit.usage == Usage()  # nothing is paid for a hit
    short = again.get("short")
    assert short is not None and (short.text, short.trace) == ("5", "t")
    traced = again.get("traced")
    assert traced is not None and (traced.text, traced.trace) == ("a", prose(5_000, 9))
    assert again.get("never") is None
    stats = again.stats()
    assert (stats.hits, stats.misses, stats.entries, stats.repeated_puts) == (3, 1, 3, 0)
    assert stats.saved_usage == USAGE + USAGE
    assert stats.disk_bytes > 0 and cache_mod.CacheStats.from_dict(stats.to_dict()) == stats
    rows = raw_rows(path)
    assert rows["long"][1] == 1 and rows["long"][2] < len(long_text) // 2  # zlib above the threshold
    assert rows["short"][1] == 0  # tiny records are stored as they are
    assert rows["traced"][1] == 2  # the trace is compressed on its own


def test_the_wrapper_pays_once_and_an_in_memory_journal_works_too():
    inner = CountingLLM()
    llm = CachedLLM(inner, CallCache(None))
    first, second = llm.complete(ASK), llm.complete(ASK)
    assert inner.calls == 1 and not first.cached and second.cached and second.text == "5"
    student = CountingStudent()
    cached = CachedStudent(student, CallCache(None))
    assert [cached.run("skill", ITEM, s).text for s in (0, 1, 0)] == ["5:0", "5:1", "5:0"]
    assert student.calls == 2 and cached.run("skill", ITEM, 1).trace == "ran 2 tools"


def test_evict_forgets_one_entry_so_the_call_is_made_again(tmp_path):
    cache = CallCache(db(tmp_path))
    inner = CountingLLM()
    llm = CachedLLM(inner, cache)
    llm.complete(ASK)
    assert cache.evict(llm.key(ASK)) is True
    assert cache.evict(llm.key(ASK)) is False
    llm.complete(ASK)
    assert inner.calls == 2 and len(cache) == 1


def test_a_damaged_journal_is_a_clean_error_with_a_fix(tmp_path):
    path = db(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database, it only has the name of one" * 100)
    with pytest.raises(SkillgitError, match="cannot open the call journal") as info:
        CallCache(path)
    assert "move it away" in info.value.hint


def test_a_journal_from_a_newer_skillgit_is_refused_not_misread(tmp_path):
    path = db(tmp_path)
    CallCache(path).close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version=99")
    con.close()
    with pytest.raises(SkillgitError, match="newer skillgit"):
        CallCache(path)


# ---------------------------------------------------------------------------------------------- the cap
def test_a_reply_over_the_cap_is_refused_and_a_tombstone_replays_the_error_without_paying_again(tmp_path):
    path = db(tmp_path)
    inner = CountingLLM(text=prose(5_000))
    llm = CachedLLM(inner, CallCache(path, max_reply_chars=2_000))
    with pytest.raises(ReplyTooLarge) as info:
        llm.complete(ASK)
    err = info.value
    assert isinstance(err, LLMError) and err.kind == "bad_reply" and err.retryable is False
    assert "5,000" in err.message and "env.max_reply_chars" in err.message and "env.max_reply_chars" in err.hint
    assert err.usage == USAGE  # the call was paid: the ledger can count it
    kind, _, stored, _ = raw_rows(path)[llm.key(ASK)]
    assert kind == 1 and stored < 200  # a tombstone, not the reply

    resumed = CachedLLM(inner, CallCache(path, max_reply_chars=2_000))
    with pytest.raises(ReplyTooLarge) as again:
        resumed.complete(ASK)
    assert inner.calls == 1 and again.value.replayed and again.value.usage == Usage()
    assert resumed.cache.stats().tombstones == 1 and resumed.cache.stats().refused == 1

    raised = CachedLLM(inner, CallCache(path, max_reply_chars=10_000))  # the user raised the cap: pay once more
    assert raised.complete(ASK).text == inner.text and inner.calls == 2
    assert raised.complete(ASK).cached and inner.calls == 2


def test_the_cap_counts_a_students_trace_too(tmp_path):
    student = CountingStudent(text="short")
    student.run = lambda skill, item, sample=0: Reply("ok", trace=prose(3_000))  # type: ignore[method-assign]
    cached = CachedStudent(student, CallCache(db(tmp_path), max_reply_chars=2_000))
    with pytest.raises(ReplyTooLarge, match="3,002"):
        cached.run("skill", ITEM)


# ---------------------------------------------------------------------------------------------- identity
def _teacher(server: FakeLLMServer, model: str = "qwen2.5-0.5b", **extra):
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": model,
                                      "teacher": {"base_url": server.openai_base_url, "timeout_s": 5, **extra}}})
    return build_teacher(cfg, None, environ={"OPENAI_API_KEY": "sk-test-0123456789abcdef"}, max_retries=0)


def test_a_local_server_restarted_on_another_port_is_answered_from_the_journal(tmp_path):
    path = db(tmp_path)
    with FakeLLMServer() as first, FakeLLMServer() as second:
        first.script(reply("5"))
        a, b = _teacher(first), _teacher(second)
        assert a.id != b.id and first.url != second.url  # the backends' ids still name their endpoints
        assert CachedLLM(a, CallCache(path)).complete(ASK).text == "5"
        answer = CachedLLM(b, CallCache(path)).complete(ASK)
        assert answer.cached and answer.text == "5"
        assert len(first.requests) == 1 and second.requests == []  # nothing paid twice
        other_model = CachedLLM(_teacher(second, model="llama-3"), CallCache(path))
        assert other_model.key(ASK) != CachedLLM(a, CallCache(None)).key(ASK)


def test_chat_students_on_two_endpoints_share_keys():
    keys = []
    for port in (8001, 8002):
        cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "qwen",
                                          "student": {"base_url": f"http://127.0.0.1:{port}/v1"}}})
        student = build_student(cfg, None, environ={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
        keys.append(CachedStudent(student, CallCache(None)).key("skill", ITEM, 0))
    assert keys[0] == keys[1]


def test_cache_identity_overrides_the_backend_id():
    plain = CachedLLM(CountingLLM(id="openai:qwen@127.0.0.1:8001"), CallCache(None))
    own = CachedLLM(CountingLLM(id="openai:qwen@127.0.0.1:8001", cache_identity="qwen2.5-coder-7b-q4"),
                    CallCache(None))
    explicit = CachedLLM(CountingLLM(id="openai:qwen@127.0.0.1:8001", cache_identity="ignored"), CallCache(None),
                         identity="qwen2.5-coder-7b-q4")
    assert plain.identity == "openai:qwen"
    assert own.identity == explicit.identity == "qwen2.5-coder-7b-q4"
    assert own.key(ASK) == explicit.key(ASK) != plain.key(ASK)


@pytest.mark.parametrize("backend_id,identity", [
    ("openai:qwen@localhost:8000", "openai:qwen"),
    ("chat:openai:qwen@127.0.0.1:9000", "chat:openai:qwen"),
    ("anthropic:claude@[::1]:8080", "anthropic:claude"),
    ("openai:m@llm.internal.example.com", "openai:m"),
    ("openai:m@https://proxy.example.com/v1", "openai:m"),
    ("anthropic:claude-3-5-sonnet@20240620", "anthropic:claude-3-5-sonnet@20240620"),  # a model version
    ("anthropic:claude-3-5-sonnet@20240620@localhost:4000", "anthropic:claude-3-5-sonnet@20240620"),
    ("openai:m@v1.5", "openai:m@v1.5"),
    ("command:claude:default#1a2b3c4d", "command:claude:default#1a2b3c4d"),
    ("azure:gpt-4o-deploy", "azure:gpt-4o-deploy"),
])
def test_the_endpoint_part_of_an_id_is_dropped_and_nothing_else(backend_id, identity):
    assert cache_mod.strip_endpoint(backend_id) == identity
    assert cache_mod.model_identity(CountingLLM(id=backend_id)) == identity


# ---------------------------------------------------------------------------------------------- provenance
def test_prune_keeps_what_kept_runs_used_and_frees_the_rest(tmp_path):
    path = db(tmp_path)
    cache = CallCache(path)
    cache.put("unbound", Reply(prose(50_000, 1)))  # before any run was bound: nobody keeps it
    cache.bind_run("r1")
    cache.put("a", Reply(prose(50_000, 2)))
    cache.put("b", Reply(prose(50_000, 3)))
    cache.bind_run("r2")
    cache.put("c", Reply(prose(50_000, 4)))
    assert cache.get("a") is not None  # a hit tags the entry with r2 as well

    report = cache.prune({"r2", "r-unknown"})
    assert (report.entries_deleted, report.entries_kept) == (2, 2)
    assert report.bytes_freed > 0 and report.bytes_after == cache.disk_bytes()
    assert cache_mod.PruneReport.from_dict(report.to_dict()) == report
    assert sorted(raw_rows(path)) == ["a", "c"]

    cache.bind_run("r3")
    assert cache.get("c") is not None
    assert cache.prune({"r3"}).entries_deleted == 1  # only r3's hit keeps c; a was r1's and r2's
    assert sorted(raw_rows(path)) == ["c"]
    assert cache.prune(set()).entries_kept == 0 and len(cache) == 0


def test_a_hit_tags_the_entry_with_the_run_that_reused_it(tmp_path):
    path = db(tmp_path)
    writer = CallCache(path)
    writer.bind_run("old")
    writer.put("k", Reply("x"))
    reader = CallCache(path)
    reader.bind_run("new")
    assert reader.get("k") is not None
    assert writer.prune({"new"}).entries_kept == 1


# ---------------------------------------------------------------------------------------------- migration
def test_an_old_jsonl_journal_is_imported_once_and_renamed(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "_IMPORT_BATCH", (2, 1 << 30))  # several batches, as a large journal has
    path = db(tmp_path)
    path.parent.mkdir(parents=True)
    legacy = path.with_name("calls.jsonl")
    good = [{"k": f"k{i}", "text": prose(3_000, i), "model": "m", "trace": "", "usage": USAGE.to_dict()}
            for i in range(3)]
    over = {"k": "huge", "text": prose(6_000), "model": "m", "trace": "", "usage": {}}
    again = {**good[0], "text": "the later line wins"}
    lines = [json.dumps(r) for r in (*good, over, again)] + ["not json", json.dumps({"text": "no key"})]
    legacy.write_text("\n".join(lines) + "\n" + json.dumps(good[1])[:40])  # a torn last line

    cache = CallCache(path, max_reply_chars=5_000)
    assert not legacy.exists() and legacy.with_name("calls.jsonl.imported").exists()
    assert cache.get("k0").text == "the later line wins"
    assert cache.get("k2").text == good[2]["text"]
    assert cache.get("huge") is None
    assert cache.stats().saved_usage == USAGE + USAGE
    assert len(cache) == 3 and cache.stats().repeated_puts == 0
    cache.close()
    assert len(CallCache(path)) == 3


def test_the_old_jsonl_path_is_read_as_the_database_next_to_it(tmp_path):
    old_path = db(tmp_path).with_name("calls.jsonl")
    cache = CallCache(old_path)
    cache.put("k", Reply("v"))
    assert cache.path == db(tmp_path) and db(tmp_path).exists() and not old_path.exists()


# ---------------------------------------------------------------------------------------------- concurrency
def test_32_threads_putting_and_getting_lose_nothing(tmp_path):
    path = db(tmp_path)
    cache = CallCache(path)
    cache.bind_run("r")
    n_threads, per_thread = 32, 40
    errors: list[BaseException] = []
    start = threading.Barrier(n_threads)

    def work(t: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                cache.put(f"{t}-{i}", Reply(prose(200 + 40 * i, t * 1000 + i), usage=USAGE))
                hit = cache.get(f"{(t + 1) % n_threads}-{i}")  # a neighbour's key: present or not yet
                assert hit is None or hit.text == prose(200 + 40 * i, ((t + 1) % n_threads) * 1000 + i)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    stats = cache.stats()
    assert stats.entries == n_threads * per_thread and stats.repeated_puts == 0
    assert stats.hits + stats.misses == n_threads * per_thread
    reopened = CallCache(path)
    assert all(reopened.get(f"{t}-{i}").text == prose(200 + 40 * i, t * 1000 + i)
               for t in range(n_threads) for i in range(per_thread))
    assert reopened.prune({"r"}).entries_kept == n_threads * per_thread


class Gated:
    """An `LLM` at our seam whose calls wait until `release` is set, counting the calls that reach it."""

    id = "gated:model"

    def __init__(self, fail_first: bool = False):
        self.entered = 0
        self.fail_first = fail_first
        self.release = threading.Event()
        self.lock = threading.Lock()

    def complete(self, request: Request) -> Reply:
        with self.lock:
            self.entered += 1
            n = self.entered
        self.release.wait()
        if self.fail_first and n == 1:
            raise LLMError("overloaded", kind="server", retryable=True)
        return Reply("5", usage=USAGE)


def _wait_until(condition) -> None:
    done = threading.Event()
    while not condition():
        done.wait(0.005)


@pytest.mark.parametrize("first_fails", [False, True])
def test_threads_asking_the_same_call_together_pay_for_it_once(tmp_path, first_fails):
    """A judge grading a deterministic student's identical repeats asks one request from several threads at once:
    before, each of them missed the journal and paid the call (repeated puts); now one calls and the others are
    answered by its reply — or, when it fails (nothing stored), the next one calls."""
    cache = CallCache(db(tmp_path))
    inner = Gated(fail_first=first_fails)
    llm = CachedLLM(inner, cache)
    key = llm.key(ASK)
    replies: list = []

    def ask() -> None:
        try:
            replies.append(llm.complete(ASK))
        except LLMError as exc:
            replies.append(exc)

    first = threading.Thread(target=ask)
    first.start()
    _wait_until(lambda: inner.entered == 1)
    second = threading.Thread(target=ask)
    second.start()
    # the second either reaches the model too (the bug) or waits for the first call (reading the journal's own
    # bookkeeping of the calls in flight)
    _wait_until(lambda: inner.entered == 2 or (key in cache._flying and cache._flying[key].waiting == 1))
    inner.release.set()
    first.join()
    second.join()
    stats = cache.stats()
    if first_fails:
        assert inner.entered == 2 and stats.entries == 1
        assert sorted(type(r).__name__ for r in replies) == ["LLMError", "Reply"]
    else:
        assert inner.entered == 1
        assert sorted(r.cached for r in replies) == [False, True] and {r.text for r in replies} == {"5"}
    assert stats.repeated_puts == 0 and cache._flying == {}


# ---------------------------------------------------------------------------------------------- kill
WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from skillgit.llm.base import Reply
    from skillgit.llm.cache import CallCache
    """) + inspect.getsource(prose) + textwrap.dedent("""
    cache = CallCache(Path(sys.argv[1]))
    cache.bind_run("killed")
    base = int(sys.argv[2])
    for i in range(base, base + 100000):
        cache.put(f"k{i}", Reply(prose(100 + (i * 3571) % 30000, i)))
        print(i, flush=True)  # acknowledged: put returned
""")


def test_every_acknowledged_put_survives_a_sigkill_of_the_writer(tmp_path):
    path = db(tmp_path)
    acknowledged: list[int] = []
    for round_, target in enumerate((40, 170, 7, 300, 90)):
        base = round_ * 1_000_000
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(base)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert proc.stdout is not None
        seen = 0
        for line in proc.stdout:
            acknowledged.append(int(line))
            seen += 1
            if seen >= target:
                proc.send_signal(signal.SIGKILL)  # mid-way through the next put
                break
        rest, err = proc.communicate(timeout=30)
        acknowledged += [int(x) for x in rest.split()]  # acknowledged before the kill, still in the pipe
        assert proc.returncode == -signal.SIGKILL, err[-2000:]
        assert seen >= target, err[-2000:]
    cache = CallCache(path)
    for i in acknowledged:
        hit = cache.get(f"k{i}")
        assert hit is not None and hit.text == prose(100 + (i * 3571) % 30000, i), i
    assert cache.prune({"killed"}).entries_kept >= len(acknowledged)


# ---------------------------------------------------------------------------------------------- open is O(1)
def test_opening_reads_no_entry_however_many_there_are(tmp_path, monkeypatch):
    small, large = tmp_path / "small" / "calls.sqlite", tmp_path / "large" / "calls.sqlite"
    for path, n in ((small, 3), (large, 3_000)):
        cache = CallCache(path)
        cache.bind_run("r")
        for i in range(n):
            cache.put(f"k{i}", Reply(prose(300, i)))
        cache.close()

    real_connect = sqlite3.connect
    reads: list[str] = []
    steps = [0]

    def watched_connect(*args, **kwargs):
        con = real_connect(*args, **kwargs)

        def authorize(action, arg1, arg2, db_name, trigger):
            if action == sqlite3.SQLITE_READ:
                reads.append(arg1)
            return sqlite3.SQLITE_OK

        def step() -> int:
            steps[0] += 1
            return 0

        con.set_authorizer(authorize)
        con.set_progress_handler(step, 1)
        return con

    monkeypatch.setattr(cache_mod.sqlite3, "connect", watched_connect)
    counts = []
    for path in (small, large):
        reads.clear()
        steps[0] = 0
        CallCache(path)
        counts.append(steps[0])
        assert [t for t in reads if t in ("calls", "uses")] == []  # no row of either table is read at open
    assert counts[0] == counts[1]  # the same work for 3 and 3,000 entries


def test_a_long_runs_journal_keeps_a_small_write_ahead_log(tmp_path):
    """Thousands of puts (a 1,000-step run journals ~14,000 calls) leave the WAL near its bound, not SQLite's
    default 4 MB: the journal lives in the user's .git."""
    cache = CallCache(db(tmp_path))
    for i in range(3000):
        cache.put(f"k{i}", Reply(prose(400, seed=i), USAGE))
    wal = db(tmp_path).with_name("calls.sqlite-wal")
    assert wal.stat().st_size <= 2 * cache_mod.WAL_PAGES * 4096
    assert cache.get("k2999") is not None and cache.get("k0") is not None
    cache.close()


def test_a_call_costs_its_reply_and_little_else_on_disk(tmp_path):
    """A 1,000-step run journals ~7,000 short calls: sha256 keys are stored as 32 bytes (twice: row and index),
    runs by id and the meta without defaults (schema 1 stored each call in ~650 bytes here: 64-hex keys four times,
    the run's name per tag, ~140 bytes of meta)."""
    import hashlib

    path = db(tmp_path)
    cache = CallCache(path)
    cache.bind_run("2026-11-26T09-47-41-scale")
    n, text_bytes = 3000, 0
    for i in range(n):
        reply = Reply("answer " + "x" * (i % 200), usage=Usage(calls=1, prompt_tokens=80 + i % 9, completion_tokens=7),
                      model="sim-student")
        text_bytes += len(reply.text)
        cache.put(hashlib.sha256(str(i).encode()).hexdigest(), reply)
    cache.close()
    assert not path.with_name("calls.sqlite-wal").exists()  # closed: the WAL is folded in and removed
    per_call = (path.stat().st_size - text_bytes) / n
    assert per_call <= 200, per_call  # schema 1: ~545 bytes a call besides the text
    reopened = CallCache(path)
    hit = reopened.get(hashlib.sha256(b"7").hexdigest())
    assert hit is not None and hit.text == "answer " + "x" * 7 and hit.saved.prompt_tokens == 87
    assert reopened.prune({"2026-11-26T09-47-41-scale"}).entries_kept == n



def test_a_threads_read_connection_closes_when_the_thread_ends(tmp_path):
    """The loop reads the journal from pool threads that come and go: each thread's connection is closed when the
    thread ends (it stayed open until a garbage collection before, and with it the WAL, ~1 MB, after the journal
    was closed)."""
    import gc

    path = db(tmp_path)
    cache = CallCache(path)
    for i in range(50):
        cache.put(f"k{i}", Reply(prose(300, i)))
    gc.disable()
    try:
        for _ in range(3):
            reader = threading.Thread(target=lambda: cache.get("k7"))
            reader.start()
            reader.join()
        cache.close()
        assert not path.with_name("calls.sqlite-wal").exists()  # the last connection folded and removed it
    finally:
        gc.enable()
    assert CallCache(path).get("k7").text == prose(300, 7)
