"""A run's resumable state on its run ref (`RunProgress`), with its epochs' step logs and the final scores."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from skillgit.records.core import StepKind, StepOutcome, Verdict, step_str, to_float
from skillgit.types import Usage


@dataclass(frozen=True)
class EpochStep:
    """A decided step in the running epoch's log (what meta reflect reads)."""

    step: str
    kind: StepKind
    verdict: Verdict
    delta: float
    edits: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "kind": self.kind.value, "verdict": self.verdict.value,
                "delta": round(self.delta, 6), "edits": [dict(e) for e in self.edits]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EpochStep":
        return cls(step_str(data.get("step", "")), StepKind.parse(data.get("kind")),
                   Verdict(data.get("verdict", "rejected")), float(data.get("delta") or 0.0),
                   tuple(e for e in data.get("edits", ()) or () if isinstance(e, Mapping)))


@dataclass(frozen=True)
class EpochState:
    steps: tuple[EpochStep, ...] = ()
    ended: bool = False
    steps_rev: str | None = None  # the skill after the epoch's numbered steps (what the epoch's end compares)
    end_rev: str | None = None
    comparison: Mapping[str, int] = field(default_factory=dict)
    meta_skill: str = ""  # what happened to the meta skill at this epoch's end

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [s.to_dict() for s in self.steps], "ended": self.ended, "steps_rev": self.steps_rev,
                "end_rev": self.end_rev,
                "comparison": dict(self.comparison), "meta_skill": self.meta_skill}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EpochState":
        return cls(tuple(EpochStep.from_dict(s) for s in data.get("steps", ()) or () if isinstance(s, Mapping)),
                   bool(data.get("ended", False)), data.get("steps_rev"), data.get("end_rev"),
                   dict(data.get("comparison") or {}),
                   str(data.get("meta_skill", "")))


@dataclass(frozen=True)
class SkillScores:
    """One skill revision's scores at the end of a run."""

    rev: str
    val: float | None
    test: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"rev": self.rev, "val": self.val, "test": self.test}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SkillScores":
        return cls(str(data.get("rev", "")), to_float(data.get("val")), to_float(data.get("test")))


