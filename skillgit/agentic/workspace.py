"""A throwaway workspace per rollout, never the user's checkout.

Contract:
- `Workspaces(repo, keep=False)` owns `<tmp>/skillgit-ws-<hash of the repository's git dir>/` (outside the
  repository: agents rightly refuse to work inside a `.git` folder). Each `open(spec, …)` makes
  `<pid>-<random>/ws`: a copy of the task's fixture folder committed into a fresh git repository (so the agent
  works in a repository and its changes can be diffed), or a detached `git worktree` of the project repository at
  the task's revision. The user's branches, index and files are never touched.
- The skill is installed where the agent loads skills (`install_dir`, e.g. `.claude/skills/<name>/`) and excluded
  from the workspace diff.
- On leaving the block the workspace is removed (worktrees through `git worktree remove`), unless `keep`
  (`--keep-workspaces`, for debugging). A process killed mid-rollout leaves its folder behind: `sweep()` (called
  when a student is built) removes every folder whose process is gone and prunes stale worktrees. Parallel
  rollouts get separate folders.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from skillgit import package
from skillgit.agentic.spec import AgenticSpec
from skillgit.llm import command
from skillgit.store.git import GitRepo
from skillgit.store.lock import alive

_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", "*.pyc")


def skill_name(skill: str) -> str:
    """The package's name from its SKILL.md's front matter (`name:`) as a folder-safe slug, else "skill"."""
    return command.skill_name(package.parse(skill).get(package.MAIN) or "")


def install(workspace: Path, skill: str, install_dir: str) -> Path:
    """Write the skill's files under `workspace/install_dir` (`{name}` filled in). A single-file skill becomes the
    package's SKILL.md, with minimal front matter added when it has none (Claude Code and Codex ignore a skill
    without `name`/`description`). An install path ending in `.md` (AGENTS.md, copilot-instructions.md) gets the
    main file only."""
    name = skill_name(skill)
    target = (workspace / install_dir.replace("{name}", name)).resolve()
    if not target.is_relative_to(workspace.resolve()):
        raise ValueError(f"install path {install_dir!r} points outside the workspace")
    pkg = package.parse(skill)
    main = pkg.get(package.MAIN) or ""
    if target.suffix == ".md":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(main, encoding="utf-8")
        return target
    for path, text in pkg.files:
        if path == package.MAIN and not text.startswith("---"):
            text = command.STUB_FRONT_MATTER.format(name=name) + text
        dest = target / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    return target


class Workspaces:
    def __init__(self, repo: GitRepo, *, keep: bool = False):
        self.repo = repo
        digest = hashlib.sha1(str(repo.common_dir.resolve()).encode()).hexdigest()[:12]
        self.root = Path(tempfile.gettempdir()) / f"skillgit-ws-{digest}"
        self.keep = keep

    def sweep(self) -> int:
        """Remove the workspaces of processes that are gone (a killed run's leftovers); returns how many."""
        if not self.root.is_dir():
            return 0
        removed = 0
        for folder in self.root.iterdir():
            pid = folder.name.split("-", 1)[0]
            if pid.isdigit() and (int(pid) == os.getpid() or alive(int(pid))):
                continue
            self._remove(folder)
            removed += 1
        if removed:
            self.repo.worktree_prune()
        return removed

    def _remove(self, folder: Path) -> None:
        ws = folder / "ws"
        if (ws / ".git").is_file():  # a worktree of the project repository: let git forget it too
            self.repo.worktree_remove(ws)
        shutil.rmtree(folder, ignore_errors=True)

    @contextmanager
    def open(self, spec: AgenticSpec) -> Iterator[Path]:
        """A fresh workspace for one rollout of `spec` (removed afterwards unless `keep`)."""
        folder = self.root / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True)
        ws = folder / "ws"
        try:
            if spec.fixture is not None:
                shutil.copytree(spec.fixture, ws, ignore=_IGNORE)
                GitRepo.init(ws, "main").snapshot_all("fixture")
            else:
                repo = GitRepo.open(spec.repo or self.repo.root)
                repo.worktree_add(ws, spec.rev)
            yield ws
        finally:
            if not self.keep:
                self._remove(folder)
