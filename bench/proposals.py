"""Parallel proposals: val gain per model call and per sequential wave for `optimizer.proposals` P = 1, 2, 4.

    python bench/proposals.py [--quick] [--seeds 5] [--steps 9] [--latency 2.5] [--teacher-latency 0.5]
                              [--workers 400] [--out PATH]

Each run is the demo project of the simulated text world (`skillgit demo`'s config and split; the final test
scoring off, it is not training) trained for `--steps` steps with one P, both roles served by the latency server
(bench/simserver.py, the same world seed as the project) through the real openai backend, every student call taking
`--latency` seconds and every teacher call `--teacher-latency`, every parallelism knob (env.workers,
gradient.analyst_workers, both roles' concurrency) at `--workers`, enough for a whole stage of P proposals to be in
flight at once (P = 4 gates 4 × 30 val items × 3 repeats = 360 calls together). Launching 360 calls takes the
client ~1 s of CPU on the 2-core machine, so a student call must last longer than that for one wave to stay one
wave (`overlapping_waves` in the JSON counts the waves where it did not; it must be 0); teacher waves are at most
a few dozen calls, so they can be shorter.

**Sequential waves** are counted on the server's call timeline: a call's wave is 1 + the largest wave among the
calls that ended before it started (the longest chain of calls each starting after the previous one ended — the
critical path of benchlib, counted in calls; with enough parallelism a call waits only for a result it needs,
so the chain is the sequence of waves the run cannot avoid; with one latency for every call it is the critical
path ÷ latency). The waves at a decision are the largest wave among the calls that ended before the decision was
emitted; the run's waves include the seed skill's opening val scoring and the epoch ends (slow update, meta skill,
meta reflect), the same for every P. The server runs with a listen backlog of 1,024 (`spawn_server`): with
socketserver's 5, a wave that opens hundreds of connections has SYNs dropped and resent 1–3 s later.

Per P (mean over seeds, the same seeds for every P): val score of the seed and final skill (gate metric with
3 repeats, what the gate compares), model calls and waves per run and per numbered step, val gain per 1,000
calls and per 10 waves, and *waves to reach P = 1's final val score*: per seed, the waves at the first decision
after which the branch's val score is at least P = 1's final val on that seed (mean over the seeds that reached
it, and how many did); the same for 90 % of P = 1's val gain on that seed (near the ceiling a single val item
decides whether a final score is reached), with the paired difference to P = 1 on the same seed and its 95 %
t-interval. Progress on stderr, the table on stdout; writes bench/results/proposals.json.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

import simserver  # noqa: E402
from ablations import mean_ci  # noqa: E402
from benchlib import critical_path, say, table, workdir, write_result  # noqa: E402

from skillgit.cli.demo import create_project  # noqa: E402
from skillgit.project import open_project  # noqa: E402
from skillgit.session import build_trainer, open_session  # noqa: E402

LOSER_MARK = "-p"  # a step's losing proposal is decided as `sN-pK`


@dataclass(frozen=True)
class Decision:
    """One decided candidate as the branch saw it: `val` is the branch's val score after it."""

    step: str
    verdict: str
    val: float
    waves: int
    calls: int


@dataclass
class Run:
    proposals: int
    seed: int
    val_seed: float
    val_final: float
    calls: int
    waves: int
    critical_path_s: float
    overlapping_waves: int
    steps: int
    accepted: int
    seconds: float
    decisions: list[Decision] = field(default_factory=list)

    def first_reaching(self, target: float) -> Decision | None:
        if self.val_seed >= target - 1e-9:
            return Decision("seed", "", self.val_seed, 0, 0)
        return next((d for d in self.decisions if d.val >= target - 1e-9), None)


def wave_levels(calls: Sequence[dict]) -> list[tuple[float, int]]:
    """(end, wave) of every call: wave = 1 + the largest wave among calls that ended at or before its start
    (O(n log n); `benchlib.critical_path` is the same chain, counted there in O(n²))."""
    out: list[tuple[float, int]] = []
    pending: list[tuple[float, int]] = []  # (end, wave) of calls not yet known to have ended before the current start
    done = 0  # the largest wave among calls that ended before the current start
    for c in sorted(calls, key=lambda c: c["start"]):
        while pending and pending[0][0] <= c["start"]:
            done = max(done, heapq.heappop(pending)[1])
        wave = done + 1
        heapq.heappush(pending, (c["end"], wave))
        out.append((c["end"], wave))
    return out