@dataclass(frozen=True)
class ProposerStats:
    """One proposer's share of a run's numbered steps (`optimizer.proposers`): the candidates it made, how many of
    them were accepted, and the teacher calls and tokens that built them (a call the journal answered costs 0; the
    agent's `skillgit-try` runs are the student's, booked under stage `try`)."""

    proposed: int = 0
    accepted: int = 0
    usage: Usage = field(default_factory=Usage)

    @property
    def rate(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None

    def to_dict(self) -> dict[str, Any]:
        return {"proposed": self.proposed, "accepted": self.accepted,
                "rate": round(self.rate, 4) if self.rate is not None else None, "usage": self.usage.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ProposerStats":
        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

        usage = data.get("usage")
        return cls(count("proposed"), count("accepted"), Usage.from_dict(usage if isinstance(usage, Mapping) else {}))


@dataclass(frozen=True)
class AgentSpend:
    """What the agent teacher's steps spent (the calls it ran, not the ones the journal answered): their turns and
    wall seconds, and the most of each one call took (what `budget.max_agent_turns` / `max_agent_seconds` expect
    of the next call)."""

    calls: int = 0
    turns: int = 0
    seconds: float = 0.0
    max_turns: int = 0
    max_seconds: float = 0.0

    def __add__(self, other: "AgentSpend") -> "AgentSpend":
        return AgentSpend(self.calls + other.calls, self.turns + other.turns, round(self.seconds + other.seconds, 3),
                          max(self.max_turns, other.max_turns), max(self.max_seconds, other.max_seconds))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> "AgentSpend":
        data = data if isinstance(data, Mapping) else {}

        def number(key: str, kind: type) -> Any:
            value = data.get(key)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
            return kind(value) if ok else kind(0)

        return cls(number("calls", int), number("turns", int), number("seconds", float), number("max_turns", int),
                   number("max_seconds", float))


RUN_STATUSES = ("running", "finished", "stopped", "interrupted", "failed")


@dataclass(frozen=True)
class RunProgress:
    """A run's resumable state, saved on `refs/skillgit/runs/<run>` after every decided step.

    `usage` is the run's total spend (every process that worked on it); `errors` counts calls that failed after
    retries per stage, `retries` the retried attempts, `unscored` the val items the last gate could not score."""

    run: str
    config_digest: str
    branch: str
    status: str = "running"
    stop_reason: str = ""
    next_step: int = 1
    total_steps: int = 0
    accepted: int = 0
    rejected: int = 0
    seq: int = 0
    seed_rev: str | None = None
    seed_score: float | None = None
    current_score: float | None = None
    started: float | None = None
    updated: float | None = None
    usage: Usage = field(default_factory=Usage)
    usage_by_stage: Mapping[str, Usage] = field(default_factory=dict)
    usage_by_role: Mapping[str, Usage] = field(default_factory=dict)
    errors: Mapping[str, int] = field(default_factory=dict)
    retries: int = 0
    unscored: int = 0
    test_reads: int = 0  # times the sealed test split was scored (only at a run's end)
    rollout_seconds: Mapping[str, float] = field(default_factory=dict)  # agentic: setup / agent / verify totals
    meta_skill: str = ""
    epochs: Mapping[int, EpochState] = field(default_factory=dict)
    last: StepOutcome | None = None
    final_scores: Mapping[str, SkillScores] = field(default_factory=dict)
    proposers: Mapping[str, ProposerStats] = field(default_factory=dict)  # per proposer (optimizer.proposers)
    rejected_streak: int = 0  # numbered steps rejected in a row (optimizer.proposer_schedule)
    proposer_switch: int | None = None  # the step from which the schedule's proposer proposes alone
    agent: AgentSpend = field(default_factory=AgentSpend)  # the agent teacher's turns and wall time

    @property
    def steps_done(self) -> int:
        return self.next_step - 1

    def epoch(self, index: int) -> EpochState:
        return self.epochs.get(index, EpochState())

    def with_epoch(self, index: int, state: EpochState) -> "RunProgress":
        return dataclasses.replace(self, epochs={**self.epochs, index: state})

    def replace(self, **changes: Any) -> "RunProgress":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run, "config_digest": self.config_digest, "branch": self.branch, "status": self.status,
            "stop_reason": self.stop_reason, "next_step": self.next_step, "total_steps": self.total_steps,
            "accepted": self.accepted, "rejected": self.rejected, "seq": self.seq, "seed_rev": self.seed_rev,
            "seed_score": self.seed_score, "current_score": self.current_score, "started": self.started,
            "updated": self.updated, "usage": self.usage.to_dict(),
            "usage_by_stage": {k: v.to_dict() for k, v in sorted(self.usage_by_stage.items())},
            "usage_by_role": {k: v.to_dict() for k, v in sorted(self.usage_by_role.items())},
            "errors": dict(sorted(self.errors.items())), "retries": self.retries, "unscored": self.unscored,
            "test_reads": self.test_reads, "rollout_seconds": dict(self.rollout_seconds),
            "meta_skill": self.meta_skill,
            "epochs": {str(k): v.to_dict() for k, v in sorted(self.epochs.items())},
            "last": self.last.to_dict() if self.last else None,
            "final_scores": {k: v.to_dict() for k, v in self.final_scores.items()},
            "proposers": {k: v.to_dict() for k, v in sorted(self.proposers.items())},
            "rejected_streak": self.rejected_streak, "proposer_switch": self.proposer_switch,
            "agent": self.agent.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunProgress":
        def usages(raw: Any) -> dict[str, Usage]:
            return {str(k): Usage.from_dict(v) for k, v in (raw or {}).items() if isinstance(v, Mapping)}

        epochs = {int(k): EpochState.from_dict(v) for k, v in (data.get("epochs") or {}).items()
                  if str(k).isdigit() and isinstance(v, Mapping)}
        last = data.get("last")
        return cls(
            run=str(data.get("run", "")), config_digest=str(data.get("config_digest", "")),
            branch=str(data.get("branch", "")), status=str(data.get("status", "running")),
            stop_reason=str(data.get("stop_reason", "")), next_step=int(data.get("next_step", 1)),
            total_steps=int(data.get("total_steps") or 0), accepted=int(data.get("accepted", 0)),
            rejected=int(data.get("rejected", 0)), seq=int(data.get("seq", 0)), seed_rev=data.get("seed_rev"),
            seed_score=to_float(data.get("seed_score")), current_score=to_float(data.get("current_score")),
            started=to_float(data.get("started")), updated=to_float(data.get("updated")),
            usage=Usage.from_dict(data.get("usage") or {}), usage_by_stage=usages(data.get("usage_by_stage")),
            usage_by_role=usages(data.get("usage_by_role")),
            errors={str(k): int(v) for k, v in (data.get("errors") or {}).items()},
            retries=int(data.get("retries", 0)), unscored=int(data.get("unscored", 0)),
            test_reads=int(data.get("test_reads", 0)),
            rollout_seconds={str(k): float(v) for k, v in (data.get("rollout_seconds") or {}).items()},
            meta_skill=str(data.get("meta_skill", "")), epochs=epochs,
            last=StepOutcome.from_dict(last) if isinstance(last, Mapping) else None,
            final_scores={str(k): SkillScores.from_dict(v) for k, v in (data.get("final_scores") or {}).items()
                          if isinstance(v, Mapping)},
            proposers={str(k): ProposerStats.from_dict(v) for k, v in (data.get("proposers") or {}).items()
                       if isinstance(v, Mapping)},
            rejected_streak=int(data.get("rejected_streak") or 0),
            proposer_switch=data.get("proposer_switch") if isinstance(data.get("proposer_switch"), int) else None,
            agent=AgentSpend.from_dict(data.get("agent")),
        )
