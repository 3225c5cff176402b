"""`skillgit train --all`: every skill of the library trained in one run, under one budget, round-robin.

Contract:
- **What trains.** Each skill of `skills:` that has its own `tasks` file trains its body in its own run
  `<run>.<skill>` — its own steps, gate, notes and `rejected/*` tags, exactly as `skillgit train --skill NAME`
  would (`library.config.overrides`), so every skill is gated on its own and never on another skill's tasks. A
  skill without `tasks` is skipped and said so (with `skillgit tasks suggest --skill NAME` as the way to get some).
- **Round-robin.** The next turn goes to the unfinished skill with the fewest decided steps; ties go by the order
  of `skills:`. A turn is one step: that skill's run continues with `train.max_steps` = its steps done + 1. A
  skill is finished at its own total (`train.num_epochs` × its batches, capped by `train.max_steps`). Round-robin
  rather than "most failures first": every skill gets its share of the budget even when one skill's failures are
  noise the gate will never accept, and the order is a pure function of what git holds, so a resumed run takes the
  same turns as an uninterrupted one.
- **One budget.** `budget.max_calls` / `max_tokens` / `max_cost_usd` bound the sum over the library's skill runs
  (what each saved, over all its processes). A turn's run gets as its budget its own spend so far plus what the
  library has left, so it stops before the call that would cross the library's budget; the library run then stops
  (exit 5), and `skillgit train --all` continues it (raise the budget first).
- **Test split.** A skill's closing test scores are read once, at its last turn (earlier turns run with
  `evaluation.eval_test` off): no skill's test split is read once per round.
- **Resume.** The skill runs on `refs/skillgit/runs/<run>.<skill>` hold the state; `<git-dir>/skillgit/library/
  <run>.json` records the library run (its skills, each skill run's own total steps — `own_total`, what `status`
  shows: the run's own `total_steps` is its last turn's cap —, status) so that `train --all` without `--run`
  continues the newest unfinished one. A kill anywhere resumes: the turn's skill run resumes itself (no decided
  step redone, no finished call paid twice — the call journal), and the turn order is re-derived from git.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from skillgit.errors import ConfigError, Interrupted, SkillgitError
from skillgit.library import config as lib_config
from skillgit.types import Usage

BUDGET_FIELDS = (("max_calls", "calls"), ("max_tokens", "total_tokens"), ("max_cost_usd", "cost_usd"))


@dataclass
class SkillState:
    name: str
    run: str
    total: int  # the steps it trains in all
    done: int = 0
    turn: int = 1  # the turn it is in (an unfinished one, to resume) or takes next: its run's max_steps then
    accepted: int = 0
    rejected: int = 0
    usage: Usage = field(default_factory=Usage)
    status: str = "pending"  # its run's status: pending (no run yet) | running | finished | stopped | failed …
    scores: dict[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """All its steps decided and its run closed (epoch end, closing scores): a run stopped at its last step's
        epoch end, say, is not."""
        return self.done >= self.total and self.status == "finished"

    def update(self, progress: Any) -> None:
        """Read its run's saved progress (over all its processes)."""
        self.done, self.accepted, self.rejected = progress.steps_done, progress.accepted, progress.rejected
        self.usage, self.status = progress.usage, progress.status
        # a closed turn: the next one; a turn that did not close (stopped, killed): that turn again
        self.turn = self.done + 1 if self.status == "finished" else max(1, progress.total_steps or self.done + 1)
        self.turn = min(self.turn, self.total)
        if progress.final_scores:
            self.scores = {k: v.to_dict() for k, v in progress.final_scores.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "steps": self.done, "total_steps": self.total, "accepted": self.accepted,
                "rejected": self.rejected, "status": "finished" if self.finished else self.status,
                "scores": self.scores, "usage": self.usage.to_dict()}


