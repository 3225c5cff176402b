"""Metering: wrappers that book every model call of a teacher or student in a usage sink (the run's ledger),
beside the caching and retrying wrappers.

Contracts:
- A sink is anything with `record(stage, role, usage, cached)` and `record_error(stage)` (`UsageSink`; the loop's
  `Ledger` is one). `llm/` does not import the loop.
- `MeteredLLM(inner, sink, role)` books each reply under the request's `stage` (the role when the request has
  none) and `role`; a call that raises is booked with `record_error` and re-raised unchanged.
- `MeteredStudent(inner, sink, stage="rollout")` books each run under its *bound* stage and role "student".
  The stage is fixed per object, never a shared mutable attribute: `for_stage(name)` returns a view bound to
  another stage that shares the inner student and the sink, so phases running at the same time (a gate while a
  background rollout finishes) each book under their own stage, whatever thread they run on.
- `bind_stage(student, stage)` is `student.for_stage(stage)` for a metered student and `student` itself for any
  other, so phase code (rollout, gate, test, slow update) can bind its stage without knowing the wrapping.
- Both are thread-safe when the sink is, and forward `id`, `cache_identity` and any other attribute of the inner
  object.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from skillgit.llm.base import LLM, Reply, Request, Student
from skillgit.types import Item, Usage


@runtime_checkable
class UsageSink(Protocol):
    def record(self, stage: str, role: str, usage: Usage, cached: bool = False) -> None: ...

    def record_error(self, stage: str) -> None: ...


class _Forwarding:
    inner: Any

    @property
    def id(self) -> str:
        return self.inner.id

    def __getattr__(self, name: str) -> Any:  # cache_identity, endpoint, json_mode_in_use, stats, ... of inner
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def _book_refused(sink: UsageSink, stage: str, role: str, exc: Exception) -> None:
    """A call that was paid but whose reply was refused (too large to keep) still costs: book its usage."""
    usage = getattr(exc, "usage", None)
    if isinstance(usage, Usage) and (usage.total_tokens or usage.cost_usd):
        sink.record(stage, role, usage, False)


def _admit(sink: UsageSink) -> bool:
    """Before a call: a sink that admits calls (`admit`/`release`: a run's ledger, `loop/ledger.py`) checks its
    budget counting the calls in flight, so a call limit is never crossed (BudgetReached). True when the call must be
    released after it."""
    admit = getattr(sink, "admit", None)
    if admit is None:
        return False
    admit()
    return True


def _metered(sink: UsageSink, stage: str, role: str, call: Callable[[], Reply]) -> Reply:
    """One metered call: the budget first, then the call; its reply (or its failure, and what a refused reply
    cost) booked under `stage` and `role`, then the call released."""
    admitted = _admit(sink)
    try:
        try:
            reply = call()
        except Exception as exc:
            sink.record_error(stage)
            _book_refused(sink, stage, role, exc)
            raise
        sink.record(stage, role, reply.usage, reply.cached)
        return reply
    finally:
        if admitted:
            sink.release()  # type: ignore[attr-defined]


class MeteredLLM(_Forwarding):
    """Books every reply of `inner` in `sink` under the request's stage and `role` (see the module contract)."""

    def __init__(self, inner: LLM, sink: UsageSink, role: str):
        self.inner = inner
        self.sink = sink
        self.role = role

    def complete(self, request: Request) -> Reply:
        return _metered(self.sink, request.stage or self.role, self.role, lambda: self.inner.complete(request))

    def __repr__(self) -> str:
        return f"MeteredLLM({self.inner!r}, role={self.role!r})"


class MeteredStudent(_Forwarding):
    """Books every run of `inner` in `sink` under this object's stage (see the module contract)."""

    role = "student"

    def __init__(self, inner: Student, sink: UsageSink, stage: str = "rollout"):
        self.inner = inner
        self.sink = sink
        self._stage = stage

    @property
    def stage(self) -> str:
        """The stage this object books under (read-only: use `for_stage` for another one)."""
        return self._stage

    def for_stage(self, stage: str) -> MeteredStudent:
        """The same student and sink, booking under `stage` (e.g. "gate", "test"; a "gate:val" label's part
        before the colon is used)."""
        stage = stage.split(":")[0]
        return self if stage == self._stage else MeteredStudent(self.inner, self.sink, stage)

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        return _metered(self.sink, self._stage, self.role, lambda: self.inner.run(skill, item, sample))

    def __repr__(self) -> str:
        return f"MeteredStudent({self.inner!r}, stage={self._stage!r})"


def bind_stage(student: Student, stage: str) -> Student:
    """`student` booking its runs under `stage` when it is metered (or wraps a metered student: an environment's
    `EnvStudent` binds the one inside); any other student unchanged."""
    if isinstance(student, MeteredStudent):
        return student.for_stage(stage)
    rebind = getattr(student, "for_stage", None)
    return rebind(stage) if callable(rebind) else student
