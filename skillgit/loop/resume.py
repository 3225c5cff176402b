"""Resuming a run: which run to continue, and what git already decided that the saved progress does not say yet.

A run's progress is saved on `refs/skillgit/runs/<run>` after every decided step, in the background; a process
killed between a decision and that save leaves git one step (or one field of proposals) ahead of the progress.

Contract:
- `open_run(store, branch, digest, run_id, resume, tasks=)`: continue `run_id` (`evidence.opened` then refuses
  it if its config or tasks changed), or (with `resume`) the newest run if it is unfinished and has the same
  config digest, branch and (when both are known) tasks digest; otherwise a new run named by `new_run_id` (time and
  random: it names the run, it never seeds anything).
- `check_unmoved(store, run_id, opened)`: called once the run lock is held — raises (exit code LOCKED) when the
  run's saved progress is no longer what `open_run` read before the lock (another process trained the run in
  between, or created a run of that id): going on would count its steps and spend on top of stale totals.
- `Decided.step(step)`: the decisions git holds for `step` — a numbered step's other proposals `s<N>-p<k>` first
  (they were decided before it: `field.plan_field`), then the step itself — or None when git holds none. The
  first undecided step's leftover candidate is discarded (it is rebuilt from journaled calls) and that step is
  remembered as `fresh`; steps are decided in order (and the run lock keeps other processes out), so no later
  step is looked up in git again.
- `Decided.rival(step, name)`: in the `fresh` step only, what git holds for one of its other proposals `name`
  (decided before the restart), or None (its leftover candidate discarded).
- `found_outcome(...)`: a decision git holds, as the `StepOutcome` this process would have counted.
- `incumbent_round(store, run_id, last)`: the round that measured the tip's current val score, so that a resumed
  run reads the same samples from the journal (nothing paid twice) and goes on as it would have.
- `totals(prior, snapshot, total)`: what the run spent over all its processes — the progress an earlier process
  saved (`prior`) plus this process's ledger.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any, Mapping

from skillgit.errors import ExitCode, SkillgitError
from skillgit.loop.decide import rival_step
from skillgit.loop.evidence import recorded_tasks
from skillgit.records import RunProgress, StepOutcome
from skillgit.store import Store
from skillgit.types import Usage

Totals = tuple[Usage, dict[str, Usage], dict[str, Usage], dict[str, int]]  # total, by stage, by role, errors


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now or time.time()))
    return f"{stamp}-{random.Random().randrange(16 ** 4):04x}"


def progress_of(store: Store, run_id: str) -> RunProgress | None:
    files = store.load_run(run_id) or {}
    try:
        return RunProgress.from_dict(json.loads(files["progress.json"])) if "progress.json" in files else None
    except (ValueError, RecursionError, TypeError) as exc:  # (a run ref arrives through `pull` too)
        raise SkillgitError(f"run '{run_id}' has an unreadable progress record ({exc})",
                            f"inspect it with `git show refs/skillgit/runs/{run_id}:progress.json`") from None


def open_run(store: Store, branch: str, digest: str, run_id: str | None, resume: bool, *,
             tasks: str = "") -> tuple[str, RunProgress]:
    """(run id, its progress): see the module contract."""
    if run_id is None and resume:
        runs = store.list_runs()
        progress = progress_of(store, runs[0]) if runs else None
        if progress and progress.status != "finished" and progress.config_digest == digest \
                and progress.branch == branch \
                and (not tasks or recorded_tasks(store, runs[0]) in ("", tasks)):
            return runs[0], progress
    if run_id is not None:
        progress = progress_of(store, run_id)
        if progress is not None:
            return run_id, progress
    run_id = run_id or new_run_id()
    return run_id, RunProgress(run=run_id, config_digest=digest, branch=branch)


def check_unmoved(store: Store, run_id: str, opened: RunProgress) -> None:
    """See the module contract."""
    now = progress_of(store, run_id)
    if now is None or now.to_dict() == opened.to_dict():  # (a new run: still unsaved; a saved one: unchanged)
        return
    raise SkillgitError(f"run {run_id} moved on while this process was starting (another skillgit process trained "
                        "it in the meantime)", "run the command again: it continues from where the run is now",
                        ExitCode.LOCKED)


class Decided:
    """What git already decided for this run, asked step by step until the first undecided one (`fresh`)."""

    def __init__(self, store: Store, run_id: str, proposals: int):
        self.store = store
        self.run_id = run_id
        self.proposals = proposals
        self.caught_up = False
        self.fresh: int | str | None = None  # the first step this process found undecided

    def step(self, step: int | str) -> list[tuple[int | str, StepOutcome]] | None:
        if self.caught_up:
            return None
        found = self.store.step_record(self.run_id, step)
        if found is None:
            self.store.discard_candidate(self.run_id, step)
            self.caught_up, self.fresh = True, step
            return None
        rivals: list[tuple[int | str, StepOutcome]] = []
        if isinstance(step, int):
            for k in range(1, self.proposals + 1):
                other = self.store.step_record(self.run_id, rival_step(step, k))
                if other is not None:
                    rivals.append((rival_step(step, k), other))
        return [*rivals, (step, found)]

    def rival(self, step: int, name: str) -> StepOutcome | None:
        if self.fresh != step:
            return None
        found = self.store.step_record(self.run_id, name)
        if found is None:
            self.store.discard_candidate(self.run_id, name)
        return found


def found_outcome(run: str, step: int | str, epoch: int, seq: int, found: StepOutcome) -> StepOutcome:
    return StepOutcome(run, str(step), found.kind, epoch + 1, seq, found.verdict, 0.0, found.delta,
                       "(decided before a restart)", sha=found.sha)


def incumbent_round(store: Store, run_id: str, last: StepOutcome | None) -> str:
    """The latest decision's gate note names the round (the accepted candidate's scoring, else the incumbent's as
    compared): the progress's `last` decision, or the tip's own when this run accepted it after the progress was
    last saved; "" (the run's start) if none."""
    found: tuple[int, str] | None = None
    if last is not None and last.sha:
        side = _round_in(store.read_notes(last.sha), "val" if last.accepted else "base")
        if side is not None:
            found = (last.seq, side)
    records = store.read_notes(store.tip())
    decision = next((r for r in records if r.get("kind") == "decision" and r.get("run") == run_id), None)
    if decision is not None and (found is None or int(decision.get("seq") or 0) > found[0]):
        side = _round_in(records, "val")
        if side is not None:
            found = (int(decision.get("seq") or 0), side)
    return found[1] if found else ""


def _round_in(records: list[dict], side: str) -> str | None:
    """The round of a gate note's `val` or `base` scoring (None when there is no such scoring)."""
    for record in records:
        scored = record.get(side) if record.get("kind") == "gate" else None
        if isinstance(scored, dict):
            return str(scored.get("round", ""))
    return None


def totals(prior: RunProgress, snapshot: Mapping[str, Any], total: Usage) -> Totals:
    """(total, by stage, by role, errors by stage): `prior`'s plus this process's (`Ledger.snapshot`, `.total`)."""
    def merged(before: Mapping[str, Usage], now: Mapping[str, Any]) -> dict[str, Usage]:
        out = dict(before)
        for key, usage in now.items():
            out[key] = out.get(key, Usage()) + Usage.from_dict(usage)
        return out

    errors = dict(prior.errors)
    for stage, n in snapshot["errors"].items():
        errors[stage] = errors.get(stage, 0) + n
    return (prior.usage + total, merged(prior.usage_by_stage, snapshot["by_stage"]),
            merged(prior.usage_by_role, snapshot["by_role"]), errors)
