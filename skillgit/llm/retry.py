"""Retries with jittered exponential backoff, a per-role concurrency limit, and the HTTP-status → LLMError
classification shared by the SDK backends.

Contracts:
- `RetryingLLM(inner, ...)` is an `LLM`; `RetryingStudent(inner, ...)` a `Student`. Both call the inner object,
  and on an `LLMError` with `retryable=True` wait and try again, up to `max_retries` extra attempts. The wait is
  the server's `retry_after` when given (plus up to 10 % jitter so parallel workers do not return in lockstep),
  otherwise "full jitter" backoff: uniform(0, min(max_delay, base_delay * 2**retry)). Non-retryable errors,
  anything that is not an LLMError, and a `retry_after` beyond `max_retry_after` (a quota that resets in hours is
  not worth a sleeping worker) propagate at once. When retries run out, the last error is raised again with
  "(gave up after N attempts)" appended and its kind/status/retryable unchanged.
- At most `concurrency` calls run inside the inner object at once (a semaphore per wrapper, so per role);
  the slot is released while waiting between attempts.
- `stats` counts calls, attempts, retries and failures (thread-safe), so the loop can report them.
- `classify_status(status)` and `parse_retry_after(headers)` decide kind/retryable and the wait for HTTP errors;
  `sdk_error` maps an exception of either official SDK to its LLMError with them; `call_sdk` makes a backend's
  call, stepping down the structured-output form the server refused.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, TypeVar

from skillgit.llm.base import LLMError, Reply, Request
from skillgit.types import Item

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------- classification
def classify_status(status: int) -> tuple[str, bool]:
    """(kind, retryable) for an HTTP error status."""
    if status in (401, 403):
        return "auth", False
    if status == 404:
        return "not_found", False
    if status == 429:
        return "rate_limit", True
    if status in (408, 409):  # request timeout / lock conflict: trying again is what the server asks for
        return "server", True
    if status >= 500:  # includes Anthropic's 529 "overloaded"
        return "server", True
    return "bad_request", False


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` (milliseconds) or `retry-after` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ErrorMaker(Protocol):
    """A backend's `_error`: an LLMError with its own prefix, hint and redaction."""

    def __call__(self, message: str, kind: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None) -> LLMError: ...


