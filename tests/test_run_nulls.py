"""bench/run_nulls.py: run-level false accepts of chained null steps (README's gate section quotes it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_run_nulls_counts_runs_with_an_accept_within_each_prefix():
    proc = subprocess.run([sys.executable, str(BENCH / "run_nulls.py"), "--runs", "3", "--jobs", "1", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout)
    assert {(r["student"], r["steps"]) for r in rows} == {(s, n) for s in ("near-deterministic", "noisy")
                                                          for n in (1, 10, 30, 100)}
    for student in ("near-deterministic", "noisy"):
        mine = sorted((r for r in rows if r["student"] == student), key=lambda r: r["steps"])
        shares = [r["runs_with_accept"] for r in mine]
        assert shares == sorted(shares)  # a longer prefix holds every accept of a shorter one
        for r in mine:
            assert r["runs"] == 3 and 0 <= r["ci"][0] <= r["runs_with_accept"] <= r["ci"][1] <= 100
            # a run with an accept has at least one (both rounded: to 0.01 accepts, 0.1 %)
            assert r["accepts_per_run"] * 100 >= r["runs_with_accept"] - 1
