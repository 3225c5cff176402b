"""The typed records of training: one name per concept, one shape per record.

Every record is a frozen dataclass with `to_dict()` / `from_dict()` (note records: `to_note()` / `from_note()`).
`to_dict` is what lands in `progress.json` on a run ref, in `--json` output and in `--events` lines, and each field
keeps one JSON type (documented in docs/JSON.md): a step is always a string (`"3"`, `"e1-slow-update"`), scores are
numbers or null, counts are integers. `from_dict` / `from_note` ignore keys they do not know, accept the shapes
older versions wrote and read a field of the wrong type as missing, so a newer skillgit reads any older history,
and a collaborator's note cannot crash a reader.

- `core`: `StepKind` (what produced a candidate) and `Verdict` (a history entry's verdict) — closed vocabularies
  whose members are their strings —, `Coverage` (how many val items and samples the gate compared), `StepOutcome`
  (one decided candidate: the decision note, the `step_end` event, `status`'s last step) and `UpdateRecord` (how a
  candidate was built); `to_float`, the one parser of numbers from outside.
- `notes`: what a decided step leaves in git notes — `CandidateNote`, `GateNote` (with `ScoreRecord`,
  `GateCheck`, `ControlSummary`), `RevertNote`, `ReviewNote` — and `StepNotes`, one commit's note read back typed.
- `progress`: `RunProgress`, a run's resumable state on its run ref (`EpochState`, `EpochStep`, `SkillScores`,
  `ProposerStats`, `AgentSpend`).

One spelling per concept: the step's kind is `kind` in a StepOutcome's JSON (docs/JSON.md), `step_kind` in note
records (whose own `kind` names the record; candidate notes before this version wrote `type`) and the
`Skillgit-Step-Kind` commit trailer (before: `Skillgit-Kind`); its values are `StepKind`'s everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillgit.lazy import exports

# Each public name → the module that defines it: the one table of this package's names. A name is imported on first
# use (PEP 562), so a command that needs no note record never builds them (`skillgit log` reading its cache imports
# none of `notes` and `progress`: sixteen frozen dataclasses, 7 % of its instructions).
_HOMES: dict[str, tuple[str, ...]] = {
    "core": ("DECIDED", "JSON", "Coverage", "StepKind", "StepOutcome", "UpdateRecord", "Verdict", "edit_of",
             "parse_step", "result_of", "step_str", "to_float", "usage_of"),
    "notes": ("CandidateNote", "ControlSummary", "GateCheck", "GateNote", "RevertNote", "ReviewNote", "ScoreRecord",
              "StageUsage", "StepNotes", "TrainScore"),
    "progress": ("RUN_STATUSES", "AgentSpend", "EpochState", "EpochStep", "ProposerStats", "RunProgress",
                 "SkillScores"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}
__all__ = ["DECIDED", "JSON", "Coverage", "StepKind", "StepOutcome", "UpdateRecord", "Verdict", "edit_of",
           "parse_step", "result_of", "step_str", "to_float", "usage_of", "CandidateNote", "ControlSummary",
           "GateCheck", "GateNote", "RevertNote", "ReviewNote", "ScoreRecord", "StageUsage", "StepNotes",
           "TrainScore", "RUN_STATUSES", "AgentSpend", "EpochState", "EpochStep", "ProposerStats", "RunProgress",
           "SkillScores"]  # (spelled out for linters; the same names as the table)

if TYPE_CHECKING:  # what a type checker sees: the same names, imported eagerly (tests/test_centre.py checks both)
    from skillgit.records.core import (
        DECIDED,
        JSON,
        Coverage,
        StepKind,
        StepOutcome,
        UpdateRecord,
        Verdict,
        edit_of,
        parse_step,
        result_of,
        step_str,
        to_float,
        usage_of,
    )
    from skillgit.records.notes import (
        CandidateNote,
        ControlSummary,
        GateCheck,
        GateNote,
        RevertNote,
        ReviewNote,
        ScoreRecord,
        StageUsage,
        StepNotes,
        TrainScore,
    )
    from skillgit.records.progress import (
        RUN_STATUSES,
        AgentSpend,
        EpochState,
        EpochStep,
        ProposerStats,
        RunProgress,
        SkillScores,
    )


__getattr__, __dir__ = exports(__name__, _HOME)