@dataclass
class LibraryRun:
    run: str
    skills: dict[str, SkillState]
    skipped: dict[str, str] = field(default_factory=dict)  # skill → why it is not trained
    status: str = "running"
    reason: str = ""
    turns: list[str] = field(default_factory=list)  # the skills whose turns this process took, in order

    @property
    def usage(self) -> Usage:
        total = Usage()
        for s in self.skills.values():
            total = total + s.usage
        return total

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "status": self.status, "reason": self.reason, "schedule": "round-robin",
                "skills": {k: v.to_dict() for k, v in self.skills.items()}, "skipped": dict(self.skipped),
                "usage": self.usage.to_dict()}


def skill_run_id(run: str, skill: str) -> str:
    return f"{run}.{skill}"


def next_turn(skills: Sequence[SkillState]) -> SkillState | None:
    """Round-robin: the unfinished skill with the lowest turn (an unclosed turn first of all, it is resumed), ties
    in `skills`' (the config's) order."""
    open_ = [s for s in skills if not s.finished]
    return min(open_, key=lambda s: s.turn) if open_ else None


def remaining(budget: Any, spent: Usage) -> dict[str, float]:
    """What the library's budget has left per configured limit (`budget.max_calls` → calls left, …)."""
    out: dict[str, float] = {}
    for key, attr in BUDGET_FIELDS:
        limit = getattr(budget, key)
        if limit is not None:
            used = spent.total_tokens if attr == "total_tokens" else getattr(spent, attr)
            out[key] = limit - used
    return out


def turn_overrides(state: SkillState, budget: Any, spent: Usage) -> list[str]:
    """The `--set` lines of one turn: one more step, the test split read only at the last, and the skill run's
    budget = its own spend + what the library has left."""
    upto = state.turn
    out = [f"train.max_steps={upto}"]
    if upto < state.total:
        out.append("evaluation.eval_test=false")
    left = remaining(budget, spent)
    own = {"max_calls": state.usage.calls, "max_tokens": state.usage.total_tokens, "max_cost_usd": state.usage.cost_usd}
    for key, value in left.items():
        limit = own[key] + value
        out.append(f"budget.{key}={limit!r}" if key == "max_cost_usd" else f"budget.{key}={int(limit)}")
    return out


def over_budget(budget: Any, spent: Usage) -> str | None:
    for key, value in remaining(budget, spent).items():
        if value <= 0:
            limit = getattr(budget, key)
            return f"budget.{key} reached for the library ({limit - value:g} ≥ {limit:g}, summed over its skills)"
    return None


# ---------------------------------------------------------------------------------------------- the record
def manifest_dir(git_dir: Path) -> Path:
    return git_dir / "skillgit" / "library"


def save_manifest(git_dir: Path, lib: LibraryRun) -> None:
    folder = manifest_dir(git_dir)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{lib.run}.json.tmp"
    data = {"run": lib.run, "status": lib.status, "reason": lib.reason, "skills": list(lib.skills),
            "totals": {s.run: s.total for s in lib.skills.values()}, "updated": time.time()}
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, folder / f"{lib.run}.json")


def save_totals(git_dir: Path, run: str, totals: dict[str, int]) -> None:
    """Record the own total steps of skill runs that another round-robin owns (a library night's
    `sleep-<date>.<skill>` runs), for `own_total`; such a record is never a library run to continue."""
    folder = manifest_dir(git_dir)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{run}.json.tmp"
    tmp.write_text(json.dumps({"run": run, "kind": "totals", "status": "finished", "totals": totals}, indent=2),
                   encoding="utf-8")
    os.replace(tmp, folder / f"{run}.json")


