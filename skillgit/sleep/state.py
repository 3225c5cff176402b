"""What `skillgit sleep` remembers, kept in git on `refs/skillgit/sleep` (never in the home folder).

Layout of the ref: a chain of commits (each the parent of the next, like a run ref) whose tree holds small files:

| path | what |
| --- | --- |
| `state.json` | the `HarvestState`: which session files and sessions earlier harvests saw |
| `totals.json` | `NightTotals`: what was harvested, mined and redacted since the last night |
| `nights/<date>.json` | that night's `NightRecord` (counts, splits, scores, decisions, cost, redactions) |
| `nights/<date>.md` | that night's report in Markdown (also usable as a pull-request body) |

Contracts:
- `load(repo)` reads the ref (`SleepState`; an empty state when there is none) with a fixed number of git calls.
- `save(repo, files, message, expected)` commits `files` over the current tree (other files are kept) and moves
  the ref with compare-and-swap on `expected` (the head `load` returned): if another process saved meanwhile
  nothing changes and a GitStateError says so. The ref is written by the store (`store.fileref.FileRef`) only.
- Every record is typed (`NightRecord` and its parts, `SkillScores`, `Usage`, `StepOutcome`, `Redactions`) and
  reads any earlier version's JSON: unknown keys are ignored, a field of the wrong type reads as missing, and the
  shapes older versions wrote are mapped (a night's `usage` was `{calls, tokens, cost_usd}`; its decisions were
  `{step, verdict, delta, reason, edits, sha}`).
- The ref holds counts, hashes, ids and skill edits — never transcript text (that stays in the reviewable task file
  in the working tree). It is local to this clone: `skillgit push` does not push it (harvest state is per machine).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from skillgit.records import SkillScores, StepKind, StepOutcome, to_float, usage_of
from skillgit.sleep.harvest import HarvestState
from skillgit.sleep.scrub import Redactions
from skillgit.store.fileref import FileRef
from skillgit.store.repository import Repository, file_ref
from skillgit.types import Usage

SLEEP_REF = "refs/skillgit/sleep"
STATE_FILE = "state.json"
TOTALS_FILE = "totals.json"
NIGHTS_DIR = "nights"


def night_json(date: str) -> str:
    return f"{NIGHTS_DIR}/{date}.json"


def night_md(date: str) -> str:
    return f"{NIGHTS_DIR}/{date}.md"


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _counts(value: Any) -> dict[str, int]:
    return {str(k): _count(v) for k, v in _map(value).items()}


def _add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in dict.fromkeys([*a, *b])}


@dataclass(frozen=True)
class HarvestCounts:
    """What a harvest read: sessions new or grown, those skipped (reason → n), format warnings, files."""

    sessions: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)
    warnings: int = 0
    files_read: int = 0
    files_unchanged: int = 0

    def __add__(self, other: HarvestCounts) -> HarvestCounts:
        return HarvestCounts(self.sessions + other.sessions, _add(self.skipped, other.skipped),
                             self.warnings + other.warnings, self.files_read + other.files_read,
                             self.files_unchanged + other.files_unchanged)

    def to_dict(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "skipped": dict(self.skipped)}

    @classmethod
    def from_dict(cls, data: Any) -> HarvestCounts:
        d = _map(data)
        return cls(_count(d.get("sessions")), _counts(d.get("skipped")), _count(d.get("warnings")),
                   _count(d.get("files_read")), _count(d.get("files_unchanged")))


@dataclass(frozen=True)
class MinedCounts:
    """What mining found: task units, groups, tasks (recurring, failed) and how many were new to the task file."""

    units: int = 0
    groups: int = 0
    tasks: int = 0
    recurring: int = 0
    failed: int = 0
    new_tasks: int = 0

    def __add__(self, other: MinedCounts) -> MinedCounts:
        return MinedCounts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Any) -> MinedCounts:
        d = _map(data)
        return cls(*(_count(d.get(f.name)) for f in fields(cls)))


@dataclass(frozen=True)
class NightTotals:
    """What was harvested, mined and redacted since the last night (`totals.json`), added up per gather."""

    harvest: HarvestCounts = field(default_factory=HarvestCounts)
    mined: MinedCounts = field(default_factory=MinedCounts)
    redactions: Redactions = field(default_factory=Redactions)

    def __add__(self, other: NightTotals) -> NightTotals:
        return NightTotals(self.harvest + other.harvest, self.mined + other.mined, self.redactions + other.redactions)

    def to_dict(self) -> dict[str, Any]:
        return {"harvest": self.harvest.to_dict(), "mined": self.mined.to_dict(),
                "redactions": self.redactions.to_dict()}

    @classmethod
    def from_dict(cls, data: Any) -> NightTotals:
        data = _map(data)
        return cls(HarvestCounts.from_dict(data.get("harvest")), MinedCounts.from_dict(data.get("mined")),
                   Redactions.from_dict(_counts(data.get("redactions"))))


@dataclass(frozen=True)
class NightTasks:
    """The night's tasks: the file they came from, whether it was reviewed and under which approval they were
    used ("offline" | "header" | "--yes"), how many were in the file, used (train / val / test), judged by the
    teacher against a rubric, and left out (why → n); `simulated` when the night ran on the offline world.
    `routed`: in a library night, how many of the file's tasks were routed to this skill (`sleep/route.py`);
    None in a one-skill night, which replays from the whole file."""

    file: str = ""
    reviewed: bool = False
    approval: str = ""
    in_file: int = 0
    routed: int | None = None
    used: int = 0
    train: int = 0
    val: int = 0
    test: int = 0
    judged: int = 0
    excluded: Mapping[str, int] = field(default_factory=dict)
    simulated: bool = False
    reason: str = ""
    repinned: Mapping[str, int] = field(default_factory=dict)  # agentic tasks moved off a missing commit: how → n

    def to_dict(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "excluded": dict(self.excluded),
                "repinned": dict(self.repinned)}

    @classmethod
    def from_dict(cls, data: Any) -> NightTasks:
        d = _map(data)

        def text(key: str) -> str:
            return d[key] if isinstance(d.get(key), str) else ""

        return cls(text("file"), d.get("reviewed") is True, text("approval"), in_file=_count(d.get("in_file")),
                   used=_count(d.get("used")), train=_count(d.get("train")), val=_count(d.get("val")),
                   test=_count(d.get("test")), judged=_count(d.get("judged")), excluded=_counts(d.get("excluded")),
                   repinned=_counts(d.get("repinned")),
                   simulated=d.get("simulated") is True, reason=text("reason"),
                   routed=_count(d["routed"]) if isinstance(d.get("routed"), int) else None)


@dataclass(frozen=True)
class NightSkill:
    """One library skill in a library night (sleep/library_night.py): its run and night branch, the tasks routed
    to it and replayed, what its own gate decided, its scores and spend. `status`: finished | stopped (the night's
    budget, or its turn stopped) | skipped (`reason` says why: no task routed, too few usable) | waiting."""

    name: str
    status: str
    reason: str = ""
    run: str = ""
    branch: str = ""
    base: str = ""
    tip: str = ""
    tasks: NightTasks = field(default_factory=NightTasks)
    scores: Mapping[str, SkillScores] = field(default_factory=dict)
    steps: int = 0
    accepted: int = 0
    rejected: int = 0
    usage: Usage = field(default_factory=Usage)

    def score(self, which: str, split: str) -> float | None:
        scores = self.scores.get(which)
        return getattr(scores, split) if scores is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "reason": self.reason, "run": self.run,
                "branch": self.branch, "base": self.base, "tip": self.tip, "tasks": self.tasks.to_dict(),
                "scores": {k: v.to_dict() for k, v in self.scores.items()}, "steps": self.steps,
                "accepted": self.accepted, "rejected": self.rejected, "usage": _usage_to_dict(self.usage)}

    @classmethod
    def from_dict(cls, data: Any) -> NightSkill | None:
        d = _map(data)
        if not isinstance(d.get("name"), str):
            return None
        text = {k: d[k] for k in ("status", "reason", "run", "branch", "base", "tip") if isinstance(d.get(k), str)}
        return cls(**{"status": "", **text}, name=d["name"], tasks=NightTasks.from_dict(d.get("tasks")),
                   scores={str(k): SkillScores.from_dict(v) for k, v in _map(d.get("scores")).items()
                           if isinstance(v, Mapping)},
                   steps=_count(d.get("steps")), accepted=_count(d.get("accepted")),
                   rejected=_count(d.get("rejected")), usage=_usage_from(d.get("usage")))


@dataclass(frozen=True)
class NightBudget:
    """The night's budgets as given (None: no limit)."""

    max_tasks: int | None = None
    max_steps: int | None = None
    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Any) -> NightBudget:
        d = _map(data)
        ints = {k: d[k] for k in ("max_tasks", "max_steps", "max_calls", "max_tokens")
                if isinstance(d.get(k), int) and not isinstance(d.get(k), bool)}
        return cls(**ints, max_cost_usd=to_float(d.get("max_cost_usd")))


