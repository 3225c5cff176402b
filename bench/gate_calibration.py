"""Gate calibration: how often the gate accepts a candidate that is no better (false accept, under the resampling,
trade-off and drift nulls) and one that is better by 10 or 20 points (true accept), at val sizes 10, 30 and 100,
for a near-deterministic and a noisy student.

Method. A student is a pass rate per val item; a scoring draws every (item, repeat) as a coin with that rate, and
every verdict comes from the real `gate.decide` with the real null controls (the incumbent scored again in the
candidate's round, its earlier scoring as a control). Each trial draws 100 items (val 10 and 30 are the first 10
and 30), makes every scoring once — the incumbent's earlier scoring, the incumbent again in the candidate's round,
a byte-identical copy of it, the candidate, and three rival nulls for the best-of-4 row — and judges the *same*
scores with every gate configuration, so rows differ by configuration, not by noise.

Students: `near-deterministic` — each item passes 98 % or 2 % of the time (even odds), a model at low temperature;
`noisy` — each item's pass rate uniform in [0.05, 0.95]; `graded` (not run unless named) — an agent student scored by
a verifier's 5 tests, each passing at the item's rate (uniform in [0.05, 0.95]): a sample's soft score is the share
passed, its hard score 1 when all passed, and the gate judges the soft score (`gate_metric: soft`), so per-item
differences are not 0/1 and the sign-flip test counts or samples them (`stats.sign_flip_p`).

Scenarios (the candidate against the incumbent):
- `resampling` (null): the same skill scored again;
- `trade-off q` (null; q = 0.2, 0.4, 0.8): each item re-drawn from the student's distribution with probability q:
  as many items broken as fixed, zero expected gain — what the gate before issue 20 accepted 15-19 % of the time;
- `drift d` (null; d = 0.1, 0.2): the same skill, but the student's pass rates rose between the incumbent's
  earlier scoring and the candidate's (p → p + 2d(1 − p): about d on average) — a provider or agent CLI update;
- `+10`, `+20` (alternatives): near-deterministic, failing items fixed with probability g / 0.48; noisy,
  p → p + 2g(1 − p). The realised mean gain of the pass rates is reported per row (`true_delta`) as a check.

Configurations: `default` (the shipped `EvaluationCfg`), `default + control_copy`, `default, best of 4 proposals`
(false accept: any of four nulls kept; true accept: the better one kept against three nulls),
`default, reuse_incumbent_score` (the earlier score, no controls), `significance only` (no per_item),
`significance, stderr k=1.75` (over items), `legacy` (the gate before issue 20: (item, repeat) cells pooled,
z > 1.75, the earlier incumbent score) and `strict` (mean rises, earlier score).

Output: Markdown tables (`--json`: one object per row with `student`, `scenario`, `kind`, `gate`, `val_size`,
`trials`, `accept`, `accept_ci`, `refused`, `refused_ci` — 95 % Wilson intervals — and `true_delta`); the whole
result goes to bench/results/gate_calibration.json (`--out` elsewhere, `--no-save` not at all).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
for _p in (str(ROOT), str(ROOT / "bench")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from skillgit.config import EvaluationCfg  # noqa: E402
from skillgit.loop import gate  # noqa: E402
from skillgit.loop.decide import Judgement, best_of  # noqa: E402
from skillgit.loop.stats import wilson  # noqa: E402

TOP = 100  # items drawn per trial
RIVALS = 3  # extra null candidates for the best-of-4 row
STUDENTS = ("near-deterministic", "noisy")
ALL_STUDENTS = (*STUDENTS, "graded")
TESTS_PER_ITEM = 5  # the graded student's verifier tests per item
SCENARIOS: dict[str, tuple[str, float]] = {  # name: (kind, parameter)
    "resampling": ("null", 0.0), "trade-off 0.2": ("null", 0.2), "trade-off 0.4": ("null", 0.4),
    "trade-off 0.8": ("null", 0.8), "drift 0.1": ("null", 0.1), "drift 0.2": ("null", 0.2),
    "+10": ("alternative", 0.1), "+20": ("alternative", 0.2),
}


# ---------------------------------------------------------------------------------------------- students
def draw(student: str, rng: random.Random) -> float:
    if student == "near-deterministic":
        return 0.98 if rng.random() < 0.5 else 0.02
    return rng.uniform(0.05, 0.95)


def candidate_rates(student: str, scenario: str, rates: list[float], rng: random.Random) -> list[float]:
    """The candidate's pass rates (for drift: the incumbent's after the drift, which the candidate shares)."""
    _, x = SCENARIOS[scenario]
    if scenario.startswith("trade-off"):
        return [draw(student, rng) if rng.random() < x else p for p in rates]
    if scenario.startswith("drift") or (scenario.startswith("+") and student != "near-deterministic"):
        return [p + 2 * x * (1 - p) for p in rates]
    if scenario.startswith("+"):
        return [0.98 if p < 0.5 and rng.random() < x / 0.48 else p for p in rates]
    return list(rates)


def scoring(rates: list[float], repeats: int, rng: random.Random, round_: str, graded: bool = False
            ) -> gate.SplitScore:
    """Every (item, repeat) drawn: a coin with the item's rate, or (graded) `TESTS_PER_ITEM` of them: the share
    passed is the soft score, all passed the hard one."""
    out = gate.SplitScore("val", f"skill-{round_}", repeats=repeats, round=round_)
    for i, p in enumerate(rates):
        if graded:
            passed = [sum(rng.random() < p for _ in range(TESTS_PER_ITEM)) for _ in range(repeats)]
            rows = [(float(k == TESTS_PER_ITEM), k / TESTS_PER_ITEM) for k in passed]
        else:
            rows = [(x, x) for x in (float(rng.random() < p) for _ in range(repeats))]
        out.samples[f"v{i:03d}"] = rows
        out.per_item[f"v{i:03d}"] = (sum(h for h, _ in rows) / repeats, sum(s for _, s in rows) / repeats)
    return out


def subset(score: gate.SplitScore, ids: list[str]) -> gate.SplitScore:
    return dataclasses.replace(score, per_item={k: score.per_item[k] for k in ids},
                               samples={k: score.samples[k] for k in ids})


# ---------------------------------------------------------------------------------------------- gates
@dataclass(frozen=True)
class Scores:
    earlier: gate.SplitScore  # the incumbent, scored in an earlier round (before any drift)
    fresh: gate.SplitScore  # the incumbent again, in the candidate's round
    copy: gate.SplitScore  # its byte-identical copy, same round
    candidate: gate.SplitScore
    rivals: tuple[gate.SplitScore, ...]  # null candidates (the incumbent's rates, this round)


Verdict = tuple[bool, bool]  # (accepted, refused)


def _default(cfg: EvaluationCfg, s: Scores, ids: list[str], t: int, *, copy: bool = False) -> Verdict:
    controls = [s.earlier] + ([s.copy] if copy else [])
    r = gate.decide(cfg, s.fresh, s.candidate, seed=t, items=ids, controls=controls)
    return r.accept, r.refused


def _reuse(cfg: EvaluationCfg, s: Scores, ids: list[str], t: int) -> Verdict:
    r = gate.decide(cfg, s.earlier, s.candidate, seed=t, items=ids)
    return r.accept, r.refused


def _best_of(cfg: EvaluationCfg, s: Scores, ids: list[str], t: int, null: bool) -> Verdict:
    field = [s.candidate, *s.rivals]
    judged = [Judgement(gate.decide(cfg, s.fresh, a, seed=t, items=ids, candidates=len(field),
                                    controls=[s.earlier]), a, True) for a in field]
    kept = best_of(judged, cfg.gate_metric, cfg.mixed_weight)
    return (kept is not None if null else kept == 0), judged[0].result.refused


def _legacy(s: Scores, ids: list[str], metric: str = "hard") -> Verdict:
    """The gate before issue 20: every (item, repeat) difference a sample, z > 1.75, the cached incumbent."""
    at = 1 if metric == "soft" else 0
    cells = [x[at] - y[at] for k in ids for x, y in zip(s.candidate.samples[k], s.earlier.samples[k])]
    mean = sum(cells) / len(cells)
    var = sum((c - mean) ** 2 for c in cells) / (len(cells) - 1)
    se = math.sqrt(var / len(cells))
    return (mean > 1e-12 and (se == 0 or mean / se > 1.75 + 1e-12)), False


def metric_of(student: str) -> str:
    """The gate metric a student is judged on: the graded student's partial credit, else pass/fail."""
    return "soft" if student == "graded" else "hard"


