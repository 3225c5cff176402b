"""The records of one decided step: the vocabulary (`StepKind`, `Verdict`), `Coverage`, `StepOutcome` and
`UpdateRecord`, and the one number parser (`to_float`). See the package docstring for the conventions.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping, Sequence, Union

from skillgit.frozen import Frozen
from skillgit.types import Edit, EditResult, Usage

# A JSON value: what an open part of a record (a gate check's numbers, an update mode's own parts) may hold.
JSON = Union[None, bool, int, float, str, Sequence["JSON"], Mapping[str, "JSON"]]


class _Vocabulary(str, Enum):
    """A closed vocabulary whose members are their strings: `f"{kind}"` and `str(kind)` give the value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class StepKind(_Vocabulary):
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


class Verdict(_Vocabulary):
    SEED = "seed"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REVERT = "revert"


DECIDED = (Verdict.ACCEPTED, Verdict.REJECTED)  # the verdicts of a decided candidate


def step_str(step: int | str) -> str:
    """The JSON form of a step: `3` → "3"; names stay as they are."""
    return str(step)


def parse_step(value: Any) -> int | str:
    """The in-memory form of a step: "3"/3 → 3; names stay strings."""
    text = str(value)
    return int(text) if text.isdigit() else text


def to_float(value: Any) -> float | None:
    """A finite number from anything (a note field, a trailer's text), else None: the one number parser."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None



def _int(value: Any, default: int = 0) -> int:
    """A whole number from a note field of any JSON type (numbers and digit strings count), else `default`."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return default


def _text(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(x for x in value if isinstance(x, str)) if isinstance(value, (list, tuple)) else ()


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


# ---------------------------------------------------------------------------------------------- coverage
@dataclass(frozen=True, eq=False, repr=False)
class Coverage(Frozen):
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
            return _int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        return cls(_int(data.get("scored")), _int(data.get("total")), _texts(data.get("unscored")),
                   count("samples"), count("samples_total"))


def usage_of(value: Any) -> Usage:
    """A `Usage` from a note's usage object of any shape (a wrong-typed count reads as 0; other keys ignored)."""
    data = _map(value)
    counts = {name: _int(data.get(name)) for name in ("calls", "prompt_tokens", "completion_tokens",
                                                       "cached_tokens", "reasoning_tokens")}
    return Usage(**counts, cost_usd=to_float(data.get("cost_usd")) or 0.0)


# ---------------------------------------------------------------------------------------------- outcome
@dataclass(frozen=True, eq=False, repr=False)
class StepOutcome(Frozen):
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
        """The decision record in the candidate's note: `kind: decision`, the step's kind as `step_kind`, a
        numbered step as a number (`3`; names stay text), no `sha` (the note is attached to that commit)."""
        data = self.to_dict()
        data["step_kind"] = data.pop("kind")
        data["step"] = parse_step(self.step) if self.step else self.step
        data.pop("sha")
        return {"kind": "decision", **data, "branch": branch}

    @classmethod
    def from_note(cls, record: Mapping[str, Any], sha: str = "") -> "StepOutcome":
        """A decision record of any version as written (`step_kind`; the record's own `kind` is "decision"), for
        commit `sha`. Fields of the wrong type read as missing; ValueError when it names no verdict of a decided
        candidate (such a record says nothing)."""
        verdict = record.get("verdict")
        if verdict not in ("accepted", "rejected"):
            raise ValueError(f"no verdict of a decided candidate: {verdict!r}")
        return cls.from_dict({**record, "kind": record.get("step_kind"), "sha": sha})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StepOutcome":
        """A StepOutcome's JSON (`to_dict`) of any version; fields of the wrong type read as missing."""
        before = to_float(data.get("score_before")) or 0.0
        after = to_float(data.get("score_after"))
        if after is None:
            after = before + (to_float(data.get("delta")) or 0.0)
        step = data.get("step")
        return cls(run=_text(data.get("run")), step=step_str(step) if isinstance(step, (int, str)) else "",
                   kind=StepKind.parse(data.get("step_kind", data.get("kind"))),
                   epoch=_int(data.get("epoch")), seq=_int(data.get("seq")),
                   verdict=Verdict(data.get("verdict", "rejected")), score_before=before, score_after=after,
                   reason=_text(data.get("reason")), edits=_texts(data.get("edits")),
                   coverage=Coverage.from_dict(data.get("coverage")), p_value=to_float(data.get("p_value")),
                   sha=_text(data.get("sha")), parent=_text(data.get("parent")), usage=usage_of(data.get("usage")))


# ---------------------------------------------------------------------------------------------- update record
@dataclass(frozen=True, eq=False, repr=False)
class UpdateRecord(Frozen):
    """How a candidate was built. `apply` holds every considered edit's fate (applied, skipped and why);
    `invalid` is set when the candidate must be rejected without scoring. `details` keeps the mode's own parts
    (patches, merge rounds, selection, drafts, comparison…), each already a JSON-ready record: the mode writes them
    and `show --json` / `show --full` print them as they are (the parts other readers use are typed where they are
    read, e.g. `CandidateNote.train`)."""

    mode: str
    apply: tuple[EditResult, ...] = ()
    invalid: str | None = None
    reasoning: str = ""
    details: Mapping[str, JSON] = field(default_factory=dict)
    proposer: str = ""  # who built it (`optimizer.proposers`: reflect, agent); "" in notes older than proposers

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
        if self.proposer:
            out["proposer"] = self.proposer
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "UpdateRecord":
        """Of any version; edits and results of the wrong shape are left out, other fields read as missing."""
        apply = tuple(r for r in map(result_of, _list(data.get("apply"))) if r is not None)
        details = {k: v for k, v in data.items() if k not in ("mode", "apply", "invalid", "reasoning", "proposer")}
        invalid = data.get("invalid")
        return cls(_text(data.get("mode")), apply, invalid if isinstance(invalid, str) else None,
                   _text(data.get("reasoning")), details, _text(data.get("proposer")))


_EDIT_TEXTS = ("op", "content", "target", "rationale", "source_type", "id", "file")


def edit_of(value: Any) -> Edit | None:
    """An `Edit` from a note's edit object (None when it names no op); fields of the wrong type read as missing."""
    data = _map(value)
    if not isinstance(data.get("op"), str):
        return None
    fields: dict[str, Any] = {k: data[k] for k in _EDIT_TEXTS if isinstance(data.get(k), str)}
    fields.update({k: _int(data[k]) for k in ("support_count", "merge_level") if _int(data.get(k), -1) >= 0})
    return Edit(**fields)


def result_of(value: Any) -> EditResult | None:
    """An `EditResult` from a note's `apply` entry (None without an edit and a status)."""
    data = _map(value)
    edit = edit_of(data.get("edit"))
    if edit is None or not isinstance(data.get("status"), str):
        return None
    return EditResult(edit, data["status"], _text(data.get("reason")))
