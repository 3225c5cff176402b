"""What happens at an epoch's end: the slow update, the meta skill and meta reflect.

- **slow update**: the previous epoch's final skill and the current one run on sampled train items; the pairs
  (in `prompts.KIND_ORDER`: regressions first, then improvements, persistent failures, stable successes — the
  order the teacher reads them in) go to the teacher, which writes longitudinal guidance into the protected
  `<!-- skillgit:slow-update -->` region. The candidate goes through the gate unless
  `optimizer.slow_update_gate_with_selection=false`, in which case it is forced and the note says so.
- **meta skill**: teacher-side memory distilled from the same comparison and the epoch's accepted/rejected
  steps; stored with the run (`meta_skill.md` on the run ref), fed to later teacher prompts, never shipped.
- **meta reflect**: higher-level edits from the epoch's accepted and rejected directions, through the gate.

Each function here builds one thing from what it is given and returns it; the run hands the candidates to the one
gated-commit path (`decide.py`). Epoch-end candidates are named `e<epoch>-slow-update` and `e<epoch>-meta-reflect`.
"""

from __future__ import annotations

from typing import Any

from skillgit import patch, prompts, redact, regions, skilldoc, textsafe
from skillgit.loop import stages
from skillgit.loop.context import StepContext
from skillgit.records import EpochStep, UpdateRecord
from skillgit.skilldoc import SLOW_UPDATE_REGION
from skillgit.types import Edit, EditResult, Trajectory, is_failure


def slow_update_step(epoch: int) -> str:
    return f"e{epoch + 1}-slow-update"


def meta_reflect_step(epoch: int) -> str:
    return f"e{epoch + 1}-meta-reflect"


def _pair_kind(before: Trajectory, after: Trajectory) -> str:
    b, a = before.score.hard if before.score else 0.0, after.score.hard if after.score else 0.0
    if a > b:
        return "improved"
    if a < b:
        return "regressed"
    return "persistent_failure" if is_failure(after.score) else "stable_success"


def compare(ctx: StepContext, epoch: int, old_skill: str, new_skill: str) -> list[dict[str, Any]]:
    """Run both skills on `slow_update_samples` train items (seeded by the epoch) and pair the results."""
    items = list(ctx.train)
    ctx.rng("slow", epoch).shuffle(items)
    items = items[: ctx.cfg.optimizer.slow_update_samples]
    ctx.stage(f"e{epoch + 1}", "slow_update")
    with ctx.ledger.timed("slow_update"):
        student = ctx.student_for("slow_update")
        old = stages.rollout(student, old_skill, items, ctx.scorer, workers=ctx.workers, executor=ctx.executor)
        new = stages.rollout(student, new_skill, items, ctx.scorer, workers=ctx.workers, executor=ctx.executor)
    pairs = []
    for b, a in zip(old, new):
        if not (b.ok and a.ok):
            continue
        pairs.append({"id": a.item_id, "kind": _pair_kind(b, a), "input": a.input, "before_output": b.output,
                      "after_output": a.output, "expected": a.expected,
                      "before_score": b.score.hard if b.score else None,
                      "after_score": a.score.hard if a.score else None,
                      "feedback": a.score.feedback if a.score else ""})
    pairs.sort(key=lambda p: prompts.KIND_ORDER.index(p["kind"]))
    return pairs


def counts(pairs: list[dict[str, Any]]) -> dict[str, int]:
    return {k: sum(p["kind"] == k for p in pairs) for k in prompts.KIND_ORDER}


def update_meta_skill(teacher: stages.Teacher, meta_skill: str, pairs: list[dict[str, Any]],
                      accepted: list[EpochStep], rejected: list[EpochStep]) -> tuple[str, str]:
    """(the new meta skill, what happened to it): teacher memory, redacted, never shipped with the skill."""
    obj, error = teacher.ask("meta_skill", {
        "meta_skill": prompts.block_meta_skill(meta_skill),
        "comparison": prompts.block_comparison(pairs),
        "accepted_steps": prompts.block_steps("accepted_steps", [s.to_dict() for s in accepted]),
        "rejected_steps": prompts.block_steps("rejected_steps", [s.to_dict() for s in rejected])})
    if obj is not None and str(obj.get("meta_skill", "")).strip():
        return redact.redact(str(obj["meta_skill"]).strip()), "updated"
    return meta_skill, f"kept: {error or 'empty answer'}"


def slow_update(ctx: StepContext, teacher: stages.Teacher, epoch: int, skill: str,
                pairs: list[dict[str, Any]]) -> tuple[str, UpdateRecord]:
    """The candidate with the teacher's longitudinal guidance written into the protected slow-update region."""
    step = slow_update_step(epoch)
    ctx.stage(step, "slow_update")
    with ctx.ledger.timed("slow_update"):
        obj, error = teacher.ask("slow_update", {"skill": prompts.block_skill(skill),
                                                 "comparison": prompts.block_comparison(pairs)})
    # model text that becomes skill text: redacted, no control characters (as `patch` does for an edit's content)
    guidance = redact.redact(textsafe.clean(str((obj or {}).get("guidance", "")))).strip()
    invalid = None if guidance else (error or "the teacher wrote no guidance")
    new_text = regions.set_region(skill, SLOW_UPDATE_REGION, guidance) if guidance else skill
    edit = Edit("replace", content=guidance, target=skilldoc.open_marker(SLOW_UPDATE_REGION),
                source_type="slow_update", rationale="longitudinal guidance")
    result = EditResult(edit, "applied", "written into the protected slow-update region") if new_text != skill \
        else EditResult(edit, "skipped_invalid", invalid or "unchanged")
    details: dict[str, Any] = {"comparison": counts(pairs),
                               "forced": not ctx.cfg.optimizer.slow_update_gate_with_selection}
    return new_text, UpdateRecord("slow_update", (result,), invalid=invalid,
                                  reasoning=str((obj or {}).get("reasoning", "")), details=details)


def meta_reflect(ctx: StepContext, teacher: stages.Teacher, epoch: int, skill: str, accepted: list[EpochStep],
                 rejected: list[EpochStep]) -> tuple[str, UpdateRecord]:
    """Higher-level edits proposed from the epoch's accepted and rejected directions."""
    step = meta_reflect_step(epoch)
    budget = ctx.cfg.optimizer.min_learning_rate or 1
    ctx.stage(step, "meta_reflect")
    with ctx.ledger.timed("meta_reflect"):
        obj, error = teacher.ask("meta_reflect", {
            "skill": prompts.block_skill(skill), "budget": prompts.block_budget(budget),
            "accepted_steps": prompts.block_steps("accepted_steps", [s.to_dict() for s in accepted]),
            "rejected_steps": prompts.block_steps("rejected_steps", [s.to_dict() for s in rejected])})
    if obj is None:
        return skill, UpdateRecord("meta_reflect", (), invalid=error)
    edits, problems = patch.parse_edits(obj, source_type="meta", max_edits=teacher.max_edits,
                                        max_chars=teacher.max_edit_chars)
    skill_cfg = ctx.cfg.skill
    sel = stages.select(teacher, skill, edits, budget, allow_front_matter=skill_cfg.allow_front_matter_edits,
                        new_files=skill_cfg.new_files)
    new_text, results = stages.update(skill, sel.selected, allow_front_matter=skill_cfg.allow_front_matter_edits,
                                      new_files=skill_cfg.new_files)
    return new_text, UpdateRecord("meta_reflect", tuple([*sel.dropped, *results]),
                                  reasoning=str(obj.get("reasoning", "")), details={"problems": problems})