@dataclass(frozen=True)
class NightHandoff:
    """The handoff folder (repository-relative) with its answered and pending prompts."""

    folder: str = ""
    pending: int = 0
    answered: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "pending": self.pending, "answered": self.answered}

    @classmethod
    def from_dict(cls, data: Any) -> NightHandoff | None:
        d = _map(data)
        if not d:
            return None
        return cls(d["folder"] if isinstance(d.get("folder"), str) else "", _count(d.get("pending")),
                   _count(d.get("answered")))


def _usage_to_dict(usage: Usage) -> dict[str, Any]:
    """A night's usage as JSON: the Usage, plus `tokens` (prompt + completion, what earlier records kept)."""
    return {**usage.to_dict(), "tokens": usage.total_tokens}


def _usage_from(data: Any) -> Usage:
    """A night's usage of any version; records that kept only the total `tokens` read it as prompt tokens."""
    d = _map(data)
    usage = usage_of(d)
    if "prompt_tokens" not in d and "completion_tokens" not in d:
        usage = replace(usage, prompt_tokens=_count(d.get("tokens")))
    return usage


def _decision(data: Any, run: str) -> StepOutcome | None:
    """A decided step of the night: a StepOutcome's JSON, or the `{step, verdict, delta, reason, edits, sha}` rows
    earlier records kept (their delta becomes the score after a before of 0)."""
    d = _map(data)
    if d.get("verdict") not in ("accepted", "rejected"):
        return None
    if "score_after" not in d and "kind" not in d:
        d = {**d, "score_before": 0.0, "score_after": to_float(d.get("delta")) or 0.0, "run": run,
             "kind": StepKind.STEP.value}
    return StepOutcome.from_dict(d)


