"""`skillgit demo --sleep`: one whole night of `skillgit sleep`, offline — A SIMULATION OF THE PIPELINE.

Contracts:
- `create_project(folder)` writes a throwaway skillgit project (the simulated world's seed skill, a skillgit.yaml
  naming the simulated backends explicitly, the demo's own git identity in the repository's config only) and a
  **fixture agent home** inside it, `.skillgit/demo-home/` (a `.gitignore` of `*`: never committed): the shipped
  Claude Code sessions of `examples/sleep-demo/sessions/` (package data `skillgit._examples`), relocated to the
  project (their `cwd` becomes the project's folder, as if they had been recorded there). `sleep.home` names that
  folder and `sleep.sources` only `claude`, so the readers never look at the user's HOME.
- `run_sleep_demo(folder, …)` then runs what a person would: `sleep mine` (harvest → scrub → mine → the task
  file) and `sleep run` (replay on stable splits → the training loop → the gate → gated commits on
  `sleep/<date>`, the report, the night's record on `refs/skillgit/sleep`), through the same library calls the CLI
  makes. While it runs, `CLAUDE_CONFIG_DIR` (and the other readers' roots) point into the fixture home, so a
  user's own setting cannot redirect a reader to their real sessions; the process environment is restored after.
  Nothing is written outside the project folder (and, without `--dir`, the project is deleted at the end).
- The sessions are ones in which a person asks for the same kind of task again and again (normalise a record to
  the team's house style), corrects the agent when it answers in its own style and accepts the fixed answer; the
  records and accepted answers are the simulated world's (seed `WORLD_SEED`), because the simulated student reads
  nothing else. Harvest, scrub, mining, splits, the loop, the gate, git and the report are all real.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from skillgit import console
from skillgit.errors import SkillgitError

WORLD_SEED = 0  # the simulated world the shipped sessions were recorded in (examples/sleep-demo/make_sessions.py)
RECORDED_IN = "/home/dev/records-app"  # the project folder the shipped sessions name
HOME_DIR = ".skillgit/demo-home"
# every reader's root that an environment variable can move (skillgit/sleep/readers): pointed into the fixture home
READER_ROOTS = {"CLAUDE_CONFIG_DIR": ".claude", "CODEX_HOME": ".codex", "COPILOT_HOME": ".copilot",
                "XDG_DATA_HOME": ".local/share", "XDG_CONFIG_HOME": ".config"}

CONFIG = """\
# A skillgit project on the offline SIMULATED world, made by `skillgit demo --sleep` (a simulation of the sleep
# pipeline: the sessions in {home} were shipped with skillgit). Nothing here calls a real model.
skill: {{path: SKILL.md, branch: main}}
model:
  teacher_backend: simulated
  teacher_model: sim-teacher
  student_backend: simulated
  student_model: sim-student
  simulated: {{seed: {world_seed}, num_rules: 6, noise: 0.05}}
train: {{num_epochs: 3, batch_size: 16, seed: {seed}}}
gradient: {{minibatch_size: 4, analyst_workers: 2, merge_batch_size: 4}}
optimizer: {{learning_rate: 3, min_learning_rate: 1}}
# a night mines ~36 tasks, so val holds about 10: the nights gate with strict + per_item (better, nothing broken)
evaluation: {{gate_metric: hard, gate: strict+per_item}}
env: {{workers: 4, scorer: {{type: exact}}}}
sleep:
  home: {home}
  sources: [claude]
  max_steps: {steps}
"""


@dataclass(frozen=True)
class DemoProject:
    root: Path
    home: Path
    sessions: int


def sessions_dir() -> Path:
    from skillgit.resources import example_dir

    return example_dir("sleep-demo") / "sessions"


def relocate(text: str, project: str) -> str:
    """A shipped session file with every record's `cwd` moved from where it was recorded to `project`."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("cwd") == RECORDED_IN:
            record["cwd"] = project
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return "".join(f"{line}\n" for line in out)


def write_home(home: Path, project: Path) -> int:
    """The fixture agent home: the shipped sessions where Claude Code keeps a project's sessions; returns how many."""
    files = sorted(sessions_dir().glob("*.jsonl"))
    if not files:
        raise SkillgitError(f"no demo sessions in {sessions_dir()}", "reinstall skillgit (its package data is missing)")
    folder = home / ".claude" / "projects" / str(project).replace("/", "-").replace(".", "-")
    folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        (folder / path.name).write_text(relocate(path.read_text(encoding="utf-8"), str(project)), encoding="utf-8")
    return len(files)