def own_total(git_dir: Path, run: str) -> int | None:
    """The steps a library skill's run `<library run>.<skill>` trains in all (its run's own `total_steps` is the
    last turn's cap), from the library run's record; None for any other run."""
    lib, _, skill = run.rpartition(".")
    path = manifest_dir(git_dir) / f"{lib}.json"
    if not lib or not skill or not path.is_file():
        return None
    try:
        total = json.loads(path.read_text(encoding="utf-8")).get("totals", {}).get(run)
    except (OSError, ValueError, AttributeError):
        return None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def newest_unfinished(git_dir: Path) -> str | None:
    """The newest library run not finished (by its record's time), or None."""
    found: list[tuple[float, str]] = []
    folder = manifest_dir(git_dir)
    for path in folder.glob("*.json") if folder.is_dir() else ():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("status") != "finished" and data.get("kind", "library") == "library" \
                and isinstance(data.get("run"), str):
            found.append((float(data.get("updated") or 0), data["run"]))
    return max(found)[1] if found else None


def new_run_id() -> str:
    from skillgit.loop.resume import new_run_id as stamp

    return f"lib-{stamp()}"


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class Turn:
    """What one turn needs from the outside world (the CLI wires it): open the skill's project with `overrides`
    and train its run `run` for one more step, returning the loop's `RunResult` and the run's saved progress."""

    train: Callable[[str, list[str], str], tuple[Any, Any]]  # (skill, overrides, run id) -> (RunResult, RunProgress)
    on_turn: Callable[[SkillState], None] = lambda s: None


def plan(root: Path, cfg: Any, overrides: list[str], run: str, open_project: Callable[[list[str]], Any]
         ) -> LibraryRun:
    """The library run `run`: each trainable skill's state read from its run's saved progress."""
    from skillgit.loop.resume import progress_of
    from skillgit.session import open_session

    found = lib_config.entries(cfg, root)
    if not found:
        raise ConfigError("--all: skillgit.yaml has no `skills:` section",
                          "list the library's skills under `skills:` (name → path, tasks, triggers)")
    skipped = {n: "no `tasks` of its own (draft some: skillgit tasks suggest --skill " + n + ")"
               for n, e in found.items() if not e.tasks}
    states: dict[str, SkillState] = {}
    for name, e in found.items():
        if name in skipped:
            continue
        project = open_project(lib_config.overrides(e) + overrides)
        session = open_session(project, roles=())  # store and splits only: no backend is built
        c = project.config.train
        total = c.num_epochs * max(1, math.ceil(len(session.splits.train) / c.batch_size))  # = Trainer.total_steps
        total = min(total, c.max_steps) if c.max_steps is not None else total
        state = SkillState(name, skill_run_id(run, name), total)
        progress = progress_of(session.store, state.run)
        if progress is not None:
            state.update(progress)
        states[name] = state
    if not states:
        raise ConfigError("--all: no skill of `skills:` has its own `tasks`",
                          "give each skill to train `skills.<name>.tasks: tasks/<name>.jsonl` (draft them with "
                          "`skillgit tasks suggest --skill NAME`)")
    return LibraryRun(run, states, skipped)


def run_all(lib: LibraryRun, budget: Any, turn: Turn, git_dir: Path) -> LibraryRun:
    """Take turns until every skill is finished or the library's budget is spent (see the module contract)."""
    lib.status, lib.reason = "running", ""
    save_manifest(git_dir, lib)
    try:
        while True:
            state = next_turn(list(lib.skills.values()))
            if state is None:
                lib.status, lib.reason = "finished", "every skill trained all its steps"
                break
            stop = over_budget(budget, lib.usage)
            if stop:
                lib.status, lib.reason = "stopped", stop
                break
            turn.on_turn(state)
            lib.turns.append(state.name)
            result, progress = turn.train(state.name, turn_overrides(state, budget, lib.usage), state.run)
            state.update(progress)
            if result.scores:
                state.scores = result.scores
            if result.status != "finished":
                lib.status, lib.reason = "stopped", f"{state.name}: {result.reason}"
                break
    except BaseException as exc:
        lib.status = "interrupted" if isinstance(exc, (Interrupted, KeyboardInterrupt)) else "failed"
        lib.reason = exc.message if isinstance(exc, SkillgitError) else type(exc).__name__
        save_manifest(git_dir, lib)
        raise
    save_manifest(git_dir, lib)
    return lib