def overlapping_waves(calls: Sequence[dict], *, unreleased_only: bool = False) -> int:
    """Student waves w + 1 with a student call that started before the last student call of wave w ended. Student
    calls always wait for a whole stage (rollout, gate, slow-update rollouts), so such an overlap means one wave's
    calls were launched over more than a call's latency and the chain counted part of them as an extra wave; 0 means
    the count is clean. (Teacher waves overlap legitimately: one side's merge may start while the other side's
    reflect still runs.) With `unreleased_only`, only waves whose first call was timed from when it began (its
    `start` is its `began`: no batch release mark, bench/proposers.py) count: a released batch overlapping another
    is real concurrency, not a split."""
    order = sorted(calls, key=lambda c: c["start"])
    first: dict[int, dict] = {}
    last_end: dict[int, float] = {}
    for c, (end, w) in zip(order, wave_levels(calls)):
        if c.get("role") == "student":
            if w not in first or c["start"] < first[w]["start"]:
                first[w] = c
            last_end[w] = max(last_end.get(w, end), end)
    return sum(first[w + 1]["start"] < last_end[w] - 1e-6
               and (not unreleased_only or first[w + 1]["start"] == first[w + 1].get("began", first[w + 1]["start"]))
               for w in last_end if w + 1 in first)


def waves_by(levels: list[tuple[float, int]], when: float) -> int:
    return max((w for end, w in levels if end <= when), default=0)


BACKLOG = 1024