def configurations(metric: str = "hard") -> list[tuple[str, Callable[[Scores, list[str], int, bool], Verdict]]]:
    d = EvaluationCfg(gate_metric=metric)
    only = EvaluationCfg(gate="significance", gate_metric=metric)
    stderr = EvaluationCfg(gate="significance", gate_test="stderr", gate_k=1.75, gate_metric=metric)
    strict = EvaluationCfg(gate="strict", gate_metric=metric)
    return [
        ("default", lambda s, ids, t, null: _default(d, s, ids, t)),
        ("default + control_copy", lambda s, ids, t, null: _default(d, s, ids, t, copy=True)),
        ("default, best of 4 proposals", lambda s, ids, t, null: _best_of(d, s, ids, t, null)),
        ("default, reuse_incumbent_score", lambda s, ids, t, null: _reuse(d, s, ids, t)),
        ("significance only (no per_item)", lambda s, ids, t, null: _default(only, s, ids, t)),
        ("significance, stderr k=1.75", lambda s, ids, t, null: _default(stderr, s, ids, t)),
        ("legacy (cells pooled, before issue 20)", lambda s, ids, t, null: _legacy(s, ids, metric)),
        ("strict (earlier score)", lambda s, ids, t, null: _reuse(strict, s, ids, t)),
    ]


