"""`skillgit train --skill NAME --activation` (one skill) and `train --all --activation` (every skill, round-robin):
the activation track over the configured library.

The library is every skill of `skills:` (all on one branch: one commit per step); the trigger cases are the union
of their `triggers` files (each skill's cases are the interference check for the others). The router and the
teacher follow the configured backends and never pick the simulated world silently: a simulated student routes
with the overlap router (seeded by `train.seed`), a simulated teacher is the simulated description teacher, a
real teacher backend writes descriptions through the model (journaled: a resumed run does not pay twice). A real
agent as router is not wired to configuration yet: that refuses with a clear error (use
`skillgit.library.agent.AgentRunner` from Python).

`run_activation_all` trains every skill that has held-out (val) trigger cases of its own, round-robin: round k
takes step k of each skill still learning, in `skills:` order, so each step is judged — own gate, interference
with every other skill, listing budget — against the library as the earlier turns left it. A skill whose teacher
has nothing more to try (no train case it misses or fires on wrongly) is done; one without val cases is skipped
with that reason. Each skill's steps are its own run `<run>.<name>` (commits, `rejected/<run>.<name>/…` tags,
gate and activation notes). One budget: `budget.max_calls` / `max_tokens` / `max_cost_usd` bound the teacher's
calls over all skills (the simulated teacher and router cost nothing); the call that would cross it is not made
and the run stops with that reason. Like `--activation` for one skill it does not resume: a new run starts from
the library as committed, and each skill's negative buffer (its rejected descriptions) carries over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from skillgit.config import Config
from skillgit.errors import BudgetReached, ConfigError
from skillgit.library import config as lib_config
from skillgit.library.model import TriggerCase, load_cases
from skillgit.library.track import DescriptionTeacher, StepRecord, TrackCfg, TrackRun, train
from skillgit.loop.ledger import Ledger, budget_spent
from skillgit.store.core import Store
from skillgit.types import Usage


@dataclass
class Setup:
    stores: dict[str, Store]
    cases: list[TriggerCase]
    router: Any
    teacher: DescriptionTeacher
    track: TrackCfg
    meter: Ledger


def _meter(budget: Any) -> Ledger:
    """The teacher's usage over the run: a run's ledger (a `llm.metering.UsageSink`) whose admission stops the call
    that would cross the configured budget, the calls in flight counted (`loop.ledger`'s contract)."""
    ledger = Ledger()

    def check() -> str | None:
        reason = budget_spent(budget, ledger.total(), ledger.in_flight)
        return f"{reason}: the teacher's calls over every skill" if reason else None

    ledger.budget_check = check
    return ledger


def _setup(root: Path, cfg: Config) -> Setup:
    """The library's stores (one branch), every trigger case, the router and the (metered) teacher."""
    from skillgit.library.activation import OverlapRouter
    from skillgit.library.teacher import LLMDescriptionTeacher, SimulatedDescriptionTeacher

    found = lib_config.entries(cfg, root)
    branches = {e.branch or cfg.skill.branch for e in found.values()}
    if len(branches) > 1:
        raise ConfigError(f"skills: the library's skills are on different branches ({', '.join(sorted(branches))})",
                          "the activation track commits every step on one branch: give them one `branch`")
    branch = branches.pop()
    stores: dict[str, Store] = {}
    for e in found.values():
        path = e.path if e.path.endswith("SKILL.md") else f"{e.path.rstrip('/')}/SKILL.md"
        stores[e.name] = Store.open(root, path, branch)
    cases: list[TriggerCase] = []
    for triggers in dict.fromkeys(e.triggers for e in found.values() if e.triggers):  # a shared file once
        cases += load_cases(root / triggers)
    if cfg.model.student_backend != "simulated":
        raise ConfigError("the activation track routes with a real agent from Python only for now "
                          f"(model.student_backend is {cfg.model.student_backend!r})",
                          "use model.student_backend: simulated for the offline router, or "
                          "skillgit.library.agent.AgentRunner with skillgit.library.track.train")
    meter = _meter(cfg.budget)
    teacher: DescriptionTeacher
    if cfg.model.teacher_backend == "simulated":
        teacher = SimulatedDescriptionTeacher()
    else:
        from skillgit.llm import factory
        from skillgit.llm.cache import CachedLLM, CallCache
        from skillgit.llm.metering import MeteredLLM
        from skillgit.session import journal_path

        llm = CachedLLM(factory.build_teacher(cfg, root), CallCache(journal_path(next(iter(stores.values())))))
        teacher = LLMDescriptionTeacher(MeteredLLM(llm, meter, "teacher"), limit=cfg.skill.max_description_chars,
                                        skipped=[])
    track = TrackCfg(listing_budget=cfg.skill.listing_budget, description_limit=cfg.skill.max_description_chars)
    return Setup(stores, cases, OverlapRouter(seed=cfg.train.seed), teacher, track, meter)


def _has_val(cases: list[TriggerCase], name: str) -> bool:
    return any(c.skill == name and c.split == "val" for c in cases)


def run_activation(root: Path, cfg: Config, name: str, *, steps: int, run: str | None = None,
                   on_step: Callable[[StepRecord], None] | None = None) -> TrackRun:
    lib_config.entry(cfg, name, root)  # the named skill is in the library (ConfigError listing the choices)
    setup = _setup(root, cfg)
    if not _has_val(setup.cases, name):
        raise ConfigError(f"skills.{name}.triggers: no val trigger cases for {name!r}",
                          'mark held-out cases with "split": "val" (and train cases with "split": "train")')
    return train(setup.stores, name, setup.cases, setup.router, setup.teacher, cfg.evaluation, setup.track,
                 run=run or f"activation-{name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}", steps=steps,
                 seed=cfg.train.seed, on_step=on_step)


@dataclass
class AllActivation:
    """`train --all --activation`: each skill's steps, the skills skipped (why), how it ended, the teacher's
    spend."""

    run: str
    skills: dict[str, TrackRun]
    skipped: dict[str, str]
    status: str = "finished"
    reason: str = ""
    usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict[str, Any]:
        def one(t: TrackRun) -> dict[str, Any]:
            scored = [s.verdict for s in t.steps if s.verdict.scored and s.verdict.before is not None]
            before = scored[0].before.f1 if scored and scored[0].before else None
            after = next((v.after.f1 for v in reversed(scored) if v.accept and v.after), before)
            return {"run": f"{self.run}.{t.skill}", "steps": len(t.steps), "accepted": t.accepted,
                    "rejected": len(t.steps) - t.accepted, "f1_before": before, "f1_after": after,
                    "decisions": [{"step": s.step, "stage": s.verdict.stage, "accept": s.verdict.accept,
                                   "commit": s.commit, "reason": s.verdict.reason} for s in t.steps]}

        return {"run": self.run, "track": "activation", "schedule": "round-robin", "status": self.status,
                "reason": self.reason, "skills": {k: one(v) for k, v in self.skills.items()},
                "skipped": dict(self.skipped), "usage": self.usage.to_dict()}


def run_activation_all(root: Path, cfg: Config, *, steps: int, run: str | None = None,
                       on_step: Callable[[str, StepRecord], None] | None = None) -> AllActivation:
    """See the module contract."""
    setup = _setup(root, cfg)
    run = run or f"activation-all-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
    names = list(setup.stores)
    out = AllActivation(run, {n: TrackRun(n) for n in names if _has_val(setup.cases, n)},
                        {n: "no val trigger cases of its own (mark held-out cases with \"split\": \"val\")"
                         for n in names if not _has_val(setup.cases, n)})
    if not out.skills:
        raise ConfigError("--all --activation: no skill of `skills:` has val trigger cases",
                          "give each skill `skills.<name>.triggers` with held-out (\"split\": \"val\") cases")
    learning = list(out.skills)
    try:
        for step in range(1, steps + 1):
            for name in list(learning):
                taken = train(setup.stores, name, setup.cases, setup.router, setup.teacher, cfg.evaluation,
                              setup.track, run=f"{run}.{name}", steps=1, start=step, seed=cfg.train.seed,
                              on_step=_named(on_step, name))
                out.skills[name].steps += taken.steps
                if not taken.steps:
                    learning.remove(name)  # its teacher has nothing more to try
            if not learning:
                break
    except BudgetReached as exc:
        out.status, out.reason = "stopped", exc.message
    out.usage = setup.meter.total()
    return out


def _named(on_step: Callable[[str, StepRecord], None] | None, name: str) -> Callable[[StepRecord], None] | None:
    return None if on_step is None else lambda rec: on_step(name, rec)
