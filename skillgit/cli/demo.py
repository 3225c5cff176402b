"""`skillgit demo`: a complete training run on the offline simulated world, in a throwaway (or kept) repository.

The repository it creates is a normal skillgit project (SKILL.md, tasks.jsonl, skillgit.yaml with the
simulated backends named explicitly), so `skillgit train` inside it continues training. Nothing here calls a
real model: the simulated world is documented in skillgit/world and says so on screen.
"""

from __future__ import annotations

import shlex
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from skillgit import console
from skillgit.cli.progress import RunDisplay, scores_table
from skillgit.errors import Interrupted, SkillgitError
from skillgit.patch import unified_diff

DEMO_CONFIG = """\
# A skillgit project on the offline SIMULATED world (see `skillgit demo --help` and skillgit/world).
# Nothing here calls a real model. To train a real skill, set the backends to openai / azure / anthropic.
skill:
  path: SKILL.md
  branch: main
{model}
train:
  num_epochs: 3
  batch_size: 20
  seed: {seed}
gradient:
  minibatch_size: 5
  analyst_workers: 4
  merge_batch_size: 4
optimizer:
  learning_rate: 3
  min_learning_rate: 1
  lr_scheduler: cosine
evaluation:
  gate_metric: hard
env:
  tasks: tasks.jsonl
  split_ratio: "4:2:4"
  workers: 8
  scorer:
    type: exact
"""

N_TASKS = 150


def create_project(folder: Path, seed: int) -> None:
    """Write the demo project into `folder` (created or empty) and commit it on `main`."""
    from skillgit.config import SimulatedCfg
    from skillgit.demo_project import init_demo_repository
    from skillgit.store.initialize import init_project
    from skillgit.world import SIMULATED_MODEL, default_skill, write_tasks

    repo = init_demo_repository(folder, "pass --dir with a new or empty folder (or cd into an existing demo and "
                                        "run `skillgit train`)")
    (folder / "SKILL.md").write_text(default_skill(), encoding="utf-8")
    write_tasks(folder / "tasks.jsonl", SimulatedCfg(seed=seed), N_TASKS)
    (folder / "skillgit.yaml").write_text(DEMO_CONFIG.format(seed=seed, model=SIMULATED_MODEL.format(seed=seed)),
                                          encoding="utf-8")
    (folder / "README.md").write_text(
        "# skillgit demo project\n\nA skill trained on skillgit's offline simulated world. Try `skillgit log`, "
        "`skillgit show 1`, `skillgit rejected`, `skillgit train`.\n", encoding="utf-8")
    init_project(folder, skill="SKILL.md", branch="main", commit=True)
    repo.commit_paths(["tasks.jsonl", "README.md"], "demo: simulated tasks")


AGENT_TEACHER = """\
  teacher_backend: agent    # the coding agent as teacher: it edits a copy of the package (skillgit/teacher)
  teacher_model: default
  teacher:
    command:
      preset: simulated     # the simulated agent teacher (python -m skillgit.world.agent_teacher); or claude, codex…
"""
TEACHERS = ("chat", "agent")


def create_agentic_project(folder: Path, seed: int, teacher: str = "chat") -> None:
    """Write the agentic example (a skill package, 16 coding tasks over two fixture repositories with pytest
    verifiers, the simulated coding agent as student) into `folder` and commit it on `main`. `teacher` "agent":
    the simulated agent teacher edits the package instead of the simulated chat teacher."""
    from skillgit.demo_project import init_demo_repository
    from skillgit.resources import example_dir

    repo = init_demo_repository(folder)
    shutil.copytree(example_dir("agentic"), folder, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("reference_skill", "__pycache__", "*.pyc", "__init__.py"))
    config = (folder / "skillgit.yaml").read_text(encoding="utf-8")
    config = config.replace("  seed: 0", f"  seed: {seed}")
    if teacher == "agent":
        chat = "  teacher_backend: simulated\n  teacher_model: sim-teacher\n"
        if chat not in config:
            raise SkillgitError("the agentic example's skillgit.yaml does not name the simulated teacher",
                                "reinstall skillgit")
        config = config.replace(chat, AGENT_TEACHER)
    (folder / "skillgit.yaml").write_text(config, encoding="utf-8")
    repo.commit_paths(["."], "demo: agentic example (skill package, coding tasks, fixture repositories)")


