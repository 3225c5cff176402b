"""What a run's evidence rests on (skillgit/loop/evidence.py), through the real CLI on the simulated world:
a new run measures its incumbent afresh (its own journal salt) while a resumed one replays what it finished, and
a run resumed under a changed config or tasks file is refused unless only speed settings changed."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.llm import factory
from skillgit.project import open_project
from skillgit.session import Judge, build_trainer, open_session
from skillgit.world.judge import SimulatedJudge
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


# ---------------------------------------------------------------------------------------------- teacher and judge
class Counted:
    """An `LLM` at our seam (the simulated judge or teacher) that keeps every request reaching the model: the call
    journal's misses, the calls a run paid."""

    def __init__(self, inner):
        self.inner = inner
        self.asked: list[str] = []
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def cache_identity(self) -> str:
        return getattr(self.inner, "cache_identity", None) or self.inner.id

    def complete(self, request):
        with self._lock:
            self.asked.append(request.cache_key_material())
        return self.inner.complete(request)


def judged_project(tmp_path) -> Path:
    """The demo project with every item judged by a rubric judge against its accepted answer (sleep's mined
    tasks), committed: no item has an expected answer the exact scorer could match."""
    folder = tmp_path / "judged"
    create_project(folder, seed=5)
    rows = [json.loads(line) for line in (folder / "tasks.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        row["metadata"].update(rubric="the record in the house style", judge_reference=row.pop("expected"))
    (folder / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    git(folder, "commit", "-qam", "judged tasks")
    return folder


def train_judged(folder: Path, run: str, *, old_chat_keys: bool = False) -> tuple[Counted, Counted]:
    """Run (or resume) `run` with one rejected step, its val scored by the simulated judge; (judge, teacher).
    Without the negative buffer (which would show a later run the earlier one's rejection) a run from the same
    tip asks its teacher and judge exactly what the earlier one asked. `old_chat_keys`: start it as skillgit did
    before chat calls were salted (run-free chat keys, no `chats`)."""
    project = open_project(folder, None, [ONE_REJECTED[1], ONE_REJECTED[3], "optimizer.use_negative_buffer=false"])
    judge = Counted(SimulatedJudge(project.config.model.simulated))
    teacher = Counted(factory.build_teacher(project.config, folder))
    session = open_session(project, teacher=teacher, judge=Judge(own=judge))
    try:
        trainer = build_trainer(session, run_id=run, resume=True)
        if old_chat_keys:
            trainer.evidence = dataclasses.replace(trainer.evidence, chats=False)
            session.cache.bind_run(run, salt=trainer.evidence.salt)
        trainer.train()
    finally:
        session.cache.close()
    return judge, teacher


def test_a_new_run_asks_its_judge_and_teacher_afresh_and_a_resumed_one_pays_none_twice(tmp_path):
    folder = judged_project(tmp_path)
    tip = git(folder, "rev-parse", "main")
    judge_a, teacher_a = train_judged(folder, "a")
    assert judge_a.asked and teacher_a.asked
    assert len(set(judge_a.asked)) == len(judge_a.asked)  # identical repeats judged together: paid once
    judge_b, teacher_b = train_judged(folder, "b")
    assert git(folder, "rev-parse", "main") == tip  # the same tip: the same outputs judged again
    assert progress(folder, "b")["rejected"] == 1
    # run b's judge graded the same outputs as run a's and was asked every time: before, the journal answered
    # every one of them with run a's draws and run b's judge made no call at all; so with the teacher
    assert sorted(judge_b.asked) == sorted(judge_a.asked)
    assert sorted(teacher_b.asked) == sorted(teacher_a.asked)
    assert json.loads(git(folder, "show", "refs/skillgit/runs/b:evidence.json"))["chats"] is True
    # run b resumed: every judge and teacher call it finished is answered by the journal
    before = paid_calls(folder)
    judge_again, teacher_again = train_judged(folder, "b")
    assert judge_again.asked == [] and teacher_again.asked == []
    assert paid_calls(folder) == before
    assert before[0] == before[1], "a finished call was paid twice"


def test_a_run_begun_before_chat_keys_were_salted_resumes_on_its_run_free_chat_keys(tmp_path):
    folder = judged_project(tmp_path)
    judge_old, teacher_old = train_judged(folder, "old", old_chat_keys=True)
    assert judge_old.asked and teacher_old.asked
    assert json.loads(git(folder, "show", "refs/skillgit/runs/old:evidence.json"))["chats"] is False
    before = paid_calls(folder)
    judge_again, teacher_again = train_judged(folder, "old")  # resumed by this skillgit
    assert judge_again.asked == [] and teacher_again.asked == []
    assert paid_calls(folder) == before
