"""Calls: model calls and tokens per step by stage, what the caches save, and what a kill + resume repeats.

    python bench/calls.py [--quick] [--steps 4] [--latency 0.02]

All model calls go through the latency server (bench/simserver.py) and the openai backend.

1. An uninterrupted run, in-process, with epoch ends (slow update, meta skill, meta reflect) and the final test
   scoring on: calls and prompt/completion tokens per stage for every step and every other phase (seed scoring,
   epoch ends, final scores); calls saved by the score cache (a skill scored before on a split is not scored
   again: items × repeats per hit) and by the call cache (identical requests answered from the journal).
2. The same run as `skillgit train` subprocesses, SIGKILLed in the middle of a stage and resumed, once per kill
   point. Compared with the uninterrupted run: journal entries (`.git/skillgit/cache/calls.sqlite`) that repeat a
   finished call (target 0), whether the set of journaled calls is the same, calls the server answered in all
   (those beyond the uninterrupted run's were in flight at the kill: paid, never received), and whether the
   run ended with the same refs and skill.
Writes bench/results/calls.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import simserver  # noqa: E402
from benchlib import StepClock, copy_project, git, make_project, say, server_config, table, workdir, write_result  # noqa: E402

RUN = "calls"
KILLS = [("rollout", "2"), ("reflect", "2"), ("gate", "2"), ("decide", "3"), ("slow_update", "e1-slow-update")]


def journal(folder: Path) -> list[tuple[bytes, str]]:
    """Every paid call's (key, reply text), once per time it was paid (the journal counts repeated puts). Two
    projects are compared by replies, not keys: a run's student keys carry its own salt (`loop/evidence.py`)."""
    import sqlite3

    from skillgit.llm import journal as J

    path = folder / ".git" / "skillgit" / "cache" / "calls.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return [(key, J.unpack(bool(codec & J.TEXT_ZLIB), text))
                for key, puts, codec, text in db.execute("SELECT key, puts, codec, text FROM calls")
                for _ in range(max(1, puts))]


