"""`skillgit train --all`: every library skill in one run, round-robin, under one budget, each gated on its own,
and a killed run resumes with nothing lost and no finished call paid twice (simulated world, real git, real CLI)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXED_DATE, git, run_cli_inproc
from tests.helpers import decided_state, paid_calls

FIXED = {"GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE, "GIT_AUTHOR_NAME": "Test Author",
         "GIT_AUTHOR_EMAIL": "author@example.com", "GIT_COMMITTER_NAME": "Test Committer",
         "GIT_COMMITTER_EMAIL": "committer@example.com"}

CONFIG = """\
skills:
  deploy: {path: skills/deploy/SKILL.md, tasks: tasks/deploy.jsonl, triggers: triggers.jsonl}
  release-notes: {path: skills/release-notes/SKILL.md, tasks: tasks/release-notes.jsonl, triggers: triggers.jsonl}
  db-migrate: {path: skills/db-migrate/SKILL.md, triggers: triggers.jsonl}
model:
  teacher_backend: simulated
  teacher_model: sim-teacher
  student_backend: simulated
  student_model: sim-student
train:
  seed: 0
  batch_size: 10
evaluation:
  gate_metric: hard
env:
  split_ratio: "4:2:4"
  scorer: {type: exact}
"""

ALL = ("train", "--all", "--set", "train.max_steps=2")


def project(folder: Path) -> Path:
    from skillgit.config import SimulatedCfg
    from skillgit.library.demo import create_library_project
    from skillgit.world import generate_tasks

    create_library_project(folder)
    (folder / "skillgit.yaml").write_text(CONFIG)
    (folder / "tasks").mkdir()
    for seed, name in ((0, "deploy"), (1, "release-notes")):
        tasks = generate_tasks(SimulatedCfg(seed=seed), 40)
        (folder / "tasks" / f"{name}.jsonl").write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "two skills with tasks")
    return folder


def skillgit(folder: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli_inproc(*args, cwd=folder, env=env)  # the killed run below is the one that needs a process


def turns(stderr: str) -> list[tuple[str, int]]:
    return [(e["skill"], e["step"]) for e in (json.loads(x) for x in stderr.splitlines() if x.startswith("{"))
            if e["event"] == "library_turn"]



def test_next_turn_is_round_robin_and_the_budget_is_the_librarys():
    from skillgit.config import BudgetCfg
    from skillgit.library.all import SkillState, next_turn, over_budget, turn_overrides
    from skillgit.types import Usage

    a, b = SkillState("a", "r.a", 3, done=1, turn=2), SkillState("b", "r.b", 3, done=1, turn=2)
    c = SkillState("c", "r.c", 1, done=1, turn=1, status="finished")
    assert next_turn([a, b, c]) is a  # the lowest turn, ties in the config's order; c is finished
    b.turn = 1  # b's first turn did not close (stopped at its epoch end, killed): it is resumed first
    assert next_turn([a, b, c]) is b
    assert next_turn([SkillState("x", "r.x", 1, done=1, status="finished")]) is None
    assert not SkillState("y", "r.y", 1, done=1, status="stopped").finished  # its last turn did not close
    a.usage = Usage(calls=30, prompt_tokens=1000)
    spent = Usage(calls=70)  # the library's spend over all its skills
    lines = turn_overrides(a, BudgetCfg(max_calls=100), spent)
    assert lines == ["train.max_steps=2", "evaluation.eval_test=false", "budget.max_calls=60"]  # 30 own + 30 left
    assert turn_overrides(SkillState("c", "r.c", 2, done=1, turn=2), BudgetCfg(), spent) == ["train.max_steps=2"]
    assert over_budget(BudgetCfg(max_calls=70), spent).startswith("budget.max_calls reached for the library")
    assert over_budget(BudgetCfg(max_calls=71), spent) is None


def test_train_all_trains_every_skill_with_tasks_round_robin_each_gated_on_its_own(tmp_path):
    root = project(tmp_path / "lib")
    base = git(root, "rev-parse", "main").strip()
    done = skillgit(root, *ALL, "--run", "L1", "--events", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert turns(done.stderr) == [("deploy", 1), ("release-notes", 1), ("deploy", 2), ("release-notes", 2)]
    out = json.loads(done.stdout)
    assert out["status"] == "finished" and out["schedule"] == "round-robin"
    assert {k: (v["run"], v["steps"]) for k, v in out["skills"].items()} == {
        "deploy": ("L1.deploy", 2), "release-notes": ("L1.release-notes", 2)}
    assert "skillgit tasks suggest --skill db-migrate" in out["skipped"]["db-migrate"]
    assert out["usage"]["calls"] == sum(v["usage"]["calls"] for v in out["skills"].values()) > 0
    # each skill's steps are its own run's, gated on its own tasks, and touch only its own file
    for skill in ("deploy", "release-notes"):
        tags = git(root, "tag", "-l", f"rejected/L1.{skill}/*").split()
        accepted = git(root, "log", "--format=%H", f"--grep=Skillgit-Run: L1.{skill}", f"{base}..main").split()
        assert len(tags) + len(accepted) >= 2
        for rev in tags + accepted:
            files = git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", f"{rev}^{{commit}}^",
                        f"{rev}^{{commit}}").split()
            assert files == [f"skills/{skill}/SKILL.md"], (rev, files)
        gate = [json.loads(x) for x in git(root, "notes", "--ref=skillgit", "show",
                                          f"{(tags + accepted)[0]}^{{commit}}").splitlines()]
        assert any(n.get("kind") == "gate" and n.get("run") == f"L1.{skill}" for n in gate)
    # the test split was read at each skill's last turn only (its closing scores), never at every round
    progress = json.loads(git(root, "show", "refs/skillgit/runs/L1.deploy:progress.json"))
    assert progress["test_reads"] > 0 and progress["final_scores"]["final"]["test"] is not None
    # nothing unfinished: `train --all` without --run would start a new library run (the resume test runs the
    # other case through the CLI: a stopped run is continued without --run)
    from skillgit.library.all import newest_unfinished

    assert newest_unfinished(root / ".git") is None


def test_train_all_stops_at_the_librarys_budget_and_resumes_paying_nothing_twice(tmp_path, baseline, cli_inproc):
    calls = baseline[2]["usage"]["calls"]  # the uninterrupted run's spend (the kill tests' baseline, run once)
    first_turn = baseline[2]["skills"]["deploy"]["usage"]["calls"]  # (≥ its first turn's)

    root = project(tmp_path / "budget")
    limit = calls // 2
    stopped = skillgit(root, *ALL, "--run", "L2", "--json", "--set", f"budget.max_calls={limit}")
    assert stopped.returncode == 5, stopped.stderr[-3000:]
    out = json.loads(stopped.stdout)
    assert out["status"] == "stopped" and "budget.max_calls" in out["reason"]
    spent = out["usage"]["calls"]
    assert spent <= limit + 16  # stopped before the call that would cross it (16: the calls already in flight)
    assert sum(1 for v in out["skills"].values() if v["steps"] < 2) >= 1
    assert f"skillgit train --all --run L2 --set train.max_steps=2 --set budget.max_calls={limit}" in stopped.stderr
    assert first_turn > 0
    # status shows each skill's own total steps, not its last turn's cap (it said 1/1 for a skill stopped after
    # its first turn of two)
    status = cli_inproc("status", "--json", cwd=root)
    assert status.returncode == 0, status.stderr
    assert {k: v["total_steps"] for k, v in json.loads(status.stdout)["skills"].items() if v} == \
        {"deploy": 2, "release-notes": 2}
    one = cli_inproc("status", "--skill", "release-notes", "--json", cwd=root)
    assert json.loads(one.stdout)["total_steps"] == 2, one.stderr
    resumed = skillgit(root, *ALL, "--json")  # no --run: the newest unfinished library run
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    out = json.loads(resumed.stdout)
    assert out["run"] == "L2" and out["status"] == "finished"
    assert {k: v["steps"] for k, v in out["skills"].items()} == {"deploy": 2, "release-notes": 2}
    paid, distinct = paid_calls(root)
    assert paid == distinct, "a finished call was paid twice"
    # exactly the spend of the uninterrupted run (it was one more before a run stopped inside an epoch's end
    # resumed like an uninterrupted one: tests/test_resume_epoch_end.py)
    assert out["usage"]["calls"] == paid == calls


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        for key, value in FIXED.items():
            mp.setenv(key, value)
        folder = project(tmp_path_factory.mktemp("all-baseline") / "lib")
        done = skillgit(folder, *ALL, "--run", "L3", "--events", "--json")
        assert done.returncode == 0, done.stderr[-3000:]
        return decided_state(folder), paid_calls(folder), json.loads(done.stdout)


@pytest.mark.parametrize("skill,stage", [("release-notes", "gate"), ("deploy", "reflect")])
def test_a_killed_library_run_resumes_like_an_uninterrupted_one(tmp_path, baseline, skill, stage, monkeypatch):
    for key, value in FIXED.items():
        monkeypatch.setenv(key, value)
    root = project(tmp_path / "lib")
    proc = subprocess.Popen([sys.executable, "-m", "skillgit", *ALL, "--run", "L3", "--events"], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    current, deadline = "", time.monotonic() + 240
    assert proc.stderr is not None
    for line in proc.stderr:
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event["event"] == "library_turn":
            current = f"{event['skill']}:{event['step']}"
        if current == f"{skill}:2" and event["event"] == "stage" and event["stage"] == stage:
            proc.send_signal(signal.SIGKILL)
            break
        assert time.monotonic() < deadline
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the run ended before {stage} of {skill}'s second step"
    resumed = skillgit(root, *ALL, "--events")  # continues L3, the newest unfinished library run
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert turns(resumed.stderr)[0] == (skill, 2)
    state, calls = decided_state(root), paid_calls(root)
    assert state == baseline[0]
    assert calls[0] == calls[1], "a finished call was paid twice"
    assert calls == baseline[1]
