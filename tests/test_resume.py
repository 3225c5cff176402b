"""Kill a training run with SIGKILL in the middle of each stage, resume it, and end in exactly the git state and
the call count of an uninterrupted run with the same seed. Also: the run lock refuses a second `train`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from skillgit.cli.demo import create_project
from tests.conftest import FIXED_DATE, git
from tests.helpers import decided_state, paid_calls

FIXED = {"GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE, "GIT_AUTHOR_NAME": "Test Author",
         "GIT_AUTHOR_EMAIL": "author@example.com", "GIT_COMMITTER_NAME": "Test Committer",
         "GIT_COMMITTER_EMAIL": "committer@example.com"}

ARGS = ("train", "--run", "r1", "--events", "--set", "train.max_steps=4", "--set", "model.simulated.latency_s=0.01")


def start(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "skillgit", *ARGS], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def run_to_end(folder: Path) -> None:
    proc = start(folder)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]


def kill_during(folder: Path, stage: str, step: str, begin: Callable[[Path], subprocess.Popen] | None = None
                ) -> list[dict]:
    """Start training (`begin(folder)`, default `start`: a process printing its --events on stderr) and SIGKILL
    it once it announces `stage` of `step`; returns the events it printed."""
    proc = (begin or start)(folder)
    seen = []
    deadline = time.monotonic() + 240
    for line in proc.stderr:
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        seen.append(event)
        if event["event"] == "stage" and event["stage"] == stage and str(event["step"]) == step:
            proc.send_signal(signal.SIGKILL)
            break
        assert time.monotonic() < deadline
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the run ended before reaching {stage} of step {step}"
    return seen


def git_state(folder: Path) -> dict:
    """Everything the run decided (`decided_state`) and the skill file it left."""
    return {**decided_state(folder), "skill": (folder / "SKILL.md").read_text()}



@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    # Module-scoped fixtures run before the function-scoped hermetic environment: pin the same dates and
    # identity here, so that commit ids can be compared with the killed runs'.
    with pytest.MonkeyPatch.context() as mp:
        for key, value in FIXED.items():
            mp.setenv(key, value)
        folder = tmp_path_factory.mktemp("baseline") / "proj"
        create_project(folder, seed=5)
        run_to_end(folder)
        return git_state(folder), paid_calls(folder)


@pytest.mark.slow
@pytest.mark.parametrize("stage,step", [
    ("rollout", "2"), ("reflect", "2"), ("aggregate", "2"), ("select", "2"), ("update", "2"), ("gate", "2"),
    ("decide", "2"), ("slow_update", "e1-slow-update"), ("meta_reflect", "e1-meta-reflect"), ("test:seed", "0"),
])
def test_kill_and_resume_ends_like_an_uninterrupted_run(tmp_path, baseline, stage, step):
    folder = tmp_path / "proj"
    create_project(folder, seed=5)
    kill_during(folder, stage, step)
    run_to_end(folder)
    state, calls = git_state(folder), paid_calls(folder)
    expected_state, expected_calls = baseline
    assert state["refs"] == expected_state["refs"]
    assert state["skill"] == expected_state["skill"]
    assert state["notes"] == expected_state["notes"]
    assert calls[0] == calls[1], "a finished call was paid twice"
    assert calls == expected_calls
    assert git(folder, "for-each-ref", "refs/heads/candidates") == ""


def test_second_train_on_the_same_branch_is_refused_while_one_runs(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, seed=1)
    first = subprocess.Popen([sys.executable, "-m", "skillgit", "train", "--events", "--set",
                              "model.simulated.latency_s=0.05"], cwd=folder, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        for line in first.stderr:
            if '"event": "step_start"' in line:
                break
        second = subprocess.run([sys.executable, "-m", "skillgit", "train"], cwd=folder, capture_output=True,
                                text=True, timeout=120)
        assert second.returncode == 6, second.stderr
        assert "hint:" in second.stderr and str(first.pid) in second.stderr
    finally:
        first.kill()
        first.wait()
    # the lock of a killed run is stale and is taken over
    third = subprocess.run([sys.executable, "-m", "skillgit", "train", "--set", "train.max_steps=1"], cwd=folder,
                           capture_output=True, text=True, timeout=240)
    assert third.returncode == 0, third.stderr
