"""The records a decided step leaves in git notes, and one commit's note read back typed (`StepNotes`).

A note is JSON lines (`store/notes.py` is the codec: one object per line, sorted keys, `"v": 1`, a `kind`). Every
record here has `to_note()` — the object written, its `kind` included — and `from_note(record)`, which reads the
record as any version wrote it and never raises on a field of the wrong type: such a field reads as missing (notes
arrive from collaborators through `skillgit pull`; `store.notes.conform`, run first by every reader, says which
fields it dropped). Shapes older versions wrote are mapped: a candidate's `type` is its `step_kind`; a gate record
without `checks`, `controls` or `samples` reads with none.

- `CandidateNote` (`kind: candidate`): how the candidate was built (its `UpdateRecord`), the applied edits, what the
  step cost per stage (`StageUsage`) and the train batch's score (`TrainScore`).
- `GateNote` (`kind: gate`): what the gate compared and said — scores, p-value, reason, coverage, both skills'
  per-item val scores (`ScoreRecord`), every check (`GateCheck`), the items fixed and broken, and, when the
  candidate was scored, how the incumbent was measured, its null controls (`ControlSummary`) and the noise floor;
  in a run, how it spent its α (`Spending`).
- the decision (`kind: decision`) is `StepOutcome.to_note` / `StepOutcome.from_note`.
- `RevertNote` (`kind: revert`) and `ReviewNote` (`kind: review`: the branch a `--branch` run started from).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from skillgit.records.core import (
    JSON,
    Coverage,
    StepKind,
    StepOutcome,
    UpdateRecord,
    _int,
    _list,
    _map,
    _text,
    _texts,
    edit_of,
    parse_step,
    step_str,
    to_float,
    usage_of,
)
from skillgit.types import Edit, Usage


def _step(value: Any) -> str:
    return step_str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""


def _note_step(step: str) -> int | str:
    """A step as notes write it: a number for a numbered step, text for a name."""
    return parse_step(step) if step else step


def _strings(value: Any) -> dict[str, str]:
    return {str(k): v for k, v in _map(value).items() if isinstance(v, str)}


def _numbers(value: Any) -> dict[str, float]:
    return {str(k): n for k, v in _map(value).items() if (n := to_float(v)) is not None and not isinstance(v, bool)}


def _pair(value: Any) -> tuple[float, float] | None:
    """A (hard, soft) pair as notes write it (`[0.5, 1.0]`), None when it is not two numbers."""
    if not isinstance(value, (list, tuple)) or len(value) != 2 or any(isinstance(x, bool) for x in value):
        return None
    hard, soft = to_float(value[0]), to_float(value[1])
    return None if hard is None or soft is None else (hard, soft)


# ---------------------------------------------------------------------------------------------- scores
@dataclass(frozen=True)
class ScoreRecord:
    """One scoring of a skill on a split as a gate note keeps it (`SplitScore.record()`): per-item (hard, soft) means,
    the unknown items with why, every repeat's sample, the round it was scored in and the student's fingerprint.
    `samples_scored` is None in notes written before samples were counted; an item whose pair is unreadable reads
    as unknown."""

    split: str = ""
    blob: str = ""
    per_item: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    repeats: int = 1
    samples_scored: int | None = None
    identical: bool = False
    round: str = ""
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict)
    samples: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"split": self.split, "blob": self.blob,
                               "per_item": {k: list(v) for k, v in sorted(self.per_item.items())},
                               "errors": dict(sorted(self.errors.items())), "repeats": self.repeats}
        if self.samples_scored is not None:
            out["samples_scored"] = self.samples_scored
        if self.identical:
            out["identical_repeats"] = True
        if self.round:
            out["round"] = self.round
        if self.fingerprint:
            out["fingerprint"] = dict(self.fingerprint)
        if self.seconds:
            out["seconds"] = dict(sorted(self.seconds.items()))
        if self.samples:
            out["samples"] = {k: [list(p) for p in rows] for k, rows in sorted(self.samples.items())}
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "ScoreRecord | None":
        if not isinstance(data, Mapping):
            return None
        per_item: dict[str, tuple[float, float]] = {}
        errors = {str(k): v if isinstance(v, str) else "unknown" for k, v in _map(data.get("errors")).items()}
        for item, raw in _map(data.get("per_item")).items():
            pair = _pair(raw)
            if pair is None:
                errors.setdefault(str(item), "unreadable score in the note")
            else:
                per_item[str(item)] = pair
        samples = {str(k): tuple(p for p in map(_pair, _list(rows)) if p is not None)
                   for k, rows in _map(data.get("samples")).items()}
        scored = data.get("samples_scored")
        return cls(_text(data.get("split")), _text(data.get("blob")), per_item, errors,
                   max(1, _int(data.get("repeats"), 1)), _int(scored) if isinstance(scored, int) else None,
                   data.get("identical_repeats") is True, _step(data.get("round")),
                   _strings(data.get("fingerprint")), _numbers(data.get("seconds")),
                   {k: v for k, v in samples.items() if v})

    def unknown(self) -> tuple[str, ...]:
        """The items this scoring could not score (sorted)."""
        return tuple(sorted(set(self.errors) - set(self.per_item)))


@dataclass(frozen=True)
class ControlSummary:
    """A null control in a gate note: another scoring of the incumbent — its round, blob, mean, how many items and
    samples it scored, the student's fingerprint (its per-item scores are in its own round's gate note)."""

    round: str
    blob: str
    mean: float
    items: int
    samples_scored: int
    fingerprint: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"round": self.round, "blob": self.blob, "mean": self.mean, "items": self.items,
                               "samples_scored": self.samples_scored}
        if self.fingerprint:
            out["fingerprint"] = dict(self.fingerprint)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "ControlSummary | None":
        if not isinstance(data, Mapping):
            return None
        return cls(_step(data.get("round")), _text(data.get("blob")), to_float(data.get("mean")) or 0.0,
                   _int(data.get("items")), _int(data.get("samples_scored")), _strings(data.get("fingerprint")))


@dataclass(frozen=True)
class GateCheck:
    """One check's verdict: `detail` says it in words, `numbers` holds what it computed (check-specific JSON,
    shown as it is; the gate note types the numbers other readers use, e.g. `GateNote.noise_floor`)."""

    name: str
    passed: bool
    detail: str
    numbers: Mapping[str, JSON] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail, "numbers": dict(self.numbers)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateCheck:
        return cls(_text(data.get("name")), data.get("passed") is True, _text(data.get("detail")),
                   dict(_map(data.get("numbers"))))


# ---------------------------------------------------------------------------------------------- candidate
@dataclass(frozen=True)
class StageUsage:
    """What one candidate cost: model usage per stage and wall seconds per stage (`Ledger.diff_since`)."""

    by_stage: Mapping[str, Usage] = field(default_factory=dict)
    timings_s: Mapping[str, float] = field(default_factory=dict)

    @property
    def total(self) -> Usage:
        out = Usage()
        for usage in self.by_stage.values():
            out = out + usage
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"by_stage": {k: v.to_dict() for k, v in self.by_stage.items()}, "timings_s": dict(self.timings_s)}

    @classmethod
    def from_dict(cls, data: Any) -> "StageUsage":
        stages = {str(k): usage_of(v) for k, v in _map(_map(data).get("by_stage")).items() if isinstance(v, Mapping)}
        return cls(stages, _numbers(_map(data).get("timings_s")))


@dataclass(frozen=True)
class TrainScore:
    """The mean rollout scores of a step's train batch with the skill before its edits."""

    hard_mean: float | None = None
    soft_mean: float | None = None

    @classmethod
    def from_dict(cls, data: Any) -> "TrainScore | None":
        if not isinstance(data, Mapping):
            return None
        return cls(to_float(data.get("hard_mean")), to_float(data.get("soft_mean")))


