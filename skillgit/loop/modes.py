"""From scored trajectories to a candidate skill text, in each `optimizer.skill_update_mode`:

- `patch`: reflect (structured edits per minibatch) → aggregate → select (budget) → update (apply).
- `rewrite_from_suggestions`: the same edits are suggestions; one teacher call rewrites the whole skill with them.
- `full_rewrite_minibatch`: each analyst writes a whole skill from its minibatch; a `pick` call chooses one.
With `model.teacher_backend: agent` a coding agent edits a copy of the package instead, whatever the mode
(`loop.agent_step`, with skillgit/teacher); its edits are selected and applied as in `patch`.

Rewrites must keep front matter and protected regions intact: what a rewrite merely dropped is restored, what
it changed makes the candidate invalid (rejected with that reason, never applied). Also the autonomous edit
budget (`lr` stage).
"""

from __future__ import annotations

import json
import random
from typing import Any

from skillgit import patch, prompts
from skillgit.config import OptimizerCfg
from skillgit.loop import deep_reflect, stages
from skillgit.loop.context import StepContext
from skillgit.records import UpdateRecord
from skillgit.types import Edit, EditResult, Trajectory, is_failure
from skillgit.unwrap import unframe_rewrite


def choose_budget(teacher: stages.Teacher, skill: str, trajs: list[Trajectory], cfg: OptimizerCfg,
                  scheduled: int) -> tuple[int, dict[str, Any]]:
    """Autonomous learning rate: the teacher picks the number of edits within [min_learning_rate,
    learning_rate], seeing the batch statistics; its reasoning is recorded. Falls back to the schedule."""
    lo, hi = min(cfg.min_learning_rate, cfg.learning_rate), cfg.learning_rate
    usable = [t.score for t in trajs if t.ok and t.score is not None]  # `ok` means scored
    stats = {"batch": len(trajs), "scored": len(usable),
             "failures": sum(is_failure(s) for s in usable),
             "hard_mean": round(sum(s.hard for s in usable) / len(usable), 4) if usable else None,
             "min_edits": lo, "max_edits": hi}
    obj, error = teacher.ask("lr", {"skill": prompts.block_skill(skill), "stats": prompts.block_stats(stats),
                                    "bounds": prompts.block_bounds(lo, hi)})
    if obj is None:
        return scheduled, {"mode": "autonomous", "fallback": True, "reason": error, "budget": scheduled}
    try:
        chosen = int(obj["num_edits"])
    except (KeyError, TypeError, ValueError):
        return scheduled, {"mode": "autonomous", "fallback": True, "reason": "num_edits is not a number",
                           "budget": scheduled}
    budget = max(lo, min(hi, chosen))
    return budget, {"mode": "autonomous", "asked": chosen, "budget": budget,
                    "reasoning": str(obj.get("reasoning", ""))}


def propose_update(ctx: StepContext, teacher: stages.Teacher, skill: str, trajs: list[Trajectory],
                   budget: int, step: int, variant: int = 0) -> tuple[str, UpdateRecord]:
    """The candidate text and how it was built (patches, merge rounds, selection, every edit's fate).
    `record.invalid` is set when the candidate must be rejected without scoring. `variant` k > 0 is the step's
    (k+1)-th parallel proposal (`optimizer.proposals`): the same trajectories cut into other minibatches (its own
    seeded shuffle), so its analysts see other company and propose other edits; variant 0 is the single proposal.
    The teacher backend's own proposer builds it (`proposer_table.configured`): `reflect_update` below, or for
    an agent teacher `loop.agent_step.propose`; `loop/proposing.py` picks among `optimizer.proposers`."""
    if ctx.cfg.model.teacher_backend == "agent":  # a coding agent edits the package: loop/agent_step.py
        from skillgit.loop.agent_step import propose

        return propose(ctx, teacher, skill, trajs, budget, step, variant)
    return reflect_update(ctx, teacher, skill, trajs, budget, step, variant)


