"""kill -9 at every git command of an accept, then `skillgit train`: the accepted step ends up in the skill, the
checked-out worktree is clean, and nothing is decided twice. (The fault seam is `SKILLGIT_FAULT_KILL_AT_GIT` in
skillgit/store/git.py.) Before the centre was rebuilt, a kill between the ref move and the worktree update left the
skill file one version behind and `train` refused with a hint to commit it — which silently reverted the step."""

from __future__ import annotations

import json
import signal

import pytest

from skillgit.cli.demo import create_project
from tests.conftest import git, run_cli

# the gate off: the first step with an applicable edit is accepted, whatever the gate's defaults are
STEPS = ["--set", "train.max_steps=1", "--set", "evaluation.use_gate=false"]


def _accepts(folder) -> list[str]:
    return [e["step"] for e in json.loads(run_cli("log", "--json", cwd=folder).stdout) if e["verdict"] == "accepted"]


@pytest.mark.slow
def test_a_kill_at_every_git_command_of_an_accept_is_finished_by_the_next_train(tmp_path):
    reference = tmp_path / "reference"
    create_project(reference, 0)
    done = run_cli("train", *STEPS, cwd=reference)
    assert done.returncode == 0, done.stderr
    expected_skill = (reference / "SKILL.md").read_text()
    accepted = _accepts(reference)
    assert accepted == ["1"]

    killed_at = []
    for n in range(1, 40):
        folder = tmp_path / f"kill{n}"
        create_project(folder, 0)
        first = run_cli("train", *STEPS, cwd=folder, env={"SKILLGIT_FAULT_KILL_AT_GIT": f"accept:{n}"})
        if first.returncode == 0:
            break  # the accept has fewer than n git commands: every one of them was covered
        assert first.returncode == -signal.SIGKILL, first.stderr
        killed_at.append(n)
        again = run_cli("train", *STEPS, cwd=folder)
        assert again.returncode == 0, (n, again.stderr)
        assert (folder / "SKILL.md").read_text() == expected_skill, n
        assert git(folder, "status", "--porcelain") == "", n
        assert git(folder, "show", "main:SKILL.md") + "\n" == expected_skill, n
        assert _accepts(folder) == accepted, n
        assert git(folder, "for-each-ref", "refs/heads/candidates") == "", n
    assert len(killed_at) >= 5  # the seam really stopped the accept at each of its git commands


@pytest.mark.slow
def test_pull_after_a_kill_between_the_branch_move_and_the_worktree_update_keeps_the_step(tmp_path):
    """The same interrupted accept, but the next command is `skillgit pull` of a teammate's commit built on the
    accepted step: pull finishes the worktree update first (before, it refused and advised `git stash`, and the
    stashed file was the version before the step: popping it reverted the step)."""
    remote, mate = tmp_path / "remote.git", tmp_path / "mate"
    for n in range(1, 40):  # find the git command of the accept whose kill leaves the worktree update undone
        folder = tmp_path / f"p{n}"
        create_project(folder, 0)
        done = run_cli("train", *STEPS, cwd=folder, env={"SKILLGIT_FAULT_KILL_AT_GIT": f"accept:{n}"})
        assert done.returncode in (0, -signal.SIGKILL), done.stderr
        if done.returncode == 0:
            pytest.fail("no kill left the worktree update interrupted")
        if git(folder, "status", "--porcelain"):
            break
    accepted = git(folder, "show", "main:SKILL.md")
    assert (folder / "SKILL.md").read_text().rstrip("\n") != accepted  # one version behind, as the probe found
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(folder, "push", "-q", str(remote), "main")
    git(tmp_path, "clone", "-q", str(remote), str(mate))
    (mate / "SKILL.md").write_text(accepted + "\n- A teammate's rule.\n")
    git(mate, "-c", "user.name=m", "-c", "user.email=m@x", "commit", "-qam", "teammate")
    git(mate, "push", "-q")
    pulled = run_cli("pull", str(remote), cwd=folder)
    assert pulled.returncode == 0, pulled.stderr
    assert (folder / "SKILL.md").read_text() == accepted + "\n- A teammate's rule.\n"
    assert git(folder, "status", "--porcelain") == ""
    assert _accepts(folder) == ["1"]
