"""A step's proposers (`optimizer.proposers`, the names in skillgit/proposer_table.py): who builds its candidates,
what each cost, and the schedule that switches proposer on a plateau.

Contract:
- `PROPOSE` maps every proposer name to the function that builds its candidate (same signature as
  `modes.propose_update`): `reflect` → `modes.reflect_update`, `agent` → `agent_step.propose`.
- `at_step(cfg, progress, step)` → (the step's proposers, the progress, a message): the configured proposers, or —
  once `optimizer.proposer_schedule.after_rejected` numbered steps in a row were rejected — the schedule's
  `switch_to` alone from this step on; the switch is recorded in the progress (`proposer_switch`, saved with the
  step's decision) and said once (the message; "" otherwise). A pure function of the decided steps, so a
  resumed run switches at the same step.
- `build(ctx, teacher, skill, trajs, budget, step, names)` → [(text, record)]: `optimizer.proposals` candidates
  per proposer, in (proposer, variant) order, built side by side when more than one (one wave per stage). Each
  record carries its `proposer` (a typed field, in the candidate note) and `details.cost`: the teacher calls and
  tokens its building needed (counted by a `Tally` of its own around the teacher, so proposers running side by
  side never share a count; a call the journal answered counts at what it cost when it was paid, so a step
  resumed after a kill records the same cost as an uninterrupted one).
- `count(progress, outcome, record)` → progress: a numbered step's candidate (kept or a rival `sN-pk`) counts for
  its proposer (proposed, accepted, cost); the kept one moves the rejected streak (accepted: back to 0).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any, Callable

from skillgit import proposer_table as table
from skillgit.config import Config
from skillgit.llm.base import LLM, Reply, Request
from skillgit.loop import agent_step, modes, stages
from skillgit.loop.background import parallel
from skillgit.loop.context import StepContext
from skillgit.records import ProposerStats, RunProgress, StepKind, StepOutcome, UpdateRecord
from skillgit.types import Trajectory, Usage

Propose = Callable[..., tuple[str, UpdateRecord]]
PROPOSE: dict[str, Propose] = {"reflect": modes.reflect_update, "agent": agent_step.propose}


class Tally:
    """An `LLM` around the teacher that adds up what its calls cost (a journal answer at its paid cost)."""

    def __init__(self, inner: LLM):
        self.inner = inner
        self.usage = Usage()
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.inner.id

    def __getattr__(self, name: str) -> Any:  # cache_identity, json_mode_in_use, … of the teacher
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def complete(self, request: Request) -> Reply:
        reply = self.inner.complete(request)
        spent = reply.saved if reply.cached else reply.usage  # the journal's answer: what it cost when paid
        with self._lock:
            self.usage = self.usage + Usage(calls=1) + dataclasses.replace(spent, calls=0)
        return reply


def configured(cfg: Config) -> tuple[str, ...]:
    return table.configured(cfg.optimizer.proposers, cfg.model.teacher_backend)


def field_size(cfg: Config) -> int:
    """The most candidates one step makes (the gate's bar, the rival names a resumed step looks for)."""
    opt = cfg.optimizer
    return table.field_size(opt.proposers, cfg.model.teacher_backend, opt.proposals)


def at_step(cfg: Config, progress: RunProgress, step: int) -> tuple[tuple[str, ...], RunProgress, str]:
    """The step's proposers (see the module contract)."""
    schedule = cfg.optimizer.proposer_schedule
    if progress.proposer_switch is not None and step >= progress.proposer_switch and schedule.switch_to:
        return (schedule.switch_to,), progress, ""
    if schedule.switch_to and progress.proposer_switch is None and progress.rejected_streak >= schedule.after_rejected:
        said = (f"proposer schedule: {progress.rejected_streak} steps in a row were rejected; from step {step} on "
                f"{schedule.switch_to!r} proposes alone (was {', '.join(configured(cfg))})")
        return (schedule.switch_to,), progress.replace(proposer_switch=step), said
    return configured(cfg), progress, ""


def build(ctx: StepContext, teacher: stages.Teacher, skill: str, trajs: list[Trajectory], budget: int, step: int,
          names: tuple[str, ...]) -> list[tuple[str, UpdateRecord]]:
    """The step's candidates (see the module contract)."""
    jobs = [(name, variant) for name in names for variant in range(ctx.cfg.optimizer.proposals)]

    def one(name: str, variant: int) -> tuple[str, UpdateRecord]:
        tally = Tally(teacher.llm)
        text, record = PROPOSE[name](ctx, dataclasses.replace(teacher, llm=tally), skill, trajs, budget, step,
                                     variant)
        cost = tally.usage.to_dict()
        return text, dataclasses.replace(record.with_details(cost=cost), proposer=name)

    if len(jobs) == 1:
        return [one(*jobs[0])]
    return parallel([functools.partial(one, name, variant) for name, variant in jobs])


def count(progress: RunProgress, outcome: StepOutcome, record: UpdateRecord | None) -> RunProgress:
    """The progress after a decided candidate (see the module contract)."""
    if outcome.kind is not StepKind.STEP:
        return progress
    if outcome.step.isdigit():  # the step's kept candidate: the schedule's streak
        progress = progress.replace(rejected_streak=0 if outcome.accepted else progress.rejected_streak + 1)
    name = record.proposer if record is not None else ""
    if not name:
        return progress
    cost = record.details.get("cost") if record is not None else None
    before = progress.proposers.get(name, ProposerStats())
    stats = ProposerStats(before.proposed + 1, before.accepted + outcome.accepted,
                          before.usage + (Usage.from_dict(cost) if isinstance(cost, dict) else Usage()))
    return progress.replace(proposers={**progress.proposers, name: stats})
