"""Gate calibration: how often each gate mode accepts a candidate that is no better (false accept) and one that is
really better by about 10 points (true accept), at val sizes 10, 30 and 100, on the simulated world.

Method — nothing here is a model of the world, it *is* the world: every score comes from the simulated student
(skillgit/world) through the real `Evaluator` (ChatStudent → SimulatedStudentLLM, the project's `exact` scorer),
and every verdict from the real `gate.decide`. The world draws each answer's noise from (world seed, the whole
request including its `seed` field), so the same student with another `seed` is the same model sampled again:
that is how a trial scores "the same skill again with new samples" (the null candidate), as a real run's
candidate gets new samples. Noise is independent per (skill, item, sample), as with a real model at temperature.

Per trial and scenario: draw 100 val items and a train batch of 40 (train.batch_size's default) from a pool of
3,000 world items, fresh each trial (a user's val set is a sample too); the val sets of size 10 and 30 are the
first 10 and 30 of the 100. Score the current skill (before), the same skill again (null) and the better skill,
each with its own student seed and as many repeats as any row needs (3), and the train batch once per skill.
Then judge both candidates with every gate configuration on the *same* scores, so differences between rows are
the modes', not noise; a row with fewer repeats uses the first ones.

Scenarios (world defaults: seed 0, 6 hidden rules, noise 0.05):
- `rule`: the current skill conveys three house rules (weight, code, decimals; val hard ≈ 0.22); the better one
  also conveys the separator rule: a structured gain, about one item in ten goes from fail to pass — the kind of
  step the loop makes.
- `ceiling`: the current skill conveys every rule but is bloated past 40 lines, so the student slips more (≈ 0.85);
  the better one says the same in 11 lines (≈ 0.95): a diffuse gain at the ceiling, where the noise is largest
  (every item passes most of the time and can slip).
The true gains are measured on the whole pool each run (`true_delta`).

Output: `--json` prints one JSON object per (scenario, gate configuration, val size) with `mode`, `val_size`,
`trials`, `false_accept`, `true_accept` and their 95 % Wilson intervals (`*_ci`); otherwise Markdown tables. The
full result goes to bench/results/gate_calibration.json (`--out` elsewhere, `--no-save` not at all). The default
(500 trials, both scenarios, sizes 10/30/100) takes about two minutes on one core.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _p in (str(ROOT), str(ROOT / "bench")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from skillgit.config import EvaluationCfg, ScorerCfg, SimulatedCfg  # noqa: E402
from skillgit.llm.base import ChatStudent  # noqa: E402
from skillgit.loop import gate  # noqa: E402
from skillgit.loop.decide import Judgement, best_of  # noqa: E402
from skillgit.scorers import build_scorer  # noqa: E402
from skillgit.types import Item  # noqa: E402
from skillgit.world import SimulatedStudentLLM, all_rules_skill, default_skill, generate_tasks, read_skill  # noqa: E402
from skillgit.world.rules import TOPICS  # noqa: E402
from skillgit.world.tasks import house_topics  # noqa: E402

POOL = 3000
RIVAL_SEEDS = 10 ** 12  # student seeds of the best-of-P rows' extra null candidates
WORLD = SimulatedCfg()


@dataclass(frozen=True)
class GateSetup:
    """One row of the table: a gate configuration, scored with `cfg.gate_repeats` repeats. `means_only` hides the
    per-repeat scores from the gate (what it saw before per-(item, repeat) scores were kept)."""

    label: str
    cfg: EvaluationCfg
    means_only: bool = False
    # `optimizer.proposals`: this many candidates are gated together (the bar raised for it) and the best that
    # passes is kept. False accept: any of P null candidates kept; true accept: the better one kept against P − 1
    # null rivals (each a fresh sample of the same skill).
    candidates: int = 1

    def describe(self) -> dict[str, Any]:
        c = self.cfg
        return {"label": self.label, "mode": "+".join(c.gate), "gate_test": c.gate_test, "k": c.gate_k,
                "alpha": c.paired_alpha, "tolerance": c.item_tolerance, "repeats": c.gate_repeats,
                "means_only": self.means_only, "candidates": self.candidates, "default": self == default_setup()}


def default_setup() -> GateSetup:
    return GateSetup(default_label(), EvaluationCfg())


def default_label() -> str:
    c = EvaluationCfg()
    extra = f" k={c.gate_k:g}" if "significance" in c.gate and c.gate_test == "stderr" else ""
    return f"{'+'.join(c.gate)}{extra}, {c.gate_repeats} repeat{'s' if c.gate_repeats > 1 else ''} (default)"


def setups() -> list[GateSetup]:
    def ev(gate_modes: str, repeats: int = 1, **kw: Any) -> EvaluationCfg:
        return EvaluationCfg(gate=gate_modes, gate_repeats=repeats, **kw)  # type: ignore[arg-type]

    k = EvaluationCfg().gate_k
    rows = [
        GateSetup("strict", ev("strict")),
        GateSetup("paired (strict + permutation, alpha 0.1)", ev("paired")),
        GateSetup(f"significance k={k:g}", ev("significance", gate_k=k)),
        GateSetup("significance k=2", ev("significance", gate_k=2.0)),
        GateSetup("significance, permutation alpha 0.05", ev("significance", gate_test="permutation",
                                                             paired_alpha=0.05)),
        GateSetup("per_item (implies strict)", ev("per_item")),
        GateSetup(f"significance+per_item k={k:g}", ev("significance+per_item", gate_k=k)),
        GateSetup(f"significance+two_split k={k:g}", ev("significance+two_split", gate_k=k)),
        GateSetup(f"significance k={k:g}, 2 repeats", ev("significance", 2, gate_k=k)),
        GateSetup("strict, 3 repeats", ev("strict", 3)),
        GateSetup("significance k=1.65, 3 repeats", ev("significance", 3, gate_k=1.65)),
        GateSetup(f"significance k={k:g}, 3 repeats", ev("significance", 3, gate_k=k)),
        GateSetup(f"significance k={k:g}, 3 repeats, per-item means only", ev("significance", 3, gate_k=k), True),
        GateSetup("significance k=2, 3 repeats", ev("significance", 3, gate_k=2.0)),
        GateSetup("significance, permutation alpha 0.05, 3 repeats", ev("significance", 3, gate_test="permutation",
                                                                        paired_alpha=0.05)),
        GateSetup(f"significance+per_item k={k:g} tolerance 0.5, 3 repeats",
                  ev("significance+per_item", 3, gate_k=k, item_tolerance=0.5)),
        GateSetup(f"significance+per_item k={k:g} tolerance 0.7, 3 repeats",
                  ev("significance+per_item", 3, gate_k=k, item_tolerance=0.7)),
        GateSetup(f"significance+two_split k={k:g}, 3 repeats", ev("significance+two_split", 3, gate_k=k)),
    ]
    # the shipped default is always measured, labelled as such (replacing its twin if the list has one)
    default = default_setup()
    rows = [r for r in rows if (r.cfg, r.means_only) != (default.cfg, default.means_only)]
    best_of = [GateSetup(f"{default.label.removesuffix(' (default)')}, best of {p} proposals", default.cfg,
                         candidates=p) for p in (2, 4)]
    return [default, *best_of, *rows]


# ---------------------------------------------------------------------------------------------- the world
def rule_line(topic: str) -> str:
    """all_rules_skill's sentence for one house topic."""
    base = default_skill()
    full = all_rules_skill(WORLD)[len(base):].splitlines()
    house = [t for t in TOPICS if t in house_topics(WORLD)]
    return dict(zip(house, full))[topic] + "\n"


