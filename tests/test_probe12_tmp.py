"""Probe 12, the shared temporary folder: an agent student's workspaces never live in a folder someone else holds.

The hole: the workspaces of a repository live in `<tmp>/skillgit-ws-<12 hex of its git dir's path>` — a name any
local user can compute and create first. skillgit took an existing folder of that name as it was: another user's
(or a symlink to one) then held the agent's workspace, the code a verifier runs, the task's prompt (transcript
text) and the rollout's records; as the folder's owner that user may rename and replace what skillgit made there.
And a folder skillgit made itself was 0755: every local user could read the prompts and the workspaces. Now the
folder is created 0700 and one that is a symlink or belongs to someone else is refused, naming the fix
(`skillgit/tmpdirs.py`); the sweep leaves such a folder alone.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from skillgit.agentic.student import AgentStudent
from skillgit.agentic.workspace import Workspaces
from skillgit.config import CommandCfg
from skillgit.errors import SkillgitError
from skillgit.store.git import GitRepo
from skillgit.types import Item
from tests.helpers import agentic_repo

SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"
NOBODY = 65534


@pytest.fixture
def project(tmp_path):
    root = agentic_repo(tmp_path / "proj", {"app/a.txt": "x\n"}, SKILL)
    folder = Workspaces(GitRepo.open(root)).root
    yield root, folder
    if folder.is_symlink():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)


def _rollout(root: Path, keep: bool = False) -> None:
    student = AgentStudent(CommandCfg(preset="generic", argv=(sys.executable, "-c", "print('done')"), output="text",
                                      timeout_s=60), project_root=root, model=None, env=dict(os.environ),
                           skill_path="skill", skill_branch="main", keep_workspaces=keep)
    item = Item("t1", "p", metadata={"workspace": {"fixture": "app"}, "task_dir": str(root),
                                     "verify": {"command": "true", "result": "exit_code", "timeout_s": 30}})
    try:
        assert student.run(SKILL, item).text.strip() == "done"
    finally:
        student.workspaces.close()


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a folder to another user needs root")
def test_a_workspace_folder_another_user_made_first_is_refused(project):
    root, folder = project
    folder.mkdir(mode=0o777)
    folder.chmod(0o1777)
    os.chown(folder, NOBODY, NOBODY)
    with pytest.raises(SkillgitError, match=f"belongs to user id {NOBODY}") as info:
        _rollout(root)
    assert "TMPDIR" in info.value.hint
    assert list(folder.iterdir()) == []  # nothing of the rollout went there


def test_a_symlink_in_place_of_the_workspace_folder_is_refused(project, tmp_path):
    root, folder = project
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.symlink_to(elsewhere)
    with pytest.raises(SkillgitError, match="symbolic link"):
        _rollout(root)
    assert list(elsewhere.iterdir()) == []


def test_the_workspace_folder_is_private_even_when_an_older_skillgit_made_it_readable(project):
    root, folder = project
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    _rollout(root, keep=True)  # (kept: the pool, and so the folder, stays to be looked at)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and any(folder.iterdir())
