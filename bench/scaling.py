"""Scaling: the same training step at 1, 2, 4, 8, 16 and 32 workers.

    python bench/scaling.py [--quick] [--latency 1.0] [--workers 1,2,4,8,16,32]

The step of bench/overhead.py (batch 40, minibatch 8, every call `--latency` seconds on the latency server)
run once per worker count, with env.workers, gradient.analyst_workers and both roles' `concurrency` all set to
that count. Every run starts from a copy of the same project, so each makes exactly the same model calls (the
table shows it) and only the parallelism changes. Per worker count: wall time, the critical path (waves of
calls × latency), their ratio, the time outside model calls, and the speed-up over one worker.
Writes bench/results/scaling.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import simserver  # noqa: E402
from benchlib import (  # noqa: E402
    PLAIN_STEPS,
    copy_project,
    deep_merge,
    make_project,
    measure_run,
    say,
    server_config,
    table,
    warm_seed_scores,
    workdir,
    write_result,
)

COLUMNS = [("workers", "workers", "d"), ("calls", "calls", "d"), ("waves", "waves", "d"),
           ("wall_s", "wall s", ".2f"), ("critical_path_s", "crit.path s", ".2f"), ("ratio", "ratio", ".3f"),
           ("outside_pct", "outside %", ".2f"), ("speedup", "speed-up", ".2f"), ("efficiency", "efficiency", ".2f")]


def knobs(workers: int) -> list[str]:
    return [f"env.workers={workers}", f"gradient.analyst_workers={workers}",
            f"model.student.concurrency={workers}", f"model.teacher.concurrency={workers}"]


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--latency", type=float, default=1.0)
    p.add_argument("--workers", default="1,2,4,8,16,32", help="comma-separated worker counts")
    p.add_argument("--batch", type=int, default=40)
    p.add_argument("--minibatch", type=int, default=8)
    p.add_argument("--val", type=int, default=30)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    a = p.parse_args(argv)
    if a.quick:
        a.latency, a.workers, a.batch, a.minibatch, a.val = 0.02, "1,4", 8, 4, 6
    counts = [int(x) for x in a.workers.split(",") if x.strip()]

    rows = []
    with simserver.spawn(simserver.Settings(latency=a.latency, lifetime=3600)) as server, \
            workdir("scaling", a.keep) as tmp:
        base = deep_merge(PLAIN_STEPS, {"train": {"batch_size": a.batch, "num_epochs": 1},
                                        "gradient": {"minibatch_size": a.minibatch}})
        template = make_project(tmp / "template", n_train=a.batch, n_val=a.val,
                                config=deep_merge(base, server_config(server.base_url, max(counts))))
        warm_seed_scores(template)
        for workers in counts:
            say(f"scaling: {workers} worker(s), latency {a.latency}s")
            run = measure_run(copy_project(template, tmp / f"w{workers}"), server, steps=1, latency=a.latency,
                              overrides=knobs(workers))
            row = dict(run["steps"][0], workers=workers)
            row["outside_pct"] = 100 * row["outside_share"]
            rows.append(row)
    one = next((r for r in rows if r["workers"] == 1), rows[0])
    for r in rows:
        r["speedup"] = round(one["wall_s"] / r["wall_s"], 3)
        r["efficiency"] = round(r["speedup"] / (r["workers"] / one["workers"]), 3)
    same_calls = len({tuple(sorted(r["calls_by_stage"].items())) for r in rows}) == 1
    data = {"config": {"latency_s": a.latency, "workers": counts, "batch_size": a.batch,
                       "minibatch_size": a.minibatch, "val_items": a.val, "quick": a.quick},
            "rows": rows, "same_calls_everywhere": same_calls}
    write_result("scaling", data, a.out)
    print(table(rows, COLUMNS))
    print(f"\nevery worker count made the same calls: {'yes' if same_calls else 'NO'}")
    return data


if __name__ == "__main__":
    main()
