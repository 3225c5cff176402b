"""`skillgit demo --library`: the activation track on a library of three skills whose descriptions overlap.

Offline and deterministic: the simulated router (word overlap of a prompt with each listing) stands in for the
agent, the simulated description teacher for the model. The repository it creates holds `skills/*/SKILL.md` and
`triggers.jsonl` (train cases for the teacher, val cases for the gate) on `main`; each step of the activation
track for `deploy` is a commit on `candidates/*`, fast-forwarded onto `main` when accepted or tagged
`rejected/*`, with a gate note and an activation note (`git notes --ref=skillgit show <commit>`). Then the body
track trains `deploy`'s body for a few steps on simulated tasks through the `skills:` configuration (the same as
`skillgit train --skill deploy`): only its file moves, and its trained description stays as it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from skillgit import console
from skillgit.errors import SkillgitError

TARGET = "deploy"
PATTERN = "skills/*/SKILL.md"
BODY_STEPS = 3
LIBRARY_CONFIG = """\
# A skill library on the offline SIMULATED world (see `skillgit demo --help`). Nothing here calls a real model.
skills:
  deploy: {{path: skills/deploy/SKILL.md, tasks: tasks.jsonl, triggers: triggers.jsonl}}
  release-notes: {{path: skills/release-notes/SKILL.md, triggers: triggers.jsonl}}
  db-migrate: {{path: skills/db-migrate/SKILL.md, triggers: triggers.jsonl}}
skill:
  path: skills/deploy/SKILL.md
  listing_budget: 15000
{model}
train:
  batch_size: 20
  seed: {seed}
evaluation:
  gate_metric: hard
env:
  tasks: tasks.jsonl
  split_ratio: "4:2:4"
  scorer:
    type: exact
"""


def create_library_project(folder: Path, seed: int = 0) -> None:
    """Copy the shipped library example into `folder` (new or empty), add a `skills:` configuration and simulated
    body tasks for `deploy`, and commit it on `main`."""

    from skillgit.config import SimulatedCfg
    from skillgit.demo_project import init_demo_repository
    from skillgit.resources import example_dir
    from skillgit.world import SIMULATED_MODEL, write_tasks

    repo = init_demo_repository(folder)
    shutil.copytree(example_dir("library"), folder, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "__init__.py"))
    (folder / "skillgit.yaml").write_text(LIBRARY_CONFIG.format(seed=seed, model=SIMULATED_MODEL.format(seed=seed)),
                                          encoding="utf-8")
    write_tasks(folder / "tasks.jsonl", SimulatedCfg(seed=seed), 100)
    repo.commit_paths(["."], "demo: a library of three skills, their trigger cases, deploy's simulated tasks")


def run_library_demo(folder: Path | None, *, seed: int, steps: int, display: Any) -> None:
    """Run the demo; `display` is the CLI's progress display of the body-track run (a `cli.progress.RunDisplay`:
    a context manager with `handle(event)`)."""
    from rich.table import Table

    from skillgit.config import EvaluationCfg
    from skillgit.demo_project import demo_folder
    from skillgit.library.activation import OverlapRouter, metrics, score_cases
    from skillgit.library.model import Library, LibrarySkill, cases_of, load_cases
    from skillgit.library.teacher import SimulatedDescriptionTeacher
    from skillgit.library.track import StepRecord, TrackCfg, train
    from skillgit.store.core import Store

    if steps < 1:
        raise SkillgitError(f"--steps must be at least 1, got {steps}", "try --steps 4")
    with demo_folder(folder) as (folder, keep):
        create_library_project(folder, seed)
        console.err.print(f"[bold]skillgit demo --library[/] in {folder}")
        console.err.print("SIMULATED router (word overlap of each prompt with the skills' descriptions) and "
                          "SIMULATED description teacher; the gate and git are real")
        paths = sorted(p.relative_to(folder).as_posix() for p in folder.glob(PATTERN))
        stores = {}
        for path in paths:
            store = Store.open(folder, path, "main")
            stores[Library.of([LibrarySkill(path, store.read_skill())]).names[0]] = store
        cases = load_cases(folder / "triggers.jsonl")
        router = OverlapRouter(seed=seed)

        def val_metrics() -> dict:
            lib = Library.of(LibrarySkill(s.skill_path, s.read_skill()) for s in stores.values())
            return metrics(score_cases(router, lib, cases_of(cases, split="val")))

        before = val_metrics()

        def shown(rec: StepRecord) -> None:
            v = rec.verdict
            word = "[green]accepted[/]" if v.accept else f"[red]rejected[/] ({v.stage})"
            console.err.print(f"step {rec.step}: {word} {rec.commit[:12]}: {v.reason}", highlight=False)
            console.err.print(f"    description: {rec.description}", markup=False, highlight=False)

        run = train(stores, TARGET, cases, router, SimulatedDescriptionTeacher(), EvaluationCfg(), TrackCfg(),
                    run=f"activation-{TARGET}-seed{seed}", steps=steps, seed=seed, on_step=shown)
        after = val_metrics()
        table = Table(title="held-out (val) trigger cases, per skill")
        for col in ("skill", "cases", "precision", "recall", "F1 before", "F1 after"):
            table.add_column(col, justify="left" if col == "skill" else "right")
        for name in sorted(before):
            b, a = before[name], after[name]
            table.add_row(name, str(a.cases), f"{b.precision:.2f} → {a.precision:.2f}",
                          f"{b.recall:.2f} → {a.recall:.2f}", f"{b.f1:.2f}", f"{a.f1:.2f}")
        out = console.out
        out.print(table)
        out.print(f"{TARGET}: val F1 {before[TARGET].f1:.2f} → {after[TARGET].f1:.2f} after {len(run.steps)} "
                  f"step(s): {run.accepted} accepted, {len(run.steps) - run.accepted} rejected")
        lowered = [n for n in before if n != TARGET and after[n].f1 < before[n].f1 - 1e-9]
        out.print("other skills' val F1: " + ("lowered for " + ", ".join(lowered) if lowered else "not lowered"))
        _body_track(folder, seed, display)
        if keep:
            out.print(f"kept {folder}: try `git log --oneline main`, `git tag -l 'rejected/*'`, "
                      f"`git notes --ref=skillgit show main`, `skillgit train --skill deploy [--activation]`")


def _body_track(folder: Path, seed: int, display: Any) -> None:
    """A few body-track steps on `deploy` through the `skills:` configuration (`train --skill deploy`)."""
    from skillgit.library import config as lib_config
    from skillgit.library.model import listing_of
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    base = open_project(folder, None, [])
    project = open_project(folder, None, [*lib_config.overrides(lib_config.entry(base.config, TARGET, base.root)),
                                          f"train.max_steps={BODY_STEPS}"])
    session = open_session(project)
    description = listing_of(session.store.read_skill()).description
    trainer = build_trainer(session, run_id=f"demo-library-body-seed{seed}", resume=False, on_event=display.handle)
    with display:
        result = trainer.train()
    metric = project.config.evaluation.gate_metric
    seed_test, final_test = result.scores["seed"]["test"], result.scores["final"]["test"]
    moved = f"test {metric} {seed_test:.3f} → {final_test:.3f}" if seed_test is not None and final_test is not None \
        else "test not scored"
    kept = listing_of(session.store.read_skill()).description == description
    console.out.print(f"body track ({TARGET}, skillgit train --skill {TARGET}): {moved} after {result.steps} "
                      f"step(s): {result.accepted} accepted, {result.rejected} rejected; trained description "
                      f"{'kept' if kept else 'CHANGED'}")
