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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from skillgit import proposer_table
from skillgit.config import Config
from skillgit.llm import pricing
from skillgit.loop import gate
from skillgit.loop.agent_step import MAX_TRIES
from skillgit.loop.schedule import is_autonomous, scheduled_budget
from skillgit.tasks import Splits
from skillgit.types import Usage

TEACHER_TEMPLATE_TOKENS = 700  # instructions and block markup of a teacher prompt
TEACHER_ANSWER_TOKENS = 400
STUDENT_ANSWER_TOKENS = 60
AGENT_TURNS = 30  # an agent teacher call's turns when model.teacher.command.max_turns does not bound them


def _tokens(chars: float) -> int:
    return int(math.ceil(chars / 4))


@dataclass(frozen=True)
class _Shape:
    """The run's size as the plan counts it."""

    n_train: int
    n_val: int
    n_test: int
    bpe: int  # batches per epoch
    steps: int
    epochs_done: int
    batch: int
    repeats: int
    deterministic: bool
    incumbent: int  # val scorings of the incumbent per gated candidate (0 when its earlier score is reused)

    @property
    def per_gate(self) -> int:
        return self.n_val * self.repeats


def _shape(cfg: Config, splits: Splits) -> _Shape:
    n_train = len(splits.train)
    bpe = max(1, math.ceil(n_train / cfg.train.batch_size))
    steps = cfg.train.num_epochs * bpe
    if cfg.train.max_steps is not None:
        steps = min(steps, cfg.train.max_steps)
    ecfg = cfg.evaluation
    repeats, deterministic = gate.planned_repeats(cfg)
    # val scorings per gated candidate: itself, the incumbent again (unless reused) and its copy (control_copy)
    incumbent = 0 if ecfg.reuse_incumbent_score else 1 + (1 if ecfg.control_copy else 0)
    return _Shape(n_train, len(splits.val), len(splits.test), bpe, steps, steps // bpe,
                  min(cfg.train.batch_size, n_train), repeats, deterministic, incumbent)


def _calls(cfg: Config, sh: _Shape, field: int, agent: AgentPlan) -> dict[str, int]:
    """Model calls per stage (upper bounds); `field`: the candidates a step gates (every proposer's)."""
    opt, steps, epochs, per_gate = cfg.optimizer, sh.steps, sh.epochs_done, sh.per_gate
    by = _proposals_by_proposer(cfg)  # each proposer's candidates per step (an upper bound with a schedule)
    reflect = math.ceil(sh.batch / cfg.gradient.minibatch_size) + 1
    slow_gate = per_gate * (1 + sh.incumbent) if opt.slow_update_gate_with_selection else 0
    return {
        "rollout": steps * sh.batch,
        "reflect": steps * reflect * by["reflect"],
        "merge": steps * max(0, reflect - 1) * by["reflect"],
        "rank": steps * (by["reflect"] * (opt.skill_update_mode != "full_rewrite_minibatch") + by["agent"]),
        "update": steps * by["reflect"] if opt.skill_update_mode == "rewrite_from_suggestions" else 0,
        "lr": steps if is_autonomous(opt) else 0,
        "agent": agent.calls,
        "try": agent.calls * MAX_TRIES,  # skillgit-try: student runs on train items, at most MAX_TRIES a step
        "gate": per_gate + steps * per_gate * (field + sh.incumbent),
        "slow_update": epochs * (2 * opt.slow_update_samples + 1 + slow_gate) if opt.use_slow_update else 0,
        "meta_skill": epochs if opt.use_meta_skill else 0,
        "meta_reflect": epochs * (1 + per_gate * (1 + sh.incumbent)) if opt.use_meta_reflect else 0,
        "test": 3 * sh.n_test if cfg.evaluation.eval_test else 0,
        **_probe_calls(cfg, sh, reflect * by["reflect"]),
    }


def _probe_calls(cfg: Config, sh: _Shape, minibatches: int) -> dict[str, int]:
    """Deep reflect (loop/deep_reflect.py): per reflect minibatch and turn one teacher call and one student run per
    probed trajectory (at most `failures`/`successes` of a minibatch, at most the batch)."""
    dr = cfg.optimizer.deep_reflect
    if not dr.enabled:
        return {}
    probed = min(sh.batch * cfg.optimizer.proposals, minibatches * max(dr.failures, dr.successes))
    return {"probe": sh.steps * minibatches * dr.turns, "probe_student": sh.steps * probed * dr.turns}


