"""What a newcomer met running `skillgit check` from a git hook (wave 12), with real git, real hooks and the real CLI
on the demo project:

- In a `pre-commit` hook, HEAD is still the previous commit: `check` scored that one against its parent and let a
  commit that made the skill worse through with "improvement — the gate would accept this edit" (exit 0). Now a
  commit in progress that changes the skill (git names its index to the hook: GIT_INDEX_FILE) is refused with a
  message saying to use `pre-push`; a commit that leaves the skill alone passes as before.
- The `pre-push` hook the message (and README) recommend gates what is pushed: a regressing commit is not pushed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import git
from tests.helpers import demo_project
from tests.test_check import RULES, commit_skill


def _hook(root: Path, name: str) -> None:
    hook = root / ".git" / "hooks" / name
    hook.write_text(f"#!/bin/sh\nexec '{sys.executable}' -m skillgit check\n", encoding="utf-8")
    hook.chmod(0o755)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=600)


def test_pre_commit_hook_refuses_to_judge_the_previous_commit_for_a_skill_edit(tmp_path):
    root = demo_project(tmp_path / "p")
    seed = (root / "SKILL.md").read_text()
    improved = commit_skill(root, seed + "\n" + RULES, "human: the house style")  # HEAD: an improvement
    _hook(root, "pre-commit")
    (root / "SKILL.md").write_text(seed, encoding="utf-8")  # the next edit throws the house style away
    done = _git(root, "commit", "-a", "-m", "human: shorter skill")
    assert done.returncode != 0, done.stdout + done.stderr  # before: exit 0, "improvement" (HEAD's verdict)
    said = " ".join(done.stderr.split())
    assert "a commit in progress changes SKILL.md" in said and "pre-push hook" in said, said
    assert "improvement" not in done.stdout
    assert git(root, "rev-parse", "HEAD") == improved  # nothing committed …
    assert (root / "SKILL.md").read_text() == seed  # … and nothing lost
    assert git(root, "diff", "--cached", "--name-only") == ""  # the user's index as it was (commit -a undone)

    # a commit that leaves the skill as HEAD has it is checked as before and goes through
    git(root, "checkout", "--", "SKILL.md")
    (root / "NOTES.md").write_text("notes\n", encoding="utf-8")
    git(root, "add", "NOTES.md")
    other = _git(root, "commit", "-m", "notes")
    assert other.returncode == 0, other.stderr
    assert "check: improved (exit 0)" in other.stderr
    assert git(root, "rev-parse", "HEAD~1") == improved


def test_pre_push_hook_keeps_a_regressing_skill_commit_from_being_pushed(tmp_path):
    root = demo_project(tmp_path / "p")
    seed = (root / "SKILL.md").read_text()
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    commit_skill(root, seed + "\n" + RULES, "human: the house style")
    git(root, "push", "-q", "origin", "main")
    _hook(root, "pre-push")
    commit_skill(root, seed, "human: shorter skill")  # a regression, committed
    pushed = _git(root, "push", "origin", "main")
    assert pushed.returncode != 0, pushed.stderr
    assert "check: regressed (exit 1)" in pushed.stderr
    assert git(remote, "rev-parse", "main") == git(root, "rev-parse", "HEAD~1")  # the remote kept the good skill


def test_pre_commit_hook_in_a_skill_library_refuses_for_the_skill_being_changed(tmp_path):
    from tests.test_library_all import project

    root = project(tmp_path / "lib")
    skill = root / "skills" / "release-notes" / "SKILL.md"
    base = git(root, "rev-parse", "HEAD")
    _hook(root, "pre-commit")
    skill.write_text(skill.read_text() + "\nAlways answer in French.\n", encoding="utf-8")
    done = _git(root, "commit", "-a", "-m", "a human edit of release-notes")
    assert done.returncode != 0, done.stdout + done.stderr  # before: check scored HEAD vs its parent per skill
    said = " ".join(done.stderr.split())
    assert "a commit in progress changes skills/release-notes/SKILL.md" in said and "pre-push hook" in said, said
    assert git(root, "rev-parse", "HEAD") == base and "French" in skill.read_text()
