"""A run opened (its progress read) before the run lock is taken must not go on if another process trained it in
between: it would count the other process's steps and spend on top of stale totals. The lock holder re-checks."""

from __future__ import annotations

import json

import pytest

from skillgit.cli.demo import create_project
from skillgit.errors import ExitCode, SkillgitError
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from tests.conftest import run_cli

SMALL = ("--set", "train.max_steps=2", "--set", "evaluation.eval_test=false")


def test_a_run_trained_by_another_process_after_it_was_opened_is_not_trained_again(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, 0)
    stopped = run_cli("train", "--json", *SMALL, "--set", "budget.max_calls=150", cwd=folder)
    assert stopped.returncode == 5, stopped.stderr[-2000:]
    run_id = json.loads(stopped.stdout)["run"]

    project = open_project(folder, None, ["train.max_steps=2", "evaluation.eval_test=false"])
    stale = build_trainer(open_session(project), resume=True)  # reads the run's progress: stopped at its budget
    assert stale.run_id == run_id and stale.progress.status == "stopped"

    finished = run_cli("train", "--json", *SMALL, cwd=folder)  # another process finishes the same run meanwhile
    assert finished.returncode == 0 and json.loads(finished.stdout)["run"] == run_id, finished.stderr[-2000:]
    before = run_cli("status", "--json", "--run", run_id, cwd=folder).stdout

    with pytest.raises(SkillgitError) as raised:
        stale.train()
    assert raised.value.code == ExitCode.LOCKED and "moved on" in raised.value.message
    assert run_cli("status", "--json", "--run", run_id, cwd=folder).stdout == before  # nothing written


def test_a_run_opened_and_trained_by_one_process_is_not_refused(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, 0)
    project = open_project(folder, None, ["train.max_steps=1", "evaluation.eval_test=false"])
    result = build_trainer(open_session(project), resume=True).train()
    assert result.status == "finished" and result.steps == 1
