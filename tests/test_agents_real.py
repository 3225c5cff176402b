"""The REAL agent CLIs as hermetic students, offline against the scripted server (tests/agent_server.py):
- claude with a poisoned user HOME sees none of it (issue 20 item 5), and its fingerprint names its version;
- codex finds its provider from `model.student.base_url` (issue 23 item 10: it ignores OPENAI_BASE_URL);
- opencode without ripgrep cannot load the skill, and the run stops naming the fix (issue 23 item 11).
Each test skips when its CLI is not installed (`python -m tests.agent_clis install`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg
from skillgit.llm.base import LLMError
from skillgit.types import Item
from tests import agent_clis as ac
from tests.agent_server import AgentServer, Turn, exec_command, text
from tests.conftest import git
from tests.test_hermetic import MEMORY_MARK, SKILL, poison_home

pytestmark = pytest.mark.agent_cli


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "README.md").write_text("# app\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def _item(project: Path, prompt: str = "Say OK.", verify: str = "true") -> Item:
    return Item("t1", prompt, metadata={"workspace": {"fixture": "app"}, "task_dir": str(project),
                                        "verify": {"command": verify, "result": "exit_code", "timeout_s": 30}})


def test_the_real_claude_never_sees_a_poisoned_user_home(project, tmp_path):
    claude = ac.require_cli("claude")
    home = tmp_path / "user-home"
    markers = poison_home(home)
    with AgentServer(default=lambda _req: text("OK")) as server:
        env = {**os.environ, **ac.claude_env(home, server.base_url), "PATH": f"{claude.parent}:{os.environ['PATH']}"}
        hermetic = AgentStudent(CommandCfg(preset="claude", timeout_s=120, allowed_tools=("Read",)),
                                project_root=project, model=None, env=env)
        assert hermetic.run(SKILL, _item(project)).text == "OK"
        seen = "\n".join(r.context_text() + r.messages_text() for r in server.agent_requests())
        assert server.agent_requests()
        assert "POISON-SKILL-2718" not in seen and "poison-skill" not in seen  # no user skill
        assert MEMORY_MARK not in seen  # no user memory
        assert not markers["hook"].exists() and not markers["mcp"].exists()  # no user hook, no user MCP server
        fp = hermetic.fingerprint()
        assert fp["agent"] == "claude" and fp["version"] == ac.cli_version(claude) and fp["profile"] == "hermetic"

        # the control: profile user loads every poisoned piece into the same CLI (the checks above can fail)
        server.requests.clear()
        user = AgentStudent(CommandCfg(preset="claude", timeout_s=120, allowed_tools=("Read",), profile="user"),
                            project_root=project, model=None, env=env)
        user.run(SKILL, _item(project))
        seen = "\n".join(r.context_text() + r.messages_text() for r in server.agent_requests())
    assert "POISON-SKILL-2718" in seen and MEMORY_MARK in seen
    assert markers["hook"].exists() and markers["mcp"].exists()


def test_the_real_codex_reaches_the_server_named_by_the_student_base_url(project, tmp_path):
    codex = ac.require_cli("codex")
    script = [exec_command("printf ok > done.txt", login=False), text("Wrote done.txt.")]
    with AgentServer(script) as server:
        env = {**os.environ, "PATH": f"{codex.parent}:{os.environ['PATH']}", "HOME": str(tmp_path / "user-home"),
               "LAB_KEY": "lab-key-0123456789", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}  # ignored by codex
        student = AgentStudent(CommandCfg(preset="codex", timeout_s=120), project_root=project, model="gpt-5.5",
                               env=env, base_url=f"{server.base_url}/v1", api_key_env="LAB_KEY")
        reply = student.run(SKILL, _item(project, "Create done.txt.", verify="test -f done.txt"))
        requests = server.agent_requests()
    assert reply.score is not None and reply.score.hard == 1.0, reply.trace
    assert requests and all(r.route == "/v1/responses" for r in requests)
    assert requests[0].headers.get("Authorization", requests[0].headers.get("authorization")) == \
        "Bearer lab-key-0123456789"
    assert not (tmp_path / "user-home" / ".codex").exists()  # the user's CODEX_HOME was never written
    assert student.fingerprint()["version"] == ac.cli_version(codex)


@pytest.mark.slow
def test_the_real_opencode_without_ripgrep_stops_the_run_naming_the_fix(project, tmp_path):
    opencode = ac.require_cli("opencode")
    bin_dir = tmp_path / "bin-without-rg"
    bin_dir.mkdir()
    for tool in ("sh", "bash", "git", "node", "env", "ls", "cat", "uname"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    (bin_dir / "opencode").symlink_to(opencode)
    load = Turn(tool_name="skill", tool_input={"name": "demo"})
    with AgentServer([load, text("done"), load, text("done")]) as server:
        config = ac.opencode_env(tmp_path / "unused", server.base_url)
        env = {**os.environ, "PATH": str(bin_dir), "OPENCODE_CONFIG_CONTENT": config["OPENCODE_CONFIG_CONTENT"],
               "OPENCODE_DISABLE_MODELS_FETCH": "1"}
        student = AgentStudent(CommandCfg(preset="opencode", timeout_s=180), project_root=project, model=None,
                               env=env)
        with pytest.raises(LLMError) as info:
            student.run(SKILL, _item(project))
        assert info.value.kind == "config" and "ripgrep" in info.value.message
        assert "apt-get install ripgrep" in info.value.hint
        if shutil.which("rg"):  # the control: with rg on PATH the same skill loads and the rollout is a verdict
            (bin_dir / "rg").symlink_to(shutil.which("rg"))
            assert student.run(SKILL, _item(project)).text == "done"
