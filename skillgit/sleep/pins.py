"""Pins: the commit an agentic task's workspace starts from must be one this repository has.

A mined agentic task is pinned to the commit its session recorded (`MinedTask.rev`), but sessions name commits
the repository may not have: Copilot CLI writes the all-zero SHA, a Codex session ran on a commit that was never
pushed here, a person edited the task file. Replaying such a task would fail every rollout in `git worktree add`.

Contract of `pin(task, commits, base)`, asked by `replay.choose` for each agentic task it would keep:
- a `rev` that names a commit here (a hexadecimal id or `HEAD`, resolved through `commits.commit_of`) is kept as
  it is (`Pinned.reason == ""`);
- otherwise the task moves to the nearest commit we have on the session's branch: for each of its sessions that
  recorded a branch, in order, the commit that branch pointed at just before the session started
  (`commits.rev_before(started, branch)`);
- else to `base`, the skill branch's tip the night starts from;
- else it is left out (`Pinned.task is None`) with the reason `NO_COMMIT`.
A moved task keeps the missing rev in `signals.rev_missing` and says where its new one came from in
`signals.rev_from`; `Pinned.reason` is one of a few fixed phrases (counted in the night's record). A rev that is not
a plain commit id (an option-like `--output=…`, a range, a path) never reaches git: it counts as missing. Git is
only read, through `skillgit.store.git.GitRepo` (operands after `--`, branch names validated there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Protocol

from skillgit.sleep.mine import MinedTask

NO_COMMIT = "agentic task pinned to a commit this repository does not have (no branch or base to fall back to)"
TO_BRANCH = "commit not in this repository: replayed from the session's branch just before the session"
TO_BASE = "commit not in this repository: replayed from the skill branch's tip"
_COMMIT_ID = re.compile(r"[0-9a-fA-F]{7,64}")


class Commits(Protocol):
    """What pinning reads of the repository (`skillgit.store.git.GitRepo` is one)."""

    def commit_of(self, rev: str) -> str | None: ...

    def rev_before(self, timestamp: str, ref: str = "HEAD") -> str | None: ...


@dataclass(frozen=True)
class Pins:
    """The repository to pin against and the night's fallback commit (None: no fallback)."""
    commits: Commits
    base: str | None = None


@dataclass(frozen=True)
class Pinned:
    task: MinedTask | None  # None: left out
    reason: str = ""  # "" when the task kept its rev; else TO_BRANCH, TO_BASE or NO_COMMIT


def exists(commits: Commits, rev: str) -> bool:
    if rev != "HEAD" and not _COMMIT_ID.fullmatch(rev):
        return False
    return commits.commit_of(rev) is not None


def pin(task: MinedTask, commits: Commits, base: str | None) -> Pinned:
    """See the module contract."""
    if task.kind != "agentic" or exists(commits, task.rev):
        return Pinned(task)
    missing = task.rev[:80]
    for session in task.sessions:
        branch, started = session.get("branch"), session.get("started")
        if not isinstance(branch, str) or not branch or not isinstance(started, str) or not started:
            continue
        found = commits.rev_before(started, branch)
        if found and _COMMIT_ID.fullmatch(found):
            return Pinned(_moved(task, found, missing, f"branch {branch[:80]} just before the session"), TO_BRANCH)
    if base and exists(commits, base):
        return Pinned(_moved(task, base, missing, "the skill branch's tip"), TO_BASE)
    return Pinned(None, NO_COMMIT)


def _moved(task: MinedTask, rev: str, missing: str, where: str) -> MinedTask:
    signals = {**task.signals, "rev_missing": missing,
               "rev_from": f"{where} (the recorded commit is not in this repository)"}
    return replace(task, rev=rev, signals=signals)