_CANDIDATE_KEYS = ("v", "kind", "run", "step", "epoch", "type", "step_kind", "usage", "edits")


@dataclass(frozen=True)
class CandidateNote:
    """How a candidate was built (`kind: candidate`): its update record, the edits it applied, what it cost."""

    run: str
    step: str
    epoch: int
    step_kind: StepKind
    update: UpdateRecord
    usage: StageUsage = field(default_factory=StageUsage)
    edits: tuple[Edit, ...] = ()  # the applied edits

    @property
    def train(self) -> TrainScore | None:
        """The step's train batch as the skill before it scored it (a mode's part, `update.details["train"]`)."""
        return TrainScore.from_dict(self.update.details.get("train"))

    def to_note(self) -> dict[str, Any]:
        return {"kind": "candidate", "run": self.run, "step": _note_step(self.step), "epoch": self.epoch,
                "step_kind": self.step_kind.value, **self.update.to_dict(), "usage": self.usage.to_dict(),
                "edits": [e.to_dict() for e in self.edits]}

    @classmethod
    def from_note(cls, record: Mapping[str, Any]) -> "CandidateNote":
        update = UpdateRecord.from_dict(record)
        details = {k: v for k, v in update.details.items() if k not in _CANDIDATE_KEYS}
        edits = tuple(e for e in map(edit_of, _list(record.get("edits"))) if e is not None)
        return cls(_text(record.get("run")), _step(record.get("step")), _int(record.get("epoch")),
                   StepKind.parse(record.get("step_kind", record.get("type"))),
                   dataclasses.replace(update, details=details),
                   StageUsage.from_dict(record.get("usage")), edits)


