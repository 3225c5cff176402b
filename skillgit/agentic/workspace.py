"""A throwaway workspace per rollout, never the user's checkout.

Contract:
- `Workspaces(repo, keep=False)` owns `<tmp>/skillgit-ws-<hash of the repository's git dir>/` (outside the
  repository: agents rightly refuse to work inside a `.git` folder). Each `open(spec, …)` makes
  `<pid>-<random>/ws`: a copy of the task's fixture folder committed into a fresh git repository (so the agent
  works in a repository and its changes can be diffed), or a detached `git worktree` of the project repository at
  the task's revision. The user's branches, index and files are never touched.
- The skill is installed where the agent loads skills (`install_dir`, e.g. `.claude/skills/<name>/`) and excluded
  from the workspace diff.
- A `repo` workspace of the project repository itself has the committed skill at `skill.path` removed before the
  candidate is installed: the agent sees the skill under test only (`hidden` names what the diff leaves out).
- Every command of a rollout (setup, agent, verifier) starts through `tracked(folder, …)`, which writes its process
  group id to `<folder>/pgid` before it executes (a shell `exec`: the group leader is the command itself), and runs
  with `process.run(…, record=folder)`, which appends its scope id and cgroup to `<folder>/proc-scopes.jsonl`
  before it starts (`process` module docstring: the nets that also find children that left the group by `setsid`).
- A fixture is copied by `copy_fixture`: a symlink stays a symlink when it resolves inside the fixture (rewritten
  relative when its text would leave the copy); one that resolves outside the fixture, a loop, or a special file
  (fifo, socket, device) is a `ConfigError` naming it and the fix — never a copy of the tree a link points to.
- On leaving the block the workspace is removed (worktrees through `git worktree remove`), unless `keep`
  (`--keep-workspaces`, for debugging). A process killed mid-rollout (kill -9) leaves its folder behind, and what
  its commands started running in it. `sweep()` (called when a student is built) handles every folder whose
  process is gone: it kills what `process.kill_recorded` finds through the folder's records (processes carrying
  the recorded scope ids, the recorded cgroups), and the recorded process group — only when the group is provably
  ours: its leader's cwd is inside the folder or it started when the pgid file was written (pid reuse), or the
  leader is gone and members remain (a group id is never reused while the group has members) — then removes the
  folder, prunes stale worktrees, and removes the root when empty. Parallel rollouts get separate folders.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shlex
import shutil
import signal
import stat
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from skillgit import package, process
from skillgit.agentic.spec import WORKSPACE_PREFIX, AgenticSpec
from skillgit.errors import ConfigError
from skillgit.llm import command
from skillgit.store.lock import alive
from skillgit.store.repository import Repository, init_repository, open_repository

_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", "*.pyc")
PGID_FILE = "pgid"
_START_SLACK_S = 5.0  # a group leader started within this many seconds of its pgid file is the one that wrote it


def skill_name(skill: str) -> str:
    """The package's name from its SKILL.md's front matter (`name:`) as a folder-safe slug, else "skill"."""
    return command.skill_name(package.parse(skill).get(package.MAIN) or "")


def install(workspace: Path, skill: str, install_dir: str, tree: Sequence[package.TreeFile] = ()) -> Path:
    """Write the skill's files under `workspace/install_dir` (`{name}` filled in) with the package's committed
    `tree` (binary assets byte-exact, scripts executable: `package.write`). A single-file skill becomes the
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
    if not main.startswith("---"):
        pkg = pkg.with_file(package.MAIN, command.STUB_FRONT_MATTER.format(name=name) + main)
    package.write(target, pkg.bundle(), tree)
    return target


def tracked(folder: Path, argv: Sequence[str] | str) -> list[str] | str:
    """`argv` (a list, or a shell command line) made to write its process group id to `folder/pgid` first. The
    command runs in a new session (`process.run`), so the shell's pid is the group id, and `exec` keeps it."""
    pgid_file = shlex.quote(str(folder / PGID_FILE))
    if isinstance(argv, str):
        return f"echo $$ > {pgid_file}; {argv}"
    return ["/bin/sh", "-c", f'echo $$ > {pgid_file} && exec "$@"', "skillgit-agent", *argv]


