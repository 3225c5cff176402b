"""What a training run that an agent starts (the MCP `train` tool) must have approved on this machine.

`skillgit train` typed by a person is not gated: they run the repository's configuration as they would run its
`make`. An agent is not that person: what it read (a README, an issue, a transcript) may have steered it, and a
pulled configuration or task file may run anything. So the MCP `train` tool requires what a night requires: the
configuration's commands approved (`approval.config_commands`: the scorer, an agent's argv, endpoints, …) and the
commands of the task set's agentic tasks (`setup`, `verify.command`) approved, each with the content of the
repository files it runs (`approval_files`). A person reads and approves them with `skillgit approve`.

Contracts:
- `train_gate(root, cfg)` lists both: `TrainGate.config` (with their files read in the working tree) and
  `TrainGate.tasks` — every agentic task of the project's splits (train, val and test: a run tests at its end),
  keyed like a mined task (`approval.command_key`) with its files read where its workspace comes from: a task on
  the project's repository (`workspace.repo: "."`) at its `workspace.rev` (git's objects); a fixture task in its
  fixture folder, and a task on another repository inside the project in that folder's working tree; a repository
  outside the project is not read (its files are not covered). A task set that cannot be loaded is the gate's
  `error` (the MCP tool refuses with it: training would fail on it too).
- `TrainGate.missing()` / `reason()`: what nobody approved here ("" when all is); `refusal()` the SkillgitError the
  MCP tool raises, naming them and the command a person runs (`APPROVE_HINT`).
- `record(common_dir, gate, approve=…)` approves (or revokes) everything the gate lists, in the same file as
  `sleep review --approve` (`approval.record`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillgit.config import Config
from skillgit.errors import ExitCode, SkillgitError
from skillgit.sleep import approval as A
from skillgit.sleep.approval_files import OUTSIDE, RunFile, at_rev, in_folder, paths_of
from skillgit.sleep.mine import MinedTask

if TYPE_CHECKING:
    from skillgit.agentic.spec import AgenticSpec
    from skillgit.store.repository import Repository

APPROVE_HINT = ("a person reads them with `skillgit approve` and approves them with `skillgit approve --yes` (in a "
                "terminal, in this repository); an agent cannot approve them")


@dataclass(frozen=True)
class TrainTask:
    """An agentic task of the task set: its commands (as a `MinedTask` carries them) and the files they run."""

    task: MinedTask
    files: tuple[RunFile, ...]

    @property
    def key(self) -> str:
        return A.command_key(self.task, self.files) or ""


@dataclass(frozen=True)
class TrainGate:
    config: tuple[A.ConfigCommand, ...]
    tasks: tuple[TrainTask, ...]
    approved: frozenset[str]
    error: str = ""  # the task set could not be loaded

    def missing(self) -> list[str]:
        """One label per command nobody approved here: `skillgit.yaml KEY`, `task ID`."""
        return ([f"skillgit.yaml {c.key}" for c in self.config if c.approval_key not in self.approved]
                + [f"task {t.task.id}" for t in self.tasks if t.key not in self.approved])

    def reason(self) -> str:
        if self.error:
            return f"the task set cannot be read: {self.error}"
        missing = self.missing()
        if not missing:
            return ""
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        return (f"{len(missing)} command(s) that training runs are not approved on this machine ({shown}): a "
                "pulled skillgit.yaml or task file, a changed file they run, or never approved")

    def refusal(self) -> SkillgitError:
        return SkillgitError(f"refused: {self.reason()}", APPROVE_HINT, ExitCode.USAGE)


def _task_files(task: MinedTask, spec: AgenticSpec, root: Path, repo: Repository) -> tuple[RunFile, ...]:
    paths = paths_of(A.commands(task))
    if not paths:
        return ()
    top = Path(os.path.realpath(root))
    if spec.fixture is not None:
        return in_folder(spec.fixture, paths)
    where = Path(os.path.realpath(spec.repo or root))
    if where == top:
        return at_rev(repo, spec.rev, paths)
    if top in where.parents:
        return in_folder(where, paths)
    return tuple(RunFile(p, OUTSIDE) for p in paths)


def train_gate(root: Path, cfg: Config) -> TrainGate:
    """See the module contract."""
    from skillgit import envs
    from skillgit.agentic.spec import AgenticSpec
    from skillgit.store.repository import open_repository
    from skillgit.tasks import load_splits

    repo = open_repository(root)
    try:
        approved = A.approved(repo.common_dir)
        config = A.config_commands(cfg, root)
        try:
            env = envs.get(cfg.env.name, cfg.env.options) if cfg.env.name else None
            splits = load_splits(cfg.env, root, env.load) if env else load_splits(cfg.env, root)
        except SkillgitError as exc:
            return TrainGate(config, (), approved, exc.message)
        tasks = []
        for item in (*splits.train, *splits.val, *splits.test):
            if not AgenticSpec.is_agentic(item):
                continue
            try:
                spec = AgenticSpec.from_item(item, root)
            except SkillgitError as exc:
                return TrainGate(config, (), approved, exc.message)
            task = MinedTask(id=item.id, kind="agentic", prompt=item.input, rev=spec.rev, setup=spec.setup,
                             verify={"command": spec.verify.command})
            tasks.append(TrainTask(task, _task_files(task, spec, root, repo)))
        return TrainGate(config, tuple(tasks), approved)
    finally:
        repo.close()


def record(common_dir: Path, gate: TrainGate, *, approve: bool) -> int:
    """See the module contract."""
    files = {t.task.id: t.files for t in gate.tasks}
    return A.record(common_dir, [t.task for t in gate.tasks], approve=approve, config=gate.config,
                    files=lambda task: files[task.id])