def padded(skill: str, lines: int) -> str:
    """`skill` with neutral lines added until it has `lines` non-empty lines (the student reads nothing new)."""
    extra = lines - read_skill(skill).lines
    pad = "".join(f"- Note {i + 1}: take each record on its own terms.\n" for i in range(max(0, extra)))
    out = skill + "\n## Notes\n" + pad if extra > 0 else skill
    a, b = read_skill(skill), read_skill(out)
    assert (a.rules, a.plain, a.harms) == (b.rules, b.plain, b.harms), "padding must convey nothing"
    return out


def scenarios() -> dict[str, tuple[str, str]]:
    three = default_skill() + "".join(rule_line(t) for t in ("weight", "code", "decimals"))
    full = all_rules_skill(WORLD)
    return {"rule": (three, three + rule_line("separator")),
            "ceiling": (padded(full, 62), full)}


def student(seed: int, world: SimulatedCfg = WORLD) -> ChatStudent:
    return ChatStudent(SimulatedStudentLLM(world), seed=seed)


def subset(score: gate.SplitScore, ids: list[str], repeats: int, means_only: bool = False) -> gate.SplitScore:
    """`score` restricted to `ids` and its first `repeats` samples per item (kept unless `means_only`)."""
    out = gate.SplitScore(score.split, score.blob)
    for k in ids:
        if k not in score.per_item:
            continue
        rows = score.samples.get(k) or [score.per_item[k]]
        rows = rows[:repeats]
        out.per_item[k] = (sum(h for h, _ in rows) / len(rows), sum(s for _, s in rows) / len(rows))
        if len(rows) > 1 and not means_only:
            out.samples[k] = list(rows)
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


