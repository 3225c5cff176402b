"""Events the loop emits instead of printing. The CLI turns them into a progress display (or JSON lines with
`--events`); tests collect them.

Each event is a frozen dataclass with a class-level `kind` and `to_dict()` → `{"event": kind, ...}` whose field
types never change (docs/JSON.md). Steps are strings ("3", "e1-slow-update", "" for run-level work).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

from skillgit.records import StepOutcome


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.kind}
        for name, value in self.__dict__.items():
            data[name] = value.to_dict() if hasattr(value, "to_dict") else value
        return data


@dataclass(frozen=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_start"
    run: str
    resumed: bool
    total_steps: int
    seed_score: float
    current_score: float


@dataclass(frozen=True)
class StepStarted(Event):
    kind: ClassVar[str] = "step_start"
    step: str
    epoch: int
    budget: int


@dataclass(frozen=True)
class StageStarted(Event):
    kind: ClassVar[str] = "stage"
    step: str
    stage: str


@dataclass(frozen=True)
class Progress(Event):
    kind: ClassVar[str] = "progress"
    step: str
    stage: str
    done: int
    total: int


@dataclass(frozen=True)
class Heartbeat(Event):
    """A model call has been running for a while (sent every few seconds while one is in flight)."""

    kind: ClassVar[str] = "heartbeat"
    stage: str
    in_flight: int
    elapsed_s: float


@dataclass(frozen=True)
class StepDecided(Event):
    kind: ClassVar[str] = "step_end"
    outcome: StepOutcome
    usage_total: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EpochEnding(Event):
    """An epoch's end-of-epoch work (slow update, meta skill, meta reflect) starts."""

    kind: ClassVar[str] = "epoch_ending"
    epoch: int


@dataclass(frozen=True)
class EpochEnded(Event):
    """An epoch's end-of-epoch work is done."""

    kind: ClassVar[str] = "epoch_end"
    epoch: int
    meta_skill: str
    comparison: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Warning(Event):  # noqa: A001 - the event's name
    kind: ClassVar[str] = "warning"
    message: str


@dataclass(frozen=True)
class RunEnded(Event):
    kind: ClassVar[str] = "run_end"
    run: str
    status: str
    reason: str
    accepted: int
    rejected: int
    scores: Mapping[str, Any] = field(default_factory=dict)
    usage: Mapping[str, Any] = field(default_factory=dict)


EventSink = Callable[[Event], None]


def ignore(_: Event) -> None:
    """The default sink."""


class OrderedSink:
    """A sink that keeps a step's events in order when its decision is written in the background.

    `hold()` (by the loop, when it hands a step's decision to a background job) queues every event that any other
    thread emits from then on; the job `claim()`s the sink for its own thread, whose events (the decide stage) pass
    straight through, and `release(first)` emits `first` (the step's `step_end`s) and then the queued events, in
    order. So a reader sees step N's `step_end` before anything of step N+1, as when the decision was made inline.
    """

    def __init__(self, sink: EventSink):
        self._sink = sink
        self._lock = threading.RLock()  # a sink that emits again (from the same thread) must not deadlock
        self._held: list[Event] | None = None
        self._owner: int | None = None

    def hold(self) -> None:
        with self._lock:
            if self._held is None:
                self._held = []

    def claim(self) -> None:
        with self._lock:
            self._owner = threading.get_ident()

    def release(self, first: list[Event]) -> None:
        with self._lock:
            held, self._held, self._owner = self._held or [], None, None
            for event in (*first, *held):
                self._sink(event)

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self._held is not None and threading.get_ident() != self._owner:
                self._held.append(event)
                return
            self._sink(event)
