"""Notes and night records written by every earlier version still read, typed.

Each shape below is what a version of skillgit wrote (the records' keys as that version's `loop` and `Store.decide`
built them). A step decided with such a note must read the same through every typed reader: `Store.step_notes`,
`Store.step_record` (the resume check), `show` / `show --json`, the log, and a run's review (`pr`, `report`).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skillgit.records import (
    CandidateNote,
    ControlSummary,
    Coverage,
    GateCheck,
    GateNote,
    RunProgress,
    ScoreRecord,
    StageUsage,
    StepKind,
    StepNotes,
    StepOutcome,
    UpdateRecord,
    Verdict,
)
from skillgit.review import data
from skillgit.review.show import summary
from skillgit.sleep import state as S
from skillgit.sleep.report import render
from skillgit.store import Store, read
from skillgit.types import Edit, EditResult, Usage
from tests.conftest import git, run_cli_inproc

SEED = "# Skill\n\nBe helpful.\n"
EDIT = {"op": "append", "content": "Check units.", "rationale": "units were missing", "target": ""}
APPLY = [{"edit": EDIT, "status": "applied", "reason": ""}]
VAL = {"per_item": {"a": [1.0, 1.0], "b": [0.0, 0.5]}, "errors": {"c": "student: HTTP 500"}}

# The records of one accepted slow-update step (run r1, step 1: val 0.5 → 0.75), as each version wrote them.
FIRST = [  # the first loop (e41c2f8): no usage, no coverage; the step kind as the candidate's `type` only
    {"v": 1, "kind": "candidate", "run": "r1", "step": 1, "epoch": 1, "type": "slow_update", "mode": "patch",
     "apply": APPLY, "reasoning": "", "edits": [EDIT]},
    {"v": 1, "kind": "gate", "run": "r1", "step": 1, "metric": "hard", "score_before": 0.5, "score_after": 0.75,
     "p_value": None, "reason": "better", "val": VAL},
    {"v": 1, "kind": "decision", "verdict": "accepted", "reason": "better", "score_before": 0.5, "score_after": 0.75,
     "delta": 0.25, "run": "r1", "step": 1, "branch": "main"},
]
CENTRE = [  # the centre rebuild (949a540): usage per stage, coverage in items, the decision's own `step_kind`
    {**FIRST[0], "usage": {"by_stage": {"reflect": {"calls": 2, "prompt_tokens": 100, "completion_tokens": 20,
                                                    "cached_tokens": 0, "reasoning_tokens": 0, "cost_usd": 0.01}},
                           "timings_s": {"rollout": 1.5, "gate": 2.0}}, "train": {"hard_mean": 0.5, "soft_mean": 0.7}},
    {**FIRST[1], "coverage": {"scored": 2, "total": 3, "unscored": ["c"]}, "base": {"per_item": {
        "a": [0.0, 0.0], "b": [0.0, 0.0]}, "errors": {}}},
    {**FIRST[2], "step_kind": "slow_update", "epoch": 1, "seq": 1, "edits": ["append: Check units."],
     "coverage": {"scored": 2, "total": 3, "unscored": ["c"]}, "p_value": 0.03,
     "usage": {"calls": 2, "prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 0, "reasoning_tokens": 0,
               "cost_usd": 0.01}},
]
ITEM_GATE = [  # the item-level gate (issue 20): samples, rounds, fingerprints, every check, null controls
    CENTRE[0],
    {**CENTRE[1], "coverage": {"scored": 2, "total": 3, "unscored": ["c"], "samples": 5, "samples_total": 9},
     "val": {**VAL, "split": "val", "blob": "b" * 40, "repeats": 3, "samples_scored": 5, "round": "1",
             "fingerprint": {"cli": "1.0"}, "samples": {"a": [[1.0, 1.0], [1.0, 1.0]], "b": [[0.0, 0.5]]}},
     "checks": [{"name": "significance", "passed": True, "detail": "significant", "numbers": {"p": 0.03}},
                {"name": "controls", "passed": True, "detail": "within noise", "numbers": {"noise_floor": 0.1}}],
     "fixed": ["a"], "broke": [], "incumbent": "scored again in this round",
     "controls": [{"round": "", "blob": "b" * 40, "mean": 0.5, "items": 2, "samples_scored": 2}],
     "noise_floor": 0.1},
    {**CENTRE[2], "coverage": {"scored": 2, "total": 3, "unscored": ["c"], "samples": 5, "samples_total": 9}},
]
SHAPES = {"first loop": FIRST, "centre": CENTRE, "item gate": ITEM_GATE}


def _write_note(root: Path, commit: str, records: list[dict[str, Any]]) -> None:
    """(with `json.dumps`' spacing, not skillgit's: a note a person or another tool wrote reads the same)"""
    subprocess.run(["git", "notes", "--ref", "skillgit", "add", "-f", "-F", "-", commit], cwd=root, check=True,
                   input="".join(json.dumps(r) + "\n" for r in records), text=True, capture_output=True)


@pytest.fixture
def decided(make_repo):
    """An accepted step 1 of run r1 (whose note each test replaces) and the run's progress."""
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    seed = store.tip()
    cand = store.propose(SEED + "Check units.\n", run="r1", step=1, subject="skill(slow-update): Check units.",
                         body="- append: Check units.", trailers={}, note=[])
    store.decide(cand, accept=True, reason="better", score_before=0.5, score_after=0.75)
    progress = RunProgress(run="r1", config_digest="x", branch="main", seed_rev=seed)
    store.save_run("r1", {"progress.json": json.dumps(progress.to_dict())}, "run")
    return root, store, cand.sha


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_note_of_every_earlier_shape_reads_typed_everywhere(decided, shape):
    root, store, sha = decided
    _write_note(root, sha, [{**r, "parent": git(root, "rev-parse", "main~1")} if r["kind"] == "decision" else r
                            for r in SHAPES[shape]])

    notes = store.step_notes(sha)
    assert notes.skipped == ()
    assert notes.decision is not None and notes.decision.verdict is Verdict.ACCEPTED
    assert (notes.decision.score_before, notes.decision.score_after, notes.decision.delta) == (0.5, 0.75, 0.25)
    assert notes.candidate is not None and notes.candidate.step_kind is StepKind.SLOW_UPDATE  # `type` in them all
    assert notes.candidate.edits == (Edit("append", "Check units.", rationale="units were missing"),)
    assert [r.status for r in notes.candidate.update.apply] == ["applied"] and notes.candidate.update.mode == "patch"
    assert notes.gate is not None and notes.gate.val is not None
    assert notes.gate.val.per_item == {"a": (1.0, 1.0), "b": (0.0, 0.5)} and notes.gate.val.unknown() == ("c",)

    found = store.step_record("r1", 1)  # the resume check
    assert found is not None and found.sha == sha and found.kind is StepKind.SLOW_UPDATE
    assert found.verdict is Verdict.ACCEPTED and found.delta == pytest.approx(0.25)

    detail = read.show(store, "1")
    assert detail.outcome == notes.decision and detail.gate == notes.gate and detail.skipped == ()
    text = summary(store, detail, "1")
    assert "accepted r1/0001" in text and "val 0.5000 → 0.7500" in text
    assert ("flips not recorded" in text) is (shape == "first loop")  # (it kept no parent scores)
    shown = json.loads(run_cli_inproc("show", "1", "--json", cwd=root).stdout)
    assert shown["update"]["step_kind"] == "slow_update" and shown["gate"]["val"]["per_item"]["a"] == [1.0, 1.0]
    assert shown["skipped"] == [] and shown["notes"][0]["kind"] == SHAPES[shape][0]["kind"]  # as written

    log = json.loads(run_cli_inproc("log", "--json", cwd=root).stdout)
    assert [(e["verdict"], e["score"], e["note"]) for e in log if e["verdict"] == "accepted"] == [
        ("accepted", 0.75, "ok")]

    review = data.load_run(store, "r1")
    [step] = review.decisions
    assert dict(step.items) == {"a": 1.0, "b": 0.0, "c": None} and step.outcome.kind is StepKind.SLOW_UPDATE
    assert step.flips.recorded is (shape != "first loop")  # the centre's gate notes keep the parent's scores
    if step.flips.recorded:
        assert step.flips.fixed == ("a",)
    assert (step.train_score == 0.5) is (shape != "first loop")


