"""What happens at an epoch's end: the slow update, the meta skill and meta reflect.

- **slow update**: the previous epoch's final skill and the current one run on sampled train items; the pairs
  (regressions first, then persistent failures, improvements, stable successes) go to the teacher, which
  writes longitudinal guidance into the protected `<!-- skillgit:slow-update -->` region. The candidate goes
  through the gate unless `optimizer.slow_update_gate_with_selection=false`, in which case it is forced and the
  note says so.
- **meta skill**: teacher-side memory distilled from the same comparison and the epoch's accepted/rejected
  steps; stored with the run (`meta_skill.md` on the run ref), fed to later teacher prompts, never shipped.
- **meta reflect**: higher-level edits from the epoch's accepted and rejected directions, through the gate.

Epoch-end candidates are named `e<epoch>-slow-update` and `e<epoch>-meta-reflect` in refs and trailers.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from skillgit import patch, prompts, redact
from skillgit.loop import gate as gate_mod
from skillgit.loop import stages
from skillgit.types import Edit, Trajectory

if TYPE_CHECKING:
    from skillgit.loop.run import Trainer

REGION = "slow-update"


def _pair_kind(before: Trajectory, after: Trajectory) -> str:
    b, a = before.score.hard, after.score.hard
    if a > b:
        return "improved"
    if a < b:
        return "regressed"
    return "persistent_failure" if a < 1.0 else "stable_success"


ORDER = {"regressed": 0, "persistent_failure": 1, "improved": 2, "stable_success": 3}


def compare(trainer: "Trainer", epoch: int, old_skill: str, new_skill: str) -> list[dict[str, Any]]:
    """Run both skills on `slow_update_samples` train items (seeded) and pair the results."""
    cfg = trainer.cfg
    rng = random.Random(f"{cfg.train.seed}:slow:{epoch}")
    items = list(trainer.splits.train)
    rng.shuffle(items)
    items = items[: cfg.optimizer.slow_update_samples]
    trainer._stage(f"e{epoch + 1}", "slow_update")
    with trainer.ledger.timed("slow_update"):
        old = stages.rollout(trainer.student, old_skill, items, trainer.scorer, workers=cfg.env.workers)
        new = stages.rollout(trainer.student, new_skill, items, trainer.scorer, workers=cfg.env.workers)
    pairs = []
    for b, a in zip(old, new):
        if not (b.ok and a.ok):
            continue
        pairs.append({"id": a.item_id, "kind": _pair_kind(b, a), "input": a.input, "before_output": b.output,
                      "after_output": a.output, "expected": a.expected, "before_score": b.score.hard,
                      "after_score": a.score.hard, "feedback": a.score.feedback})
    pairs.sort(key=lambda p: ORDER[p["kind"]])
    return pairs


def _steps(trainer: "Trainer", epoch: int, verdict: str) -> list[dict[str, Any]]:
    return [s for s in trainer.state["epochs"].get(str(epoch), {}).get("steps", []) if s["verdict"] == verdict]


def end_epoch(trainer: "Trainer", epoch: int, current: gate_mod.SplitScore) -> gate_mod.SplitScore:
    opt = trainer.cfg.optimizer
    if not (opt.use_slow_update or opt.use_meta_skill or opt.use_meta_reflect):
        return current
    trainer.emit_event("epoch_end", {"epoch": epoch + 1})
    info = trainer.state["epochs"].setdefault(str(epoch), {"steps": []})
    old_rev = trainer.state["epochs"].get(str(epoch - 1), {}).get("end_rev") or trainer.state["seed_rev"]
    old_skill = trainer.store.read_skill(old_rev)
    skill = trainer.store.read_skill()
    pairs = compare(trainer, epoch, old_skill, skill) if (opt.use_slow_update or opt.use_meta_skill) else []
    info["comparison"] = {k: sum(p["kind"] == k for p in pairs) for k in ORDER}
    accepted, rejected = _steps(trainer, epoch, "accepted"), _steps(trainer, epoch, "rejected")

    if opt.use_meta_skill:
        teacher = trainer.teacher()
        obj, error = teacher.ask("meta_skill", {
            "meta_skill": prompts.block_meta_skill(trainer.state.get("meta_skill", "")),
            "comparison": prompts.block_comparison(pairs),
            "accepted_steps": prompts.block_steps("accepted_steps", accepted),
            "rejected_steps": prompts.block_steps("rejected_steps", rejected)})
        if obj is not None and str(obj.get("meta_skill", "")).strip():
            trainer.state["meta_skill"] = redact.redact(str(obj["meta_skill"]).strip())
            info["meta_skill"] = "updated"
        else:
            info["meta_skill"] = f"kept: {error or 'empty answer'}"

    if opt.use_slow_update and pairs:
        current = _slow_update(trainer, epoch, pairs, current)

    if opt.use_meta_reflect and (accepted or rejected):
        current = _meta_reflect(trainer, epoch, accepted, rejected, current)
    info["end_rev"] = trainer.store.tip()
    return current


def _slow_update(trainer: "Trainer", epoch: int, pairs: list[dict], current: gate_mod.SplitScore) -> gate_mod.SplitScore:
    step = f"e{epoch + 1}-slow-update"
    if trainer.already_decided(step, epoch):
        return trainer.evaluator.score(trainer.store.read_skill(), "val")
    before = trainer.ledger.snapshot()
    skill = trainer.store.read_skill()
    teacher = trainer.teacher()
    trainer._stage(step, "slow_update")
    with trainer.ledger.timed("slow_update"):
        obj, error = teacher.ask("slow_update", {"skill": prompts.block_skill(skill),
                                                 "comparison": prompts.block_comparison(pairs)})
    guidance = str((obj or {}).get("guidance", "")).strip()
    record: dict[str, Any] = {"mode": "slow_update", "reasoning": str((obj or {}).get("reasoning", "")),
                              "comparison": {k: sum(p["kind"] == k for p in pairs) for k in ORDER}}
    forced = not trainer.cfg.optimizer.slow_update_gate_with_selection
    record["forced"] = forced
    if not guidance:
        record["invalid"] = error or "the teacher wrote no guidance"
        new_text = skill
    else:
        new_text = patch.set_region(skill, REGION, guidance)
    edit = Edit("replace", content=guidance, target=f"<!-- skillgit:{REGION} -->", source_type="slow_update",
                rationale="longitudinal guidance")
    record["apply"] = [{"edit": edit.to_dict(), "status": "applied" if new_text != skill else "skipped_invalid",
                        "reason": "written into the protected slow-update region" if new_text != skill
                        else record.get("invalid", "unchanged")}]
    return trainer._gate_and_decide(step, epoch, skill, new_text, record, before, current, kind="slow_update",
                                    force=forced)


def _meta_reflect(trainer: "Trainer", epoch: int, accepted: list, rejected: list,
                  current: gate_mod.SplitScore) -> gate_mod.SplitScore:
    step = f"e{epoch + 1}-meta-reflect"
    if trainer.already_decided(step, epoch):
        return trainer.evaluator.score(trainer.store.read_skill(), "val")
    before = trainer.ledger.snapshot()
    skill = trainer.store.read_skill()
    teacher = trainer.teacher()
    budget = trainer.cfg.optimizer.min_learning_rate or 1
    trainer._stage(step, "meta_reflect")
    with trainer.ledger.timed("meta_reflect"):
        obj, error = teacher.ask("meta_reflect", {
            "skill": prompts.block_skill(skill), "budget": prompts.block_budget(budget),
            "accepted_steps": prompts.block_steps("accepted_steps", accepted),
            "rejected_steps": prompts.block_steps("rejected_steps", rejected)})
    record: dict[str, Any] = {"mode": "meta_reflect", "reasoning": str((obj or {}).get("reasoning", ""))}
    if obj is None:
        record["invalid"] = error
        record["apply"] = []
        return trainer._gate_and_decide(step, epoch, skill, skill, record, before, current, kind="meta_reflect")
    edits, problems = patch.parse_edits(obj, source_type="meta")
    record["problems"] = problems
    sel = stages.select(teacher, skill, edits, budget)
    new_text, results = stages.update(skill, sel.selected, allow_front_matter=trainer.cfg.skill.allow_front_matter_edits)
    record["apply"] = [r.to_dict() for r in [*sel.dropped, *results]]
    return trainer._gate_and_decide(step, epoch, skill, new_text, record, before, current, kind="meta_reflect")
