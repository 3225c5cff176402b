"""A second clone sees what the first trained (issue 23, item 18), with real git and a bare remote:

- `log` lists the accepted steps of a run trained onto a review branch (`train --branch review/x`) although the
  clone has no local branch of that name: from its remote-tracking ref, or from what `skillgit pull` fetched when
  the branch was pushed after the clone was made;
- in a clone whose remote HEAD is `master`, `skillgit pull` creates the skill branch (`main`) from the remote as
  `git switch main` would, without touching the checkout; a remote without the skill branch gets an error that
  names its default branch and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

from skillgit.cli.demo import create_project
from tests.conftest import git, run_cli_inproc

GATE_OFF = ["--set", "evaluation.use_gate=false", "--set", "train.max_steps=2"]


def trained_origin(tmp_path: Path, push_review: bool = True) -> tuple[Path, Path, str]:
    """A bare remote whose HEAD is `master`, holding `main` (the skill branch), `master` and skillgit's data
    from a first clone that trained a run onto `review/learned`; (remote, first clone, run)."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "master", str(origin))
    work = tmp_path / "work"
    create_project(work, 0)
    git(work, "branch", "master", "main")
    done = run_cli_inproc("train", "--branch", "review/learned", *GATE_OFF, cwd=work)
    assert done.returncode == 0, done.stderr
    run = json.loads(run_cli_inproc("status", "--json", cwd=work).stdout)["run"]
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main", "master", *(["review/learned"] if push_review else []))
    pushed = run_cli_inproc("push", "origin", cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    return origin, work, run


def review_steps(clone: Path, run: str) -> list[dict]:
    proc = run_cli_inproc("log", "--json", cwd=clone)
    assert proc.returncode == 0, proc.stderr
    return [e for e in json.loads(proc.stdout) if e["run"] == run and e["verdict"] == "accepted"]


def test_pull_in_a_master_clone_creates_the_skill_branch(tmp_path):
    origin, work, _ = trained_origin(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert git(clone, "symbolic-ref", "--short", "HEAD") == "master"
    pulled = run_cli_inproc("pull", cwd=clone)
    assert pulled.returncode == 0, pulled.stderr
    assert "created branch 'main' from origin" in pulled.stderr
    assert git(clone, "rev-parse", "main") == git(work, "rev-parse", "main")
    assert git(clone, "symbolic-ref", "--short", "HEAD") == "master"  # the checkout is left alone
    assert git(clone, "config", "branch.main.remote") == "origin"
    assert git(clone, "config", "branch.main.merge") == "refs/heads/main"
    assert run_cli_inproc("log", cwd=clone).returncode == 0
    again = run_cli_inproc("pull", cwd=clone)  # the second time there is nothing to create
    assert again.returncode == 0 and "created branch" not in again.stderr


def test_log_in_a_second_clone_reads_the_review_branch_from_remote_tracking_refs(tmp_path):
    origin, work, run = trained_origin(tmp_path)
    expected = [e["sha"] for e in review_steps(work, run)]
    assert expected
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "switch", "-q", "main")
    assert run_cli_inproc("pull", cwd=clone).returncode == 0
    assert git(clone, "branch", "--list", "review/learned") == ""  # no local branch of that name
    assert [e["sha"] for e in review_steps(clone, run)] == expected


def test_pull_fetches_a_review_branch_pushed_after_the_clone(tmp_path):
    origin, work, run = trained_origin(tmp_path, push_review=False)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(work, "push", "-q", "origin", "review/learned")  # the clone's remote-tracking refs do not know it
    assert run_cli_inproc("pull", cwd=clone).returncode == 0
    assert git(clone, "rev-parse", "refs/skillgit/remote/origin/heads/review/learned") == \
        git(work, "rev-parse", "review/learned")
    assert git(clone, "branch", "--list", "review/learned") == ""
    assert [e["sha"] for e in review_steps(clone, run)] == [e["sha"] for e in review_steps(work, run)]


def test_a_remote_without_the_skill_branch_names_its_default_branch(tmp_path):
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "master", str(origin))
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "master")
    (work / "SKILL.md").write_text("# Skill\n")
    git(work, "add", "SKILL.md")
    git(work, "commit", "-q", "-m", "skill")
    git(work, "push", "-q", str(origin), "master")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    pulled = run_cli_inproc("pull", cwd=clone)
    assert pulled.returncode == 3
    assert "skill branch 'main' is neither here nor on origin (its default branch is 'master')" in pulled.stderr
    assert "-c skill.branch=master" in pulled.stderr
    fixed = run_cli_inproc("pull", "-c", "skill.branch=master", cwd=clone)
    assert fixed.returncode == 0, fixed.stderr
