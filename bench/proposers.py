"""Proposers: reflect vs the agent teacher vs both (`optimizer.proposers`) at an equal call budget, simulated world.

    python bench/proposers.py [--quick] [--seeds 5] [--budget 2500] [--latency 0.4] [--workers 300] [--out PATH]

Each run is the demo project of the simulated text world (`skillgit demo`'s config, split, tasks and single-file
SKILL.md for the seed) with the simulated agent teacher (`model.teacher_backend: agent`, preset `simulated`:
`skillgit demo --agentic --teacher agent`'s teacher; its chat side, the simulated chat teacher, answers `reflect`'s
questions, so every arm has the same teacher) and one arm's `optimizer.proposers`: `[reflect]`, `[agent]` or
`[reflect, agent]`, and no epoch-end work (slow update, meta skill and meta reflect are the chat teacher's, in every
arm alike: with them on, the agent arm gained val from epoch-end rewrites with no accepted agent edit, which
measured them, not it). Every arm trains until `budget.max_calls` stops it (epochs enough that no arm runs out of
steps first): the budget counts every model call, the student's rollouts, the gate's val scorings and the teacher's
calls (the agent's step is one call). The val gain is the gate metric on val of the final skill minus the seed
skill's first scoring; the test gain is scored after the run, outside the budget, on the sealed test split (one
sample per item, the seed and final skills), the same way for every arm.

**Waves** are counted on the run's own call timeline (every student and teacher call wrapped with its start and
end; the simulated world sleeps `--latency` per call, the agent teacher runs as its own process): a call's wave is
1 + the largest wave among the calls that ended before it started (bench/proposals.py `wave_levels`), so the
proposers of one step side by side cost one wave per stage, not two. A student call of a parallel batch starts
when the loop's executor released the batch (`ReleasingExecutor`), not when a worker thread picked it up: on a
loaded machine the pick-ups of one batch spread over more than a call's latency, and timed from them one wave
counted as two.

Per arm, over seeds (the same seeds for every arm; 95 % Student-t intervals of the mean over seeds): accepted edits
(edits applied by accepted numbered steps), accepted steps, val gain, test gain, calls, waves, and the
paired difference of each gain to the reflect arm on the same seed. The bench checks its own validity and says so
(`checks`, `valid`): every run stopped at the call budget (not by running out of steps), the budgets spent are
equal up to the calls in flight when the budget was reached (they finish; `max_in_flight`), the seeds' task sets are
distinct, every arm of a seed started from the same seed skill score, and no student wave was split by late thread
pick-ups (`overlapping_waves`, counted by `split_waves`: 0, the wave count is clean). Progress on stderr, the table
on stdout; writes bench/results/proposers.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ablations import mean_ci  # noqa: E402
from benchlib import git, say, table, workdir, write_result  # noqa: E402
from proposals import overlapping_waves, wave_levels  # noqa: E402

from skillgit.cli.demo import AGENT_TEACHER, create_project  # noqa: E402
from skillgit.executor import ThreadExecutor  # noqa: E402
from skillgit.llm import factory  # noqa: E402
from skillgit.loop import gate  # noqa: E402
from skillgit.project import open_project  # noqa: E402
from skillgit.session import build_trainer, open_session  # noqa: E402

ARMS = {"reflect": "[reflect]", "agent": "[agent]", "both": "[reflect, agent]"}


_released = threading.local()  # when the executor released the parallel batch the running call belongs to


class ReleasingExecutor(ThreadExecutor):
    """The loop's thread executor, marking each call of a parallel batch with the batch's release time: its
    calls depend on nothing that ended after it, however late a loaded machine lets a worker thread pick one up
    (timed from the thread's pick-up, a batch launched over more than a call's latency split into two waves)."""

    def map(self, fn, items, *, workers):
        if workers <= 1 or len(items) <= 1 or len(items) > workers:  # sequential, or queued behind a full pool:
            return super().map(fn, items, workers=workers)  # a call waits for others, its own start is right
        released = time.monotonic()

        def marked(item):
            _released.at = released
            try:
                return fn(item)
            finally:
                _released.at = None

        return super().map(marked, items, workers=workers)


class Timeline:
    """Every call's (start, end, role), thread-safe; `start` is its batch's release time when it has one
    (`ReleasingExecutor`), else when it began."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def timed(self, role: str, call):
        began = time.monotonic()
        start = getattr(_released, "at", None) or began
        try:
            return call()
        finally:
            with self._lock:
                self.calls.append({"start": start, "began": began, "end": time.monotonic(), "role": role})


