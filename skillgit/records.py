"""The typed records of training: one name per concept, one shape per record.

Every record is a frozen dataclass with `to_dict()` / `from_dict()`. `to_dict` is what lands in git notes, in
`progress.json` on a run ref, in `--json` output and in `--events` lines, and each field keeps one JSON type
(documented in docs/JSON.md): a step is always a string (`"3"`, `"e1-slow-update"`), scores are numbers or null,
counts are integers. `from_dict` ignores keys it does not know and accepts the shapes older versions wrote, so a
newer skillgit reads any older history.

- `StepKind`: what produced a candidate (a numbered step, an epoch's slow update or meta reflect).
- `Verdict`: a history entry's verdict.
- `Coverage`: how many val items (and samples) the gate could compare.
- `StepOutcome`: one decided candidate — the decision note, the `step_end` event, `status`'s last step, `log`.
- `UpdateRecord`: how a candidate was built (patches, merges, selection, every edit's fate) — the candidate note.
- `RunProgress`: a run's resumable state on its run ref.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Mapping

from skillgit.types import EditResult, Usage


class StepKind(str, Enum):
    STEP = "step"
    SLOW_UPDATE = "slow_update"
    META_REFLECT = "meta_reflect"

    @classmethod
    def parse(cls, value: Any) -> "StepKind":
        try:
            return cls(str(value))
        except ValueError:
            return cls.STEP

    @property
    def subject_prefix(self) -> str:
        return {"step": "skill", "slow_update": "skill(slow-update)", "meta_reflect": "skill(meta)"}[self.value]


class Verdict(str, Enum):
    SEED = "seed"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REVERT = "revert"


def step_str(step: int | str) -> str:
    """The JSON form of a step: `3` → "3"; names stay as they are."""
    return str(step)


def parse_step(value: Any) -> int | str:
    """The in-memory form of a step: "3"/3 → 3; names stay strings."""
    text = str(value)
    return int(text) if text.isdigit() else text


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


# ---------------------------------------------------------------------------------------------- coverage
@dataclass(frozen=True)
class Coverage:
    """Val items the gate compared (`scored`: scored for both skills) out of `total`; `unscored` names the rest.
    `samples` / `samples_total`: the (item, repeat) samples scored out of those asked, for the skill that has
    fewer of its own (copies of an item count once); None in notes written before samples were counted."""

    scored: int
    total: int
    unscored: tuple[str, ...] = ()
    samples: int | None = None
    samples_total: int | None = None

    @property
    def fraction(self) -> float:
        return self.scored / self.total if self.total else 0.0

    @property
    def complete(self) -> bool:
        return self.scored == self.total

    def describe(self) -> str:
        """"28/30 val items, 79/90 samples scored" (older notes: "28/30 val items scored")."""
        if self.samples is None or not self.samples_total:
            return f"{self.scored}/{self.total} val items scored"
        return f"{self.scored}/{self.total} val items, {self.samples}/{self.samples_total} samples scored"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scored": self.scored, "total": self.total, "unscored": list(self.unscored)}
        if self.samples is not None:
            out.update(samples=self.samples, samples_total=self.samples_total)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "Coverage | None":
        if not isinstance(data, Mapping):
            return None

        def count(key: str) -> int | None:
            value = data.get(key)
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        return cls(int(data.get("scored", 0)), int(data.get("total", 0)),
                   tuple(str(x) for x in data.get("unscored", ()) or ()), count("samples"), count("samples_total"))


# ---------------------------------------------------------------------------------------------- outcome
@dataclass(frozen=True)
class StepOutcome:
    """One decided candidate. `score_*` are the gate metric on val over the compared items; `edits` are the
    applied edits' one-line summaries; `sha` the candidate commit, `parent` the tip it was built on."""

    run: str
    step: str
    kind: StepKind
    epoch: int
    seq: int
    verdict: Verdict
    score_before: float
    score_after: float
    reason: str
    edits: tuple[str, ...] = ()
    coverage: Coverage | None = None
    p_value: float | None = None
    sha: str = ""
    parent: str = ""
    usage: Usage = field(default_factory=Usage)

    @property
    def delta(self) -> float:
        return self.score_after - self.score_before

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "step": self.step, "kind": self.kind.value, "epoch": self.epoch, "seq": self.seq,
                "verdict": self.verdict.value, "score_before": self.score_before, "score_after": self.score_after,
                "delta": round(self.delta, 10), "reason": self.reason, "edits": list(self.edits),
                "coverage": self.coverage.to_dict() if self.coverage else None, "p_value": self.p_value,
                "sha": self.sha, "parent": self.parent, "usage": self.usage.to_dict()}

    def to_note(self, branch: str) -> dict[str, Any]:
        """The decision record in the candidate's note (`kind: decision`; the step's kind is `step_kind`)."""
        data = self.to_dict()
        data["step_kind"] = data.pop("kind")
        data.pop("sha")  # the note is attached to that commit
        return {"kind": "decision", **data, "branch": branch}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StepOutcome":
        before = _float(data.get("score_before")) or 0.0
        after = _float(data.get("score_after"))
        if after is None:
            after = before + (_float(data.get("delta")) or 0.0)
        return cls(run=str(data.get("run", "")), step=step_str(data.get("step", "")),
                   kind=StepKind.parse(data.get("step_kind", data.get("kind"))),
                   epoch=int(data.get("epoch") or 0), seq=int(data.get("seq") or 0),
                   verdict=Verdict(data.get("verdict", "rejected")), score_before=before, score_after=after,
                   reason=str(data.get("reason", "")), edits=tuple(str(e) for e in data.get("edits", ()) or ()
                                                                    if isinstance(e, str)),
                   coverage=Coverage.from_dict(data.get("coverage")), p_value=_float(data.get("p_value")),
                   sha=str(data.get("sha", "")), parent=str(data.get("parent", "")),
                   usage=Usage.from_dict(data.get("usage") or {}) if isinstance(data.get("usage"), Mapping)
                   else Usage())


