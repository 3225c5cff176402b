"""Probe 12, environment: what a git hook leaves in the environment never redirects skillgit or its children.

The hole: git runs its hooks with GIT_INDEX_FILE (pre-commit, with the index of the commit being made) and often
GIT_DIR set. `project.find_root` ignored them, but every git command after it — the store's, GitPython's, and
those of agents, setup and verify commands — inherited them. Run from a hook, an accepted step's guarded
fast-forward wrote the hook's index, not the repository's: afterwards the user's index staged the reverse of the
learned edit (`git status`: `MM SKILL.md`; a plain `git commit` would have undone it). A GIT_DIR made skillgit read
another repository's branches while naming this one (exit 3, "skill file 'SKILL.md' is not in branch 'main'"), or
write there. Now the command line drops the repository-local git variables at start (`entry.forget_git_location`):
the folder decides, for skillgit and for every process it starts.

And the model key an agent student holds (its `api_key_env` with a `base_url`; the teacher's too when both roles
use one lab key) reached the task's setup and verify commands, which run the code the agent wrote; now those get
the agent's environment without the model credentials (`AgentStudent._credentials`).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg
from skillgit.redact import SecretSet
from skillgit.types import Item
from tests.conftest import run_cli
from tests.helpers import agentic_repo, demo_project

SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"


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


def test_the_model_key_the_agent_holds_reaches_neither_setup_nor_verify(tmp_path):
    """The student's key (`model.student.api_key_env` with a `base_url`: the teacher's too when both roles use one
    lab key) is the agent's, and only the agent's: setup and verify run the workspace's code — which the agent
    wrote — and got it as well. Other passed-through variables still reach them."""
    root = agentic_repo(tmp_path / "proj", {"app/a.txt": "x\n"}, SKILL)
    dump = "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))"
    env = {**os.environ, "LAB_KEY": "lab-shared-key-0123456789", "MY_SETTING": "kept"}

    def argv(name: str) -> str:
        return f"{shlex.quote(sys.executable)} -c {shlex.quote(dump)} {shlex.quote(str(tmp_path / name))}"

    student = AgentStudent(CommandCfg(preset="generic", argv=(sys.executable, "-c", dump, str(tmp_path / "agent")),
                                      output="text", timeout_s=60, env_passthrough=("MY_SETTING",)),
                           project_root=root, model=None, env=env, base_url="http://127.0.0.1:9/v1",
                           api_key_env="LAB_KEY", secrets=SecretSet.from_env(env, {"LAB_KEY"}), skill_path="skill",
                           skill_branch="main")
    item = Item("t1", "p", metadata={"workspace": {"fixture": "app"}, "task_dir": str(root), "setup": [argv("setup")],
                                     "verify": {"command": argv("verify"), "result": "exit_code", "timeout_s": 30}})
    student.run(SKILL, item)
    seen = {name: json.loads((tmp_path / name).read_text()) for name in ("agent", "setup", "verify")}
    assert seen["agent"]["LAB_KEY"] == "lab-shared-key-0123456789"  # the agent authenticates with it
    for name in ("setup", "verify"):
        assert "LAB_KEY" not in seen[name], name
        assert seen[name]["MY_SETTING"] == "kept", name


def test_a_teacher_key_under_any_name_never_reaches_a_command_scorer(tmp_path):
    """The command scorer runs on the student's output with the environment minus credentials — by the look of a
    name only: a teacher key in `model.teacher.api_key_env: LAB_TEACHER` reached it. Now every name the run
    registered as a secret is dropped too."""
    project = demo_project(tmp_path / "p")
    dump = tmp_path / "dump.py"
    seen = tmp_path / "scorer-env.json"
    dump.write_text(f"import json, os, sys\nsys.stdin.read()\nopen({str(seen)!r}, 'w').write(json.dumps("
                    "dict(os.environ)))\nprint(1)\n")
    done = run_cli("train", "--set", "train.max_steps=1", "--set", "env.scorer.type=command",
                   "--set", f"env.scorer.command={shlex.quote(sys.executable)} {shlex.quote(str(dump))}",
                   "--set", "model.teacher.api_key_env=LAB_TEACHER", cwd=project,
                   env={"LAB_TEACHER": "lab-teacher-cred-0123456789", "LAB_SETTING": "kept"})
    assert done.returncode == 0, done.stderr
    env = json.loads(seen.read_text())
    assert "LAB_TEACHER" not in env and env["LAB_SETTING"] == "kept"