def test_the_step_kind_of_a_commit_before_step_kind_had_one_spelling(make_repo):
    """Older commits carry `Skillgit-Kind`; a note-less one (tags pulled without notes) reads its kind from it."""
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    cand = store.propose(SEED + "Meta.\n", run="r1", step="e1-meta-reflect", subject="skill(meta): Meta.",
                         body="- append: Meta.", note=[],
                         trailers={"Skillgit-Kind": "meta_reflect", "Skillgit-Delta": "+0.1000"})
    store.decide(cand, accept=True, reason="better", score_before=0.5, score_after=0.6)
    git(root, "update-ref", "-d", "refs/notes/skillgit")
    found = store.step_record("r1", "e1-meta-reflect")
    assert found is not None and found.kind is StepKind.META_REFLECT and found.delta == pytest.approx(0.1)


def test_new_records_read_back_as_they_were_written():
    outcome = StepOutcome("r1", "3", StepKind.META_REFLECT, 2, 7, Verdict.REJECTED, 0.5, 0.25, "worse",
                          ("append: x",), Coverage(2, 3, ("c",), 5, 9), 0.2, "", "p" * 40, Usage(3, 10, 2))
    note = outcome.to_note("main")
    assert note["step"] == 3 and note["step_kind"] == "meta_reflect" and "sha" not in note
    assert StepOutcome.from_note(note, "s" * 40) == dataclasses.replace(outcome, sha="s" * 40)
    score = ScoreRecord("val", "b" * 40, {"a": (1.0, 0.5)}, {"c": "x"}, 3, 4, False, "3", {"cli": "1"},
                        {"agent": 2.0}, {"a": ((1.0, 0.5), (1.0, 0.5))})
    gate = GateNote("r1", "3", "hard", 0.5, 0.25, 0.2, "worse", Coverage(1, 2, ("c",), 4, 6), score, score,
                    (GateCheck("strict", False, "worse", {"before": 0.5}),), (), ("a",), "scored again in this round",
                    (ControlSummary("2", "b" * 40, 0.5, 1, 3, {"cli": "1"}),), 0.05)
    assert GateNote.from_note(json.loads(json.dumps(gate.to_note()))) == gate
    candidate = CandidateNote("r1", "s3-p2", 2, StepKind.STEP,
                              UpdateRecord("patch", (EditResult(Edit("append", "x"), "applied"),), None, "why",
                                           {"train": {"hard_mean": 0.5, "soft_mean": None}}),
                              StageUsage({"reflect": Usage(1, 5, 1)}, {"reflect": 0.5}), (Edit("append", "x"),))
    assert CandidateNote.from_note(json.loads(json.dumps(candidate.to_note()))) == candidate
    assert candidate.train is not None and candidate.train.hard_mean == 0.5
    typed = StepNotes.from_records([outcome.to_note("main"), gate.to_note(), candidate.to_note()], "s" * 40)
    assert typed.decision is not None and typed.gate == gate and typed.candidate == candidate