def _usage(cfg: Config, splits: Splits, skill: str, calls: dict[str, int], agent: AgentPlan) -> dict[str, Usage]:
    """Estimated usage per role: each stage's calls at its role's prompt and answer size (an agent call's every
    turn reads its context again)."""
    avg_in = sum(len(i.input) for i in splits.train) / max(1, len(splits.train))
    sizes = {"student": (_tokens(len(skill) + avg_in), STUDENT_ANSWER_TOKENS),
             "teacher": (TEACHER_TEMPLATE_TOKENS + _tokens(len(skill) + cfg.gradient.minibatch_size * avg_in * 4),
                         TEACHER_ANSWER_TOKENS)}
    by_role = {"student": Usage(), "teacher": Usage()}
    for stage, n in calls.items():
        role = "student" if stage in ("rollout", "gate", "test", "try", "probe_student") else "teacher"
        prompt, answer = sizes[role]
        if stage == "agent":
            prompt, answer = prompt * agent.turns_each, answer * agent.turns_each
        by_role[role] = by_role[role] + Usage(n, n * prompt, n * answer)
    return by_role


def _dollars(cfg: Config, by_role: dict[str, Usage], env: Mapping[str, str]) -> dict[str, float | None]:
    """Dollars at the price each role's backend will bill (the config's `prices`, free for the simulated world and
    a local server, else the built-in table); None when a model's price is unknown."""
    dollars: dict[str, float | None] = {}
    for role, model in (("student", cfg.model.student_model), ("teacher", cfg.model.teacher_model)):
        backend = cfg.model.student_backend if role == "student" else cfg.model.teacher_backend
        price = pricing.planned_price(backend, model, getattr(cfg.model, role), cfg.prices, env)
        dollars[role] = round(pricing.cost_at(price, by_role[role]), 4) if price is not None else None
    return dollars


def _gate_line(sh: _Shape) -> str:
    samples = "1 sample (temperature 0: repeats would be copies)" if sh.deterministic else f"{sh.repeats} repeat(s)"
    if sh.incumbent:
        reuse = (f"; the incumbent is scored again with each step's candidates ({sh.steps * sh.per_gate * sh.incumbent}"
                 " of the gate's calls; evaluation.reuse_incumbent_score: true skips it and risks reading provider "
                 "drift as gain)")
    else:
        reuse = ("; the incumbent's earlier score is reused (evaluation.reuse_incumbent_score: provider drift can "
                 "read as gain)")
    return f"gate: {sh.n_val} val item(s) × {samples}{reuse}"


def _cost_line(dollars: dict[str, float | None]) -> str:
    unknown = "unknown price (set `prices:` in skillgit.yaml)"
    parts = ", ".join(f"{role} " + (f"${usd:,.2f}" if usd is not None else unknown) for role, usd in dollars.items())
    total = f"; total ${sum(v for v in dollars.values() if v is not None):,.2f}" if any(dollars.values()) else ""
    return "estimated cost (upper bound): " + parts + total


def _handoff_line(cfg: Config, root: Path | None) -> list[str]:
    if cfg.model.teacher_backend != "handoff":
        return []
    from skillgit.llm.handoff import plan as handoff_plan

    return [handoff_plan(cfg, root)]


def _budget_line(cfg: Config) -> list[str]:
    b = cfg.budget
    limits = [f"{k}={v}" for k, v in (("max_calls", b.max_calls), ("max_tokens", b.max_tokens),
                                      ("max_cost_usd", b.max_cost_usd), ("max_agent_turns", b.max_agent_turns),
                                      ("max_agent_seconds", b.max_agent_seconds)) if v is not None]
    if not limits:
        return []
    return ["budget limits: " + ", ".join(limits)
            + " (the run stops before the call that would cross one; a larger budget resumes it)"]


