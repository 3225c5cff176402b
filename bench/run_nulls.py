"""Run-level false accepts and power, per way of spending α across a run's steps (`evaluation.across_steps`).

Each gate is a test at α, so a run whose every step proposes a no-better candidate (the resampling null) still
accepts some; `fwer` and `fdr` (skillgit/loop/spending.py) spend α over the run instead. With the default gate at
30 val items, per mode: how many runs of S steps accept at least one null, and how many accepts a run makes; and
(`--power`) how often a real gain proposed at step k of a run is still accepted.

Method. As `gate_calibration.py` (whose students and scorings it reuses): a student is a pass rate per val item;
each step scores the incumbent again and a candidate in the step's round, and the real `gate.decide` judges them
with the incumbent's previous scoring as the null control and the mode's α for the run's t-th test
(`spending.at`, exactly as a run derives it: the test number and the earlier accepts), as a run chains them
(after an accept the candidate's scoring is the incumbent's previous one).
- Null runs: every candidate is the incumbent's rates again; each run draws its own rates and goes 100 steps; the
  share of runs with an accept within the first S steps (S = 1, 10, 30, 100; 95 % Wilson interval), the mean
  accepts per run within S and per 100 steps.
- Power runs (`--power`): steps 1 … k−1 null, step k a real gain (`gate_calibration.candidate_rates`, "+10" or
  "+20": near-deterministic, failing items fixed with probability g / 0.48; noisy, p → p + 2g(1 − p)); the share
  of runs that accept it, for k = 1, 3, 10, 30, 100 (an earlier false accept is kept, as a run would keep it).
Output: Markdown tables (`--json`: the rows).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _p in (str(ROOT), str(ROOT / "bench")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from gate_calibration import STUDENTS, candidate_rates, draw, scoring, subset  # noqa: E402

from skillgit.config import EvaluationCfg  # noqa: E402
from skillgit.loop import gate, spending  # noqa: E402
from skillgit.loop.stats import wilson  # noqa: E402

STEPS = 100
PREFIXES = (1, 10, 30, 100)
POSITIONS = (1, 3, 10, 30, 100)


def one_run(args: tuple[str, int, int, int, str, int, str]) -> list[int]:
    """The steps (1-based) at which one run accepted: `steps` steps, null except step `real` (0: none), whose
    candidate has the gain `gain` ("+10" / "+20")."""
    student, n, run, seed, mode, real, gain = args
    cfg = EvaluationCfg(across_steps=mode)
    rng = random.Random(f"run-nulls:{seed}:{student}:{run}:{real}")
    rates = [draw(student, rng) for _ in range(n)]
    ids = [f"v{i:03d}" for i in range(n)]
    earlier = subset(scoring(rates, cfg.gate_repeats, rng, "0"), ids)
    accepted: list[int] = []
    for step in range(1, (real or STEPS) + 1):
        moved = candidate_rates(student, gain, rates, rng) if step == real else rates
        fresh = subset(scoring(rates, cfg.gate_repeats, rng, str(step)), ids)
        cand = subset(scoring(moved, cfg.gate_repeats, rng, str(step)), ids)
        spent = spending.at(mode, cfg.paired_alpha, step - 1, accepted)  # every step here is scored: one test
        r = gate.decide(cfg, fresh, cand, seed=step, items=ids, controls=[earlier], spent=spent)
        if r.accept:
            accepted.append(step)
            rates = moved
        earlier = cand if r.accept else fresh
    return accepted


def null_rows(pool: ProcessPoolExecutor, a: argparse.Namespace, student: str, mode: str) -> list[dict[str, Any]]:
    runs = list(pool.map(one_run, [(student, a.val, r, a.seed, mode, 0, "") for r in range(a.runs)], chunksize=4))
    rows = []
    for s in PREFIXES:
        hit = sum(1 for acc in runs if any(x <= s for x in acc))
        lo, hi = wilson(hit, len(runs))
        accepts = sum(sum(1 for x in acc if x <= s) for acc in runs) / len(runs)
        rows.append({"kind": "null", "student": student, "mode": mode, "val_size": a.val, "steps": s,
                     "runs": len(runs), "runs_with_accept": round(100 * hit / len(runs), 1),
                     "ci": [round(100 * lo, 1), round(100 * hi, 1)], "accepts_per_run": round(accepts, 2),
                     "accepts_per_100_steps": round(100 * accepts / s, 2)})
    return rows


def power_rows(pool: ProcessPoolExecutor, a: argparse.Namespace, student: str, mode: str) -> list[dict[str, Any]]:
    rows = []
    for k in POSITIONS:
        runs = list(pool.map(one_run, [(student, a.val, r, a.seed, mode, k, a.gain) for r in range(a.runs)],
                             chunksize=4))
        hit = sum(1 for acc in runs if k in acc)
        lo, hi = wilson(hit, len(runs))
        rows.append({"kind": "power", "student": student, "mode": mode, "val_size": a.val, "gain": a.gain,
                     "at_step": k, "runs": len(runs), "accepted": round(100 * hit / len(runs), 1),
                     "ci": [round(100 * lo, 1), round(100 * hi, 1)],
                     "false_accepts_before": round(sum(len(acc) - (k in acc) for acc in runs) / len(runs), 2)})
    return rows


def markdown(rows: list[dict[str, Any]], a: argparse.Namespace) -> str:
    out = []
    nulls = [r for r in rows if r["kind"] == "null"]
    if nulls:
        out += [f"| student | across_steps | steps | runs with ≥ 1 false accept, % (95 % CI) | false accepts per run "
                f"| per 100 steps | ({a.runs} runs, {a.val} val items, seed {a.seed}) |",
                "| --- | --- | ---: | ---: | ---: | ---: |"]
        out += [f"| {r['student']} | {r['mode']} | {r['steps']} | {r['runs_with_accept']} ({r['ci'][0]}–{r['ci'][1]}) "
                f"| {r['accepts_per_run']} | {r['accepts_per_100_steps']} |" for r in nulls]
    power = [r for r in rows if r["kind"] == "power"]
    if power:
        out += ["", f"| student | across_steps | real {a.gain} at step | accepted, % (95 % CI) | false accepts before "
                    f"it per run | ({a.runs} runs, {a.val} val items, seed {a.seed}) |",
                "| --- | --- | ---: | ---: | ---: |"]
        out += [f"| {r['student']} | {r['mode']} | {r['at_step']} | {r['accepted']} ({r['ci'][0]}–{r['ci'][1]}) "
                f"| {r['false_accepts_before']} |" for r in power]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--val", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--modes", default=",".join(spending.MODES), help="comma-separated (default: none,fdr,fwer)")
    ap.add_argument("--students", default=",".join(STUDENTS))
    ap.add_argument("--power", action="store_true", help="also: a real gain at step 1, 3, 10, 30, 100 of a run")
    ap.add_argument("--gain", default="+20", choices=("+10", "+20"), help="the real gain of --power (default +20)")
    ap.add_argument("--no-nulls", action="store_true", help="only the power runs")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    students = [s.strip() for s in a.students.split(",") if s.strip()]
    if not modes or not set(modes) <= set(spending.MODES) or not students or not set(students) <= set(STUDENTS):
        ap.error(f"--modes from {', '.join(spending.MODES)}, --students from {', '.join(STUDENTS)}")
    rows: list[dict[str, Any]] = []
    started = time.process_time()
    with ProcessPoolExecutor(a.jobs) as pool:
        for student in students:
            for mode in modes:
                if not a.no_nulls:
                    rows += null_rows(pool, a, student, mode)
                if a.power:
                    rows += power_rows(pool, a, student, mode)
    print(json.dumps(rows, indent=2) if a.json else markdown(rows, a))
    print(f"(driver CPU {time.process_time() - started:.1f} s; the workers' is not counted: use time(1))",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