def test_wrong_types_never_raise_in_from_note():
    """`from_note` alone (without `conform`) reads a field of the wrong type as missing."""
    junk: dict[str, Any] = {"run": 5, "step": [1], "epoch": "x", "step_kind": {"a": 1}, "apply": "no",
                            "edits": [5, {"op": 3}, {"op": "append", "content": 7}], "usage": [1],
                            "metric": 9, "val": {"per_item": {"a": [1, "x"], "b": 7}, "errors": [1]},
                            "checks": [5, {"name": 1}], "controls": ["x"], "coverage": {"scored": "many"},
                            "score_before": "NaN", "verdict": "accepted", "delta": "x", "seq": None}
    candidate = CandidateNote.from_note(junk)
    assert candidate.edits == (Edit("append"),) and candidate.step_kind is StepKind.STEP and candidate.run == ""
    gate = GateNote.from_note(junk)
    assert gate.val is not None and gate.val.per_item == {} and set(gate.val.errors) == {"a", "b"}
    assert gate.metric == "" and gate.controls == () and gate.score_before is None
    assert StepOutcome.from_note(junk).score_before == 0.0
    with pytest.raises(ValueError):
        StepOutcome.from_note({**junk, "verdict": "maybe"})


# ---------------------------------------------------------------------------------------------- sleep nights
OLD_NIGHT = {  # a night record as the first `skillgit sleep` wrote it: plain objects, usage with a total only
    "date": "2026-01-05", "status": "finished", "reason": "", "branch": "sleep/2026-01-05", "run": "sleep-2026-01-05",
    "skill_branch": "main", "base": "a" * 40, "tip": "b" * 40,
    "harvest": {"sessions": 9, "skipped": {"empty": 2}, "warnings": 1, "files_read": 4, "files_unchanged": 0},
    "mined": {"units": 12, "groups": 5, "tasks": 4, "recurring": 3, "failed": 1, "new_tasks": 4},
    "tasks": {"file": ".skillgit/sleep/tasks.jsonl", "reviewed": False, "approval": "offline", "used": 4, "train": 2,
              "val": 1, "test": 1, "judged": 0, "excluded": {"no answer": 1}, "simulated": True, "reason": "",
              "in_file": 5},
    "scores": {"seed": {"val": 0.25, "test": 0.5}, "final": {"val": 0.75, "test": None}},
    "accepted": 1, "rejected": 1,
    "edits": [{"step": "1", "verdict": "accepted", "delta": 0.5, "reason": "better", "edits": ["append: x"],
               "sha": "c" * 40},
              {"step": "2", "verdict": "rejected", "delta": -0.25, "reason": "worse", "edits": [], "sha": "d" * 40}],
    "usage": {"calls": 12, "tokens": 3400, "cost_usd": 0.02},
    "budget": {"max_tasks": 50, "max_steps": 4, "max_calls": None, "max_tokens": None, "max_cost_usd": 1.5},
    "redactions": {"secrets": 2, "emails": 1, "home_paths": 0, "custom": 0},
    "handoff": {}, "started": "2026-01-05T02:00:00+0000", "ended": "2026-01-05T02:10:00+0000", "adopted": "",
}