class _Timed:
    def __init__(self, inner, timeline: Timeline, role: str):
        self.inner, self.timeline, self.role = inner, timeline, role

    @property
    def id(self) -> str:
        return self.inner.id

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("inner", "timeline", "role"):
            raise AttributeError(name)
        return getattr(self.inner, name)


class TimedTeacher(_Timed):
    def complete(self, request):
        return self.timeline.timed("teacher", lambda: self.inner.complete(request))


class TimedStudent(_Timed):
    def run(self, skill, item, sample=0):
        return self.timeline.timed("student", lambda: self.inner.run(skill, item, sample))


@dataclass
class Run:
    arm: str
    seed: int
    tasks_digest: str
    budget: int
    calls: int
    stopped_by_budget: bool
    reason: str
    steps: int
    accepted_steps: int
    accepted_edits: int
    val_seed: float
    val_final: float
    test_seed: float | None
    test_final: float | None
    waves: int
    max_in_flight: int  # the most calls running at once: how far a budget can be overshot
    overlapping_waves: int
    proposers: dict[str, Any]
    seconds: float

    @property
    def val_gain(self) -> float:
        return self.val_final - self.val_seed

    @property
    def test_gain(self) -> float | None:
        return None if self.test_seed is None or self.test_final is None else self.test_final - self.test_seed


def make_project(folder: Path, seed: int) -> None:
    """The demo project for `seed` with the simulated agent teacher."""
    create_project(folder, seed)
    config = folder / "skillgit.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "  teacher_backend: simulated\n  teacher_model: sim-teacher\n", AGENT_TEACHER), encoding="utf-8")
    git(folder, "commit", "-qam", "bench: the simulated agent teacher")


def run_one(folder: Path, seed: int, arm: str, budget: int, latency: float, workers: int) -> Run:
    make_project(folder, seed)
    overrides = [f"optimizer.proposers={ARMS[arm]}", f"budget.max_calls={budget}", "train.num_epochs=200",
                 "evaluation.eval_test=false", f"model.simulated.latency_s={latency}", f"env.workers={workers}",
                 # no epoch-end work (slow update, meta skill, meta reflect: the chat teacher's): the proposers alone
                 # edit the skill
                 "optimizer.use_slow_update=false", "optimizer.use_meta_skill=false",
                 "optimizer.use_meta_reflect=false",
                 f"gradient.analyst_workers={workers}", f"model.teacher.concurrency={workers}",
                 f"model.student.concurrency={workers}"]
    project = open_project(folder, None, overrides)
    timeline = Timeline()
    cfg = project.config
    teacher = TimedTeacher(factory.build_teacher(cfg, project.root), timeline, "teacher")
    student = TimedStudent(factory.build_student(cfg, project.root), timeline, "student")
    # (an injected student runs in this process: the session then has no executor, and the loop's thread pool
    # would run it; the bench hands it the marking one, which runs in this process too)
    session = dataclasses.replace(open_session(project, teacher=teacher, student=student),
                                  executor=ReleasingExecutor())
    trainer = build_trainer(session, run_id=f"proposers-{arm}", resume=False)
    started = time.monotonic()
    result = trainer.train()
    seconds = time.monotonic() - started
    calls = trainer.progress.usage.calls
    levels = wave_levels(timeline.calls)
    # the test split, after the run and outside its budget: seed and final skill, one sample per item
    session.ledger.budget_check = None
    sealed = gate.Evaluator(session.student(), session.scorer, {"test": list(session.splits.test)}, workers=workers)
    progress = trainer.progress
    tests = {}
    for name, rev in (("seed", progress.seed_rev), ("final", session.store.tip())):
        tests[name] = round(sealed.score(session.store.read_skill(rev), "test").mean("hard", 0.5), 4) \
            if session.splits.test else None
    edits = sum(len(e.edits) for e in session.store.history(trainer.run_id)
                if e.verdict == "accepted" and str(e.step).isdigit())
    digest = hashlib.sha256((folder / "tasks.jsonl").read_bytes()).hexdigest()[:12]
    return Run(arm=arm, seed=seed, tasks_digest=digest, budget=budget, calls=calls,
               stopped_by_budget=result.status == "stopped" and "budget.max_calls" in result.reason,
               reason=result.reason, steps=sum(1 for s in range(1, progress.next_step)),
               accepted_steps=sum(s.accepted for s in progress.proposers.values()), accepted_edits=edits,
               # the seed skill's first val scoring (the run's start: the same samples in every arm)
               val_seed=progress.seed_score or 0.0, val_final=result.scores["final"]["val"],
               test_seed=tests["seed"], test_final=tests["final"], waves=max((w for _, w in levels), default=0),
               max_in_flight=in_flight(timeline.calls), overlapping_waves=split_waves(timeline.calls),
               proposers={k: v.to_dict() for k, v in progress.proposers.items()}, seconds=round(seconds, 1))