def estimate(cfg: Config, splits: Splits, skill: str, env: Mapping[str, str] | None = None,
             root: Path | None = None) -> dict[str, Any]:
    sh = _shape(cfg, splits)
    opt, steps = cfg.optimizer, sh.steps
    field = proposer_table.field_size(opt.proposers, cfg.model.teacher_backend, opt.proposals)
    agent = AgentPlan.of(cfg, steps * _proposals_by_proposer(cfg)["agent"])
    calls = _calls(cfg, sh, field, agent)
    mde = gate.min_detectable_effect(cfg.evaluation, sh.n_val, sh.repeats, deterministic=sh.deterministic,
                                     candidates=field)
    detectable, warn = gate.detectable_line(cfg.evaluation, sh.n_val, sh.repeats, deterministic=sh.deterministic,
                                            candidates=field)
    by_role = _usage(cfg, splits, skill, calls, agent)
    tokens = {"prompt": sum(u.prompt_tokens for u in by_role.values()),
              "completion": sum(u.completion_tokens for u in by_role.values())}
    dollars = _dollars(cfg, by_role, os.environ if env is None else env)
    # The plan shows the first budgets only: a plan must never cost time proportional to the steps it plans
    # (`num_epochs: 1e9` once made `--dry-run` hang).
    budgets = [scheduled_budget(opt, i, steps) for i in range(min(steps, 12))]
    capped = f" (capped by train.max_steps={cfg.train.max_steps})" if cfg.train.max_steps is not None else ""
    shown = ", ".join(map(str, budgets)) + (" …" if steps > len(budgets) else "") if budgets else "-"
    lines = [
        f"plan: {cfg.train.num_epochs} epoch(s) × {sh.bpe} batch(es) of ≤{cfg.train.batch_size} → {steps} step(s)"
        + capped,
        f"splits: train {sh.n_train}, val {sh.n_val}, test {sh.n_test} (test is reported, never used for a decision)",
        f"edit budget ({opt.lr_scheduler}{', teacher-chosen' if is_autonomous(opt) else ''}): " + shown,
        f"student: {cfg.model.student_backend}:{cfg.model.student_model}   "
        f"teacher: {cfg.model.teacher_backend}:{cfg.model.teacher_model}",
        "estimated model calls (upper bound; what will be paid, a resumed run excepted):",
        *(f"  {stage:<13}{n:>8}" for stage, n in calls.items() if n),
        f"  {'total':<13}{sum(calls.values()):>8}",
        _gate_line(sh),
        ("warning: " if warn else "") + detectable,
        f"estimated tokens: ~{tokens['prompt']:,} prompt + ~{tokens['completion']:,} completion",
        _cost_line(dollars),
        *agent.lines(),
        *_handoff_line(cfg, root),
        *_budget_line(cfg),
    ]
    return {"steps": steps, "batches_per_epoch": sh.bpe, "budgets": budgets, "calls": calls,
            "val_repeats": sh.repeats,
            "min_detectable_effect": round(mde, 4) if mde is not None else None, "detectable": detectable,
            "total_calls": sum(calls.values()), "tokens": tokens, "cost_usd": dollars, "agent": agent.to_dict(),
            "text": "\n".join(lines)}


def _proposals_by_proposer(cfg: Config) -> dict[str, int]:
    """Candidates per step by proposer: `optimizer.proposals` for each configured one and the schedule's."""
    opt = cfg.optimizer
    names = set(proposer_table.configured(opt.proposers, cfg.model.teacher_backend))
    names |= {opt.proposer_schedule.switch_to} - {""}
    return {name: opt.proposals if name in names else 0 for name in proposer_table.names()}


@dataclass(frozen=True)
class AgentPlan:
    """The agent teacher's step calls of a plan, with their turns and wall time: at most `command.max_turns` turns
    (else an assumed AGENT_TURNS a call, said so) and `command.timeout_s` seconds a call, within the budget's caps."""

    calls: int
    turns_each: int
    turns_assumed: bool
    seconds_each: float
    max_turns: int | None  # budget.max_agent_turns
    max_seconds: float | None  # budget.max_agent_seconds

    @classmethod
    def of(cls, cfg: Config, calls: int) -> AgentPlan:
        command = cfg.model.teacher.command
        return cls(calls, command.max_turns or AGENT_TURNS, command.max_turns is None, command.timeout_s,
                   cfg.budget.max_agent_turns, cfg.budget.max_agent_seconds)

    @property
    def turns(self) -> int:
        total = self.calls * self.turns_each
        return min(total, self.max_turns) if self.max_turns is not None else total

    @property
    def seconds(self) -> float:
        total = self.calls * self.seconds_each
        return min(total, self.max_seconds) if self.max_seconds is not None else total

    def lines(self) -> list[str]:
        if not self.calls:
            return []
        turns = f"{self.turns:,} turns" + (f" (assuming {AGENT_TURNS} a call: set model.teacher.command.max_turns "
                                           "to bound it)" if self.turns_assumed else " (command.max_turns a call)")
        capped = [f"budget.max_agent_{k} caps it" for k, v in (("turns", self.max_turns),
                                                                ("seconds", self.max_seconds)) if v is not None]
        return [f"agent teacher: {self.calls} step call(s), at most {turns} and {_duration(self.seconds)} of wall "
                f"time (command.timeout_s {self.seconds_each:g} s a call)" + (f"; {', '.join(capped)}" if capped
                                                                            else "")]

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "turns": self.turns, "turns_assumed": self.turns_assumed,
                "seconds": round(self.seconds, 1)}


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min" if seconds >= 60 \
        else f"{seconds:.0f} s"
