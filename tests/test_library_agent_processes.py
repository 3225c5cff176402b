"""The activation track's real-agent router (`library.agent.AgentRunner`) leaves no agent running after its skillgit
was killed with SIGKILL: each run's folder (`<tmp>/skillgit-activation-<pid>-<random>`) records the agent's scope
(`process.run(record=…)`), and the next AgentRunner (or CommandStudent) of the user kills what a run of a dead
skillgit left and removes its folder (`tmpdirs.sweep_recorded`). Real subprocesses throughout: a fake agent that
daemonizes (tests/agents/daemonize.py), a child Python process running AgentRunner, killed with SIGKILL."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

import pytest

from skillgit import tmpdirs
from skillgit.library.agent import AgentRunner
from skillgit.library.model import Library, LibrarySkill
from tests.test_agentic_escape import (  # noqa: F401  (fixtures)
    DAEMONIZE,
    _alive,
    _none_left,
    _pids,
    pid_dir,
)
from tests.test_probe12_processes import killed_mid_run

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a daemon that left its group is found "
                                "through /proc (Linux); elsewhere only the process group is killed")

SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"
LIBRARY = Library.of([LibrarySkill("demo/SKILL.md", SKILL)])


@pytest.mark.slow
def test_kill_9_of_skillgit_mid_activation_run_then_the_next_agent_runner_leaves_no_daemon(tmp_path, pid_dir):  # noqa: F811
    """An agent run of the activation track whose agent daemonized while its skillgit was killed with SIGKILL:
    before, nothing recorded it, so the agent and its daemon ran on (the daemon for good) and the workspace folder
    stayed; now the next AgentRunner kills both from the folder's records and removes the folder."""
    work = tmp_path / "work"
    work.mkdir()
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent(f"""\
        import sys
        from pathlib import Path
        from skillgit.library.agent import AgentRunner
        from skillgit.library.model import Library, LibrarySkill
        argv = [sys.executable, {str(DAEMONIZE)!r}, {str(pid_dir)!r}, "agent", "--sleep", "300", "{{prompt}}"]
        library = Library.of([LibrarySkill("demo/SKILL.md", {SKILL!r})])
        # (confine off: the fake agent reports its pids into the test's folder, outside its run folder)
        AgentRunner(argv, {{"PATH": "/usr/bin:/bin"}}, workdir=Path({str(work)!r}), timeout_s=600,
                    confine="off")("use demo", library)
        """))
    killed_mid_run(runner, pid_dir)
    folders = list(work.iterdir())
    assert len(folders) == 1 and len(_pids(pid_dir, "agent-*")) == 2
    assert all(_alive(p) for p in _pids(pid_dir, "agent-*"))  # left behind, until the next AgentRunner
    after = AgentRunner([sys.executable, "-c", "print('ok')", "{prompt}"], {"PATH": "/usr/bin:/bin"}, workdir=work)
    assert after("use demo", LIBRARY) == "ok\n"
    assert _none_left(pid_dir) == [] and not folders[0].exists() and list(work.iterdir()) == []


def test_the_agent_sees_only_the_installed_skills_in_its_workspace_not_the_records(tmp_path):
    """The run's records (proc-scopes.jsonl) sit beside the agent's working directory, not in it: the agent's cwd
    holds the installed library only."""
    listing = "import os, sys; print(sorted(os.listdir('.')), sorted(os.listdir('..')))"
    runner = AgentRunner([sys.executable, "-c", listing, "{prompt}"], {"PATH": "/usr/bin:/bin"}, workdir=tmp_path)
    here, parent = (ast.literal_eval(part + "]") for part in runner("use demo", LIBRARY).strip()[:-1].split("] "))
    assert here == [".claude"] and parent == ["proc-scopes.jsonl", "tmp", "workspace"]  # (tmp: its TMPDIR)
    assert runner.runs and not any(p.exists() for p in runner.runs)


def test_the_sweep_removes_only_the_folders_of_a_gone_skillgit(tmp_path):
    """`sweep_recorded` removes a rollout or activation folder whose skillgit process is gone, and keeps this
    process's own, a live process's, and names it did not make."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, live = int(gone.stdout), os.getppid()
    names = [f"skillgit-activation-{dead}-abc", f"skillgit-rollout-{dead}-def", f"skillgit-rollout-{live}-ghi",
             f"skillgit-activation-{os.getpid()}-jkl", "skillgit-rollout-x-1", f"other-{dead}-mno"]
    for name in names:
        (tmp_path / name).mkdir()
    assert tmpdirs.sweep_recorded(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])
