"""Overhead: what a training step costs beyond the model calls themselves.

    python bench/overhead.py [--quick] [--latency 1.0] [--steps 3] [--workers 16]

A step at batch 40 / minibatch 8 / 16 workers (both roles' `concurrency` set to match), every model call taking
`--latency` seconds on the latency server (bench/simserver.py, through the real openai SDK). Per step:

- wall: the step's window (`benchlib.StepClock`): from the start of its rollout to the start of the next step's,
  during which its decision (commit, notes, ref transaction, progress save) is written; the last step's ends when
  the run's closing test scoring starts (`--test` items, scored as a run does by default: the decision lands
  during it) or, with `--test 0`, when its decision has landed;
- critical path: the longest chain of model calls in which each starts after the previous one ended, from the
  server's call timeline — the waves of calls the configured parallelism cannot avoid (bench/README.md);
- ratio = wall ÷ critical path (target ≤ 1.15);
- outside models = wall − time during which at least one model call was in flight: git, JSON, prompts,
  scoring, the SDK and HTTP (target ≤ 2 % of the step); git time is measured separately.

A second variant runs the same step with the per-role concurrency left at 8 while the pools have 16 workers
(skillgit's default until this benchmark), to show what a cap below the worker count costs.
Writes bench/results/overhead.json.
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
    mean,
    measure_run,
    say,
    server_config,
    table,
    warm_seed_scores,
    workdir,
    write_result,
)

TARGET_RATIO = 1.15
TARGET_OUTSIDE = 0.02
COLUMNS = [("variant", "variant", ""), ("step", "step", "d"), ("calls", "calls", "d"), ("waves", "waves", "d"),
           ("wall_s", "wall s", ".3f"), ("critical_path_s", "crit.path s", ".3f"), ("ratio", "ratio", ".3f"),
           ("outside_models_s", "outside s", ".3f"), ("outside_pct", "outside %", ".2f"),
           ("git_s", "git s", ".3f"), ("git_calls", "git calls", "d")]


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--latency", type=float, default=1.0)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--batch", type=int, default=40)
    p.add_argument("--minibatch", type=int, default=8)
    p.add_argument("--val", type=int, default=30)
    p.add_argument("--test", type=int, default=30,
                   help="test items scored at the run's end, as a run does by default (0: none, no closing scoring)")
    p.add_argument("--no-capped", action="store_true", help="skip the concurrency-8 variant")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    a = p.parse_args(argv)
    if a.quick:
        a.latency, a.steps, a.workers, a.batch, a.minibatch, a.val, a.test, a.no_capped = 0.05, 1, 4, 8, 4, 6, 4, True

    settings = simserver.Settings(latency=a.latency, lifetime=1800)
    rows, variants = [], {}
    with simserver.spawn(settings) as server, workdir("overhead", a.keep) as tmp:
        base = deep_merge(PLAIN_STEPS, {"train": {"batch_size": a.batch, "num_epochs": 1},
                                        "gradient": {"minibatch_size": a.minibatch},
                                        "evaluation": {"eval_test": a.test > 0}})
        template = make_project(tmp / "template", n_train=a.batch * a.steps, n_val=a.val, n_test=a.test,
                                config=deep_merge(base, server_config(server.base_url, a.workers)))
        warm_seed_scores(template)
        plan = [("configured", [])]
        if not a.no_capped:
            plan.append(("concurrency 8", ["model.student.concurrency=8", "model.teacher.concurrency=8"]))
        for name, extra in plan:
            steps = a.steps if name == "configured" else 1
            say(f"overhead: {name}: {steps} step(s) at batch {a.batch}, {a.workers} workers, latency {a.latency}s")
            run = measure_run(copy_project(template, tmp / name.replace(" ", "-")), server, steps=steps,
                              latency=a.latency, overrides=extra)
            for r in run["steps"]:
                r["variant"] = name
                r["outside_pct"] = 100 * r["outside_share"]
            rows += run["steps"]
            variants[name] = {
                "overrides": extra, "parallelism": run["parallelism"], "steps": run["steps"],
                "wall_s": mean(run["steps"], "wall_s"), "critical_path_s": mean(run["steps"], "critical_path_s"),
                "ratio": mean(run["steps"], "ratio"), "outside_models_s": mean(run["steps"], "outside_models_s"),
                "outside_share": mean(run["steps"], "outside_share", 5), "git_s": mean(run["steps"], "git_s"),
                "limit_by_counts_s": mean(run["steps"], "limit_by_counts_s"),
            }
    main_v = variants["configured"]
    summary = {"ratio": main_v["ratio"], "outside_share": main_v["outside_share"],
               "targets": {"ratio": TARGET_RATIO, "outside_share": TARGET_OUTSIDE},
               "meets_targets": bool(main_v["ratio"] is not None and main_v["ratio"] <= TARGET_RATIO
                                     and main_v["outside_share"] <= TARGET_OUTSIDE)}
    data = {"config": {"latency_s": a.latency, "steps": a.steps, "workers": a.workers, "batch_size": a.batch,
                       "minibatch_size": a.minibatch, "val_items": a.val, "test_items": a.test, "quick": a.quick},
            "variants": variants, "summary": summary}
    write_result("overhead", data, a.out)
    print(table(rows, COLUMNS))
    print(f"\nconfigured: ratio {main_v['ratio']:.3f} (target ≤ {TARGET_RATIO}), outside models "
          f"{100 * main_v['outside_share']:.2f} % (target ≤ {100 * TARGET_OUTSIDE:.0f} %), "
          f"{'meets' if summary['meets_targets'] else 'MISSES'} the targets")
    return data


if __name__ == "__main__":
    main()
