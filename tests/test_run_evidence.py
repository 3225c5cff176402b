"""What a run's evidence rests on (skillgit/loop/evidence.py), through the real CLI on the simulated world:
a new run measures its incumbent afresh (its own journal salt) while a resumed one replays what it finished, and
a run resumed under a changed config or tasks file is refused unless only speed settings changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from tests.conftest import git
from tests.helpers import paid_calls

# one step whose candidate the gate always rejects: the tip never moves, so every run starts from the same tip
ONE_REJECTED = ("--set", "train.max_steps=1", "--set", "evaluation.gate_margin=1")


def train(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skillgit", "train", *args], cwd=folder, capture_output=True,
                           text=True, timeout=240)


def progress(folder: Path, run: str) -> dict:
    return json.loads(git(folder, "show", f"refs/skillgit/runs/{run}:progress.json"))


def gate_note(folder: Path, run: str) -> dict:
    tag = git(folder, "rev-parse", f"refs/tags/rejected/{run}/0001^{{commit}}").strip()
    records = [json.loads(line) for line in git(folder, "notes", "--ref", "skillgit", "show", tag).splitlines()
               if line.strip()]
    return next(r for r in records if r.get("kind") == "gate")


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "proj"
    create_project(folder, seed=5)
    first = train(folder, "--run", "a", *ONE_REJECTED)
    assert first.returncode == 0, first.stderr[-3000:]
    assert progress(folder, "a")["rejected"] == 1
    return folder


def test_a_second_run_from_the_same_tip_scores_its_incumbent_afresh_and_a_resumed_one_replays(project):
    tip = git(project, "rev-parse", "main")
    a_calls = progress(project, "a")["usage_by_role"]["student"]["calls"]
    assert a_calls > 0
    second = train(project, "--run", "b", *ONE_REJECTED)
    assert second.returncode == 0, second.stderr[-3000:]
    assert git(project, "rev-parse", "main") == tip  # the same tip, rounds numbered from 1 again
    # every student call of run b was made again (the incumbent's start and round-1 scorings included), none
    # answered by run a's journal entries: before, run b paid no student call at all
    b = progress(project, "b")
    assert b["usage_by_role"]["student"]["calls"] == a_calls
    note = gate_note(project, "b")
    assert note["incumbent"] == "scored again in this round, on this run's own samples"
    assert note["base"]["round"] == "1"
    # run b again (resumed: it has its own salt on its run ref): the journal answers every call it finished
    before = paid_calls(project)
    again = train(project, "--run", "b", *ONE_REJECTED)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming run b" in again.stderr
    assert paid_calls(project) == before
    assert before[0] == before[1], "a finished call was paid twice"


@pytest.mark.parametrize("change", ["gate_margin", "tasks"])
def test_resuming_a_run_whose_gate_margin_or_tasks_changed_is_refused(project, change):
    run_ref = git(project, "rev-parse", "refs/skillgit/runs/a")
    args = ["--run", "a", "--set", "train.max_steps=2", "--set", "evaluation.gate_margin=1"]
    if change == "gate_margin":
        args[-1] = "evaluation.gate_margin=0.5"
    else:
        tasks = project / "tasks.jsonl"
        rows = tasks.read_text().splitlines()
        tasks.write_text("\n".join(rows[:-1]) + "\n")  # one item fewer
    refused = train(project, *args)
    assert refused.returncode == 2, refused.stderr[-3000:]
    said = " ".join(refused.stderr.split())
    assert "run a changed since it started" in said
    assert ("evaluation.gate_margin: 1.0 -> 0.5" if change == "gate_margin" else "its tasks") in said
    assert "skillgit train --new" in said
    # nothing of the run was touched: its progress, its decisions
    assert git(project, "rev-parse", "refs/skillgit/runs/a") == run_ref
    assert progress(project, "a")["next_step"] == 2


def test_resuming_with_changed_workers_goes_on_and_says_so(project):
    resumed = train(project, "--run", "a", "--set", "train.max_steps=2", "--set", "evaluation.gate_margin=1",
                    "--set", "env.workers=2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    said = " ".join(resumed.stderr.split())
    assert "run a resumes with env.workers: 8 -> 2" in said
    assert "max_steps" not in said  # a longer run is what resuming is for: not worth a word
    assert progress(project, "a")["next_step"] == 3  # step 2 was trained in the same run
