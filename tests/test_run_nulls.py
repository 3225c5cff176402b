"""bench/run_nulls.py: run-level false accepts of chained null steps per `evaluation.across_steps` mode, and the
power of a real gain at step k (README's gate section quotes it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_run_nulls_counts_runs_with_an_accept_within_each_prefix_per_mode():
    proc = subprocess.run([sys.executable, str(BENCH / "run_nulls.py"), "--runs", "3", "--jobs", "1", "--json",
                           "--modes", "none,fwer"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout)
    assert {(r["student"], r["mode"], r["steps"]) for r in rows} == {
        (s, m, n) for s in ("near-deterministic", "noisy") for m in ("none", "fwer") for n in (1, 10, 30, 100)}
    for student in ("near-deterministic", "noisy"):
        for mode in ("none", "fwer"):
            mine = sorted((r for r in rows if r["student"] == student and r["mode"] == mode),
                          key=lambda r: r["steps"])
            shares = [r["runs_with_accept"] for r in mine]
            assert shares == sorted(shares)  # a longer prefix holds every accept of a shorter one
            for r in mine:
                assert r["runs"] == 3 and 0 <= r["ci"][0] <= r["runs_with_accept"] <= r["ci"][1] <= 100
                # a run with an accept has at least one (both rounded: to 0.01 accepts, 0.1 %)
                assert r["accepts_per_run"] * 100 >= r["runs_with_accept"] - 1
                # (accepts_per_run is rounded to 0.01: ±0.5 per 100 steps at S = 1)
                assert abs(r["accepts_per_100_steps"] - 100 * r["accepts_per_run"] / r["steps"]) <= 0.5


def test_run_nulls_power_reports_the_real_gain_accepted_at_each_step():
    proc = subprocess.run([sys.executable, str(BENCH / "run_nulls.py"), "--runs", "2", "--jobs", "1", "--json",
                           "--modes", "none", "--students", "noisy", "--power", "--no-nulls"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout)
    assert [(r["kind"], r["at_step"]) for r in rows] == [("power", k) for k in (1, 3, 10, 30, 100)]
    assert all(r["runs"] == 2 and r["gain"] == "+20" and 0 <= r["accepted"] <= 100 for r in rows)
