"""Run-level false accepts: a run whose every step proposes a candidate that is no better (the resampling null)
still accepts some, since each step is a separate test at α. How many runs of S steps accept at least one, and how
many accepts a run makes, with the default gate at 30 val items.

Method. As `gate_calibration.py` (whose students and scorings it reuses): a student is a pass rate per val item;
each step scores the incumbent again and a null candidate (the same rates) in the step's round, and the real
`gate.decide` judges them with the incumbent's previous scoring as the null control, exactly as a run chains them
(after an accept the candidate's scoring is the incumbent's previous one). Each run draws its own rates and goes
100 steps; the share of runs with an accept within the first S steps is reported for S = 1, 10, 30, 100, with its
95 % Wilson interval, and the mean accepts per 100 steps. Output: a Markdown table (`--json`: the rows).
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

from gate_calibration import STUDENTS, draw, scoring, subset  # noqa: E402

from skillgit.config import EvaluationCfg  # noqa: E402
from skillgit.loop import gate  # noqa: E402
from skillgit.loop.stats import wilson  # noqa: E402

STEPS = 100
PREFIXES = (1, 10, 30, 100)


def one_run(args: tuple[str, int, int, int]) -> list[int]:
    """The steps (1-based) at which one run of `STEPS` null steps accepted."""
    student, n, run, seed = args
    cfg = EvaluationCfg()
    rng = random.Random(f"run-nulls:{seed}:{student}:{run}")
    rates = [draw(student, rng) for _ in range(n)]
    ids = [f"v{i:03d}" for i in range(n)]
    earlier = subset(scoring(rates, cfg.gate_repeats, rng, "0"), ids)
    accepted = []
    for step in range(1, STEPS + 1):
        fresh = subset(scoring(rates, cfg.gate_repeats, rng, str(step)), ids)
        cand = subset(scoring(rates, cfg.gate_repeats, rng, str(step)), ids)
        r = gate.decide(cfg, fresh, cand, seed=step, items=ids, controls=[earlier])
        if r.accept:
            accepted.append(step)
        earlier = cand if r.accept else fresh
    return accepted


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--val", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    started = time.process_time()
    with ProcessPoolExecutor(a.jobs) as pool:
        for student in STUDENTS:
            runs = list(pool.map(one_run, [(student, a.val, r, a.seed) for r in range(a.runs)], chunksize=4))
            for s in PREFIXES:
                hit = sum(1 for acc in runs if any(x <= s for x in acc))
                lo, hi = wilson(hit, len(runs))
                rows.append({"student": student, "val_size": a.val, "steps": s, "runs": len(runs),
                             "runs_with_accept": round(100 * hit / len(runs), 1),
                             "ci": [round(100 * lo, 1), round(100 * hi, 1)],
                             "accepts_per_run": round(sum(sum(1 for x in acc if x <= s) for acc in runs) / len(runs),
                                                      2)})
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"| student | steps | runs with ≥ 1 false accept, % (95 % CI) | false accepts per run | ({a.runs} runs, "
              f"{a.val} val items, seed {a.seed}) |")
        print("| --- | ---: | ---: | ---: |")
        for r in rows:
            print(f"| {r['student']} | {r['steps']} | {r['runs_with_accept']} ({r['ci'][0]}–{r['ci'][1]}) "
                  f"| {r['accepts_per_run']} |")
    print(f"(driver CPU {time.process_time() - started:.1f} s; the workers' is not counted: use time(1))",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