# ---------------------------------------------------------------------------------------------- gate
@dataclass(frozen=True)
class Spending:
    """How a run spent its α at one gated candidate (`evaluation.across_steps`, `loop/spending.py`): the mode, the
    run's α, this test's α (before the split over a step's candidates), its number among the run's tests, the
    numbers of the tests accepted before it, the fdr rule's wealth before it, and whether this decision counts as a
    test (`counted`: scored with the gate on and not forced). The state after a decision (`after`) is what the
    run's next test starts from: a run's spending is derived from its latest decision's gate note alone."""

    mode: str
    alpha: float
    step_alpha: float
    test: int
    accepts: tuple[int, ...] = ()
    wealth: float | None = None
    counted: bool = True

    def after(self, accepted: bool) -> tuple[int, tuple[int, ...]]:
        """(tests done, accepted test numbers) once this decision is counted (`accepted`: its final verdict)."""
        if not self.counted:
            return self.test - 1, self.accepts
        return self.test, (*self.accepts, self.test) if accepted else self.accepts

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "alpha": self.alpha, "step_alpha": self.step_alpha, "test": self.test,
                "accepts": list(self.accepts), "wealth": self.wealth, "counted": self.counted}

    @classmethod
    def from_dict(cls, data: Any) -> "Spending | None":
        """None unless every field the state needs has its type (a note from a collaborator is not trusted)."""
        if not isinstance(data, Mapping):
            return None
        test, accepts = data.get("test"), data.get("accepts")
        alpha, step_alpha = to_float(data.get("alpha")), to_float(data.get("step_alpha"))
        if (not isinstance(test, int) or isinstance(test, bool) or test < 1 or not isinstance(accepts, list)
                or not all(isinstance(a, int) and not isinstance(a, bool) and 0 < a < test for a in accepts)
                or alpha is None or step_alpha is None or not isinstance(data.get("mode"), str)):
            return None
        return cls(data["mode"], alpha, step_alpha, test, tuple(sorted(set(accepts))), to_float(data.get("wealth")),
                   data.get("counted") is not False)


@dataclass(frozen=True)
class GateNote:
    """What the gate compared and said (`kind: gate`). `val` is the candidate's scoring (None when it was not
    scored: unchanged, invalid, leaking or oversized), `base` the incumbent's as compared. `incumbent` says how the
    incumbent was measured ("scored again in this round" / "reused its earlier score"; "" when nothing was scored
    or the note predates it)."""

    run: str
    step: str
    metric: str = ""  # hard | soft | mixed ("" when the note does not say)
    score_before: float | None = None
    score_after: float | None = None
    p_value: float | None = None
    reason: str = ""
    coverage: Coverage | None = None
    val: ScoreRecord | None = None
    base: ScoreRecord | None = None
    checks: tuple[GateCheck, ...] = ()
    fixed: tuple[str, ...] = ()
    broke: tuple[str, ...] = ()
    incumbent: str = ""
    controls: tuple[ControlSummary, ...] = ()
    noise_floor: float | None = None
    spending: Spending | None = None  # how the run spent its α on this candidate (None: not in a run, or older)

    def check(self, name: str) -> GateCheck | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_note(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "gate", "run": self.run, "step": _note_step(self.step), "metric": self.metric,
            "score_before": self.score_before, "score_after": self.score_after, "p_value": self.p_value,
            "reason": self.reason, "coverage": self.coverage.to_dict() if self.coverage else None,
            "val": self.val.to_dict() if self.val else None, "base": self.base.to_dict() if self.base else None,
            "checks": [c.to_dict() for c in self.checks], "fixed": list(self.fixed), "broke": list(self.broke)}
        if self.incumbent:
            out.update(incumbent=self.incumbent, controls=[c.to_dict() for c in self.controls],
                       noise_floor=self.noise_floor)
        if self.spending is not None:
            out["spending"] = self.spending.to_dict()
        return out

    @classmethod
    def from_note(cls, record: Mapping[str, Any]) -> "GateNote":
        metric = record.get("metric")
        checks = tuple(GateCheck.from_dict(c) for c in _list(record.get("checks")) if isinstance(c, Mapping))
        controls = tuple(c for c in map(ControlSummary.from_dict, _list(record.get("controls"))) if c is not None)
        return cls(_text(record.get("run")), _step(record.get("step")),
                   metric if metric in ("hard", "soft", "mixed") else "",
                   to_float(record.get("score_before")), to_float(record.get("score_after")),
                   to_float(record.get("p_value")), _text(record.get("reason")),
                   Coverage.from_dict(record.get("coverage")), ScoreRecord.from_dict(record.get("val")),
                   ScoreRecord.from_dict(record.get("base")), checks, _texts(record.get("fixed")),
                   _texts(record.get("broke")), _text(record.get("incumbent")), controls,
                   to_float(record.get("noise_floor")), Spending.from_dict(record.get("spending")))


