"""RetryingLLM / RetryingStudent: backoff, Retry-After, non-retryable errors, concurrency, stats. No real waiting."""

from __future__ import annotations

import random
import threading

import pytest

from skillgit.llm.base import LLMError, Message, Reply, Request
from skillgit.llm.retry import RetryingLLM, RetryingStudent, classify_status, parse_retry_after
from skillgit.types import Item, Usage

REQ = Request((Message("user", "hi"),), stage="test")


class ScriptedLLM:
    """Raises the scripted errors in order, then answers."""

    def __init__(self, *errors: LLMError):
        self.errors = list(errors)
        self.calls = 0

    @property
    def id(self) -> str:
        return "scripted:model"

    def complete(self, request: Request) -> Reply:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return Reply("fine", Usage(calls=1))


def server_error() -> LLMError:
    return LLMError("HTTP 500", kind="server", retryable=True, status=500)


def test_retries_retryable_errors_with_growing_jittered_backoff():
    inner = ScriptedLLM(server_error(), server_error(), server_error())
    sleeps: list[float] = []
    llm = RetryingLLM(inner, max_retries=5, base_delay=1.0, max_delay=60.0, sleep=sleeps.append,
                      rng=random.Random(7))
    assert llm.complete(REQ).text == "fine"
    assert inner.calls == 4 and len(sleeps) == 3
    # full jitter: each wait lies within [0, base * 2**retry]
    for retry, wait in enumerate(sleeps):
        assert 0.0 <= wait <= 1.0 * 2 ** retry
    assert llm.stats.calls == 1 and llm.stats.attempts == 4 and llm.stats.retries == 3 and llm.stats.failures == 0
    assert llm.stats.waited_s == pytest.approx(sum(sleeps))


def test_backoff_is_capped_by_max_delay():
    inner = ScriptedLLM(*[server_error() for _ in range(6)])
    sleeps: list[float] = []

    class MaxRng(random.Random):
        def uniform(self, a, b):  # always the top of the jitter range
            return b

    RetryingLLM(inner, max_retries=6, base_delay=1.0, max_delay=5.0, sleep=sleeps.append, rng=MaxRng()).complete(REQ)
    assert sleeps == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


def test_retry_after_is_honoured():
    inner = ScriptedLLM(LLMError("429", kind="rate_limit", retryable=True, retry_after=7.0, status=429))
    sleeps: list[float] = []
    RetryingLLM(inner, base_delay=0.01, max_delay=0.02, sleep=sleeps.append, rng=random.Random(1)).complete(REQ)
    assert len(sleeps) == 1 and 7.0 <= sleeps[0] <= 7.7  # at least what the server asked, plus <=10% jitter


def test_retry_after_beyond_the_limit_is_not_waited_for():
    inner = ScriptedLLM(LLMError("429", kind="rate_limit", retryable=True, retry_after=7200.0, status=429))
    sleeps: list[float] = []
    with pytest.raises(LLMError) as info:
        RetryingLLM(inner, sleep=sleeps.append, max_retry_after=600.0).complete(REQ)
    assert info.value.retry_after == 7200.0 and sleeps == [] and inner.calls == 1


def test_non_retryable_error_is_raised_at_once():
    auth = LLMError("HTTP 401", "set OPENAI_API_KEY", kind="auth", retryable=False, status=401)
    inner = ScriptedLLM(auth)
    sleeps: list[float] = []
    llm = RetryingLLM(inner, max_retries=5, sleep=sleeps.append)
    with pytest.raises(LLMError) as info:
        llm.complete(REQ)
    assert info.value is auth and inner.calls == 1 and sleeps == []
    assert llm.stats.failures == 1


def test_gives_up_after_max_retries_keeping_kind_and_status():
    inner = ScriptedLLM(*[server_error() for _ in range(10)])
    sleeps: list[float] = []
    llm = RetryingLLM(inner, max_retries=2, sleep=sleeps.append)
    with pytest.raises(LLMError) as info:
        llm.complete(REQ)
    err = info.value
    assert inner.calls == 3 and len(sleeps) == 2
    assert "gave up after 3 attempts" in err.message
    assert (err.kind, err.status, err.retryable) == ("server", 500, True)
    assert err.__context__ is None  # nothing of the inner call (headers, bodies) travels along


def test_other_exceptions_are_not_retried():
    class Broken(ScriptedLLM):
        def complete(self, request):
            self.calls += 1
            raise KeyError("bug")

    inner = Broken()
    with pytest.raises(KeyError):
        RetryingLLM(inner, sleep=lambda s: None).complete(REQ)
    assert inner.calls == 1


def test_concurrency_limit_bounds_calls_in_flight():
    limit, workers = 2, 6
    state = {"in_flight": 0, "peak": 0}
    lock = threading.Lock()
    release = threading.Event()
    entered = threading.Semaphore(0)

    class Blocking:
        id = "blocking:model"

        def complete(self, request):
            with lock:
                state["in_flight"] += 1
                state["peak"] = max(state["peak"], state["in_flight"])
            entered.release()
            release.wait(10)
            with lock:
                state["in_flight"] -= 1
            return Reply("ok")

    llm = RetryingLLM(Blocking(), concurrency=limit, sleep=lambda s: None)
    threads = [threading.Thread(target=llm.complete, args=(REQ,)) for _ in range(workers)]
    for t in threads:
        t.start()
    for _ in range(limit):  # wait until the limit is reached ...
        assert entered.acquire(timeout=10)
    assert not entered.acquire(timeout=0.2)  # ... and nobody else got in
    release.set()
    for t in threads:
        t.join(10)
    assert state["peak"] == limit and llm.stats.calls == workers


def test_retrying_student_applies_the_same_policy():
    class FlakyStudent:
        id = "flaky:student"

        def __init__(self):
            self.runs = []

        def run(self, skill, item, sample=0):
            self.runs.append((skill, item.id, sample))
            if len(self.runs) == 1:
                raise LLMError("timeout", kind="timeout", retryable=True)
            return Reply("answer")

    inner = FlakyStudent()
    sleeps: list[float] = []
    student = RetryingStudent(inner, max_retries=3, sleep=sleeps.append)
    assert student.run("skill", Item("i1", "q"), sample=4).text == "answer"
    assert inner.runs == [("skill", "i1", 4)] * 2 and len(sleeps) == 1
    assert student.id == "flaky:student" and student.stats.retries == 1


def test_classify_status_and_parse_retry_after():
    assert classify_status(429) == ("rate_limit", True)
    assert classify_status(529) == ("server", True)
    assert classify_status(503) == ("server", True)
    assert classify_status(401) == ("auth", False)
    assert classify_status(403) == ("auth", False)
    assert classify_status(404) == ("not_found", False)
    assert classify_status(400) == ("bad_request", False)
    assert classify_status(422) == ("bad_request", False)
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:10 GMT"}, now=1767225600.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