def sdk_error(exc: BaseException, sdk: Any, base: type[BaseException], error: ErrorMaker, *, timeout_s: float,
              endpoint: str, detail: Callable[[Any], str]) -> LLMError | None:
    """The LLMError for an exception of the `openai` or `anthropic` SDK (`sdk`, the imported module: both name
    their exceptions alike; `base`, its root exception), or None when `exc` is neither the SDK's nor a JSON
    decoding failure: timeouts, connection failures, an unparsable or mis-shaped answer are retried; an HTTP
    status is classified by `classify_status` (with the server's `retry-after`); any other SDK error is a
    configuration error. `detail(exc)` is the server's message of a status error. A backend maps its own
    special cases before calling this (a quota 429) and after it (errors of other libraries)."""
    if isinstance(exc, sdk.APITimeoutError):
        return error(f"no answer within {timeout_s:g}s", "timeout", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return error(f"cannot reach {endpoint}: {exc.__cause__ or exc}", "connection", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        kind, retryable = classify_status(status)
        return error(f"HTTP {status} ({kind}): {detail(exc)}", kind, retryable=retryable, status=status,
                     retry_after=parse_retry_after(exc.response.headers))
    if isinstance(exc, json.JSONDecodeError):
        return error(f"the server's answer is not valid JSON ({exc.msg})", "server", retryable=True)
    if isinstance(exc, sdk.APIResponseValidationError):
        return error("the server's answer does not have the expected shape", "server", retryable=True)
    if isinstance(exc, base):
        return error(str(exc), "config", retryable=False)
    return None


M = TypeVar("M")


def call_sdk(call: Callable[[M], T], mode: M, *, map_error: Callable[[BaseException], LLMError | None],
             refuses: Callable[[BaseException], bool], step_down: Callable[[M], M | None]) -> tuple[T, M, float]:
    """`call(mode)` (`mode`: the structured-output form asked for) until the server answers: an exception is mapped
    by `map_error` (one it does not know propagates as it is); when `refuses(exc)` says the server refused the form
    and `step_down(mode)` names another, that one is tried; otherwise the LLMError is raised, outside the except
    block, so the SDK exception (which holds request headers) is not chained. Returns (the answer, the mode it
    answered in, the answering call's seconds)."""
    while True:
        started = time.monotonic()
        error: LLMError | None = None
        refused = False
        try:
            answer = call(mode)
        except Exception as exc:  # noqa: BLE001 - mapped here; unknown exceptions are re-raised
            error = map_error(exc)
            if error is None:
                raise
            refused = refuses(exc)
        if error is None:
            return answer, mode, time.monotonic() - started
        lower = step_down(mode) if refused else None
        if lower is None:
            raise error
        mode = lower


# ---------------------------------------------------------------------------------------------- policy
@dataclass
class RetryStats:
    calls: int = 0  # calls made by the caller
    attempts: int = 0  # calls made to the inner object (calls + retries)
    retries: int = 0
    failures: int = 0  # calls that ended in an error (after retries, or not retryable)
    waited_s: float = 0.0  # total backoff asked of `sleep`

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Policy:
    def __init__(self, *, max_retries: int, base_delay: float, max_delay: float, max_retry_after: float,
                 sleep: Callable[[float], None], rng: random.Random | None, concurrency: int | None,
                 on_retry: Callable[[LLMError, int, float], None] | None):
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.on_retry = on_retry
        self.stats = RetryStats()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(concurrency) if concurrency and concurrency > 0 else None
        self.concurrency = concurrency

    def delay(self, error: LLMError, retry: int) -> float:
        """Seconds to wait before retry number `retry` (0-based) after `error`."""
        with self._lock:  # random.Random is not safe to share across threads without a lock
            if error.retry_after is not None:
                return error.retry_after + self.rng.uniform(0.0, 0.1 * error.retry_after)
            return self.rng.uniform(0.0, min(self.max_delay, self.base_delay * (2 ** retry)))

    def _count(self, **deltas: float) -> None:
        with self._lock:
            for name, value in deltas.items():
                setattr(self.stats, name, getattr(self.stats, name) + value)

    def call(self, fn: Callable[[], T]) -> T:
        self._count(calls=1)
        retry = 0
        while True:
            self._count(attempts=1)
            try:
                if self._slots is None:
                    return fn()
                with self._slots:
                    return fn()
            except LLMError as exc:
                error = exc
            too_long = error.retry_after is not None and error.retry_after > self.max_retry_after
            if not error.retryable or retry >= self.max_retries or too_long:
                self._count(failures=1)
                if retry == 0:
                    raise error
                raise LLMError(f"{error.message} (gave up after {retry + 1} attempts)", error.hint, kind=error.kind,
                               retryable=error.retryable, retry_after=error.retry_after, status=error.status)
            wait = self.delay(error, retry)
            self._count(retries=1, waited_s=wait)
            if self.on_retry is not None:
                self.on_retry(error, retry + 1, wait)
            self.sleep(wait)
            retry += 1


class _Retrying:
    """What the retrying wrappers share: the policy, pass-through identity and attributes of the inner backend."""

    def __init__(self, inner: Any, max_retries: int = 5, base_delay: float = 1.0, max_delay: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None, *,
                 concurrency: int | None = None, on_retry: Callable[[LLMError, int, float], None] | None = None,
                 max_retry_after: float = 600.0):
        self.inner = inner
        self._policy = _Policy(max_retries=max_retries, base_delay=base_delay, max_delay=max_delay,
                               max_retry_after=max_retry_after, sleep=sleep, rng=rng, concurrency=concurrency,
                               on_retry=on_retry)

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def stats(self) -> RetryStats:
        return self._policy.stats

    @property
    def max_retries(self) -> int:
        return self._policy.max_retries

    @property
    def concurrency(self) -> int | None:
        return self._policy.concurrency

    def __getattr__(self, name: str) -> Any:  # endpoint, model, json_mode_in_use, ... of the inner backend
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r}, max_retries={self.max_retries}, concurrency={self.concurrency})"


class RetryingLLM(_Retrying):
    """An `LLM` that retries its inner LLM's retryable errors and bounds its concurrency (module contract)."""

    def complete(self, request: Request) -> Reply:
        return self._policy.call(lambda: self.inner.complete(request))


class RetryingStudent(_Retrying):
    """A `Student` with the same retry and concurrency policy as `RetryingLLM`, applied to `run`."""

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        return self._policy.call(lambda: self.inner.run(skill, item, sample))