# ---------------------------------------------------------------------------------------------- revert, review
@dataclass(frozen=True)
class RevertNote:
    """A revert commit's record (`kind: revert`): the mode (rev | to | steps), the commit it restored or undid,
    the person's reason, and the tip it was made on."""

    mode: str
    target: str
    reason: str = ""
    made_on: str = ""  # `from` in the note

    def to_note(self) -> dict[str, Any]:
        return {"kind": "revert", "mode": self.mode, "target": self.target, "reason": self.reason,
                "from": self.made_on}

    @classmethod
    def from_note(cls, record: Mapping[str, Any]) -> "RevertNote":
        return cls(_text(record.get("mode")), _text(record.get("target")), _text(record.get("reason")),
                   _text(record.get("from")))


@dataclass(frozen=True)
class ReviewNote:
    """On a run's seed commit (`kind: review`): run `run` trains branch `head`, started from branch `base`."""

    run: str
    base: str
    head: str

    def to_note(self) -> dict[str, Any]:
        return {"kind": "review", "run": self.run, "base": self.base, "head": self.head}

    @classmethod
    def from_note(cls, record: Mapping[str, Any]) -> "ReviewNote":
        return cls(_text(record.get("run")), _text(record.get("base")), _text(record.get("head")))


# ---------------------------------------------------------------------------------------------- one note
@dataclass(frozen=True)
class StepNotes:
    """Everything one commit's note says, typed: the first decision, candidate, gate and revert record (of `run`,
    when one is given: a record naming another run is not this run's), every review record, and what was skipped —
    the fields `conform` dropped and records that could not be read at all."""

    decision: StepOutcome | None = None
    candidate: CandidateNote | None = None
    gate: GateNote | None = None
    revert: RevertNote | None = None
    reviews: tuple[ReviewNote, ...] = ()
    skipped: tuple[str, ...] = ()

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], sha: str = "", run: str | None = None,
                     skipped: Iterable[str] = ()) -> "StepNotes":
        """`records`: a note's records (conformed: see `store.notes.conform`); `skipped`: what conforming said."""
        found: dict[str, Any] = {}
        kinds: dict[str, bool] = {}  # the record names its step's kind itself
        reviews: list[ReviewNote] = []
        said = list(skipped)
        readers = {"decision": lambda r: StepOutcome.from_note(r, sha), "candidate": CandidateNote.from_note,
                   "gate": GateNote.from_note, "revert": RevertNote.from_note}
        for record in records:
            kind = record.get("kind")
            if kind == "review":
                reviews.append(ReviewNote.from_note(record))
                continue
            if kind not in readers or kind in found or (run is not None and record.get("run") not in (None, run)):
                continue
            try:
                found[str(kind)] = readers[str(kind)](record)
                kinds[str(kind)] = isinstance(record.get("step_kind"), str)
            except (ValueError, TypeError, OverflowError) as exc:
                said.append(f"{kind}: skipped whole ({exc})")
        decision, candidate = found.get("decision"), found.get("candidate")
        if decision is not None and candidate is not None and not kinds.get("decision"):
            decision = dataclasses.replace(decision, kind=candidate.step_kind)  # older decisions had no step_kind
        return cls(decision, candidate, found.get("gate"), found.get("revert"), tuple(reviews), tuple(said))