# ---------------------------------------------------------------------------------------------- the run
def run_one(args: tuple[str, str, int, list[int], int]) -> list[dict[str, Any]]:
    """Every configuration on one (student, scenario), `trials` trials."""
    student, scenario, trials, sizes, seed = args
    kind, _ = SCENARIOS[scenario]
    repeats = EvaluationCfg().gate_repeats
    table = configurations(metric_of(student))
    graded = student == "graded"
    counts = {(label, n): [0, 0] for label, _ in table for n in sizes}
    deltas = {n: 0.0 for n in sizes}
    for t in range(trials):
        rng = random.Random(f"gate-calibration:{seed}:{student}:{scenario}:{t}")
        rates = [draw(student, rng) for _ in range(TOP)]
        moved = candidate_rates(student, scenario, rates, rng)
        drift = scenario.startswith("drift")
        now = moved if drift else rates  # the incumbent's rates in the candidate's round
        scores = Scores(scoring(rates, repeats, rng, "1", graded), scoring(now, repeats, rng, "2", graded),
                        scoring(now, repeats, rng, "2", graded), scoring(moved, repeats, rng, "2", graded),
                        tuple(scoring(now, repeats, rng, "2", graded) for _ in range(RIVALS)))
        for n in sizes:
            ids = [f"v{i:03d}" for i in range(n)]
            deltas[n] += (sum(moved[:n]) - sum(now[:n])) / n
            sub = Scores(*(subset(x, ids) for x in (scores.earlier, scores.fresh, scores.copy, scores.candidate)),
                         tuple(subset(x, ids) for x in scores.rivals))
            for label, judge in table:
                accepted, refused = judge(sub, ids, t, kind == "null")
                counts[(label, n)][0] += accepted
                counts[(label, n)][1] += refused
    rows = []
    for label, _ in table:
        for n in sizes:
            acc, ref = counts[(label, n)]
            rows.append({"student": student, "scenario": scenario, "kind": kind, "gate": label,
                         "default": label == "default", "val_size": n, "trials": trials,
                         "accept": round(acc / trials, 4), "accept_ci": wilson(acc, trials),
                         "refused": round(ref / trials, 4), "refused_ci": wilson(ref, trials),
                         "true_delta": round(deltas[n] / trials, 4)})
    return rows


