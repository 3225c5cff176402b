"""Issue 19.3: processes that leave their rollout. A daemonizing agent and a daemonizing verifier (double fork +
setsid, tests/agents/daemonize.py) leave no process behind after a normal rollout, a timeout, a Ctrl-C of
`skillgit train` (SIGINT to the real CLI) and a kill -9 of skillgit followed by the next run's sweep; the errors say
what was killed. Real subprocesses throughout (the agent student's generic preset, shell verifiers)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from skillgit.agentic.student import AgentStudent
from skillgit.agentic.workspace import Workspaces
from skillgit.config import CommandCfg
from skillgit.llm.base import LLMError
from skillgit.store.git import GitRepo
from skillgit.types import Item
from tests.helpers import agentic_repo, agentic_tasks

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a daemon that left its group is found "
                                "through /proc (Linux); elsewhere only the process group is killed, and said so")

DAEMONIZE = Path(__file__).parent / "agents" / "daemonize.py"
SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"
ROOT = Path(__file__).parents[1]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie waits for init to reap it: it runs nothing


def _pids(pid_dir: Path, pattern: str = "*") -> list[int]:
    """Pids that daemonize.py wrote (`pattern`: e.g. "*-daemon", "verifier-leader")."""
    return [int(f.name.rsplit("-", 1)[1].removesuffix(".pid")) for f in pid_dir.glob(f"{pattern}-*.pid")]


def _none_left(pid_dir: Path, timeout: float = 5) -> list[int]:
    """The pids of pid_dir still running after `timeout` seconds (empty: nothing was left behind)."""
    deadline = time.monotonic() + timeout
    while any(_alive(p) for p in _pids(pid_dir)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in _pids(pid_dir) if _alive(p)]


def _wait_for(pid_dir: Path, pattern: str, proc: subprocess.Popen | None = None, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not list(pid_dir.glob(pattern)):
        assert time.monotonic() < deadline, f"no {pattern} in {timeout}s"
        assert proc is None or proc.poll() is None, "skillgit ended before its command started"
        time.sleep(0.05)


@pytest.fixture
def pid_dir(tmp_path):
    folder = tmp_path / "pids"
    folder.mkdir()
    yield folder
    for pid in _pids(folder):  # a failed test must not leave daemons on the machine
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def project(tmp_path) -> Path:
    return agentic_repo(tmp_path / "proj", {"repos/app/app.txt": "hello\n"}, SKILL)


def _agent_argv(pid_dir: Path, sleep: float = 0) -> tuple[str, ...]:
    return (sys.executable, str(DAEMONIZE), str(pid_dir), "agent", "--touch", "done.txt", "--sleep", str(sleep))


def _verify_command(pid_dir: Path, sleep: float = 0) -> str:
    script, folder = shlex.quote(str(DAEMONIZE)), shlex.quote(str(pid_dir))
    return f"python {script} {folder} verifier --sleep {sleep} && test -f done.txt"


def _item(project: Path, verify: str, timeout_s: float = 60, item_id: str = "t1") -> Item:
    return Item(item_id, "make done.txt", metadata={"workspace": {"fixture": "repos/app"},
                                                    "verify": {"command": verify, "result": "exit_code",
                                                               "timeout_s": timeout_s},
                                                    "task_dir": str(project)})


def _student(project: Path, argv: tuple[str, ...], timeout_s: float = 60) -> AgentStudent:
    # (confine off: the fake agent reports into the test's folder, outside its rollout; tests/test_sandbox.py)
    return AgentStudent(CommandCfg(preset="generic", argv=argv, output="text", timeout_s=timeout_s, confine="off"),
                        project_root=project, model=None, env=dict(os.environ), skill_path="skill",
                        skill_branch="main")


# ---------------------------------------------------------------------------------------------- (a) a rollout
def test_a_daemonizing_agent_and_verifier_leave_no_process_after_a_rollout(project, pid_dir):
    reply = _student(project, _agent_argv(pid_dir)).run(SKILL, _item(project, _verify_command(pid_dir)))
    assert reply.score is not None and reply.score.hard == 1.0, reply.score
    assert len(_pids(pid_dir, "*-daemon")) == len(_pids(pid_dir, "*-leader")) == 2  # the agent and the verifier
    assert _none_left(pid_dir) == []


# ---------------------------------------------------------------------------------------------- (b) timeouts
def test_an_agent_timeout_kills_the_agent_and_its_daemon_and_says_so(project, pid_dir):
    student = _student(project, _agent_argv(pid_dir, sleep=120), timeout_s=3)
    with pytest.raises(LLMError) as err:
        student.run(SKILL, _item(project, _verify_command(pid_dir)))
    assert err.value.kind == "timeout"
    assert "no answer within 3s; killed the agent and 1 process it left running (1 of them had left its process " \
           "group; searched: process group, SKILLGIT_PROC_SCOPES in /proc" in err.value.message, err.value.message
    assert _pids(pid_dir, "*-daemon") and _none_left(pid_dir) == []


def test_a_verifier_timeout_kills_the_verifier_and_its_daemon_and_says_so(project, pid_dir):
    student = _student(project, _agent_argv(pid_dir))
    with pytest.raises(LLMError) as err:
        student.run(SKILL, _item(project, _verify_command(pid_dir, sleep=120), timeout_s=3))
    assert err.value.kind == "unknown"
    # the shell that runs the verifier is the command; python daemonize.py and its daemon are what it left
    assert "verifier timed out after 3s; killed it and 2 processes it left running (1 of them had left its " \
           "process group;" in err.value.message, err.value.message
    assert len(_pids(pid_dir, "*-daemon")) == 2 and _none_left(pid_dir) == []


# ---------------------------------------------------------------------------------------------- (c) Ctrl-C
def _train_project(project: Path, argv: tuple[str, ...], verify: str) -> None:
    rows = [{"id": f"t{i}", "prompt": f"make done.txt ({i})", "workspace": {"fixture": "repos/app"},
             "verify": {"command": verify, "result": "exit_code", "timeout_s": 600}} for i in range(2)]
    agentic_tasks(project, rows, "{preset: generic, output: text, timeout_s: 600, confine: off, argv: "
                  f"{json.dumps(list(argv))}}}", workers=2)


@pytest.mark.parametrize("hangs", ["agent", "verifier"])
def test_ctrl_c_of_train_leaves_no_daemon_of_an_agent_or_a_verifier(project, pid_dir, hangs):
    """SIGINT to the real CLI while two rollouts run in worker threads: every command and its daemon are killed and
    train exits 130 at once (not when the commands' 600 s timeouts end)."""
    _train_project(project, _agent_argv(pid_dir, sleep=300 if hangs == "agent" else 0),
                   _verify_command(pid_dir, sleep=300 if hangs == "verifier" else 0))
    train = subprocess.Popen([sys.executable, "-m", "skillgit", "train", "--new"], cwd=project,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(pid_dir, f"{hangs}-leader-*.pid", train)
        time.sleep(0.5)  # let the second rollout start too, where it will
        train.send_signal(signal.SIGINT)
        _, err = train.communicate(timeout=60)
    finally:
        if train.poll() is None:
            train.kill()
            train.wait()
    assert train.returncode == 130, err[-2000:]
    assert "interrupted" in err and "Traceback" not in err, err[-2000:]
    assert _none_left(pid_dir) == []
    assert not Workspaces(GitRepo.open(project)).root.exists()  # nothing for a later sweep either


# ---------------------------------------------------------------------------------------------- (d) kill -9
@pytest.mark.parametrize("hangs", ["agent", "verifier"])
def test_kill_9_of_skillgit_then_the_next_sweep_leaves_no_daemon(project, pid_dir, tmp_path, hangs):
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent(f"""\
        from pathlib import Path
        from tests.test_agentic_escape import _agent_argv, _item, _student, _verify_command
        project, pid_dir = Path({str(project)!r}), Path({str(pid_dir)!r})
        _student(project, _agent_argv(pid_dir, sleep={300 if hangs == "agent" else 0}), timeout_s=600).run(
            "# s\\n", _item(project, _verify_command(pid_dir, sleep={300 if hangs == "verifier" else 0}), 600))
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    skillgit = subprocess.Popen([sys.executable, str(runner)], cwd=ROOT, env=env)
    try:
        _wait_for(pid_dir, f"{hangs}-leader-*.pid", skillgit)
    finally:
        skillgit.kill()  # kill -9: skillgit runs no cleanup of its own
        skillgit.wait()
    assert all(_alive(p) for p in _pids(pid_dir, f"{hangs}-*"))  # left behind, until the next run
    workspaces = Workspaces(GitRepo.open(project), skill_path="skill")
    [pool] = workspaces.root.iterdir()
    folder = pool / "1"  # the killed run's pool: its first workspace's records
    cgroups = [json.loads(line)["cgroup"] for line in (folder / "proc-scopes.jsonl").read_text().splitlines()]
    assert workspaces.sweep() == 1
    assert _none_left(pid_dir) == []
    assert not workspaces.root.exists()
    assert not any(c and Path(c).exists() for c in cgroups)  # the recorded cgroups are removed too