def create_project(folder: Path, *, seed: int, steps: int) -> DemoProject:
    """Write the demo project and its fixture home into `folder` (new or empty); commit the project on `main`."""
    from skillgit.demo_project import init_demo_repository
    from skillgit.store.initialize import init_project
    from skillgit.world import default_skill

    repo = init_demo_repository(folder)
    home = folder / HOME_DIR
    home.mkdir(parents=True)
    (home / ".gitignore").write_text("# the sleep demo's fixture agent home: shipped sessions, never committed\n*\n",
                                     encoding="utf-8")
    count = write_home(home, folder)
    (folder / "SKILL.md").write_text(default_skill(), encoding="utf-8")
    (folder / "skillgit.yaml").write_text(CONFIG.format(home=json.dumps(str(home)), world_seed=WORLD_SEED, seed=seed,
                                                        steps=steps), encoding="utf-8")
    (folder / "README.md").write_text(
        "# skillgit sleep demo project\n\nA night of `skillgit sleep` on shipped Claude Code sessions and the offline "
        "simulated world. Try `skillgit sleep status`, `skillgit sleep review`, `git log main..sleep/<date>`.\n",
        encoding="utf-8")
    init_project(folder, skill="SKILL.md", branch="main", commit=True)
    repo.commit_paths(["README.md"], "demo: sleep demo project")
    repo.close()
    return DemoProject(folder, home, count)


@contextlib.contextmanager
def readers_in(home: Path) -> Iterator[None]:
    """Every reader root an environment variable could move points into `home` for the duration (restored after)."""
    saved = {name: os.environ.get(name) for name in READER_ROOTS}
    try:
        for name, relative in READER_ROOTS.items():
            os.environ[name] = str(home / relative)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_sleep_demo(folder: Path | None, *, seed: int, steps: int, display: Any, date: str | None = None) -> Any:
    """See the module contract; returns the night's `NightRecord`."""
    from skillgit.demo_project import demo_folder
    from skillgit.sleep.night import LOCK, NightOptions, gather, run_night, today
    from skillgit.sleep.settings import open_sleep_project
    from skillgit.store.lock import hold
    from skillgit.store.repository import open_repository

    if steps < 1:
        raise SkillgitError(f"--steps must be at least 1, got {steps}", "try --steps 4")
    night = date or today()
    err, out = console.err, console.out
    with demo_folder(folder, "skillgit-sleep-demo-") as (folder, keep):
        demo = create_project(folder, seed=seed, steps=steps)
        err.print(f"[bold]skillgit demo --sleep[/] in {folder}")
        err.print("A SIMULATION of the sleep pipeline: shipped Claude Code sessions in a fixture home, the offline "
                  "simulated world as teacher and student; your HOME and agent config are not read.")
        with readers_in(demo.home):
            sp = open_sleep_project(folder, None, [])
            git = open_repository(folder)
            try:
                with hold(git.common_dir / "skillgit" / "locks", LOCK):
                    g = gather(sp, git, write=True, date=night)
            finally:
                git.close()
            mined = g.mined.summary()
            out.rule("skillgit sleep mine")
            out.print(f"harvested {g.harvest.summary()['sessions']} Claude Code session(s) of {demo.sessions} shipped; "
                      f"{mined.get('units', 0)} request(s) in {mined.get('groups', 0)} group(s); "
                      f"{len(g.new)} task(s) mined into {g.path.relative_to(folder)} "
                      f"(redactions: {sum(g.harvest.redactions.to_dict().values())})", markup=False, highlight=False)
            out.print("offline: nothing leaves this machine, so this night needs no review (with a real backend, "
                      "`skillgit sleep review --approve` comes first)", markup=False, highlight=False)
            out.rule("skillgit sleep run")
            with display:
                record = run_night(sp, NightOptions(night), on_event=display.handle)
        _summary(folder, record, keep)
        return record


def _summary(folder: Path, record: Any, keep: bool) -> None:
    out = console.out
    seed, final = record.scores.get("seed"), record.scores.get("final")
    line = f"night {record.date}: {record.status}" + (f" ({record.reason})" if record.reason else "")
    if record.branch:
        line += f" on {record.branch}: {record.accepted} accepted, {record.rejected} rejected"
    if seed is not None and final is not None and seed.val is not None and final.val is not None:
        line += f"; val {seed.val:.3f} → {final.val:.3f}"
    tasks = record.tasks
    out.print(line, markup=False, highlight=False)
    out.print(f"replayed {tasks.used} task(s): train {tasks.train}, val {tasks.val}, test {tasks.test}",
              markup=False, highlight=False)
    accepted = [o for o in record.edits if o.accepted]
    if accepted and record.branch:
        out.rule(f"accepted on {record.branch}")
        for outcome in accepted:
            out.print(f"{outcome.sha[:12]} step {outcome.step}: val {outcome.score_before:.3f} → "
                      f"{outcome.score_after:.3f}\n    gate: {outcome.reason}", markup=False, highlight=False)
    where = f"cd {folder} && " if keep else "with --dir DIR, "
    out.print(f"look at it: {where}git log main..{record.branch or 'sleep/' + record.date}; "
              f"skillgit sleep review; skillgit sleep status; skillgit sleep adopt {record.date}",
              markup=False, highlight=False)
