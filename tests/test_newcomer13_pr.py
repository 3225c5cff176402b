"""`skillgit pr`'s two leftovers of wave 12 (README "Review learned edits"), through the real CLI on a real history
(`build_history`: a finished run `r1` trained on main):

- `--base` naming a branch that exists nowhere was taken as it was: the body said "from `nope`" and `gh pr create
  --base=nope` failed only after the head branch had been pushed. Now it is refused before anything is printed,
  written or pushed, like a missing `--head`; a base only a remote has is fine.
- a run trained on the branch it would merge into (head == base) printed, without `--gh`, a body that no pull
  request can carry (`git log main..main` is empty). Now it is refused with the fix, with or without `--gh`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git, run_cli_inproc
from tests.test_pr import _bin_with
from tests.test_review_report import SEED, build_history

HEAD = "review/learned"


@pytest.fixture
def history(make_repo) -> Path:
    """Run r1's history on main, and a review branch at its tip (a head that is not the base)."""
    root = make_repo({"SKILL.md": SEED})
    build_history(root)
    git(root, "branch", HEAD, "main")
    return root


def _nothing_written(root: Path, tmp_path: Path) -> None:
    assert not (root / ".git" / "skillgit" / "pr").exists()  # --gh's body file
    assert not (tmp_path / "gh-argv.json").exists()  # gh never ran


def test_a_base_branch_that_exists_nowhere_is_refused_before_anything_is_written(history, tmp_path):
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    body, path = tmp_path / "body.md", _bin_with(tmp_path, gh=True)
    for extra in ([], ["--json"], ["--body-file", str(body)], ["--push", str(remote), "--gh"]):
        proc = run_cli_inproc("pr", "--run", "r1", "--head", HEAD, "--base", "relaese", *extra, cwd=history,
                              env={"PATH": path})
        assert proc.returncode == 2, (extra, proc.stderr)
        assert "base branch 'relaese' does not exist" in proc.stderr and "locally or on a remote" in proc.stderr
        assert "git branch --all" in proc.stderr and "git fetch <remote> relaese" in proc.stderr, proc.stderr
        assert proc.stdout == "" and not body.exists(), extra
    assert git(remote, "for-each-ref") == ""  # nothing was pushed
    _nothing_written(history, tmp_path)


def test_a_base_branch_only_a_remote_has_is_fine(history, tmp_path):
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(history, "remote", "add", "origin", str(remote))
    git(history, "branch", "release", git(history, "rev-list", "--max-parents=0", "main"))
    git(history, "push", "-q", "origin", "release")
    git(history, "fetch", "-q", "origin")
    git(history, "branch", "-D", "-q", "release")
    proc = run_cli_inproc("pr", "--run", "r1", "--head", HEAD, "--base", "release", cwd=history)
    assert proc.returncode == 0, proc.stderr
    assert f"on `{HEAD}` (from `release`)" in proc.stdout


def test_a_run_trained_on_its_base_branch_gets_no_body_but_the_fix(history, tmp_path):
    body, path = tmp_path / "body.md", _bin_with(tmp_path, gh=True)
    for extra in ([], ["--json"], ["--body-file", str(body)], ["--gh"]):
        proc = run_cli_inproc("pr", "--run", "r1", *extra, cwd=history, env={"PATH": path})
        assert proc.returncode == 2, (extra, proc.stderr)
        assert "run r1 trained on 'main', the branch it would merge into" in proc.stderr, proc.stderr
        assert "there is no pull request to write" in proc.stderr
        assert "skillgit train --branch review/NAME" in proc.stderr and "--base" in proc.stderr
        assert "skillgit report r1" in proc.stderr
        assert proc.stdout == "" and not body.exists(), extra
    _nothing_written(history, tmp_path)
    # the same run with a head that is not its base: a body
    proc = run_cli_inproc("pr", "--run", "r1", "--head", HEAD, cwd=history)
    assert proc.returncode == 0 and f"on `{HEAD}` (from `main`)" in proc.stdout, proc.stderr