def test_a_night_record_of_the_first_version_reads_typed():
    record = S.NightRecord.from_dict(OLD_NIGHT)
    assert record.harvest.sessions == 9 and record.harvest.skipped == {"empty": 2} and record.mined.new_tasks == 4
    assert record.tasks.used == 4 and record.tasks.excluded == {"no answer": 1} and record.tasks.simulated
    assert record.score("seed", "val") == 0.25 and record.score("final", "test") is None
    assert [(e.step, e.verdict, e.delta, e.edits) for e in record.edits] == [
        ("1", Verdict.ACCEPTED, 0.5, ("append: x",)), ("2", Verdict.REJECTED, -0.25, ())]
    assert record.usage.calls == 12 and record.usage.total_tokens == 3400 and record.usage.cost_usd == 0.02
    assert record.budget.max_steps == 4 and record.budget.max_cost_usd == 1.5 and record.redactions.secrets == 2
    assert record.handoff is None
    again = S.NightRecord.from_dict(json.loads(record.to_json()))
    assert again == record  # and what this version writes reads back the same
    saved = record.to_dict()
    assert saved["usage"]["tokens"] == 3400 and saved["handoff"] == {} and saved["edits"][0]["verdict"] == "accepted"
    text = render(record)
    assert "| 1 | accepted | +0.500 |" in text and "tokens 3,400" in text and "9" in text


def test_a_night_record_with_wrong_types_reads_as_missing():
    broken = {**OLD_NIGHT, "harvest": [1], "tasks": {"used": "many", "excluded": 5}, "scores": {"seed": 3},
              "edits": "none", "usage": {"calls": "x"}, "budget": 7, "handoff": {"pending": "2"}, "accepted": None}
    record = S.NightRecord.from_dict(broken)
    assert record.harvest.sessions == 0 and record.tasks.used == 0 and record.scores == {} and record.edits == ()
    assert record.usage.calls == 0 and record.budget.max_steps is None and record.accepted == 0
    assert record.handoff is not None and record.handoff.pending == 0
    render(record)