def split_waves(calls: list[dict[str, Any]]) -> int:
    """Student waves split by late thread pick-ups: `overlapping_waves` counting only waves whose first call has no
    batch release mark (`ReleasingExecutor`); two proposers' released batches side by side are real concurrency."""
    return overlapping_waves(calls, unreleased_only=True)


def in_flight(calls: list[dict[str, Any]]) -> int:
    """The most calls of the timeline running at the same moment (from when each began)."""
    edges = sorted([(c.get("began", c["start"]), 1) for c in calls] + [(c["end"], -1) for c in calls],
                   key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def summarise(runs: list[Run], reference: dict[int, Run]) -> dict[str, Any]:
    fmean = lambda xs: round(statistics.fmean(xs), 4) if xs else None  # noqa: E731
    tests = [r.test_gain for r in runs if r.test_gain is not None]
    row: dict[str, Any] = {
        "arm": runs[0].arm, "seeds": len(runs), "accepted_edits": fmean([r.accepted_edits for r in runs]),
        "accepted_edits_ci": mean_ci([r.accepted_edits for r in runs]).to_dict(),
        "accepted_steps": fmean([r.accepted_steps for r in runs]), "steps": fmean([r.steps for r in runs]),
        "val_gain_ci": mean_ci([r.val_gain for r in runs]).to_dict(),
        "test_gain_ci": mean_ci(tests).to_dict() if tests else None,
        "calls": fmean([r.calls for r in runs]), "waves": fmean([r.waves for r in runs]),
        "waves_ci": mean_ci([r.waves for r in runs]).to_dict(), "seconds": fmean([r.seconds for r in runs])}
    pairs = [(r, reference[r.seed]) for r in runs if r.seed in reference]
    if runs[0].arm != "reflect" and pairs:
        row["val_gain_vs_reflect_ci"] = mean_ci([a.val_gain - b.val_gain for a, b in pairs]).to_dict()
        both = [(a.test_gain, b.test_gain) for a, b in pairs if a.test_gain is not None and b.test_gain is not None]
        row["test_gain_vs_reflect_ci"] = mean_ci([a - b for a, b in both]).to_dict() if both else None
    return row


def checks(runs: list[Run]) -> dict[str, bool]:
    by_seed: dict[int, list[Run]] = {}
    for r in runs:
        by_seed.setdefault(r.seed, []).append(r)
    return {
        "every_run_stopped_at_the_call_budget": all(r.stopped_by_budget for r in runs),
        # a budget stops before the call that would cross it; the calls already in flight finish
        "budgets_spent_equal_up_to_the_calls_in_flight": all(r.budget <= r.calls <= r.budget + r.max_in_flight
                                                              for r in runs),
        "seeds_distinct": len({r.tasks_digest for r in runs}) == len(by_seed),
        "same_seed_skill_score_per_seed": all(len({r.val_seed for r in rs}) == 1 for rs in by_seed.values()),
        "waves_clean": all(r.overlapping_waves == 0 for r in runs),
    }


def _ci(ci: dict | None, spec: str = "+.3f") -> str | None:
    return None if not ci else f"{format(ci['mean'], spec)} [{format(ci['lo'], spec)}, {format(ci['hi'], spec)}]"


COLUMNS = [("arm", "proposers", ""), ("edits", "accepted edits [95% CI]", ""), ("accepted_steps", "acc. steps", ".1f"),
           ("steps", "steps", ".1f"), ("val", "val gain [95% CI]", ""), ("test", "test gain [95% CI]", ""),
           ("vs", "val gain − reflect's", ""), ("calls", "calls", ".0f"), ("waves", "waves", ".1f")]
TEXT_ONLY = ("edits", "val", "test", "vs")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--budget", type=int, default=2500, help="budget.max_calls of every run (all model calls)")
    p.add_argument("--arms", default="reflect,agent,both", help="comma-separated (reflect first: the reference)")
    p.add_argument("--latency", type=float, default=0.4, help="seconds per simulated call (for the wave count)")
    p.add_argument("--workers", type=int, default=300, help="every parallelism knob: a whole wave in flight at once")
    p.add_argument("--out", "--json", dest="out", type=Path, nargs="?", default=None,
                   help="results file (default bench/results/proposers.json)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    a = p.parse_args(argv)
    if a.quick:
        a.seeds, a.budget, a.latency = 1, 450, 0.02
    arms = a.arms.split(",")
    load_before = os.getloadavg()
    runs: list[Run] = []
    with workdir("proposers", a.keep) as tmp:
        for seed in range(a.seeds):
            for arm in arms:
                run = run_one(tmp / f"s{seed}-{arm}", seed, arm, a.budget, a.latency, a.workers)
                runs.append(run)
                say(f"proposers: {arm} seed {seed}: val {run.val_seed:.3f} → {run.val_final:.3f}, test "
                    f"{run.test_seed} → {run.test_final}, {run.accepted_edits} edits, {run.calls} calls, "
                    f"{run.waves} waves, {run.seconds:.0f} s ({run.reason})")
    reference = {r.seed: r for r in runs if r.arm == "reflect"}
    rows = [summarise([r for r in runs if r.arm == arm], reference) for arm in arms]
    for row in rows:
        row.update(edits=_ci(row["accepted_edits_ci"], ".1f"), val=_ci(row["val_gain_ci"]),
                   test=_ci(row["test_gain_ci"]), vs=_ci(row.get("val_gain_vs_reflect_ci")))
    verdict = checks(runs)
    valid = all(verdict.values())
    data = {"config": {"seeds": a.seeds, "budget": a.budget, "arms": {k: ARMS[k] for k in arms}, "latency_s": a.latency,
                       "workers": a.workers, "quick": a.quick,
                       "waves": "longest chain of calls each starting after the previous ended (run's own timeline)",
                       "ci": "95 % Student-t interval of the mean over seeds (df = seeds - 1)"},
            "load": {"before": [round(x, 2) for x in load_before],
                     "after": [round(x, 2) for x in os.getloadavg()]},
            "checks": verdict, "valid": valid,
            "rows": [{k: v for k, v in row.items() if k not in TEXT_ONLY} for row in rows],
            "runs": [{**asdict(r), "val_gain": round(r.val_gain, 4),
                      "test_gain": None if r.test_gain is None else round(r.test_gain, 4)} for r in runs]}
    write_result("proposers", data, a.out)
    print(table(rows, COLUMNS))
    failed = [k for k, ok in verdict.items() if not ok]
    print("valid: every check passed" if valid else f"NOT VALID: {', '.join(failed)} (see checks in the JSON)")
    return data


if __name__ == "__main__":
    main()