def reflect_update(ctx: StepContext, teacher: stages.Teacher, skill: str, trajs: list[Trajectory],
                   budget: int, step: int, variant: int = 0) -> tuple[str, UpdateRecord]:
    """The `reflect` proposer: `optimizer.skill_update_mode`'s procedure with the chat teacher (the module
    docstring), whatever the teacher backend."""
    cfg = ctx.cfg
    mode = cfg.optimizer.skill_update_mode
    rng = ctx.rng("step", step) if variant == 0 else ctx.rng("step", step, "proposal", variant)
    allow_fm = cfg.skill.allow_front_matter_edits
    if mode == "full_rewrite_minibatch":
        return _full_rewrite(ctx, teacher, skill, trajs, rng, step)

    ctx.stage(step, "reflect")
    with ctx.ledger.timed("reflect"):
        probe = deep_reflect.prober(ctx, teacher, skill)  # None unless optimizer.deep_reflect.enabled
        patches = stages.reflect(teacher, skill, trajs, minibatch_size=cfg.gradient.minibatch_size, budget=budget,
                                 rng=rng, probe=probe)
    stages.check_teacher_alive(step, [p.error for p in patches])
    ctx.stage(step, "aggregate")
    with ctx.ledger.timed("aggregate"):
        agg = stages.aggregate(teacher, skill, patches, merge_batch_size=cfg.gradient.merge_batch_size)
    ctx.stage(step, "select")
    with ctx.ledger.timed("select"):
        # patch mode applies the edits as they are: the budget goes to edits that apply (a rewrite reads them
        # as suggestions, so an anchor that misses still says something there)
        sel = stages.select(teacher, skill, agg.edits, budget, allow_front_matter=allow_fm,
                            new_files=cfg.skill.new_files, dry_apply=mode == "patch")
    details: dict[str, Any] = {"budget": budget, "patches": [p.to_dict() for p in patches], "merge": agg.rounds,
                               "aggregated": [e.to_dict() for e in agg.edits], "select": sel.record}
    ctx.stage(step, "update")
    if mode == "patch":
        with ctx.ledger.timed("update"):
            new_text, results = stages.update(skill, sel.selected, allow_front_matter=allow_fm,
                                              new_files=cfg.skill.new_files)
        return new_text, UpdateRecord(mode, tuple([*sel.dropped, *results]), details=details)

    # rewrite_from_suggestions
    with ctx.ledger.timed("update"):
        obj, error = teacher.ask("rewrite", {"skill": prompts.block_skill(skill),
                                             "edits": prompts.block_edits(sel.selected)})
    text, problem, stripped = checked_rewrite(skill, obj, error, allow_fm)
    status = "applied" if problem is None else "error"
    reason = ("folded into the rewrite" + (f" (its {stripped})" if stripped else "")) if problem is None else problem
    apply = tuple([*sel.dropped, *(EditResult(e, status, reason) for e in sel.selected)])
    if problem is not None:
        return skill, UpdateRecord(mode, apply, invalid=problem, details=details)
    return text, UpdateRecord(mode, apply, reasoning=str((obj or {}).get("reasoning", "")), details=details)


def checked_rewrite(before: str, obj: dict | None, error: str | None, allow_fm: bool) -> tuple[str, str | None, str]:
    """(the rewritten skill, None, note) or (before, why it is unusable, ""). What a rewrite merely dropped of
    the protected parts is put back; a change to them makes it unusable. The note says what `unframe_rewrite`
    stripped."""
    if obj is None:
        return before, error or "no rewrite", ""
    after, stripped = unframe_rewrite(str(obj.get("skill", "")))
    if not after.strip():
        return before, "the rewrite is empty", ""
    if not after.endswith("\n"):
        after += "\n"
    problems = patch.check_invariants(before, after, allow_front_matter=allow_fm)
    if problems:
        restored = patch.restore_protected(before, after)
        if restored is not None and not patch.check_invariants(before, restored, allow_front_matter=allow_fm):
            return restored, None, stripped
        return before, "rewrite broke a protected part: " + "; ".join(problems), ""
    return after, None, stripped


def _full_rewrite(ctx: StepContext, teacher: stages.Teacher, skill: str, trajs: list[Trajectory],
                  rng: random.Random, step: int) -> tuple[str, UpdateRecord]:
    cfg = ctx.cfg
    allow_fm = cfg.skill.allow_front_matter_edits
    mode = "full_rewrite_minibatch"
    ctx.stage(step, "reflect")
    batches = stages.minibatches(trajs, cfg.gradient.minibatch_size, rng)

    def one(batch: tuple[str, list[Trajectory]]) -> dict[str, Any]:
        outcome, group = batch
        recalled = teacher.recall(group, outcome) if teacher.recall is not None else None  # loop/recall.py
        obj, error = teacher.ask("full_rewrite", {"skill": prompts.block_skill(skill), "outcome": outcome,
                                                  "trajectories": prompts.block_trajectories(group, outcome)
                                                  + (recalled.block if recalled else "")})
        text, problem, stripped = checked_rewrite(skill, obj, error, allow_fm)
        return {"outcome": outcome, "item_ids": [t.item_id for t in group], "error": problem,
                "reasoning": str((obj or {}).get("reasoning", "")), "text": text if problem is None else None,
                **({"stripped": stripped} if stripped else {}),
                **({"recalled": list(recalled.labels)} if recalled else {})}

    with ctx.ledger.timed("reflect"):
        drafts = teacher.map(one, batches)
    stages.check_teacher_alive(step, [d["error"] for d in drafts])
    valid = {f"c{i}": d["text"] for i, d in enumerate(drafts, 1) if d["text"] is not None and d["text"] != skill}
    details: dict[str, Any] = {"drafts": [{k: v for k, v in d.items() if k != "text"} for d in drafts]}
    if not valid:
        return skill, UpdateRecord(mode, (), invalid="no analyst produced a valid rewrite", details=details)
    choice = next(iter(valid))
    if len(valid) > 1:
        ctx.stage(step, "aggregate")
        with ctx.ledger.timed("aggregate"):
            obj, error = teacher.ask("pick", {"skill": prompts.block_skill(skill),
                                              "candidates": prompts.block_candidates(valid)})
        picked = str((obj or {}).get("choice", ""))
        pick: dict[str, Any] = {"choice": picked, "reasoning": str((obj or {}).get("reasoning", "")), "error": error}
        if picked in valid:
            choice = picked
        else:
            pick["fallback"] = f"kept {choice}: the answer named no valid candidate"
        details["pick"] = pick
    details["chosen"] = choice
    diff = patch.unified_diff(skill, valid[choice])
    edit = Edit(op="replace", target="(whole skill)", content=f"rewrite {choice}",
                rationale=json.dumps(patch.diff_stats(diff)), source_type="rewrite")
    return valid[choice], UpdateRecord(mode, (EditResult(edit, "applied", "whole-skill rewrite"),), details=details)