@dataclass(frozen=True)
class NightRecord:
    """One night: what was harvested and mined, what was replayed, what the gate decided and what it cost.

    `status`: finished | stopped (a budget) | waiting (handoff answers pending) | nothing (no usable task).
    `scores`: the seed's and the final skill's (`seed`, `final`); `edits`: every decided step, in order."""

    date: str
    status: str
    reason: str = ""
    branch: str = ""
    run: str = ""
    skill_branch: str = ""
    base: str = ""  # the skill branch's tip the night's branch started from
    tip: str = ""  # the night's branch after training
    harvest: HarvestCounts = field(default_factory=HarvestCounts)
    mined: MinedCounts = field(default_factory=MinedCounts)
    tasks: NightTasks = field(default_factory=NightTasks)
    scores: Mapping[str, SkillScores] = field(default_factory=dict)
    accepted: int = 0
    rejected: int = 0
    edits: tuple[StepOutcome, ...] = ()
    usage: Usage = field(default_factory=Usage)
    budget: NightBudget = field(default_factory=NightBudget)
    redactions: Redactions = field(default_factory=Redactions)
    handoff: NightHandoff | None = None
    started: str = ""
    ended: str = ""
    adopted: str = ""  # the skill branch's tip after `skillgit sleep adopt`
    skills: tuple[NightSkill, ...] = ()  # a library night: each skill's own part (empty for a one-skill night)

    def score(self, which: str, split: str) -> float | None:
        """`which` (seed | final) skill's score on `split` (val | test), None when not measured."""
        scores = self.scores.get(which)
        return getattr(scores, split) if scores is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {"date": self.date, "status": self.status, "reason": self.reason, "branch": self.branch,
                "run": self.run, "skill_branch": self.skill_branch, "base": self.base, "tip": self.tip,
                "harvest": self.harvest.to_dict(), "mined": self.mined.to_dict(), "tasks": self.tasks.to_dict(),
                "scores": {k: v.to_dict() for k, v in self.scores.items()}, "accepted": self.accepted,
                "rejected": self.rejected, "edits": [e.to_dict() for e in self.edits],
                "usage": _usage_to_dict(self.usage), "budget": self.budget.to_dict(),
                "redactions": self.redactions.to_dict(), "handoff": self.handoff.to_dict() if self.handoff else {},
                "started": self.started, "ended": self.ended, "adopted": self.adopted,
                "skills": [k.to_dict() for k in self.skills]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NightRecord:
        text = {k: data[k] for k in ("date", "status", "reason", "branch", "run", "skill_branch", "base", "tip",
                                     "started", "ended", "adopted") if isinstance(data.get(k), str)}
        run = text.get("run", "")
        raw = data.get("edits")
        edits = [_decision(e, run) for e in raw] if isinstance(raw, list) else []
        return cls(**{"date": "", "status": "", **text},
                   harvest=HarvestCounts.from_dict(data.get("harvest")), mined=MinedCounts.from_dict(data.get("mined")),
                   tasks=NightTasks.from_dict(data.get("tasks")),
                   scores={str(k): SkillScores.from_dict(v) for k, v in _map(data.get("scores")).items()
                           if isinstance(v, Mapping)},
                   accepted=_count(data.get("accepted")), rejected=_count(data.get("rejected")),
                   edits=tuple(e for e in edits if e is not None), usage=_usage_from(data.get("usage")),
                   budget=NightBudget.from_dict(data.get("budget")),
                   redactions=Redactions.from_dict(_counts(data.get("redactions"))),
                   handoff=NightHandoff.from_dict(data.get("handoff")),
                   skills=tuple(k for k in (NightSkill.from_dict(x) for x in data.get("skills") or ()
                                            if isinstance(data.get("skills"), list)) if k is not None))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class SleepState:
    harvest: HarvestState
    nights: tuple[str, ...]  # dates with a record, oldest first
    head: str | None  # the ref's commit (None: nothing saved yet)


def _ref(repo: Repository) -> FileRef:
    return file_ref(repo, SLEEP_REF)


def load(repo: Repository) -> SleepState:
    ref = _ref(repo)
    head = ref.head()
    if head is None:
        return SleepState(HarvestState(), (), None)
    entries = ref.blobs(head)
    state = HarvestState()
    if STATE_FILE in entries:
        state = HarvestState.from_json(ref.text(entries[STATE_FILE]))
    nights = sorted(name[len(NIGHTS_DIR) + 1:-5] for name in entries
                    if name.startswith(NIGHTS_DIR + "/") and name.endswith(".json"))
    return SleepState(state, tuple(nights), head)


def read(repo: Repository, path: str) -> str | None:
    """A file of the sleep ref's tree, or None."""
    return _ref(repo).read(path)


def night(repo: Repository, date: str) -> NightRecord | None:
    text = read(repo, night_json(date))
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return NightRecord.from_dict(data) if isinstance(data, Mapping) else None


def totals(repo: Repository) -> NightTotals:
    """What was harvested, mined and redacted since the last night (empty when unreadable)."""
    text = read(repo, TOTALS_FILE)
    try:
        return NightTotals.from_dict(json.loads(text) if text else {})
    except ValueError:
        return NightTotals()


def save(repo: Repository, files: Mapping[str, str], message: str, expected: str | None) -> str:
    """See the module contract; returns the new commit."""
    return _ref(repo).save(files, message, expected=expected,
                           reflog=f"skillgit sleep: {message.splitlines()[0] if message else ''}")


def mark_adopted(repo: Repository, record: NightRecord, tip: str) -> None:
    """Remember on the night's record that `skillgit sleep adopt` moved the skill branch to `tip`."""
    save(repo, {night_json(record.date): replace(record, adopted=tip).to_json()}, f"adopt {record.date}",
         load(repo).head)


__all__ = ["SLEEP_REF", "STATE_FILE", "TOTALS_FILE", "NightRecord", "NightTotals", "HarvestCounts", "MinedCounts",
           "NightTasks", "NightSkill", "NightBudget", "NightHandoff", "SleepState", "load", "read", "night", "totals",
           "save", "mark_adopted", "night_json", "night_md"]
