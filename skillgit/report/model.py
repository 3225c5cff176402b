"""The typed description of one training run that `skillgit report` renders.

Contract:
- Everything is a frozen dataclass with `to_dict()` (JSON-ready, tuples become lists) and `from_dict()`
  (ignores keys it does not know, fills missing optional ones with defaults), so a report can be built from git
  notes today and read by a later version tomorrow. `from_dict(x.to_dict()) == x` for every class here.
- Scores are the run's gate metric (`RunReport.metric`) on a 0..1 scale; `None` always means *unknown* (not
  evaluated, or the scorer could not decide) and is never the same as a failure (`0.0`).
- The model holds data only; derived series (val current, best so far, epoch boundaries) are computed by the
  pure helpers at the end of this module so that both chart renderers agree on them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from skillgit.records import DECIDED, StepKind, Verdict, to_float
from skillgit.types import Usage, known_fields

STEP_KINDS: tuple[str, ...] = tuple(k.value for k in StepKind)
VERDICTS: tuple[str, ...] = tuple(v.value for v in DECIDED)  # a report shows decided candidates only


def _opt_float(value: Any) -> float | None:
    """None stays None (unknown); anything else must be a number (a report's own JSON: an error otherwise)."""
    if value is None:
        return None
    number = to_float(value)
    if number is None:
        raise ValueError(f"not a number: {value!r}")
    return number


def _scores(data: Mapping[str, Any] | None) -> dict[str, float | None]:
    return {str(k): _opt_float(v) for k, v in (data or {}).items()}


def _usages(data: Mapping[str, Any] | None) -> dict[str, Usage]:
    return {str(k): v if isinstance(v, Usage) else Usage.from_dict(v) for k, v in (data or {}).items()}


@dataclass(frozen=True)
class ReportEdit:
    """One edit a decision proposed: the op, where it aimed, what it said, why, and what `apply_edits` did."""

    op: str
    file: str = ""
    target: str = ""
    content: str = ""
    rationale: str = ""
    status: str = ""  # an ApplyStatus (applied, applied_fuzzy, skipped_…) or "" when not recorded

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReportEdit:
        return cls(**known_fields(cls, data))


@dataclass(frozen=True)
class ReportStep:
    """One gate decision, in decision order (`seq` 1, 2, …): a training step or an epoch-level update."""

    seq: int
    step: str  # the step's name: "3", "e1-slow-update", "e1-meta-reflect"
    kind: StepKind = StepKind.STEP
    epoch: int = 1
    verdict: Verdict = Verdict.REJECTED
    val_before: float | None = None  # the parent's val score the gate compared with
    val_after: float | None = None  # the candidate's val score
    delta: float | None = None  # val_after - val_before as the gate saw it
    train_score: float | None = None  # mean rollout score on the step's train batch (None for epoch updates)
    reason: str = ""
    edits: tuple[ReportEdit, ...] = ()
    diff: str = ""  # unified diff of the candidate against its parent
    cost_usd: float = 0.0
    calls: int = 0
    tokens: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall seconds
    item_scores: dict[str, float | None] = field(default_factory=dict)  # val item id -> score, None = unknown
    coverage: float | None = None  # fraction of val items with a known score

    def __post_init__(self) -> None:
        # Invariant: kind and verdict are members of their closed vocabularies (given as members or their strings),
        # so renderers can switch on them.
        if self.kind not in STEP_KINDS:
            raise ValueError(f"ReportStep.kind must be one of {STEP_KINDS}, not {self.kind!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"ReportStep.verdict must be one of {VERDICTS}, not {self.verdict!r}")
        object.__setattr__(self, "kind", StepKind(self.kind))
        object.__setattr__(self, "verdict", Verdict(self.verdict))

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["kind"], data["verdict"] = self.kind.value, self.verdict.value
        data["edits"] = [e.to_dict() for e in self.edits]
        data["seconds"] = dict(self.seconds)
        data["item_scores"] = dict(self.item_scores)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReportStep:
        d = known_fields(cls, data)
        d["edits"] = tuple(e if isinstance(e, ReportEdit) else ReportEdit.from_dict(e) for e in d.get("edits", ()))
        d["seconds"] = {str(k): float(v) for k, v in (d.get("seconds") or {}).items()}
        d["item_scores"] = _scores(d.get("item_scores"))
        for key in ("val_before", "val_after", "delta", "train_score", "coverage"):
            d[key] = _opt_float(d.get(key))
        d["step"] = str(d["step"])
        return cls(**d)


@dataclass(frozen=True)
class SplitScores:
    """Scores of the seed, the best accepted and the final skill on one split (None = not measured)."""

    seed: float | None = None
    best: float | None = None
    final: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "best": self.best, "final": self.final}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> SplitScores:
        d = known_fields(cls, data or {})
        return cls(**{k: _opt_float(v) for k, v in d.items()})


@dataclass(frozen=True)
class RunReport:
    """Everything the report shows about one run."""

    run_id: str
    project: str = ""
    skill_path: str = ""
    branch: str = ""
    started: str = ""  # ISO 8601, as recorded; the renderer never adds a clock of its own
    ended: str = ""
    status: str = ""  # e.g. finished, stopped, interrupted, running
    stop_reason: str = ""
    metric: str = "hard"
    env_metric: str = ""  # the environment's own metric, named ("searchqa: exact match …"); "" without one
    val: SplitScores = field(default_factory=SplitScores)
    test: SplitScores = field(default_factory=SplitScores)
    val_items: tuple[str, ...] = ()  # val item ids in display order
    seed_item_scores: dict[str, float | None] = field(default_factory=dict)
    steps: tuple[ReportStep, ...] = ()  # in decision order
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)
    usage_by_role: dict[str, Usage] = field(default_factory=dict)
    config_digest: str = ""
    reproduce: str = ""  # a shell command that reruns this run

    def to_dict(self) -> dict[str, Any]:
        return {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            "val": self.val.to_dict(),
            "test": self.test.to_dict(),
            "val_items": list(self.val_items),
            "seed_item_scores": dict(self.seed_item_scores),
            "steps": [s.to_dict() for s in self.steps],
            "usage_by_stage": {k: v.to_dict() for k, v in self.usage_by_stage.items()},
            "usage_by_role": {k: v.to_dict() for k, v in self.usage_by_role.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunReport:
        d = known_fields(cls, data)
        d["val"] = SplitScores.from_dict(d.get("val"))
        d["test"] = SplitScores.from_dict(d.get("test"))
        d["val_items"] = tuple(str(i) for i in d.get("val_items", ()))
        d["seed_item_scores"] = _scores(d.get("seed_item_scores"))
        d["steps"] = tuple(s if isinstance(s, ReportStep) else ReportStep.from_dict(s) for s in d.get("steps", ()))
        d["usage_by_stage"] = _usages(d.get("usage_by_stage"))
        d["usage_by_role"] = _usages(d.get("usage_by_role"))
        return cls(**d)

    @property
    def accepted(self) -> int:
        return sum(1 for s in self.steps if s.accepted)

    @property
    def rejected(self) -> int:
        return len(self.steps) - self.accepted

    def total_usage(self) -> Usage:
        total = Usage()
        for usage in self.usage_by_stage.values():
            total = total + usage
        return total


# ---- derived series, shared by both chart renderers -------------------------------------------------------


def val_current(report: RunReport) -> list[float | None]:
    """The val score of the skill in force *after* each decision (index i ↔ steps[i]): the seed's until a
    candidate is accepted, then the accepted candidate's. A step function over `seq`."""
    out: list[float | None] = []
    current = report.val.seed
    for step in report.steps:
        if step.accepted and step.val_after is not None:
            current = step.val_after
        out.append(current)
    return out


def best_so_far(report: RunReport) -> list[float | None]:
    """The best val score of any skill in force up to and including each decision (equals `val_current` under
    a strict gate; differs when the gate is off or a step was reverted)."""
    out: list[float | None] = []
    best = report.val.seed
    for value in val_current(report):
        if value is not None and (best is None or value > best):
            best = value
        out.append(best)
    return out


def epoch_boundaries(steps: Sequence[ReportStep]) -> list[tuple[float, int]]:
    """(x, epoch) for each epoch start after the first: x lies halfway between the last decision of the previous
    epoch and the first of the new one."""
    out: list[tuple[float, int]] = []
    for prev, cur in itertools.pairwise(steps):
        if cur.epoch != prev.epoch:
            out.append(((prev.seq + cur.seq) / 2, cur.epoch))
    return out


def heatmap_items(report: RunReport) -> list[str]:
    """The val item ids to show as heatmap rows: `val_items` in order, then any id only the scores mention."""
    seen = dict.fromkeys(report.val_items)
    for scores in [report.seed_item_scores, *(s.item_scores for s in report.steps)]:
        for item in scores:
            seen.setdefault(item, None)
    return list(seen)


def heatmap_columns(report: RunReport) -> list[tuple[str, dict[str, float | None]]]:
    """(label, item scores) per heatmap column: the seed first, then each decision's candidate."""
    cols: list[tuple[str, dict[str, float | None]]] = [("seed", dict(report.seed_item_scores))]
    cols.extend((s.step, dict(s.item_scores)) for s in report.steps)
    return cols