def spawn_server(s: simserver.Settings) -> simserver.Spawned:
    """`simserver.spawn` with a listen backlog of BACKLOG instead of socketserver's 5: a wave of hundreds of calls
    opens hundreds of connections at once, and with a backlog of 5 the kernel drops the surplus SYNs, which the
    client resends after 1 s or 3 s — calls of one wave would start seconds apart and count as extra waves."""
    boot = (f"import socketserver, sys; socketserver.TCPServer.request_queue_size = {BACKLOG}; "
            f"sys.path.insert(0, {str(Path(simserver.__file__).parent)!r}); import simserver; "
            "simserver.main(sys.argv[1:])")
    args = [sys.executable, "-c", boot, "--port", "0", "--latency", str(s.latency), "--seed", str(s.seed),
            "--lifetime", str(s.lifetime), "--idle", str(s.idle), "--max-connections", str(s.max_connections),
            "--world", json.dumps(s.world)]
    if s.teacher_latency is not None:
        args += ["--teacher-latency", str(s.teacher_latency)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("http://"):
        proc.kill()
        raise RuntimeError(f"simserver did not start (said {line!r})")
    return simserver.Spawned(proc, line)


def server_overrides(base_url: str, workers: int) -> list[str]:
    """Both roles through the latency server with every parallelism knob at `workers` (benchlib.server_config,
    as dotted overrides)."""
    out = ["model.teacher_backend=openai", "model.teacher_model=sim-teacher", "model.student_backend=openai",
           "model.student_model=sim-student", f"gradient.analyst_workers={workers}", f"env.workers={workers}"]
    for role in ("teacher", "student"):
        out += [f"model.{role}.base_url={base_url}", f"model.{role}.concurrency={workers}",
                f"model.{role}.max_retries=2", f"model.{role}.timeout_s=120"]
    return out


def run_one(server, folder: Path, seed: int, proposals: int, steps: int, workers: int) -> Run:
    create_project(folder, seed)
    project = open_project(folder, None, [f"train.max_steps={steps}", f"optimizer.proposals={proposals}",
                                          "evaluation.eval_test=false", *server_overrides(server.base_url, workers)])
    session = open_session(project)
    marks: list[tuple[float, Any]] = []
    trainer = build_trainer(session, run_id="proposals", resume=False,
                            on_event=lambda e: marks.append((time.monotonic(), e)) if e.kind == "step_end" else None)
    server.reset()
    started = time.monotonic()
    result = trainer.train()
    seconds = time.monotonic() - started
    timeline = server.timeline()
    levels = wave_levels(timeline)
    val = result.scores["seed"]["val"]
    decisions = []
    for when, event in marks:
        outcome = event.outcome
        if outcome.accepted:
            val = outcome.score_after
        decisions.append(Decision(outcome.step, outcome.verdict.value, round(val, 4), waves_by(levels, when),
                                  int(event.usage_total.get("calls", 0))))
    return Run(proposals=proposals, seed=seed, val_seed=result.scores["seed"]["val"],
               val_final=result.scores["final"]["val"], calls=len(timeline),
               waves=max((w for _, w in levels), default=0), critical_path_s=round(critical_path(timeline)[0], 3),
               overlapping_waves=overlapping_waves(timeline),
               steps=sum(d.step.isdigit() for d in decisions), accepted=result.accepted, seconds=round(seconds, 1),
               decisions=decisions)


def step_waves(run: Run) -> list[int]:
    """Waves spent by each numbered step: from the decision before it to its own (its losers' included)."""
    out, last = [], 0
    for d in run.decisions:
        if d.step.isdigit():
            out.append(d.waves - last)
        if LOSER_MARK not in d.step:
            last = d.waves
    return out


def summarise(runs: list[Run], reference: dict[int, Run]) -> dict[str, Any]:
    """Per-P figures (module doc); `reference`: seed → the P = 1 run on that seed."""
    fmean = lambda xs: round(statistics.fmean(xs), 4) if xs else None  # noqa: E731
    gains = [r.val_final - r.val_seed for r in runs]
    pairs = [(r, reference[r.seed]) for r in runs if r.seed in reference]
    hit = [d for r, ref in pairs if (d := r.first_reaching(ref.val_final)) is not None]
    # near the ceiling one val item (1/30) decides whether a final is "reached"; 90 % of P = 1's gain is a softer bar
    near: list[tuple[Decision, Decision]] = []
    for r, ref in pairs:
        bar = r.val_seed + 0.9 * (ref.val_final - r.val_seed)
        mine, theirs = r.first_reaching(bar), ref.first_reaching(bar)
        if mine is not None and theirs is not None:
            near.append((mine, theirs))
    return {
        "proposals": runs[0].proposals, "seeds": len(runs),
        "val_seed": fmean([r.val_seed for r in runs]), "val_final": fmean([r.val_final for r in runs]),
        "val_gain": fmean(gains), "val_gain_ci": mean_ci(gains).to_dict(),
        "calls": fmean([r.calls for r in runs]), "waves": fmean([r.waves for r in runs]),
        "waves_per_step": fmean([w for r in runs for w in step_waves(r)]),
        "calls_per_step": fmean([(r.calls / r.steps) for r in runs if r.steps]),
        "gain_per_1k_calls": fmean([1000 * g / r.calls for g, r in zip(gains, runs)]),
        "gain_per_10_waves": fmean([10 * g / r.waves for g, r in zip(gains, runs)]),
        "waves_to_p1_final": fmean([d.waves for d in hit]), "calls_to_p1_final": fmean([d.calls for d in hit]),
        "reached_p1_final": len(hit), "waves_to_p1_90": fmean([d.waves for d, _ in near]),
        "calls_to_p1_90": fmean([d.calls for d, _ in near]), "reached_p1_90": len(near),
        # paired with P = 1 on the same seed: (this P's waves/calls to the bar) − (P = 1's), 95 % t-interval
        "waves_to_p1_90_vs_p1_ci": mean_ci([a.waves - b.waves for a, b in near]).to_dict() if near else None,
        "calls_to_p1_90_vs_p1_ci": mean_ci([a.calls - b.calls for a, b in near]).to_dict() if near else None,
        "accepted": fmean([r.accepted for r in runs]),
        "overlapping_waves": sum(r.overlapping_waves for r in runs),
        "seconds": fmean([r.seconds for r in runs]),
    }


COLUMNS = [("proposals", "P", "d"), ("val_seed", "val seed", ".3f"), ("val_final", "val final", ".3f"),
           ("gain_ci", "val gain [95% CI]", ""), ("calls", "calls", ".0f"), ("waves", "waves", ".1f"),
           ("waves_per_step", "waves/step", ".2f"), ("gain_per_1k_calls", "gain/1k calls", ".3f"),
           ("gain_per_10_waves", "gain/10 waves", ".3f"), ("waves_to_p1_final", "waves to P1 final", ".1f"),
           ("reached", "reached", ""), ("waves_to_p1_90", "waves to 90% P1 gain", ".1f"), ("reached90", "reached", ""),
           ("vs_p1", "Δ waves vs P1 [95% CI]", "")]


TEXT_ONLY = ("gain_ci", "reached", "reached90", "vs_p1")  # table cells, not JSON


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=9)
    p.add_argument("--proposals", default="1,2,4", help="comma-separated P values (the first is the reference)")
    p.add_argument("--latency", type=float, default=2.5, help="seconds per student call (and teacher call, unless "
                   "--teacher-latency)")
    p.add_argument("--teacher-latency", type=float, default=0.5, help="seconds per teacher call")
    p.add_argument("--workers", type=int, default=400, help="every parallelism knob (and the server's connections)")
    p.add_argument("--out", "--json", dest="out", type=Path, nargs="?", default=None,
                   help="results file (default bench/results/proposals.json)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--rescore", type=Path, default=None, metavar="JSON",
                   help="recompute the figures from the runs of an earlier results file (no training)")
    a = p.parse_args(argv)
    if a.quick:
        a.seeds, a.steps, a.proposals, a.latency, a.teacher_latency, a.workers = 1, 2, "1,2", 0.05, None, 200
    ps = [int(x) for x in a.proposals.split(",")]
    config = {"seeds": a.seeds, "steps": a.steps, "proposals": ps, "latency_s": a.latency,
              "teacher_latency_s": a.latency if a.teacher_latency is None else a.teacher_latency,
              "workers": a.workers, "quick": a.quick}
    runs: dict[int, list[Run]] = {P: [] for P in ps}
    if a.rescore is not None:
        old = json.loads(a.rescore.read_text())
        config, ps = old["config"], old["config"]["proposals"]
        runs = {P: [Run(**{**r, "decisions": [Decision(**d) for d in r["decisions"]]}) for r in old["runs"][str(P)]]
                for P in ps}
    else:
        with workdir("proposals", a.keep) as tmp:
            for seed in range(a.seeds):
                settings = simserver.Settings(latency=a.latency, teacher_latency=a.teacher_latency, seed=seed,
                                              max_connections=a.workers + 16, lifetime=6 * 3600, idle=600)
                with spawn_server(settings) as server:
                    for P in ps:
                        run = run_one(server, tmp / f"s{seed}-p{P}", seed, P, a.steps, a.workers)
                        runs[P].append(run)
                        say(f"proposals: P={P} seed {seed}: val {run.val_seed:.3f} → {run.val_final:.3f}, "
                            f"{run.calls} calls, {run.waves} waves, {run.seconds:.0f} s")
    reference = {r.seed: r for r in runs[ps[0]]}
    rows = [summarise(runs[P], reference) for P in ps]
    for row in rows:
        ci = row["val_gain_ci"]
        row["gain_ci"] = f"{ci['mean']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}]"
        row["reached"] = f"{row['reached_p1_final']}/{row['seeds']}"
        row["reached90"] = f"{row['reached_p1_90']}/{row['seeds']}"
        vs = row["waves_to_p1_90_vs_p1_ci"]
        row["vs_p1"] = f"{vs['mean']:+.1f} [{vs['lo']:+.1f}, {vs['hi']:+.1f}]" if vs else None
    data = {"config": {**config,
                       "waves": "longest chain of calls each starting after the previous ended (server timeline)",
                       "ci": "95 % Student-t interval of the mean over seeds (df = seeds - 1)"},
            "rows": [{k: v for k, v in row.items() if k not in TEXT_ONLY} for row in rows],
            "runs": {str(P): [asdict(r) for r in rs] for P, rs in runs.items()}}
    write_result("proposals", data, a.out)
    print(table(rows, COLUMNS))
    return data


if __name__ == "__main__":
    main()
