"""Probe 12, processes: the MCP server's `train` that reaches its timeout leaves no rollout process behind.

The hole: the MCP tools run `skillgit train` / `sleep run` through `integrations.commands.run`, which at the
timeout sent TERM to the child's process group and at once SIGKILL to the child. `skillgit train` got no time to
stop its rollouts, and they — each in a session of its own (`skillgit.process`), an agent that daemonized too —
were in no group that TERM reached: they ran on after the tool returned "stopped", until their own timeouts (600 s
here) or forever, until some later run's sweep. Now `commands.run` is `skillgit.process.run` with a grace period:
TERM reaches the child and everything it started (the scope id every descendant inherits, the cgroup), train
stops and saves, and whatever is left is killed before the tool returns.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest

from skillgit.errors import SkillgitError
from skillgit.integrations import tools
from skillgit.integrations.commands import Budget
from tests.test_agentic_escape import (  # noqa: F401  (fixtures)
    _agent_argv,
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