@contextmanager
def _resume_hint(folder: Path, keep: bool, seed: int, steps: int) -> Iterator[None]:
    """Ctrl-C in a demo: the generic "run the same command again to resume" was wrong twice over (`demo --dir D`
    again refuses a folder that is not empty; without --dir the folder is temporary and gone)."""
    try:
        yield
    except Interrupted as exc:
        if keep:
            hint = (f"the project is kept: `cd {shlex.quote(str(folder))} && skillgit train --run demo-seed{seed} "
                    f"--set train.max_steps={steps}` resumes this run where it stopped")
        else:
            hint = ("the demo's folder was temporary and is removed: `skillgit demo` starts it again (same seed, "
                    "same run)")
        raise Interrupted(exc.message, hint, exc.code) from None


def _need_pytest() -> None:
    """The agentic demo's verifiers run `python -m pytest` with this interpreter: without pytest (a plain `pip
    install .` has none) every rollout failed and the demo stopped at step 1 with exit 4, blaming the student."""
    import os
    import sys

    from skillgit import process

    probe = process.run([sys.executable, "-c", "import pytest"], cwd=Path.cwd(), env=os.environ, timeout_s=120)
    if probe.returncode != 0:
        raise SkillgitError("`skillgit demo --agentic` scores every rollout with real pytest verifiers, and pytest is "
                            "not installed in skillgit's environment",
                            f"install it there: {sys.executable} -m pip install pytest (or pip install '.[test]' in "
                            "your clone of skillgit)")


def run_demo(folder: Path | None, *, seed: int, steps: int, display: RunDisplay, agentic: bool = False,
             teacher: str = "chat") -> None:
    from skillgit.cli.history import log
    from skillgit.config import SimulatedCfg
    from skillgit.demo_project import demo_folder
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session
    from skillgit.world import describe

    if steps < 1:
        raise SkillgitError(f"--steps must be at least 1, got {steps}", "try --steps 8")
    if teacher not in TEACHERS:
        raise SkillgitError(f"--teacher: unknown teacher '{teacher}'", f"use one of: {', '.join(TEACHERS)}")
    if teacher == "agent" and not agentic:
        raise SkillgitError("--teacher agent needs --agentic (the agent teacher edits a skill package)",
                            "run `skillgit demo --agentic --teacher agent`")
    if agentic:
        _need_pytest()
    with demo_folder(folder) as (folder, keep):
        if agentic:
            create_agentic_project(folder, seed, teacher)
            where = "" if keep else " (a temporary folder, removed at the end: --dir PATH keeps the project)"
            console.err.print(f"[bold]skillgit demo --agentic[/] in {folder}{where}")
            who = ("simulated AGENT teacher (python -m skillgit.world.agent_teacher) editing a copy of the package"
                   if teacher == "agent" else "simulated teacher")
            console.err.print("SIMULATED coding agent (python -m skillgit.world.agent) on 16 tasks in two fixture "
                              f"repositories, scored by real pytest verifiers; {who}")
        else:
            create_project(folder, seed)
            where = "" if keep else " (a temporary folder, removed at the end: --dir PATH keeps the project)"
            console.err.print(f"[bold]skillgit demo[/] in {folder}{where}")
            console.err.print(describe(SimulatedCfg(seed=seed)).strip().splitlines()[0])
        project = open_project(folder, None, [f"train.max_steps={steps}"])
        session = open_session(project)
        seed_text = session.store.read_skill()
        trainer = build_trainer(session, run_id=f"demo-seed{seed}", resume=False, on_event=display.handle)
        with display, _resume_hint(folder, keep, seed, steps):
            result = trainer.train()
        out = console.out
        out.rule("skillgit log")
        log(run=None, as_json=False, limit=None, repo=folder, config=None, set_=None, skill=None)
        out.rule("seed → final skill")
        out.print(unified_diff(seed_text, session.store.read_skill()) or "(unchanged)", markup=False,
                  highlight=False)
        out.print(scores_table(result.scores, project.config.evaluation.gate_metric))
        seed_test, final_test = result.scores["seed"]["test"], result.scores["final"]["test"]
        if seed_test is not None and final_test is not None:
            out.print(f"test {project.config.evaluation.gate_metric}: {seed_test:.3f} → {final_test:.3f} "
                      f"({(final_test - seed_test) * 100:+.1f} points) after {result.steps} steps: "
                      f"{result.accepted} accepted, {result.rejected} rejected")
        if keep:
            out.print(f"kept {folder}: cd there and try `skillgit log`, `skillgit show 1`, `skillgit rejected`, "
                      f"`skillgit train` (continues on the simulated world)")
