"""The subprocesses behind the MCP server's guarded actions: one function builds each command line, so the
behaviour can be switched in one place.

Contract
- `train_command(...)` is THE training command an agent can start: `skillgit train --new --json --events` onto a
  review branch (`--set skill.branch=skillgit/review/…`), with the budget as `--set budget.*`; with `resume` it
  drops `--new`, so the newest unfinished run on that review branch continues (budget and step caps are not part
  of a run's config digest; with no unfinished run a new one starts, as `skillgit train` does). It never names the
  skill branch itself, so training started by an agent can only move the review branch; adopting it (a merge) is
  a person's act. (When `skillgit train --branch` exists, switch this function to it.)
- `prepare_review_branch(...)` creates that branch at the skill branch's tip with `git branch` (which refuses to
  overwrite an existing branch); an existing `skillgit/review/…` branch is reused as it is.
- `sleep_command(...)` runs `skillgit sleep dry-run|run --json`; `cli_has(...)` says whether this version has it
  (the command line hands its `has_command` over when it starts the server: `use_cli`).
- `run(argv, timeout_s)` runs a command through `skillgit.process.run` (its own session, stdin closed): on
  timeout TERM reaches the command and everything it started — a `skillgit train`'s rollouts lead sessions of
  their own, and are found by the scope id they inherit (and the cgroup) — then, after `STOP_GRACE_S` (time for
  train to stop its rollouts and save the run as interrupted), KILL reaches whatever is left; nothing the command
  started outlives `run`. The child inherits the environment (it needs the model credentials); its output is
  redacted by the caller before anything reaches an agent.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from skillgit.errors import ExitCode, SkillgitError

REVIEW_PREFIX = "skillgit/review/"
STOP_GRACE_S = 15.0  # after TERM at the timeout: a train stops its rollouts and saves the run, then KILL
_BRANCH_RE = re.compile(r"^skillgit/review/[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")


@dataclass(frozen=True)
class Budget:
    """The spend limit an agent must give before anything that calls a model runs."""

    max_calls: int | None = None
    max_cost_usd: float | None = None

    def require(self) -> Budget:
        if self.max_calls is None and self.max_cost_usd is None:
            raise SkillgitError("refused: training spends model calls and needs an explicit budget",
                                "pass max_calls (e.g. 200) or max_cost_usd (e.g. 2.5) — a budget the user agreed to")
        if self.max_calls is not None and self.max_calls <= 0:
            raise SkillgitError(f"max_calls must be a positive number, not {self.max_calls}", "e.g. max_calls=200")
        if self.max_cost_usd is not None and not self.max_cost_usd > 0:
            raise SkillgitError(f"max_cost_usd must be positive, not {self.max_cost_usd}", "e.g. max_cost_usd=2.5")
        return self

    def overrides(self) -> list[str]:
        out = []
        if self.max_calls is not None:
            out += ["--set", f"budget.max_calls={int(self.max_calls)}"]
        if self.max_cost_usd is not None:
            out += ["--set", f"budget.max_cost_usd={float(self.max_cost_usd)!r}"]
        return out


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


def skillgit_argv() -> list[str]:
    """This installation's skillgit, without a PATH lookup (the same interpreter as the server)."""
    return [sys.executable, "-m", "skillgit"]


def _common(root: Path, config: Path | None) -> list[str]:
    return ["--repo", str(root)] + (["--config", str(config)] if config is not None else [])


def review_branch_name(requested: str | None = None) -> str:
    """A valid review branch name: `requested` (checked) or `skillgit/review/<UTC timestamp>`."""
    name = requested or REVIEW_PREFIX + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    if not _BRANCH_RE.match(name) or ".." in name or name.endswith((".", ".lock")):
        raise SkillgitError(f"invalid review branch '{name}'",
                            f"use a name under {REVIEW_PREFIX} made of letters, digits, '.', '_' and '-'")
    return name


def train_command(root: Path, config: Path | None, budget: Budget, branch: str, *,
                  max_steps: int | None = None, resume: bool = False) -> list[str]:
    """THE command an agent's training request runs (see the module contract)."""
    argv = [*skillgit_argv(), "train", *_common(root, config), *([] if resume else ["--new"]), "--json", "--events",
            "--set", f"skill.branch={branch}", *budget.require().overrides()]
    if max_steps is not None:
        argv += ["--set", f"train.max_steps={int(max_steps)}"]
    return argv


def dry_run_command(root: Path, config: Path | None, *, max_steps: int | None = None) -> list[str]:
    argv = [*skillgit_argv(), "train", *_common(root, config), "--new", "--dry-run", "--json"]
    if max_steps is not None:
        argv += ["--set", f"train.max_steps={int(max_steps)}"]
    return argv


def sleep_command(root: Path, config: Path | None, action: str, budget: Budget | None = None) -> list[str]:
    if action not in ("dry-run", "run"):
        raise SkillgitError(f"unknown sleep action '{action}'", "use dry-run or run")
    argv = [*skillgit_argv(), "sleep", action, *_common(root, config), "--json"]
    if action == "run":
        argv += (budget or Budget()).require().overrides()
    return argv


# What this installation's command line has, handed over by `skillgit.cli` when it starts the server (`use_cli`):
# this package never imports `skillgit.cli`, which imports it.
_cli_has: Callable[..., bool] | None = None


def use_cli(has_command: Callable[..., bool]) -> None:
    """Hand over the command line's `has_command(*names)` (`skillgit.cli.has_command`)."""
    global _cli_has
    _cli_has = has_command


def cli_has(*names: str) -> bool:
    """True when `skillgit <names…>` is a command of this installation (e.g. `cli_has("sleep", "run")`); False
    when no command line was handed over (a server built outside `skillgit mcp` runs no subcommand it cannot
    vouch for)."""
    return _cli_has is not None and bool(_cli_has(*names))


def prepare_review_branch(root: Path, branch: str, start: str) -> bool:
    """Create `branch` at `start` unless it exists; True when it was created. Never moves an existing branch."""
    from skillgit.errors import GitStateError
    from skillgit.store.repository import open_repository

    branch = review_branch_name(branch)
    try:
        return open_repository(root).create_branch(branch, start)
    except GitStateError as exc:
        raise SkillgitError(f"could not create the review branch '{branch}': {exc.message}",
                            "pick another review_branch name", ExitCode.GIT) from None


def run(argv: list[str], timeout_s: float, cwd: Path | None = None) -> Completed:
    """Run `argv` (see the module contract)."""
    from skillgit import process

    done = process.run(argv, cwd=cwd or Path.cwd(), env=os.environ, timeout_s=timeout_s, kill_grace_s=STOP_GRACE_S)
    return Completed(tuple(argv), done.returncode, done.stdout, done.stderr, done.seconds, timed_out=done.timed_out)
