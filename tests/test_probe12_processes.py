"""Probe 12, processes: the MCP server's `train` that reaches its timeout leaves no rollout process behind.

The holes: the MCP tools run `skillgit train` / `sleep run` through `integrations.commands.run`, which at the
timeout sent TERM to the child's process group and at once SIGKILL to the child. `skillgit train` got no time to
stop its rollouts, and they — each in a session of its own (`skillgit.process`), an agent that daemonized too —
were in no group that TERM reached: they ran on after the tool returned "stopped", until their own timeouts (600 s
here) or forever, until some later run's sweep. Now `commands.run` is `skillgit.process.run` with a grace period:
TERM reaches the child and everything it started (the scope id every descendant inherits, the cgroup), train
stops and saves, and whatever is left is killed before the tool returns. And the server itself, stopped the way
agent clients stop a stdio server (stdin closed, then TERM), left its running train behind: see the last test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from skillgit.config import CommandCfg
from skillgit.errors import SkillgitError
from skillgit.integrations import tools
from skillgit.integrations.commands import Budget
from skillgit.llm.command import CommandStudent
from skillgit.tmpdirs import ROLLOUT_PREFIX
from tests.conftest import run_cli_inproc
from tests.test_agentic_escape import (  # noqa: F401  (fixtures)
    DAEMONIZE,
    ROOT,
    _agent_argv,
    _alive,
    _none_left,
    _pids,
    _train_project,
    _verify_command,
    _wait_for,
    pid_dir,
    project,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a daemon that left its group is found through "
                                "/proc (Linux)")


@pytest.mark.slow
def test_the_mcp_train_tool_at_its_timeout_leaves_no_agent_or_daemon_running(project, pid_dir):  # noqa: F811
    _train_project(project, _agent_argv(pid_dir, sleep=300), _verify_command(pid_dir))
    _approve(project)
    failure: list[BaseException] = []

    def train() -> None:
        try:
            tools.train(tools.Workspace(project), Budget(max_calls=50), timeout_s=30)
        except SkillgitError as exc:
            failure.append(exc)

    worker = threading.Thread(target=train)
    worker.start()
    _wait_for(pid_dir, "agent-leader-*.pid", timeout=30)  # the rollout (and its daemon) started before the timeout
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert failure and "did not finish within" in str(failure[0])  # the tool says it stopped the run
    time.sleep(0.5)
    assert _pids(pid_dir, "agent-*") and _none_left(pid_dir) == []


def _approve(root: Path) -> None:
    """The person approves what the agent's training runs (the agent argv, the tasks' verify command: the MCP
    `train` tool refuses them otherwise, `skillgit/sleep/approval_train.py`)."""
    done = run_cli_inproc("approve", "--yes", cwd=root)
    assert done.returncode == 0, done.stderr


def _mcp_train(project: Path, pid_dir: Path) -> subprocess.Popen:  # noqa: F811  (the fixtures' names)
    """The real `skillgit mcp` server (the fast path agents start) running the train tool, once the tool's
    training has a rollout (an agent that daemonized) running."""
    _train_project(project, _agent_argv(pid_dir, sleep=300), _verify_command(pid_dir))
    _approve(project)
    server = subprocess.Popen([sys.executable, "-m", "skillgit", "mcp", "--repo", str(project)], cwd=project,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdin is not None and server.stdout is not None
    for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "probe", "version": "0"}}},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "train", "arguments": {"max_calls": 50}}}):
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        if message.get("id") == 1:
            assert json.loads(server.stdout.readline())["id"] == 1
    _wait_for(pid_dir, "agent-leader-*.pid", server, timeout=60)
    return server


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "stdin closed"])
def test_stopping_the_mcp_server_mid_train_stops_the_train_and_its_rollouts(project, pid_dir, how):  # noqa: F811
    """How an agent client ends a stdio server: it closes stdin, then sends TERM. Before, on TERM the server died
    at once and `skillgit train` (its own session) ran on with its rollouts, spending the budget; on a closed stdin
    the server waited for the train to finish (up to the tool's hour) before it exited."""
    server = _mcp_train(project, pid_dir)
    try:
        if how == "SIGTERM":
            server.send_signal(signal.SIGTERM)
        else:
            assert server.stdin is not None
            server.stdin.close()
        try:
            server.wait(timeout=60)
        finally:
            assert _pids(pid_dir, "agent-*") and _none_left(pid_dir) == []
            assert _trains(project) == []
        assert server.returncode == (128 + signal.SIGTERM if how == "SIGTERM" else 0)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for pid in _trains(project):  # a failed test must not leave a training run going on the machine
            os.kill(pid, signal.SIGKILL)


def _trains(root: Path) -> list[int]:
    found = subprocess.run(["pgrep", "-f", f"skillgit train .*{root}"], capture_output=True, text=True).stdout
    return [int(pid) for pid in found.split()]


def killed_mid_run(runner: Path, pid_dir: Path) -> int:  # noqa: F811  (the fixture's name)
    """Run the script `runner` (a skillgit part starting an agent that daemonizes) in a child Python, and kill
    the child with SIGKILL — no cleanup of its own — once the agent's leader wrote its pid; the child's pid."""
    skillgit = subprocess.Popen([sys.executable, str(runner)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _wait_for(pid_dir, "agent-leader-*.pid", skillgit)
    finally:
        skillgit.kill()  # kill -9: skillgit runs no cleanup of its own
        skillgit.wait()
    return skillgit.pid


@pytest.mark.slow
def test_kill_9_of_skillgit_mid_answer_then_the_next_command_student_leaves_no_daemon(tmp_path, pid_dir):  # noqa: F811
    """A one-answer agent (`CommandStudent`, the `command` backend) that daemonized while its skillgit was killed
    with SIGKILL: before, nothing recorded it, so the agent and its daemon ran on (the daemon for good) and the
    rollout folder stayed in /tmp; now the next CommandStudent kills both from the folder's records and removes it."""
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent(f"""\
        import sys
        from skillgit.config import CommandCfg
        from skillgit.llm.command import CommandStudent
        from skillgit.types import Item
        argv = (sys.executable, {str(DAEMONIZE)!r}, {str(pid_dir)!r}, "agent", "--sleep", "300")
        student = CommandStudent(CommandCfg(preset="generic", argv=argv, output="text", timeout_s=600,
                                            confine="off"))  # (its pid files are outside the rollout)
        student.run("# s\\n", Item("t", "p"))
        """))
    pid = killed_mid_run(runner, pid_dir)
    folders = list(Path(tempfile.gettempdir()).glob(f"{ROLLOUT_PREFIX}{pid}-*"))
    assert len(folders) == 1 and all(_alive(p) for p in _pids(pid_dir, "agent-*"))  # left behind, until the next
    CommandStudent(CommandCfg(preset="generic", argv=(sys.executable, "-c", "print(1)"), output="text"))
    assert _none_left(pid_dir) == [] and not folders[0].exists()
