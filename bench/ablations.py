"""Ablations on the simulated world: what the gate, the negative buffer and the epoch-level memory (slow update
+ meta skill) are worth. Runs full `skillgit train` runs in-process, in throwaway repositories, over several
seeds, and prints one row per variant:

    python bench/ablations.py [--seeds 5] [--steps 9] [--json bench/results/ablations.json]

Figures per variant (mean over seeds): test score of the final skill, its change from the seed skill, accepted
and rejected steps, accepted steps that made val worse (only possible without the gate), and *repeated rejected
edits*: edits that a later candidate applied (or the analysts proposed again) although the same edit had been
rejected before in the run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from skillgit.demo import create_project  # noqa: E402
from skillgit.project import open_project  # noqa: E402
from skillgit.session import build_trainer, open_session  # noqa: E402
from skillgit.types import Edit  # noqa: E402

VARIANTS: dict[str, tuple[str, ...]] = {
    "full": (),
    "no negative buffer": ("optimizer.use_negative_buffer=false",),
    "no slow update + meta skill": ("optimizer.use_slow_update=false", "optimizer.use_meta_skill=false"),
    "no gate": ("evaluation.use_gate=false",),
}


def repeats(store, run: str) -> dict[str, int]:
    """Walk the run's steps in order and count edits that repeat an earlier rejected one."""
    rejected: set[tuple[str, str, str]] = set()
    applied_again = proposed_again = 0
    for entry in store.history(run):
        if entry.verdict not in ("accepted", "rejected"):
            continue
        cand = next((r for r in store.read_notes(entry.sha) if r.get("kind") == "candidate"), {})
        applied = [Edit.from_dict(f["edit"]) for f in cand.get("apply", [])
                   if f["status"] in ("applied", "applied_fuzzy")]
        proposed = [Edit.from_dict(e) for e in cand.get("aggregated", [])]
        applied_again += sum(e.key() in rejected for e in applied)
        proposed_again += sum(e.key() in rejected for e in proposed)
        if entry.verdict == "rejected":
            rejected.update(e.key() for e in applied)
    return {"repeated_applied": applied_again, "repeated_proposed": proposed_again}


def run_one(seed: int, steps: int, overrides: tuple[str, ...], workdir: Path) -> dict:
    folder = workdir / f"s{seed}-{abs(hash(overrides)) % 10**8}"
    create_project(folder, seed)
    project = open_project(folder, None, [f"train.max_steps={steps}", *overrides])
    session = open_session(project)
    events = []
    trainer = build_trainer(session, run_id="ablation", resume=False, on_event=events.append)
    result = trainer.train()
    ends = [e.outcome.to_dict() for e in events if e.kind == "step_end"]
    return {
        "seed": seed,
        "test_seed": result.scores["seed"]["test"],
        "test_final": result.scores["final"]["test"],
        "accepted": result.accepted,
        "rejected": result.rejected,
        "accepted_regressions": sum(d["verdict"] == "accepted" and d["score_after"] < d["score_before"]
                                    for d in ends),
        **repeats(session.store, "ablation"),
    }


def run_ablations(seeds: int, steps: int, variants: dict[str, tuple[str, ...]] = VARIANTS) -> dict:
    out: dict = {"seeds": seeds, "steps": steps, "variants": {}}
    with tempfile.TemporaryDirectory(prefix="skillgit-ablation-") as tmp:
        for name, overrides in variants.items():
            rows = [run_one(seed, steps, overrides, Path(tmp)) for seed in range(seeds)]
            mean = lambda key, rows=rows: round(sum(r[key] for r in rows) / len(rows), 4)  # noqa: E731
            out["variants"][name] = {
                "overrides": list(overrides), "runs": rows,
                "test_final": mean("test_final"), "test_gain": round(mean("test_final") - mean("test_seed"), 4),
                "accepted": mean("accepted"), "rejected": mean("rejected"),
                "accepted_regressions": mean("accepted_regressions"),
                "repeated_applied": mean("repeated_applied"), "repeated_proposed": mean("repeated_proposed"),
            }
    return out


def table(result: dict) -> str:
    head = (f"{'variant':<30}{'test':>7}{'gain':>8}{'acc':>6}{'rej':>6}{'worse-acc':>10}{'rep-applied':>12}"
            f"{'rep-proposed':>13}")
    lines = [head, "-" * len(head)]
    for name, v in result["variants"].items():
        lines.append(f"{name:<30}{v['test_final']:>7.3f}{v['test_gain']:>+8.3f}{v['accepted']:>6.1f}{v['rejected']:>6.1f}"
                     f"{v['accepted_regressions']:>10.1f}{v['repeated_applied']:>12.1f}{v['repeated_proposed']:>13.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=9)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "ablations.json")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run_ablations(args.seeds, args.steps)
    result["seconds"] = round(time.perf_counter() - start, 1)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(table(result))
    print(f"({args.seeds} seeds × {args.steps} steps per variant, {result['seconds']} s; JSON: {args.json})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