def run(trials: int, sizes: list[int], students: list[str], scenarios: list[str], seed: int, jobs: int
        ) -> list[dict[str, Any]]:
    work = [(st, sc, trials, sizes, seed) for st in students for sc in scenarios]
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for done, part in enumerate(pool.map(run_one, work), 1):
                rows += part
                print(f"{done}/{len(work)} ({part[0]['student']}, {part[0]['scenario']}) "
                      f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    else:
        for done, item in enumerate(work, 1):
            rows += run_one(item)
            print(f"{done}/{len(work)} {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def validity(rows: list[dict[str, Any]]) -> list[str]:
    """The bench's own checks: nulls have no real gain (drift's is the student's, shared by the incumbent);
    alternatives gain what they claim."""
    problems = []
    for r in rows:
        if r["gate"] != "default":
            continue
        want = SCENARIOS[r["scenario"]][1] if r["kind"] == "alternative" else 0.0
        tol = 0.02 + 1.5 / math.sqrt(max(1, r["trials"] * r["val_size"]))
        if abs(r["true_delta"] - want) > tol:
            problems.append(f"{r['student']} {r['scenario']} n={r['val_size']}: true gain {r['true_delta']:+.3f}, "
                            f"expected {want:+.3f}")
    return problems


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(r: dict[str, Any]) -> str:
        lo, hi = r["accept_ci"]
        out = f"{r['accept'] * 100:.1f} ({lo * 100:.1f}–{hi * 100:.1f})"
        return out + (f", refused {r['refused'] * 100:.0f}" if r["refused"] >= 0.005 else "")

    out = []
    sizes = sorted({r["val_size"] for r in rows})
    trials = rows[0]["trials"]
    for student in dict.fromkeys(r["student"] for r in rows):
        mine = [r for r in rows if r["student"] == student]
        out.append(f"\n**{student}**, the default gate, {trials} trials: accept % (95 % Wilson interval); "
                   f"null rows are false accepts, alternative rows true accepts\n")
        out.append("| scenario | " + " | ".join(f"n={n}" for n in sizes) + " |")
        out.append("| --- | " + " | ".join("---:" for _ in sizes) + " |")
        for scenario in dict.fromkeys(r["scenario"] for r in mine):
            cells = [cell(next(r for r in mine if r["scenario"] == scenario and r["gate"] == "default"
                               and r["val_size"] == n)) for n in sizes]
            out.append(f"| {scenario} ({SCENARIOS[scenario][0]}) | " + " | ".join(cells) + " |")
    n = 30 if 30 in sizes else sizes[-1]
    scen = list(dict.fromkeys(r["scenario"] for r in rows))
    students = list(dict.fromkeys(r["student"] for r in rows))
    out.append(f"\nEvery configuration at n={n} (accept %; {' / '.join(students)})\n")
    out.append("| gate | " + " | ".join(scen) + " |")
    out.append("| --- | " + " | ".join("---:" for _ in scen) + " |")
    for label in dict.fromkeys(r["gate"] for r in rows):
        cells = []
        for sc in scen:
            pair = [next((r for r in rows if r["gate"] == label and r["scenario"] == sc and r["val_size"] == n
                          and r["student"] == st), None) for st in students]
            cells.append(" / ".join(f"{r['accept'] * 100:.1f}" if r else "–" for r in pair))
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trials", type=int, default=2000, help="trials per (student, scenario) (default 2000)")
    ap.add_argument("--sizes", default="10,30,100", help="val sizes, comma-separated, at most 100 (default 10,30,100)")
    ap.add_argument("--students", default=",".join(STUDENTS),
                    help="near-deterministic, noisy (the default: both) and/or graded")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="a comma-separated subset (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--json", action="store_true", help="one JSON object per row on stdout")
    ap.add_argument("--quick", action="store_true", help="tiny setting: 20 trials, val sizes 10 and 30")
    ap.add_argument("--out", type=Path, default=None, help="result file (default bench/results/gate_calibration.json)")
    ap.add_argument("--no-save", action="store_true", help="write no result file")
    args = ap.parse_args(argv)
    if args.quick:
        args.trials, args.sizes = 20, "10,30"
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    students = [s.strip() for s in args.students.split(",") if s.strip()]
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if (not sizes or min(sizes) < 2 or max(sizes) > TOP or args.trials < 1 or not set(students) <= set(ALL_STUDENTS)
            or not set(scenarios) <= set(SCENARIOS)):
        ap.error(f"need --trials >= 1, --sizes between 2 and {TOP}, --students from {', '.join(ALL_STUDENTS)}, "
                 f"--scenarios from {', '.join(SCENARIOS)}")
    started = time.monotonic()
    rows = run(args.trials, sizes, students, scenarios, args.seed, max(1, args.jobs))
    problems = validity(rows)
    for p in problems:
        print(f"validity: {p}", file=sys.stderr)
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(markdown(rows))
    if not args.no_save:
        from benchlib import write_result

        write_result("gate_calibration", {"trials": args.trials, "sizes": sizes, "students": students,
                                          "scenarios": scenarios, "seconds": round(time.monotonic() - started, 1),
                                          "validity": problems, "rows": rows}, args.out)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