def copy_fixture(fixture: Path, dest: Path) -> None:
    """Copy the fixture folder to `dest` without `.git` and caches, symlinks as symlinks (module docstring)."""
    root = fixture.resolve()
    rewrite: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):  # does not descend into linked folders
        ignored = _IGNORE(dirpath, dirnames + filenames)
        dirnames[:] = [d for d in dirnames if d not in ignored]
        for name in [*dirnames, *(f for f in filenames if f not in ignored)]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode):
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise ConfigError(f"task fixture {root}: {rel} is not a regular file, folder or symlink",
                                      "remove it from the fixture (a setup command can create it in the workspace)")
                continue
            text = os.readlink(path)
            try:
                os.stat(path)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise ConfigError(f"task fixture {root}: symlink {rel} -> {text} is a loop",
                                      "remove the link or point it at a file inside the fixture") from None
            target = Path(os.path.realpath(path))  # a dangling link is judged by where it would point
            if not target.is_relative_to(root):
                raise ConfigError(f"task fixture {root}: symlink {rel} -> {text} points outside the fixture "
                                  f"({target})", "copy what it points to into the fixture, or point the link at a "
                                  "file inside it (a link that leaves the fixture is never copied into workspaces)")
            within = os.path.normpath(os.path.join(os.path.dirname(rel), text))  # by name, from the fixture's root
            if os.path.isabs(text) or within == ".." or within.startswith("../"):
                rewrite[rel] = os.path.relpath(target, dirpath)  # absolute, or ../ out of the fixture and back in
    shutil.copytree(root, dest, symlinks=True, ignore=_IGNORE)
    for rel, text in rewrite.items():
        (dest / rel).unlink()
        (dest / rel).symlink_to(text)


def _proc_start(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), from /proc; None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                    members.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return members


def kill_leftover_group(folder: Path) -> bool:
    """Kill the process group recorded in `folder/pgid` when it is provably the one a rollout started there (see
    the module docstring); True when a group was killed."""
    try:
        record = folder / PGID_FILE
        pgid, written = int(record.read_text().strip()), record.stat().st_mtime
    except (OSError, ValueError):
        return False
    if pgid <= 1 or pgid == os.getpgrp():
        return False
    if Path(f"/proc/{pgid}").exists():  # the leader lives: is it ours, or a new process that got its pid?
        try:
            cwd = Path(os.readlink(f"/proc/{pgid}/cwd"))
            inside = cwd.is_relative_to(folder.resolve())
        except OSError:
            inside = False
        started = _proc_start(pgid)
        if not inside and (started is None or abs(started - written) > _START_SLACK_S):
            return False
    elif not _group_members(pgid):
        return False
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    for _ in range(50):  # let the kernel reap it before its files are removed
        if not _group_members(pgid):
            break
        time.sleep(0.02)
    return True


class Workspaces:
    def __init__(self, repo: Repository, *, keep: bool = False, skill_path: str = ""):
        self.repo = repo
        digest = hashlib.sha1(str(repo.common_dir.resolve()).encode()).hexdigest()[:12]
        self.root = Path(tempfile.gettempdir()) / f"{WORKSPACE_PREFIX}{digest}"
        self.keep = keep
        self.skill_path = skill_path.strip("/")

    def sweep(self) -> int:
        """Kill the agents and remove the workspaces of processes that are gone (a killed run's leftovers); returns
        how many folders were removed."""
        if not self.root.is_dir():
            return 0
        removed = 0
        for folder in self.root.iterdir():
            pid = folder.name.split("-", 1)[0]
            if pid.isdigit() and (int(pid) == os.getpid() or alive(int(pid))):
                continue
            process.kill_recorded(folder)
            kill_leftover_group(folder)
            self._remove(folder)
            removed += 1
        if removed:
            self.repo.worktree_prune()
        self._drop_root()
        return removed

    def _drop_root(self) -> None:
        try:
            self.root.rmdir()  # only when empty: another run's workspaces keep it
        except OSError:
            pass

    def _remove(self, folder: Path) -> None:
        ws = folder / "ws"
        if (ws / ".git").is_file():  # a worktree of the project repository: let git forget it too
            self.repo.worktree_remove(ws)
        shutil.rmtree(folder, ignore_errors=True)

    def hidden(self, spec: AgenticSpec) -> list[str]:
        """Paths of a workspace of `spec` that belong to skillgit, not to the task: the committed skill's path in
        a worktree of the project repository (removed when the workspace is made)."""
        if spec.fixture is not None or not self.skill_path:
            return []
        try:
            own = open_repository(spec.repo or self.repo.root).common_dir.resolve() == self.repo.common_dir.resolve()
        except Exception:
            return []
        return [self.skill_path] if own else []

    def _folder(self) -> Path:
        folder = self.root / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        for _ in range(5):  # another process may remove the empty root between our mkdirs
            try:
                folder.mkdir(parents=True)
                return folder
            except FileNotFoundError:
                continue
        folder.mkdir(parents=True)
        return folder

    @contextmanager
    def open(self, spec: AgenticSpec) -> Iterator[Path]:
        """A fresh workspace for one rollout of `spec` (removed afterwards unless `keep`)."""
        folder = self._folder()
        ws = folder / "ws"
        try:
            if spec.fixture is not None:
                copy_fixture(spec.fixture, ws)
                init_repository(ws, "main").snapshot_all("fixture")
            else:
                repo = open_repository(spec.repo or self.repo.root)
                repo.worktree_add(ws, spec.rev)
                for rel in self.hidden(spec):
                    committed = ws / rel
                    if committed.is_dir() and not committed.is_symlink():
                        shutil.rmtree(committed)
                    elif committed.exists() or committed.is_symlink():
                        committed.unlink()
            yield ws
        finally:
            if not self.keep:
                self._remove(folder)
                self._drop_root()
