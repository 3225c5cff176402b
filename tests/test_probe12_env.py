"""Probe 12, environment: which of the user's variables reach the commands that run what a model wrote.

(GIT_DIR / GIT_INDEX_FILE from a hook: found here too, fixed on main meanwhile by skillgit/gitenv.py and tested in
tests/test_git_env.py.)

The model key an agent student holds (its `api_key_env` with a `base_url`; the teacher's too when both roles use
one lab key) reached the task's setup and verify commands, which run the code the agent wrote; now those get the
agent's environment without the model credentials (`AgentStudent._credentials`). And the command scorer dropped
credentials by the look of their names only: a teacher key in `model.teacher.api_key_env: LAB_TEACHER` reached it.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg
from skillgit.redact import SecretSet
from skillgit.types import Item
from tests.conftest import run_cli
from tests.helpers import agentic_repo, demo_project

SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"


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
                                      output="text", timeout_s=60, env_passthrough=("MY_SETTING",),
                                      confine="off"),  # (its fakes report into the test's folder)
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
