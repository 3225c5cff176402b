"""`skillgit train --dry-run`: the planned steps and an upper-bound estimate of model calls and tokens, computed
from the config, the splits and the skill alone — nothing is called, nothing is spent.

Upper bounds, because the real counts depend on how many rollouts fail (reflect minibatches) and how many edits
the analysts propose (merge, rank). The gate's calls are what will be paid: every repeat of a val item asks the
student again (the call journal only saves what a killed run already paid), a student at temperature 0 is scored
once per item, and the incumbent is scored again with each step's candidates (its null control) unless
`evaluation.reuse_incumbent_score` is set. The plan also says what the val split can detect.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping

from skillgit.config import Config
from skillgit.llm import pricing
from skillgit.loop import gate
from skillgit.loop.schedule import is_autonomous, scheduled_budget
from skillgit.tasks import Splits
from skillgit.types import Usage

TEACHER_TEMPLATE_TOKENS = 700  # instructions and block markup of a teacher prompt
TEACHER_ANSWER_TOKENS = 400
STUDENT_ANSWER_TOKENS = 60


def _tokens(chars: float) -> int:
    return int(math.ceil(chars / 4))


def estimate(cfg: Config, splits: Splits, skill: str, env: Mapping[str, str] | None = None,
             root: Path | None = None) -> dict[str, Any]:
    n_train, n_val, n_test = len(splits.train), len(splits.val), len(splits.test)
    bpe = max(1, math.ceil(n_train / cfg.train.batch_size))
    steps = cfg.train.num_epochs * bpe
    if cfg.train.max_steps is not None:
        steps = min(steps, cfg.train.max_steps)
    epochs_done = steps // bpe
    batch = min(cfg.train.batch_size, n_train)
    mb = cfg.gradient.minibatch_size
    ecfg = cfg.evaluation
    repeats, deterministic = gate.planned_repeats(cfg)
    # val scorings per gated candidate: itself, the incumbent again (unless reused) and its copy (control_copy)
    incumbent = (0 if ecfg.reuse_incumbent_score else 1) + (1 if ecfg.control_copy and
                                                            not ecfg.reuse_incumbent_score else 0)
    per_gate = n_val * repeats
    avg_in = sum(len(i.input) for i in splits.train) / max(1, n_train)
    student_prompt = _tokens(len(skill) + avg_in)
    opt = cfg.optimizer

    reflect = math.ceil(batch / mb) + 1
    merge = max(0, reflect - 1)
    calls = {
        "rollout": steps * batch,
        "reflect": steps * reflect,
        "merge": steps * merge,
        "rank": steps if opt.skill_update_mode != "full_rewrite_minibatch" else 0,
        "update": steps if opt.skill_update_mode == "rewrite_from_suggestions" else 0,
        "lr": steps if is_autonomous(opt) else 0,
        "gate": per_gate + steps * per_gate * (opt.proposals + incumbent),
        "slow_update": epochs_done * ((2 * opt.slow_update_samples + 1) if opt.use_slow_update else 0)
        + (epochs_done * per_gate * (1 + incumbent) if opt.use_slow_update and opt.slow_update_gate_with_selection
           else 0),
        "meta_skill": epochs_done if opt.use_meta_skill else 0,
        "meta_reflect": epochs_done * ((1 + per_gate * (1 + incumbent)) if opt.use_meta_reflect else 0),
        "test": 3 * n_test if cfg.evaluation.eval_test else 0,
    }
    mde = gate.min_detectable_effect(ecfg, n_val, repeats, deterministic=deterministic, candidates=opt.proposals)
    detectable, warn = gate.detectable_line(ecfg, n_val, repeats, deterministic=deterministic,
                                            candidates=opt.proposals)
    student_stages = {"rollout", "gate", "test"}
    teacher_prompt = TEACHER_TEMPLATE_TOKENS + _tokens(len(skill) + mb * avg_in * 4)
    tokens = {"prompt": 0, "completion": 0}
    by_role = {"student": Usage(), "teacher": Usage()}
    for stage, n in calls.items():
        role = "student" if stage in student_stages else "teacher"
        prompt, answer = (student_prompt, STUDENT_ANSWER_TOKENS) if role == "student" else \
            (teacher_prompt, TEACHER_ANSWER_TOKENS)
        tokens["prompt"] += n * prompt
        tokens["completion"] += n * answer
        by_role[role] = by_role[role] + Usage(n, n * prompt, n * answer)
    # Dollars at the price each role's backend will bill (the config's `prices`, free for the simulated world and
    # a local server, else the built-in table); None when a model's price is unknown.
    dollars: dict[str, float | None] = {}
    for role, model in (("student", cfg.model.student_model), ("teacher", cfg.model.teacher_model)):
        backend = cfg.model.student_backend if role == "student" else cfg.model.teacher_backend
        price = pricing.planned_price(backend, model, getattr(cfg.model, role), cfg.prices,
                                      os.environ if env is None else env)
        dollars[role] = round(pricing.cost_at(price, by_role[role]), 4) if price is not None else None
    # The plan shows the first budgets only: a plan must never cost time proportional to the steps it plans
    # (`num_epochs: 1e9` once made `--dry-run` hang).
    budgets = [scheduled_budget(opt, i, steps) for i in range(min(steps, 12))]
    lines = [
        f"plan: {cfg.train.num_epochs} epoch(s) × {bpe} batch(es) of ≤{cfg.train.batch_size} → {steps} step(s)"
        + (f" (capped by train.max_steps={cfg.train.max_steps})" if cfg.train.max_steps is not None else ""),
        f"splits: train {n_train}, val {n_val}, test {n_test} (test is reported, never used for a decision)",
        f"edit budget ({opt.lr_scheduler}{', teacher-chosen' if is_autonomous(opt) else ''}): "
        + (", ".join(map(str, budgets)) + (" …" if steps > len(budgets) else "") if budgets else "-"),
        f"student: {cfg.model.student_backend}:{cfg.model.student_model}   "
        f"teacher: {cfg.model.teacher_backend}:{cfg.model.teacher_model}",
        "estimated model calls (upper bound; what will be paid, a resumed run excepted):",
        *(f"  {stage:<13}{n:>8}" for stage, n in calls.items() if n),
        f"  {'total':<13}{sum(calls.values()):>8}",
        f"gate: {n_val} val item(s) × " + ("1 sample (temperature 0: repeats would be copies)" if deterministic
                                           else f"{repeats} repeat(s)")
        + (f"; the incumbent is scored again with each step's candidates ({steps * per_gate * incumbent} of the "
           f"gate's calls; evaluation.reuse_incumbent_score: true skips it and risks reading provider drift as gain)"
           if incumbent else "; the incumbent's earlier score is reused (evaluation.reuse_incumbent_score: "
                             "provider drift can read as gain)"),
        ("warning: " if warn else "") + detectable,
        f"estimated tokens: ~{tokens['prompt']:,} prompt + ~{tokens['completion']:,} completion",
        "estimated cost (upper bound): " + ", ".join(
            f"{role} " + (f"${usd:,.2f}" if usd is not None else "unknown price (set `prices:` in skillgit.yaml)")
            for role, usd in dollars.items())
        + (f"; total ${sum(v for v in dollars.values() if v is not None):,.2f}" if any(dollars.values()) else ""),
    ]
    if cfg.model.teacher_backend == "handoff":
        from skillgit.llm.handoff import plan as handoff_plan

        lines.append(handoff_plan(cfg, root))
    b = cfg.budget
    limits = [f"{k}={v}" for k, v in (("max_calls", b.max_calls), ("max_tokens", b.max_tokens),
                                      ("max_cost_usd", b.max_cost_usd)) if v is not None]
    if limits:
        lines.append("budget limits: " + ", ".join(limits)
                     + " (the run stops before the call that would cross one; a larger budget resumes it)")
    return {"steps": steps, "batches_per_epoch": bpe, "budgets": budgets, "calls": calls,
            "val_repeats": repeats,
            "min_detectable_effect": round(mde, 4) if mde is not None else None, "detectable": detectable,
            "total_calls": sum(calls.values()), "tokens": tokens, "cost_usd": dollars, "text": "\n".join(lines)}
