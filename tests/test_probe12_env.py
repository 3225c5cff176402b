"""Probe 12, environment: what a git hook leaves in the environment never redirects skillgit or its children.

The hole: git runs its hooks with GIT_INDEX_FILE (pre-commit, with the index of the commit being made) and often
GIT_DIR set. `project.find_root` ignored them, but every git command after it — the store's, GitPython's, and
those of agents, setup and verify commands — inherited them. Run from a hook, an accepted step's guarded
fast-forward wrote the hook's index, not the repository's: afterwards the user's index staged the reverse of the
learned edit (`git status`: `MM SKILL.md`; a plain `git commit` would have undone it). A GIT_DIR made skillgit read
another repository's branches while naming this one (exit 3, "skill file 'SKILL.md' is not in branch 'main'"), or
write there. Now the command line drops the repository-local git variables at start (`entry.forget_git_location`):
the folder decides, for skillgit and for every process it starts.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import run_cli
from tests.helpers import demo_project


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_a_hooks_index_file_is_not_where_an_accepted_step_writes(tmp_path):
    project = demo_project(tmp_path / "p")
    hook_index = tmp_path / "hook-index"
    hook_index.write_bytes((project / ".git" / "index").read_bytes())  # what a pre-commit hook would see
    before = hook_index.read_bytes()
    done = run_cli("train", "--set", "train.max_steps=4", cwd=project, env={"GIT_INDEX_FILE": str(hook_index)})
    assert done.returncode == 0, done.stderr
    assert int(_git(project, "rev-list", "--count", "main")) > 2, "no step was accepted: the probe proves nothing"
    assert _git(project, "status", "--porcelain") == "", "the repository's index is stale after the fast-forward"
    assert hook_index.read_bytes() == before, "skillgit wrote the hook's index"


def test_a_git_dir_in_the_environment_names_neither_the_repository_read_nor_the_one_written(tmp_path):
    project = demo_project(tmp_path / "p")
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    _git(decoy, "init", "-q", "-b", "main")
    (decoy / "f").write_text("x\n")
    _git(decoy, "add", "f")
    _git(decoy, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "decoy")
    refs = _git(decoy, "for-each-ref")
    done = run_cli("train", "--set", "train.max_steps=1", cwd=project,
                   env={"GIT_DIR": str(decoy / ".git"), "GIT_WORK_TREE": str(decoy)})
    assert done.returncode == 0, done.stderr
    assert _git(decoy, "for-each-ref") == refs
    assert _git(project, "for-each-ref", "refs/skillgit/runs/") != ""  # the run was recorded where it ran
