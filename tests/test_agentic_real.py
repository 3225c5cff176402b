"""One agentic training step with the REAL `claude` CLI as the student, offline: claude runs in each throwaway
workspace against the scripted Anthropic-style server on 127.0.0.1 (tests/agent_server.py), executes the scripted
Bash tool call for real, emits its stream-json, and the real verifier scores what it left. Skipped when the CLI is
not installed (`.ci/run` installs it when npm is present: `python -m tests.agent_clis install`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent_clis import (
    CODEX_KEY_ENV,
    claude_env,
    codex_env,
    codex_provider_overrides,
    find_cli,
    prepare_claude_home,
)
from tests.agent_server import AgentServer, Received, Turn, bash, exec_command, text
from tests.conftest import git

pytestmark = pytest.mark.agent_cli

CLAUDE = find_cli("claude")
CODEX = find_cli("codex")
TASK = re.compile(r"Create the file (\w+)\.txt containing the word (\w+)")


def _answer(request: Received) -> Turn:
    """A tiny scripted agent: one shell call that does what the task asks, then a final message (Claude Code's
    Messages API or Codex's Responses API, whichever asks)."""
    body = json.dumps(request.body)
    if '"tool_result"' in body or '"function_call_output"' in body:
        return text("Done: the file is written.")
    found = TASK.search(request.messages_text())
    if not found:
        return text("I do not understand the task.")
    command = f"printf %s {found.group(2)} > {found.group(1)}.txt"
    return exec_command(command, login=False) if request.path.endswith("/responses") else bash(command, "write")


def _project(root: Path, student: str = "    command: {preset: claude, timeout_s: 120, allowed_tools: [Bash, Read]}"
             ) -> Path:
    (root / "fixture").mkdir(parents=True)
    (root / "fixture" / "README.md").write_text("# app\n")
    (root / "skill").mkdir()
    (root / "skill" / "SKILL.md").write_text("---\nname: files\ndescription: How to write files here.\n---\n"
                                             "# Files\n\nWrite exactly what is asked.\n")
    rows = [{"id": f"t{i}", "prompt": f"Create the file f{i}.txt containing the word w{i}.",
             "workspace": {"fixture": "fixture"},
             "verify": {"command": f'test "$(cat f{i}.txt)" = w{i}', "result": "exit_code", "timeout_s": 30}}
            for i in range(4)]
    (root / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "skillgit.yaml").write_text("""\
skill: {path: skill, branch: main}
model:
  teacher_backend: simulated
  student_backend: agent
  student_model: default
  student:
""" + student + """
train: {num_epochs: 1, batch_size: 2, seed: 0}
optimizer: {use_slow_update: false, use_meta_skill: false, use_meta_reflect: false}
evaluation: {gate_repeats: 1, eval_test: false}
env: {tasks: tasks.jsonl, split_ratio: "1:1:0", workers: 2}
""")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    return root


@pytest.mark.skipif(CLAUDE is None, reason="the claude CLI is not installed (python -m tests.agent_clis install)")
def test_one_agentic_step_with_the_real_claude_student(tmp_path):
    project = _project(tmp_path / "proj")
    home = prepare_claude_home(tmp_path / "home")
    with AgentServer(default=_answer) as server:
        env = {**os.environ, **claude_env(home, server.base_url)}
        env["PATH"] = f"{Path(str(CLAUDE)).parent}{os.pathsep}{env.get('PATH', '')}"
        proc = subprocess.run([sys.executable, "-m", "skillgit", "train", "--json", "--set", "train.max_steps=1"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=600)
        agent_requests = server.agent_requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["steps"] == 1 and result["accepted"] + result["rejected"] == 1
    # claude really ran: it asked the server, offered the Bash tool, and saw the installed skill's listing
    assert agent_requests and any("Bash" in r.tool_names() for r in agent_requests)
    assert any("files" in r.context_text() for r in agent_requests)
    # the verifier scored every val item from what claude's Bash call wrote in its workspace
    sha = git(project, "rev-parse", "main") if result["accepted"] else git(
        project, "rev-parse", f"rejected/{result['run']}/0001^{{commit}}")
    notes = [json.loads(x) for x in git(project, "notes", "--ref", "skillgit", "show", sha).splitlines() if x]
    candidate = next(n for n in notes if n["kind"] == "candidate")
    assert candidate["train"]["errors"] == {} and candidate["train"]["hard_mean"] == 1.0  # the batch, verified
    progress = json.loads(git(project, "show", f"refs/skillgit/runs/{result['run']}:progress.json"))
    assert progress["seed_score"] == 1.0  # val: both items passed their verifier after claude's real Bash calls
    assert git(project, "status", "--porcelain") == ""
    assert len([line for line in git(project, "worktree", "list").splitlines() if line]) == 1


@pytest.mark.skipif(CODEX is None, reason="the codex CLI is not installed (python -m tests.agent_clis install)")
def test_one_agentic_step_with_the_real_codex_student(tmp_path):
    home = tmp_path / "home"
    with AgentServer(default=_answer) as server:
        argv = ["codex", "exec", "--json", "-s", "workspace-write", "-m", "gpt-5.5",
                *codex_provider_overrides(server.base_url), "--skip-git-repo-check", "--", "{prompt}"]
        student = ("    command:\n      preset: codex\n      timeout_s: 120\n      output: codex-json\n"
                   f"      env_passthrough: [{CODEX_KEY_ENV}, CODEX_HOME]\n      argv: {json.dumps(argv)}")
        project = _project(tmp_path / "proj", student)
        env = {**os.environ, **codex_env(home)}
        env["PATH"] = f"{Path(str(CODEX)).parent}{os.pathsep}{env.get('PATH', '')}"
        proc = subprocess.run([sys.executable, "-m", "skillgit", "train", "--json", "--set", "train.max_steps=1"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=600)
        agent_requests = server.agent_requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["steps"] == 1
    assert agent_requests and all(r.path.endswith("/responses") for r in agent_requests)
    assert any("files" in r.context_text() for r in agent_requests)  # the skill, from .agents/skills/
    progress = json.loads(git(project, "show", f"refs/skillgit/runs/{result['run']}:progress.json"))
    assert progress["seed_score"] == 1.0  # codex's real exec_command calls wrote what the verifiers check
    assert git(project, "status", "--porcelain") == ""
