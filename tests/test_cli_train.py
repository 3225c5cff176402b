"""The user-visible paths of `demo` and `train` through the CLI: the demo's promise, continuing a kept demo,
and bad input — each a one-line error with a hint, a fixed exit code, no traceback and nothing written to git.
The demo runs as a real subprocess (`run_cli`, the smoke test); the rest through the same entry point in-process
(`run_cli_inproc`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.llm.cache import CallCache
from tests.conftest import git, run_cli, run_cli_inproc


def skillgit_refs(folder: Path) -> str:
    return git(folder, "for-each-ref", "refs/skillgit", "refs/tags", "refs/heads/candidates", "refs/notes")


def test_demo_trains_offline_with_accepts_rejects_and_a_better_test_score(tmp_path):
    proc = run_cli("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "accepted" in proc.stderr and "rejected" in proc.stderr
    assert "simulation" in proc.stderr  # the world says what it is
    before, after = map(float, re.search(r"test hard: ([\d.]+) → ([\d.]+)", proc.stdout).groups())
    assert after > before
    assert "--- a/SKILL.md" in proc.stdout  # the diff from the seed skill
    assert list(tmp_path.iterdir()) == []  # a throwaway repository is removed


def test_kept_demo_is_a_normal_project_where_train_continues(tmp_path):
    folder = tmp_path / "demo"
    first = run_cli_inproc("demo", "--dir", str(folder), "--steps", "2", "--seed", "4", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    runs_before = git(folder, "for-each-ref", "refs/skillgit/runs").splitlines()
    proc = run_cli_inproc("train", "--set", "train.max_steps=2", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(git(folder, "for-each-ref", "refs/skillgit/runs").splitlines()) == len(runs_before) + 1
    log = json.loads(run_cli_inproc("log", "--json", cwd=folder).stdout)
    assert len({e["run"] for e in log if e["run"]}) == 2
    again = run_cli_inproc("demo", "--dir", str(folder), cwd=tmp_path)
    assert again.returncode == 2 and "not empty" in again.stderr and "hint:" in again.stderr


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, seed=0)
    return folder


def assert_clean_failure(proc, code: int, *words: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-2].startswith("error:") and lines[-1].startswith("hint:"), lines[-3:]
    for word in words:
        assert word in proc.stderr


@pytest.mark.parametrize("config_text,words", [
    ("train: [unclosed\n", ("not valid YAML",)),
    ("train:\n  batchsize: 4\n", ("train.batchsize", "batch_size")),
    ("train:\n  num_epochs: four\n", ("train.num_epochs", "integer", "four")),
    ("optimizer:\n  lr_scheduler: exponential\n", ("lr_scheduler", "cosine")),
])
def test_bad_config_is_a_clear_error_and_writes_nothing(project, config_text, words):
    (project / "skillgit.yaml").write_text(config_text)
    before = skillgit_refs(project)
    assert_clean_failure(run_cli_inproc("train", cwd=project), 2, *words)
    assert skillgit_refs(project) == before


@pytest.mark.parametrize("tasks,split,words", [
    ("", "4:2:4", ("no items",)),
    ('{"id": "a", "input": "x", "expected": "y"}\n{"id": "a", "input": "z", "expected": "w"}\n', "4:2:4",
     ("duplicate", "'a'")),
    ("".join(f'{{"id": "i{n}", "input": "x", "expected": "y"}}\n' for n in range(10)), "9:0:1", ("val",)),
    ('{"id": "a", "input": "x"\n', "4:2:4", ("tasks.jsonl:1",)),
])
def test_bad_task_files_are_clear_errors(project, tasks, split, words):
    (project / "tasks.jsonl").write_text(tasks)
    before = skillgit_refs(project)
    assert_clean_failure(run_cli_inproc("train", "--set", f"env.split_ratio={split}", cwd=project), 2, *words)
    assert skillgit_refs(project) == before


def test_a_crashing_scorer_stops_with_a_hint_and_no_half_written_step(project):
    (project / "bad_scorer.py").write_text("def score(item, output):\n    raise RuntimeError('boom')\n")
    proc = run_cli_inproc("train", "--set", "env.scorer.type=python", "--set", "env.scorer.callable=bad_scorer:score",
                          cwd=project)
    assert_clean_failure(proc, 2, "scorer", "boom")
    assert git(project, "for-each-ref", "refs/heads/candidates", "refs/tags") == ""


def test_unknown_revision_for_eval_is_bad_input(project):
    assert_clean_failure(run_cli_inproc("eval", "no-such-rev", cwd=project), 2, "no-such-rev")


def test_a_dirty_skill_file_is_refused_before_anything_is_spent(project):
    (project / "SKILL.md").write_text("my unsaved edits\n")
    proc = run_cli_inproc("train", cwd=project)
    assert_clean_failure(proc, 3, "uncommitted changes", "stash")
    journal = project / ".git" / "skillgit" / "cache" / "calls.sqlite"
    assert not journal.exists() or CallCache(journal).stats().entries == 0  # no model call was made
    assert (project / "SKILL.md").read_text() == "my unsaved edits\n"
    assert git(project, "for-each-ref", "refs/skillgit", "refs/tags") == ""