# ---------------------------------------------------------------------------------------------- the run
def true_delta(pool: list[Item], before: str, better: str, scorer: Any, world: SimulatedCfg) -> tuple[float, float]:
    """(before's mean hard score, better − before) on the whole pool, two samples each."""
    means = []
    for i, skill in enumerate((before, better)):
        ev = gate.Evaluator(student(10 ** 12 + 10 * i, world), scorer, {"pool": pool}, workers=1, repeats=2)
        means.append(ev.score(skill, "pool").mean("hard"))
    return round(means[0], 4), round(means[1] - means[0], 4)


def run(trials: int, sizes: list[int], names: list[str], seed: int, batch: int, noise: float | None = None
        ) -> list[dict[str, Any]]:
    world = WORLD if noise is None else dataclasses.replace(WORLD, noise=noise)
    pool = generate_tasks(WORLD, POOL)
    scorer = build_scorer(ScorerCfg(), ROOT)
    rows: list[dict[str, Any]] = []
    table = setups()
    repeats = max(s.cfg.gate_repeats for s in table)  # scored per skill; a row with fewer uses the first ones
    rivals = max(s.candidates for s in table) - 1  # extra null candidates, for the best-of-P rows
    assert repeats < 10, "student seeds are spaced 10 apart: at most 9 repeats"
    top = max(sizes)
    all_scenarios = scenarios()
    for s_index, name in enumerate(names):
        before_skill, better_skill = all_scenarios[name]
        base, delta = true_delta(pool, before_skill, better_skill, scorer, world)
        print(f"[{name}] before {base:.3f}, better by {delta:+.3f} on {POOL} items", file=sys.stderr, flush=True)
        counts = {(s.label, n): [0, 0] for s in table for n in sizes}
        started = time.monotonic()
        for t in range(trials):
            rng = random.Random(f"gate-calibration:{seed}:{name}:{t}")
            drawn = rng.sample(pool, top + batch)
            val, train = drawn[:top], drawn[top:]
            splits = {"val": val, "train": train}
            # one student seed per (scenario, trial, role); requests use seed + sample, samples < 10
            key = ((seed * 7 + s_index) * 1_000_003 + t) * 8
            scores = {}
            for role, skill in enumerate((before_skill, before_skill, better_skill)):
                val_ev = gate.Evaluator(student(10 * (key + role), world), scorer, splits, workers=1, repeats=repeats)
                train_ev = gate.Evaluator(student(10 * (key + role + 4), world), scorer, splits, workers=1)
                scores[role] = (val_ev.score(skill, "val"), train_ev.score(skill, "train"))
            for j in range(rivals):  # seeds of their own, apart from every (key + role) above
                role = 3 + j
                val_ev = gate.Evaluator(student(10 * (RIVAL_SEEDS + key + j), world), scorer, splits, workers=1,
                                        repeats=repeats)
                train_ev = gate.Evaluator(student(10 * (RIVAL_SEEDS + key + j + 4), world), scorer, splits, workers=1)
                scores[role] = (val_ev.score(before_skill, "val"), train_ev.score(before_skill, "train"))
            for n in sizes:
                ids = [i.id for i in val[:n]]
                for setup in table:
                    repeats = setup.cfg.gate_repeats
                    b = subset(scores[0][0], ids, repeats, setup.means_only)
                    for slot, role in ((0, 1), (1, 2)):
                        field = [role, *range(3, 3 + setup.candidates - 1)]  # the candidate first, then rivals
                        judged = []
                        for r in field:
                            a = subset(scores[r][0], ids, repeats, setup.means_only)
                            verdict = gate.decide(setup.cfg, b, a, seed=t, items=ids, train_before=scores[0][1],
                                                  train_after=scores[r][1], candidates=setup.candidates)
                            judged.append(Judgement(verdict, a, True))
                        kept = best_of(judged, setup.cfg.gate_metric, setup.cfg.mixed_weight)  # the loop's choice
                        # null: anything kept is a false accept; better: the better candidate itself must be kept
                        counts[(setup.label, n)][slot] += kept is not None if slot == 0 else kept == 0
            if (t + 1) % max(1, trials // 10) == 0:
                print(f"[{name}] {t + 1}/{trials} trials, {time.monotonic() - started:.0f} s", file=sys.stderr,
                      flush=True)
        for setup in table:
            for n in sizes:
                fa, ta = counts[(setup.label, n)]
                rows.append({"scenario": name, **setup.describe(), "val_size": n, "trials": trials,
                             "false_accept": round(fa / trials, 4), "false_accept_ci": wilson(fa, trials),
                             "true_accept": round(ta / trials, 4), "true_accept_ci": wilson(ta, trials),
                             "gate_calls": n * setup.cfg.gate_repeats, "before_score": base, "true_delta": delta,
                             "noise": world.noise})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(p: float, ci: list[float] | tuple[float, float]) -> str:
        return f"{p * 100:.0f} ({ci[0] * 100:.0f}–{ci[1] * 100:.0f})"

    out = []
    for name in dict.fromkeys(r["scenario"] for r in rows):
        mine = [r for r in rows if r["scenario"] == name]
        sizes = list(dict.fromkeys(r["val_size"] for r in mine))
        first = mine[0]
        out.append(f"\n{name}: before {first['before_score']:.3f}, better candidate {first['true_delta']:+.3f}, "
                   f"{first['trials']} trials; false accept % / true accept % (95 % Wilson interval)\n")
        out.append("| gate | " + " | ".join(f"FA n={n} | TA n={n}" for n in sizes) + " |")
        out.append("| --- | " + " | ".join("---: | ---:" for _ in sizes) + " |")
        for label in dict.fromkeys(r["label"] for r in mine):
            cells = []
            for n in sizes:
                r = next(x for x in mine if x["label"] == label and x["val_size"] == n)
                cells += [cell(r["false_accept"], r["false_accept_ci"]), cell(r["true_accept"], r["true_accept_ci"])]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trials", type=int, default=500, help="trials per scenario (default 500)")
    ap.add_argument("--sizes", default="10,30,100", help="val sizes, comma-separated (default 10,30,100)")
    ap.add_argument("--scenarios", default="rule,ceiling", help="rule, ceiling or both (default)")
    ap.add_argument("--batch", type=int, default=40, help="train batch size for two_split (default 40)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=None, help="the student's slip rate (default: the world's 0.05)")
    ap.add_argument("--json", action="store_true", help="one JSON object per row on stdout")
    ap.add_argument("--quick", action="store_true", help="tiny setting: 10 trials, val size 10")
    ap.add_argument("--out", type=Path, default=None, help="result file (default bench/results/gate_calibration.json)")
    ap.add_argument("--no-save", action="store_true", help="write no result file")
    args = ap.parse_args(argv)
    if args.quick:
        args.trials, args.sizes = 10, "10"
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = [n for n in names if n not in ("rule", "ceiling")]
    if unknown or not sizes or min(sizes) < 2 or max(sizes) + args.batch > POOL or args.trials < 1:
        ap.error("need --trials >= 1, --sizes between 2 and 2900, --scenarios from rule,ceiling")
    started = time.monotonic()
    rows = run(args.trials, sizes, names, args.seed, args.batch, args.noise)
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(markdown(rows))
    if not args.no_save:
        from benchlib import write_result

        write_result("gate_calibration", {"trials": args.trials, "sizes": sizes, "scenarios": names,
                                          "noise": rows[0]["noise"], "seconds": round(time.monotonic() - started, 1),
                                          "rows": rows},
                     args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
