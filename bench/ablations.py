"""Ablations: what the gate (and its modes), the negative buffer, the epoch-level memory (slow update, meta skill,
meta reflect) and parallel proposals are worth. Runs full `skillgit train` runs in-process, in throwaway
repositories, over several seeds, on the simulated text world and/or the agentic example, one row per variant:

    python bench/ablations.py [--world text|agentic|both] [--seeds 10] [--steps 9] [--agentic-seeds 5]
                              [--agentic-steps 6] [--variants full,no gate] [--quick] [--out PATH]

Figures per variant, over seeds 0..n-1 (the same seeds for every variant):
- test: mean test score (gate metric, hard) of the final skill; gain: mean of (final − seed skill) per seed, with
  the 95 % confidence interval of that mean (Student-t interval over the seeds' gains, df = seeds − 1);
- Δ full: the mean paired difference of the variant's final test score to `full` on the same seed, with its 95 %
  t-interval (the seed skill's score is the same for both, so this is also the difference of the gains);
- acc / rej: accepted and rejected steps per run (epoch-level candidates included; the losing proposals of a
  step with `optimizer.proposals` > 1 are counted apart, as `losers`), worse-acc: accepted candidates whose val
  score was below the one they replaced (only possible without the gate);
- rep-applied / rep-proposed: edits a later step's candidate applied (or its analysts proposed again) although
  the same edit had been rejected in an earlier step of the run (since the negative buffer blocks only edits
  rejected without a gain, Δ ≤ 0, an edit rejected as "not significant" may come back by design);
- calls: model calls paid per run, the final test scoring excluded (training cost).
A variant whose resolved config equals `full`'s on a world (the agentic example already switches slow update
and meta reflect off) is not run again there and is listed as such. Data to stdout, progress to stderr; writes
bench/results/ablations.json.
"""

# No `from __future__ import annotations`: tests/test_ablations.py loads this file without registering it in
# sys.modules, where dataclasses would look string annotations up.
import argparse
import dataclasses
import math
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import say, write_result  # noqa: E402

from skillgit.cli.demo import create_agentic_project, create_project  # noqa: E402
from skillgit.config_output import config_digest  # noqa: E402
from skillgit.project import open_project  # noqa: E402
from skillgit.session import build_trainer, open_session  # noqa: E402
from skillgit.types import Edit  # noqa: E402

VARIANTS: dict[str, tuple[str, ...]] = {
    "full": (),
    "gate strict": ("evaluation.gate=strict",),
    "gate significance+per_item": ("evaluation.gate=significance+per_item",),
    "gate significance+two_split": ("evaluation.gate=significance+two_split",),
    "no gate": ("evaluation.use_gate=false",),
    "no negative buffer": ("optimizer.use_negative_buffer=false",),
    "no slow update": ("optimizer.use_slow_update=false",),
    "no meta skill": ("optimizer.use_meta_skill=false",),
    "no meta reflect": ("optimizer.use_meta_reflect=false",),
    "proposals 2": ("optimizer.proposals=2",),
    "proposals 4": ("optimizer.proposals=4",),
    "recall 4": ("optimizer.recall_k=4",),  # loop/recall.py: 4 similar past trajectories per reflect minibatch
    "deep reflect": ("optimizer.deep_reflect.enabled=true",),  # issue 27: probes before reflect (4 / 2 / 2 turns)
}
# `full` is the default config: `gate: significance` (gate_k 1.75, 3 repeats), buffer, slow update, meta skill and
# meta reflect on, one proposal a step.

LOSER = re.compile(r"^s\d+-p\d+$")  # the name of a step's losing proposal (`optimizer.proposals` > 1)


@dataclass(frozen=True)
class World:
    """A project to train: `create(folder, seed)` writes and commits it."""

    name: str
    create: Callable[[Path, int], None]


WORLDS = {"text": World("text", create_project), "agentic": World("agentic", create_agentic_project)}


@dataclass(frozen=True)
class Run:
    """One training run's figures."""

    seed: int
    test_seed: float
    test_final: float
    val_seed: float
    val_final: float
    accepted: int
    rejected: int
    losers: int
    accepted_regressions: int
    repeated_applied: int
    repeated_proposed: int
    calls: int
    seconds: float

    @property
    def test_gain(self) -> float:
        return self.test_final - self.test_seed


@dataclass(frozen=True)
class Interval:
    """A mean with its 95 % Student-t confidence interval (lo = hi = mean for one value)."""

    mean: float
    lo: float
    hi: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        return {"mean": round(self.mean, 4), "lo": round(self.lo, 4), "hi": round(self.hi, 4), "n": self.n}

    def text(self) -> str:
        return f"{self.mean:+.3f} [{self.lo:+.3f}, {self.hi:+.3f}]"


# two-sided 95 % quantiles of Student's t by degrees of freedom; between rows the smaller df's (wider) value is used
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
       25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def mean_ci(values: Sequence[float]) -> Interval:
    """Mean and 95 % t-interval (df = n − 1) of `values`."""
    n = len(values)
    m = statistics.fmean(values)
    if n < 2:
        return Interval(m, m, m, n)
    t = T95[max(k for k in T95 if k <= n - 1)]
    half = t * statistics.stdev(values) / math.sqrt(n)
    return Interval(m, m - half, m + half, n)