def end_state(folder: Path) -> dict:
    refs = git(folder, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags").splitlines()
    return {"refs": sorted(refs), "skill": git(folder, "show", "main:SKILL.md")}


# ---------------------------------------------------------------------------------------------- 1. one run
def uninterrupted(folder: Path, steps: int) -> dict:
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    session = open_session(open_project(folder, None, [f"train.max_steps={steps}"]))
    trainer = build_trainer(session, run_id=RUN, resume=False)
    clock = StepClock(trainer)
    ev = trainer.evaluator
    result = trainer.train()
    # each hit of the evaluator's cache (the same text again within a step's round) is a val split not run again
    score_saved = {"hits": ev.cache_hits, "calls": ev.cache_hits * len(ev.splits["val"]) * ev.repeats}
    windows = clock.usage_windows()
    snap = session.ledger.snapshot()
    return {"windows": windows, "by_stage": snap["by_stage"], "call_cache_saved": snap["saved_calls"],
            "score_cache_saved": score_saved, "accepted": result.accepted, "rejected": result.rejected,
            "journal": journal(folder)}


# ---------------------------------------------------------------------------------------------- 2. kill + resume
def cli(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "skillgit", "train", "--run", RUN, "--events"], cwd=folder,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def kill_and_resume(folder: Path, stage: str, step: str, latency: float, timeout: float = 600) -> dict:
    """SIGKILL `skillgit train` in the middle of `stage` of `step` (student stages: once half the items are
    done; teacher stages: half a call after the stage began), so that calls are in flight; then resume."""
    proc = cli(folder)
    killed = entered = False
    deadline = time.monotonic() + timeout
    for line in proc.stderr:
        if line.startswith("{"):
            event = json.loads(line)
            here = event.get("stage") == stage and str(event.get("step")) == step
            if here and event.get("event") == "stage":
                entered = True
                if stage not in ("rollout", "gate"):
                    time.sleep(latency / 2)
                    proc.send_signal(signal.SIGKILL)
                    killed = True
                    break
            elif here and entered and event.get("event") == "progress" and event["done"] * 2 >= event["total"]:
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
        if time.monotonic() > deadline:
            break
    proc.kill()
    proc.wait()
    resumed = cli(folder)
    _, err = resumed.communicate(timeout=timeout)
    if resumed.returncode != 0:
        raise RuntimeError(f"resume after a kill in {stage} of {step} failed:\n{err[-2000:]}")
    return {"killed": killed}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--latency", type=float, default=0.02)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    a = p.parse_args(argv)
    kills = KILLS
    if a.quick:
        a.steps, a.batch, a.latency, a.workers, kills = 2, 4, 0.0, 4, [("gate", "2")]

    with simserver.spawn(simserver.Settings(latency=a.latency, lifetime=3600)) as server, \
            workdir("calls", a.keep) as tmp:
        # two batches per epoch, so that `steps` steps cross epoch ends (slow update, meta skill, meta reflect)
        config = server_config(server.base_url, a.workers)
        config["train"] = {"batch_size": a.batch, "num_epochs": max(1, a.steps // 2), "max_steps": a.steps}
        config["gradient"]["minibatch_size"] = max(2, a.batch // 2)
        config["optimizer"] = {"slow_update_samples": 4}
        template = make_project(tmp / "template", n_train=2 * a.batch, n_val=12, n_test=12, config=config)

        say(f"calls: uninterrupted run, {a.steps} steps")
        server.reset()
        base = uninterrupted(copy_project(template, tmp / "base"), a.steps)
        base_server_calls = len(server.timeline())
        base_state = end_state(tmp / "base")
        base_keys = base["journal"]

        kill_rows = []
        for stage, step in kills:
            say(f"calls: kill in {stage} of step {step}, then resume")
            folder = copy_project(template, tmp / f"kill-{stage}-{step}")
            server.reset()
            info = kill_and_resume(folder, stage, step, a.latency)
            keys = journal(folder)
            kill_rows.append({
                "kill_at": f"{stage}@{step}", "killed": info["killed"], "journal_entries": len(keys),
                "repeated_calls": len(keys) - len({k for k, _ in keys}),
                "same_calls_as_uninterrupted": sorted(t for _, t in keys) == sorted(t for _, t in base_keys),
                "server_calls": len(server.timeline()), "in_flight_at_kill": len(server.timeline()) - base_server_calls,
                "same_end_state": end_state(folder) == base_state})

    phases = []
    for w in base["windows"]:
        calls = sum(u["calls"] for u in w["by_stage"].values())
        phases.append({"phase": w["label"], "calls": calls,
                       "prompt_tokens": sum(u["prompt_tokens"] for u in w["by_stage"].values()),
                       "completion_tokens": sum(u["completion_tokens"] for u in w["by_stage"].values()),
                       "by_stage": " ".join(f"{k}:{u['calls']}" for k, u in w["by_stage"].items()),
                       "cache_saved": sum(w["saved"].values()), "stages": w["by_stage"]})
    steps = [ph for ph in phases if ph["phase"].startswith("step ")]
    per_step = {}
    for ph in steps:
        for stage, u in ph["stages"].items():
            acc = per_step.setdefault(stage, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            for k in acc:
                acc[k] += u[k]
    per_step = {k: {m: round(v / max(1, len(steps)), 2) for m, v in acc.items()} for k, acc in per_step.items()}
    data = {"config": {"steps": a.steps, "batch_size": a.batch, "latency_s": a.latency, "workers": a.workers,
                       "quick": a.quick},
            "phases": phases, "per_step_mean_by_stage": per_step, "run_by_stage": base["by_stage"],
            "total_calls": sum(u["calls"] for u in base["by_stage"].values()),
            "score_cache_saved": base["score_cache_saved"], "call_cache_saved": base["call_cache_saved"],
            "server_calls_uninterrupted": base_server_calls, "journal_entries_uninterrupted": len(base_keys),
            "kills": kill_rows,
            "repeated_calls_after_resume": max((r["repeated_calls"] for r in kill_rows), default=0)}
    write_result("calls", data, a.out)
    print(table(phases, [("phase", "phase", ""), ("calls", "calls", "d"), ("prompt_tokens", "prompt tok", "d"),
                         ("completion_tokens", "compl tok", "d"), ("cache_saved", "cache hits", "d"),
                         ("by_stage", "calls by stage", "")]))
    print(f"\nscore cache: {base['score_cache_saved']['hits']} hits saved {base['score_cache_saved']['calls']} calls; "
          f"call cache: {sum(base['call_cache_saved'].values())} calls answered from the journal "
          f"({', '.join(f'{k} {v}' for k, v in base['call_cache_saved'].items()) or 'none'})\n")
    print(table(kill_rows, [("kill_at", "SIGKILL at", ""), ("journal_entries", "journal", "d"),
                            ("repeated_calls", "repeated", "d"), ("same_calls_as_uninterrupted", "same calls", ""),
                            ("in_flight_at_kill", "lost in flight", "d"), ("same_end_state", "same end state", "")]))
    return data


if __name__ == "__main__":
    main()