# ---------------------------------------------------------------------------------------------- update record
@dataclass(frozen=True)
class UpdateRecord:
    """How a candidate was built. `apply` holds every considered edit's fate (applied, skipped and why);
    `invalid` is set when the candidate must be rejected without scoring. `details` keeps the mode's own parts
    (patches, merge rounds, selection, drafts, comparison…), each already a JSON-ready record."""

    mode: str
    apply: tuple[EditResult, ...] = ()
    invalid: str | None = None
    reasoning: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def applied(self) -> tuple[EditResult, ...]:
        return tuple(r for r in self.apply if r.applied)

    def with_details(self, **more: Any) -> "UpdateRecord":
        return dataclasses.replace(self, details={**self.details, **more})

    def to_dict(self) -> dict[str, Any]:
        out = {**self.details, "mode": self.mode, "apply": [r.to_dict() for r in self.apply],
               "reasoning": self.reasoning}
        if self.invalid is not None:
            out["invalid"] = self.invalid
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "UpdateRecord":
        apply = tuple(EditResult.from_dict(r) for r in data.get("apply", ()) or ()
                      if isinstance(r, Mapping) and isinstance(r.get("edit"), Mapping))
        details = {k: v for k, v in data.items() if k not in ("mode", "apply", "invalid", "reasoning")}
        return cls(str(data.get("mode", "")), apply, data.get("invalid"), str(data.get("reasoning", "")), details)


# ---------------------------------------------------------------------------------------------- run progress
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
        return cls(str(data.get("rev", "")), _float(data.get("val")), _float(data.get("test")))


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
            seed_score=_float(data.get("seed_score")), current_score=_float(data.get("current_score")),
            started=_float(data.get("started")), updated=_float(data.get("updated")),
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
        )
