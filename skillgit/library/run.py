"""`skillgit train --skill NAME --activation`: the activation track for one skill of the configured library.

The library is every skill of `skills:` (all on one branch: one commit per step); the trigger cases are the union
of their `triggers` files (each skill's cases are the interference check for the others). The router and the
teacher follow the configured backends and never pick the simulated world silently: a simulated student routes
with the overlap router (seeded by `train.seed`), a simulated teacher is the simulated description teacher, a
real teacher backend writes descriptions through the model (journaled: a resumed run does not pay twice). A real
agent as router is not wired to configuration yet: that refuses with a clear error (use
`skillgit.library.agent.AgentRunner` from Python).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from skillgit.config import Config
from skillgit.errors import ConfigError
from skillgit.library import config as lib_config
from skillgit.library.model import TriggerCase, load_cases
from skillgit.library.track import DescriptionTeacher, StepRecord, TrackCfg, TrackRun, train
from skillgit.store.core import Store


def run_activation(root: Path, cfg: Config, name: str, *, steps: int, run: str | None = None,
                   on_step: Callable[[StepRecord], None] | None = None) -> TrackRun:
    from skillgit.library.activation import OverlapRouter
    from skillgit.library.teacher import LLMDescriptionTeacher, SimulatedDescriptionTeacher

    found = lib_config.entries(cfg, root)
    lib_config.entry(cfg, name, root)  # the named skill is in the library (ConfigError listing the choices)
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
    if not any(c.skill == name and c.split == "val" for c in cases):
        raise ConfigError(f"skills.{name}.triggers: no val trigger cases for {name!r}",
                          'mark held-out cases with "split": "val" (and train cases with "split": "train")')
    if cfg.model.student_backend != "simulated":
        raise ConfigError("the activation track routes with a real agent from Python only for now "
                          f"(model.student_backend is {cfg.model.student_backend!r})",
                          "use model.student_backend: simulated for the offline router, or "
                          "skillgit.library.agent.AgentRunner with skillgit.library.track.train")
    router = OverlapRouter(seed=cfg.train.seed)
    teacher: DescriptionTeacher
    if cfg.model.teacher_backend == "simulated":
        teacher = SimulatedDescriptionTeacher()
    else:
        from skillgit.llm import factory
        from skillgit.llm.cache import CachedLLM, CallCache
        from skillgit.session import journal_path

        teacher = LLMDescriptionTeacher(CachedLLM(factory.build_teacher(cfg, root), CallCache(
            journal_path(stores[name]))), limit=cfg.skill.max_description_chars, skipped=[])
    track = TrackCfg(listing_budget=cfg.skill.listing_budget, description_limit=cfg.skill.max_description_chars)
    return train(stores, name, cases, router, teacher, cfg.evaluation, track,
                 run=run or f"activation-{name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}", steps=steps,
                 seed=cfg.train.seed,
                 on_step=on_step)
