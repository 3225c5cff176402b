"""Accounting of model calls: calls, tokens and cost per stage and role, and timings per stage; the agent teacher's
turns and wall seconds (`record_agent`, over `agent_before`: what earlier processes of the run spent).

Thread-safe; the loop records every `Reply` here. Cached replies count as saved, not spent.

Admission (`admit` before a metered call, `release` after it, `llm/metering.py`): the budget check and counting the
call in flight happen under one lock, and `budget_check` sees the calls in flight (`in_flight`), so a run's
`budget.max_calls` is never crossed however many calls run at once. Tokens and cost of a call are known only when
it returns: `max_tokens` and `max_cost_usd` stop the next call, and what the calls in flight spend can cross them.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

from skillgit.errors import BudgetReached
from skillgit.records import AgentSpend
from skillgit.types import Usage


class Ledger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_stage: dict[str, Usage] = {}
        self.by_role: dict[str, Usage] = {}
        self.saved: dict[str, int] = {}  # stage -> calls answered from the cache
        self.errors: dict[str, int] = {}  # stage -> calls that failed after retries
        self.retries = 0  # attempts repeated after a transient error
        # set by a run: returns why the budget is spent (then metered wrappers refuse the next call), or None
        self.budget_check: Callable[[], str | None] | None = None
        self.in_flight = 0  # calls admitted and not yet returned (see the module contract)
        self._admitting = threading.Lock()  # one admission at a time: the check and the count together
        self.timings: dict[str, float] = {}
        self.agent = AgentSpend()  # this process's agent teacher calls (record_agent)
        self.agent_before = AgentSpend()  # set by a resumed run: what its earlier processes spent

    def admit(self) -> None:
        """Before a metered call: BudgetReached when `budget_check` finds the budget spent (calls in flight
        counted), else the call is counted in flight until `release`."""
        with self._admitting:
            reason = self.budget_check() if self.budget_check is not None else None
            if reason:
                raise BudgetReached(reason)
            with self._lock:
                self.in_flight += 1

    def release(self) -> None:
        """After an admitted call returned or failed, and after its usage was recorded (so that no admission in
        between sees the call neither in flight nor made)."""
        with self._lock:
            self.in_flight -= 1

    def record_agent(self, turns: int, seconds: float) -> None:
        """One agent teacher call that ran (not one the journal answered): its turns and wall seconds."""
        with self._lock:
            self.agent = self.agent + AgentSpend(1, max(0, turns), max(0.0, seconds), max(0, turns), max(0.0, seconds))

    def agent_total(self) -> AgentSpend:
        with self._lock:
            return self.agent_before + self.agent

    def record(self, stage: str, role: str, usage: Usage, cached: bool = False) -> None:
        with self._lock:
            if cached:
                self.saved[stage] = self.saved.get(stage, 0) + 1
                return
            spent = Usage(calls=1) + Usage(0, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
                                           usage.reasoning_tokens, usage.cost_usd)
            self.by_stage[stage] = self.by_stage.get(stage, Usage()) + spent
            self.by_role[role] = self.by_role.get(role, Usage()) + spent

    def record_error(self, stage: str) -> None:
        with self._lock:
            self.errors[stage] = self.errors.get(stage, 0) + 1

    def record_retry(self, *_: object) -> None:
        """Count one retried attempt (usable as a retry wrapper's `on_retry` callback)."""
        with self._lock:
            self.retries += 1

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            with self._lock:
                self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - start

    def total(self) -> Usage:
        with self._lock:
            total = Usage()
            for usage in self.by_stage.values():
                total = total + usage
            return total

    def snapshot(self) -> dict:
        with self._lock:
            return {
                "by_stage": {k: v.to_dict() for k, v in self.by_stage.items()},
                "by_role": {k: v.to_dict() for k, v in self.by_role.items()},
                "saved_calls": dict(self.saved),
                "errors": dict(self.errors),
                "retries": self.retries,
                "timings_s": {k: round(v, 4) for k, v in self.timings.items()},
            }

    def diff_since(self, before: Mapping[str, Any]) -> dict:
        """Per-stage usage spent since `before` (a snapshot): what one step cost."""
        now = self.snapshot()
        out: dict = {"by_stage": {}, "timings_s": {}}
        for stage, usage in now["by_stage"].items():
            prev = Usage.from_dict(before["by_stage"].get(stage, {}))
            cur = Usage.from_dict(usage)
            delta = Usage(cur.calls - prev.calls, cur.prompt_tokens - prev.prompt_tokens,
                          cur.completion_tokens - prev.completion_tokens, cur.cached_tokens - prev.cached_tokens,
                          cur.reasoning_tokens - prev.reasoning_tokens, round(cur.cost_usd - prev.cost_usd, 8))
            if delta.calls:
                out["by_stage"][stage] = delta.to_dict()
        for stage, seconds in now["timings_s"].items():
            d = seconds - before["timings_s"].get(stage, 0.0)
            if d > 0:
                out["timings_s"][stage] = round(d, 4)
        return out
