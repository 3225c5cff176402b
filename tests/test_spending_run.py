"""`evaluation.across_steps` in a real `skillgit train` (the simulated world): every gate note records the α its
step was tested at, derived from the run's own earlier decisions, and a killed and resumed run spends exactly as
an uninterrupted one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.loop import spending
from tests.conftest import git
from tests.helpers import decided_state
from tests.test_resume import FIXED, kill_during

# α 0.4 so that the simulated world's early gains pass fdr's first bars (seed 0: steps 1, 2 and the slow update)
ARGS = ("train", "--run", "r1", "--events", "--set", "train.max_steps=4", "--set", "model.simulated.latency_s=0.01",
        "--set", "evaluation.across_steps=fdr", "--set", "evaluation.paired_alpha=0.4")


def start(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "skillgit", *ARGS], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def train(folder: Path) -> None:
    proc = start(folder)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]


def spent(folder: Path) -> list[tuple[str, str, str, dict]]:
    """(step, verdict, reason, spending) of every decision of the run, in decision order."""
    rows = []
    for line in git(folder, "notes", "--ref", "skillgit", "list").splitlines():
        records = [json.loads(r) for r in git(folder, "notes", "--ref", "skillgit", "show", line.split()[1])
                   .splitlines() if r.strip()]
        decision = next((r for r in records if r.get("kind") == "decision"), None)
        gate = next((r for r in records if r.get("kind") == "gate"), None)
        if decision is not None and gate is not None:
            rows.append((decision["seq"], str(decision["step"]), decision["verdict"], decision["reason"],
                         gate.get("spending")))
    return [row[1:] for row in sorted(rows)]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # the same dates and identity as the killed runs (test_resume.py)
        for key, value in FIXED.items():
            mp.setenv(key, value)
        folder = tmp_path_factory.mktemp("baseline") / "proj"
        create_project(folder, seed=0)
        train(folder)
        return spent(folder), decided_state(folder)


def test_a_train_with_fdr_tests_each_step_at_the_alpha_its_earlier_verdicts_give(baseline):
    rows, _ = baseline
    assert [step for step, *_ in rows] == ["1", "2", "3", "e1-slow-update", "e1-meta-reflect", "4"]
    counted = [(verdict, record) for _, verdict, _, record in rows if record["counted"]]
    assert [v for v, _ in counted][:4] == ["accepted", "accepted", "rejected", "accepted"]
    expected = spending.sequence("fdr", 0.4, [v == "accepted" for v, _ in counted])
    assert [r["step_alpha"] for _, r in counted] == pytest.approx(expected, rel=1e-12)
    assert [r["test"] for _, r in counted] == list(range(1, len(counted) + 1))
    for _, _, reason, record in rows:
        assert record["mode"] == "fdr" and record["alpha"] == 0.4
        if record["counted"]:
            accepted_before = sum(1 for v, r in counted if r["test"] < record["test"] and v == "accepted")
            assert f"α this step {record['step_alpha']:.3g} (fdr: gated step {record['test']}, " \
                   f"{accepted_before} accept" in reason, reason


def test_without_a_mode_each_verdict_says_it_rests_on_no_correction_across_steps(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, seed=0)
    done = subprocess.run([sys.executable, "-m", "skillgit", "train", "--set", "train.max_steps=2"], cwd=folder,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = spent(folder)
    assert [r[-1]["test"] for r in rows] == [1, 2] and {r[-1]["mode"] for r in rows} == {"none"}
    for n, (_, _, reason, record) in enumerate(rows, 1):
        assert f"no correction across steps (gated step {n} of the run)" in reason
        assert record["step_alpha"] == 0.05 and record["counted"]
    assert "needs < 0.05)" in rows[0][2]  # step 1 gained: its p is compared with α itself


@pytest.mark.slow
@pytest.mark.parametrize("stage,step", [("rollout", "3"), ("gate", "3"), ("meta_reflect", "e1-meta-reflect"),
                                        ("rollout", "4")])
def test_a_killed_and_resumed_run_spends_alpha_exactly_as_an_uninterrupted_one(tmp_path, baseline, stage, step):
    folder = tmp_path / "proj"
    create_project(folder, seed=0)
    kill_during(folder, stage, step, start)
    train(folder)
    rows, state = baseline
    assert spent(folder) == rows
    assert decided_state(folder) == state