def repeats(store, run: str) -> dict[str, int]:
    """Walk the run's decisions in order and count edits that repeat one rejected *without a gain* (Δ ≤ 0) in an
    earlier step — what the negative buffer blocks; an edit rejected with a gain too small to trust may come back to
    be measured again (`Trainer._blocked`). A step's proposals (`N` and its losers `sN-pK`) are one step: an edit
    its winner shares with a loser is not a repeat."""
    rejected: set[tuple[str, str, str]] = set()
    pending: set[tuple[str, str, str]] = set()  # rejected within the current step, blocking from the next one on
    applied_again = proposed_again = 0
    current = None
    for entry in store.history(run):
        if entry.verdict not in ("accepted", "rejected"):
            continue
        name = str(entry.step)
        step = name[1:].split("-p")[0] if LOSER.match(name) else name
        if step != current:
            rejected |= pending
            pending, current = set(), step
        cand: dict = next((r for r in store.read_notes(entry.sha) if r.get("kind") == "candidate"), {})
        applied = [Edit.from_dict(f["edit"]) for f in cand.get("apply", [])
                   if f["status"] in ("applied", "applied_fuzzy")]
        proposed = [Edit.from_dict(e) for e in cand.get("aggregated", [])]
        applied_again += sum(e.key() in rejected for e in applied)
        proposed_again += sum(e.key() in rejected for e in proposed)
        if entry.verdict == "rejected" and (entry.delta is None or entry.delta <= 0):
            pending.update(e.key() for e in applied)
    return {"repeated_applied": applied_again, "repeated_proposed": proposed_again}


def digest(world: World, overrides: tuple[str, ...], workdir: Path) -> str:
    """The resolved config's digest of `world` with `overrides` (to spot variants identical to `full`)."""
    folder = workdir / f"cfg-{world.name}"
    if not folder.exists():
        world.create(folder, 0)
    return config_digest(open_project(folder, None, list(overrides)).config)


def run_one(seed: int, steps: int, overrides: tuple[str, ...], workdir: Path, world: World = WORLDS["text"]) -> Run:
    folder = workdir / f"{world.name}-s{seed}-{abs(hash(overrides)) % 10**8}"
    world.create(folder, seed)
    project = open_project(folder, None, [f"train.max_steps={steps}", *overrides])
    session = open_session(project)
    events: list = []
    start = time.perf_counter()
    trainer = build_trainer(session, run_id="ablation", resume=False, on_event=events.append)
    result = trainer.train()
    seconds = time.perf_counter() - start
    ends = [e.outcome.to_dict() for e in events if e.kind == "step_end"]
    by_stage = trainer.ledger.snapshot()["by_stage"]
    counted = [d for d in ends if not LOSER.match(d["step"])]
    return Run(
        seed=seed, test_seed=result.scores["seed"]["test"], test_final=result.scores["final"]["test"],
        val_seed=result.scores["seed"]["val"], val_final=result.scores["final"]["val"],
        accepted=sum(d["verdict"] == "accepted" for d in counted),
        rejected=sum(d["verdict"] != "accepted" for d in counted), losers=len(ends) - len(counted),
        accepted_regressions=sum(d["verdict"] == "accepted" and d["score_after"] < d["score_before"] for d in ends),
        calls=sum(u["calls"] for stage, u in by_stage.items() if stage != "test"), seconds=round(seconds, 2),
        **repeats(session.store, "ablation"))


def summarise(runs: list[Run], overrides: tuple[str, ...], full: list[Run] | None) -> dict[str, Any]:
    mean = lambda key: round(statistics.fmean(getattr(r, key) for r in runs), 4)  # noqa: E731
    gain = mean_ci([r.test_gain for r in runs])
    out: dict[str, Any] = {
        "overrides": list(overrides), "runs": [{**dataclasses.asdict(r), "test_gain": round(r.test_gain, 4)}
                                               for r in runs],
        "test_final": mean("test_final"), "test_seed": mean("test_seed"), "test_gain": round(gain.mean, 4),
        "test_gain_ci": gain.to_dict(), "val_final": mean("val_final"),
        **{k: mean(k) for k in ("accepted", "rejected", "losers", "accepted_regressions", "repeated_applied",
                                "repeated_proposed", "calls", "seconds")},
    }
    if full is not None:
        by_seed = {r.seed: r for r in full}
        paired = [r.test_final - by_seed[r.seed].test_final for r in runs if r.seed in by_seed]
        out["vs_full_ci"] = mean_ci(paired).to_dict() if paired else None
    return out


def run_ablations(seeds: int, steps: int, variants: dict[str, tuple[str, ...]] = VARIANTS,
                  world: str = "text", workdir: Path | None = None) -> dict:
    """Every variant over seeds 0..seeds-1 on `world` → {"world", "seeds", "steps", "variants": {name: summary},
    "same_as_full": [names not run]}."""
    w = WORLDS[world]
    out: dict = {"world": world, "seeds": seeds, "steps": steps, "variants": {}, "same_as_full": []}
    with tempfile.TemporaryDirectory(prefix=f"skillgit-ablation-{world}-") as tmp:
        tmp_path = workdir or Path(tmp)
        base = digest(w, (), tmp_path)
        full_runs: list[Run] | None = None
        for name, overrides in variants.items():
            if overrides and digest(w, overrides, tmp_path) == base:
                out["same_as_full"].append(name)
                say(f"ablations[{world}]: {name}: same config as full here, not run")
                continue
            runs = []
            for seed in range(seeds):
                runs.append(run_one(seed, steps, overrides, tmp_path, w))
                say(f"ablations[{world}]: {name} seed {seed}: test {runs[-1].test_seed:.3f} → "
                    f"{runs[-1].test_final:.3f}, {runs[-1].accepted} accepted, {runs[-1].seconds:.1f} s")
            out["variants"][name] = summarise(runs, overrides, None if name == "full" else full_runs)
            if name == "full":
                full_runs = runs
    return out


def table(result: dict) -> str:
    head = (f"{'variant':<30}{'test':>7}{'gain [95% CI]':>24}{'Δ full [95% CI]':>24}{'acc':>6}{'rej':>6}"
            f"{'losers':>7}{'worse-acc':>10}{'rep-applied':>12}{'rep-proposed':>13}{'calls':>8}")
    lines = [head, "-" * len(head)]
    for name, v in result["variants"].items():
        ci = v.get("test_gain_ci")
        gain = Interval(ci["mean"], ci["lo"], ci["hi"], ci["n"]).text() if ci else f"{v['test_gain']:+.3f}"
        vs = v.get("vs_full_ci")
        paired = Interval(vs["mean"], vs["lo"], vs["hi"], vs["n"]).text() if vs else "-"
        lines.append(f"{name:<30}{v['test_final']:>7.3f}{gain:>24}{paired:>24}{v['accepted']:>6.1f}"
                     f"{v['rejected']:>6.1f}{v.get('losers', 0):>7.1f}{v['accepted_regressions']:>10.1f}"
                     f"{v['repeated_applied']:>12.1f}{v['repeated_proposed']:>13.1f}{v.get('calls', 0):>8.0f}")
    for name in result.get("same_as_full", []):
        lines.append(f"{name:<30}  (same config as full on this world: not run)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", choices=("text", "agentic", "both"), default="text")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per variant on the text world")
    parser.add_argument("--steps", type=int, default=9, help="steps per run on the text world")
    parser.add_argument("--agentic-seeds", type=int, default=5)
    parser.add_argument("--agentic-steps", type=int, default=6)
    parser.add_argument("--variants", default="", help="comma-separated variant names (default: all)")
    parser.add_argument("--agentic-variants", default="full,gate strict,no gate,no negative buffer,no meta skill,"
                        "proposals 2,proposals 4", help="comma-separated variant names for the agentic world")
    parser.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    parser.add_argument("--out", "--json", dest="out", type=Path, nargs="?", default=None,
                        help="results file (default bench/results/ablations.json)")
    args = parser.parse_args(argv)

    def pick(names: str) -> dict[str, tuple[str, ...]]:
        chosen = [n.strip() for n in names.split(",") if n.strip()] or list(VARIANTS)
        unknown = [n for n in chosen if n not in VARIANTS]
        if unknown:
            parser.error(f"unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
        return {n: VARIANTS[n] for n in chosen}

    text_variants, agentic_variants = pick(args.variants), pick(args.agentic_variants)
    if args.quick:
        args.seeds, args.steps, args.agentic_seeds, args.agentic_steps = 2, 2, 1, 1
        text_variants = agentic_variants = {n: VARIANTS[n] for n in ("full", "no gate", "proposals 2")}
    plan = {"text": (args.seeds, args.steps, text_variants),
            "agentic": (args.agentic_seeds, args.agentic_steps, agentic_variants)}
    worlds = ("text", "agentic") if args.world == "both" else (args.world,)
    start = time.perf_counter()
    data: dict[str, Any] = {"config": {"world": args.world, "quick": args.quick,
                                       "ci": "95 % Student-t interval of the mean over seeds (df = seeds - 1)"},
                            "worlds": {}}
    for world in worlds:
        seeds, steps, variants = plan[world]
        t0 = time.perf_counter()
        data["worlds"][world] = run_ablations(seeds, steps, variants, world)
        data["worlds"][world]["seconds"] = round(time.perf_counter() - t0, 1)
    data["seconds"] = round(time.perf_counter() - start, 1)
    write_result("ablations", data, args.out)
    for world, result in data["worlds"].items():
        print(f"## {world} world: {result['seeds']} seeds × {result['steps']} steps per variant, "
              f"{result['seconds']} s")
        print(table(result))
        print()
    return data


if __name__ == "__main__":
    main()
