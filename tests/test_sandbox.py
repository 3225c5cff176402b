"""Rollouts that cannot write outside their own folders (skillgit/sandbox.py: Linux Landlock).

Real parts: a real skillgit project (git repository with a mined task file), the real `AgentStudent`,
`CommandStudent` and `AgentRunner`, real subprocesses, a hostile "agent" script, and the real `claude` against the
scripted server on 127.0.0.1. Each confined check has its control with `confine: off`, where the same script does
write — so the check can fail. The tests that need Landlock skip when the kernel lacks it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from skillgit import sandbox
from skillgit.agentic.student import AgentStudent
from skillgit.agents import claude, profile
from skillgit.agents.profile import Settings, plan
from skillgit.config import CommandCfg, config_from_dict
from skillgit.errors import ConfigError
from skillgit.library.agent import AgentRunner
from skillgit.library.model import Library, LibrarySkill
from skillgit.llm.base import LLMError
from skillgit.llm.command import CommandStudent
from skillgit.sleep import approval
from skillgit.types import Item
from tests import agent_clis as ac
from tests.agent_server import AgentServer, bash, text
from tests.test_config import error_of
from tests.test_newcomer12_sleep import _project
from tests.test_sleep_harvest import git

LANDLOCK = pytest.mark.skipif(sandbox.abi() == 0, reason="this kernel offers no Landlock (Linux >= 5.13 with "
                              "landlock among its security modules): rollouts cannot be confined here")
SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"

HOSTILE = """\
import json, os, subprocess, sys
role, repo, home, other = sys.argv[1:5]
tried = {}
def attempt(name, path, text, mode="w"):
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, mode) as f:
            f.write(text)
        tried[name] = "wrote"
    except OSError as exc:
        tried[name] = "refused: " + str(exc.strerror)
hook = "pre-commit" if role == "agent" else "pre-commit-" + role
attempt("hook", f"{repo}/.git/hooks/{hook}", "#!/bin/sh\\necho pwned\\n")
forged = {"version": 1, "commands": {"forged-by-" + role: {"task": "sleep-agent0001"}}}
attempt("approvals", f"{repo}/.git/skillgit/sleep/approved-commands.json", json.dumps(forged))
attempt("home", f"{home}/.bashrc", f"echo pwned by {role}\\n", "a")
attempt("other", f"{other}/{role}.txt", "planted")
attempt("tmp", "/tmp/skillgit-sandbox-test-" + str(os.getpid()), "x")
attempt("own tmp", os.path.join(os.environ.get("TMPDIR", "/nonexistent"), "scratch"), "x")
attempt("workspace", f"{role}-was-here.txt", "ok")
attempt("records", "../proc-scopes.jsonl", "{}\\n", "a")  # what the sweep trusts to find its processes
os.symlink(f"{home}/.profile", f"{role}-link")  # a link in its own folder to a file of the user's
attempt("link", f"{role}-link", "echo pwned\\n", "a")
if role == "agent":  # the agent approves the mined task's commands itself
    done = subprocess.run([sys.executable, "-m", "skillgit", "sleep", "review", "--approve", "--repo", repo],
                          capture_output=True, text=True)
    tried["approve"] = done.returncode
print(json.dumps(tried))
"""


@pytest.fixture
def world(tmp_path) -> dict[str, Path]:
    """A skillgit project with a mined agentic task awaiting approval, a fixture folder for the rollout, the
    user's HOME, another project of the user's, and the hostile script."""
    repo = _project(tmp_path)
    (repo / "app").mkdir()
    (repo / "app" / "README.md").write_text("# app\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "app")
    (tmp_path / "user-home").mkdir()
    (tmp_path / "other-project").mkdir()
    (tmp_path / "hostile.py").write_text(HOSTILE)
    return {"repo": repo, "home": tmp_path / "user-home", "other": tmp_path / "other-project",
            "script": tmp_path / "hostile.py"}


def _argv(world: dict[str, Path], role: str) -> list[str]:
    return [sys.executable, str(world["script"]), role, str(world["repo"]), str(world["home"]), str(world["other"])]


def _hostile_task(world: dict[str, Path]) -> Item:
    """A task whose setup and verify commands are the hostile script too (a mined or teammate task)."""
    def line(role: str) -> str:
        return " ".join(f"'{a}'" for a in ["python", *_argv(world, role)[1:]])
    return Item("t1", "Do the task.", metadata={
        "workspace": {"fixture": "app"}, "task_dir": str(world["repo"]), "setup": [line("setup")],
        "verify": {"command": line("verify") + " && test -f agent-was-here.txt", "result": "exit_code",
                   "timeout_s": 60}})


def _env(world: dict[str, Path]) -> dict[str, str]:
    return {**os.environ, "HOME": str(world["home"])}


def _written(world: dict[str, Path]) -> dict[str, bool]:
    repo = world["repo"]
    header = json.loads((repo / ".skillgit" / "sleep" / "tasks.jsonl").read_text().splitlines()[0])
    hooks = repo / ".git" / "hooks"
    return {"hooks": (hooks / "pre-commit").exists() or any(hooks.glob("pre-commit-*")),
            "approvals": bool(approval.approved(repo / ".git")),
            "reviewed": bool(header.get("reviewed")),
            "home": (world["home"] / ".bashrc").exists() or (world["home"] / ".profile").exists(),
            "other": any(world["other"].iterdir())}


@LANDLOCK
def test_a_hostile_agent_setup_and_verifier_write_nothing_outside_their_rollout(world):
    student = AgentStudent(CommandCfg(preset="generic", argv=tuple(_argv(world, "agent")), timeout_s=120),
                           project_root=world["repo"], model=None, env=_env(world))
    reply = student.run(SKILL, _hostile_task(world))
    tried = json.loads(reply.text)
    assert _written(world) == {"hooks": False, "approvals": False, "reviewed": False, "home": False, "other": False}
    for name in ("hook", "approvals", "home", "other", "tmp", "link", "records"):
        assert tried[name].startswith("refused: Permission denied"), (name, tried)
    assert tried["approve"] != 0  # `skillgit sleep review --approve` could not approve the mined commands
    assert tried["own tmp"] == "wrote" and tried["workspace"] == "wrote"  # its own folders stay writable
    assert reply.score is not None and reply.score.hard == 1.0, reply.trace  # the verifier ran confined too
    assert student.fingerprint()["confine"] == "landlock"

    # the control: the same task with confinement off writes everywhere (so every check above can fail)
    off = AgentStudent(CommandCfg(preset="generic", argv=tuple(_argv(world, "agent")), timeout_s=120,
                                  confine="off"), project_root=world["repo"], model=None, env=_env(world))
    tried = json.loads(off.run(SKILL, _hostile_task(world)).text)
    assert _written(world) == {"hooks": True, "approvals": True, "reviewed": True, "home": True, "other": True}
    assert tried["approve"] == 0 and tried["link"] == "wrote" and (world["home"] / ".profile").exists()
    assert sorted(p.name for p in world["other"].iterdir()) == ["agent.txt", "setup.txt", "verify.txt"]
    assert off.fingerprint()["confine"] == "off" and off.fingerprint()["config"] != student.fingerprint()["config"]
    assert off.cache_material(_hostile_task(world)) != student.cache_material(_hostile_task(world))


@LANDLOCK
@pytest.mark.parametrize("confine", ["auto", "off"])
def test_the_command_student_and_the_activation_runner_are_confined_too(world, tmp_path, confine):
    blocked = {"hooks": False, "approvals": False, "reviewed": False, "home": False, "other": False}
    command = CommandStudent(CommandCfg(preset="generic", argv=tuple(_argv(world, "command")), timeout_s=120,
                                        confine=confine), env=_env(world))
    tried = json.loads(command.run(SKILL, Item("q1", "hello")).text)
    assert (tried["home"] == "wrote") is (confine == "off") and (tried["own tmp"] == "wrote")
    runner = AgentRunner(_argv(world, "runner"), {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "agent-home")},
                         agent="claude", workdir=tmp_path, confine=confine)
    tried = json.loads(runner("use demo", Library.of([LibrarySkill("demo/SKILL.md", SKILL)])))
    assert (tried["other"] == "wrote") is (confine == "off") and tried["workspace"] == "wrote"
    if confine == "auto":
        assert _written(world) == blocked
    else:
        assert _written(world)["home"] and sorted(p.name for p in world["other"].iterdir()) == \
            ["command.txt", "runner.txt"]


def test_setup_and_verify_get_a_home_of_their_own_under_the_hermetic_profile(world):
    # (confinement off: what is tested here is the HOME they are given, not Landlock refusing the user's)
    marker = 'python -c "import os; open(os.path.join(os.environ[\'HOME\'], \'.setup-marker\'), \'w\').write(\'x\')"'
    item = Item("t1", "Do the task.", metadata={
        "workspace": {"fixture": "app"}, "task_dir": str(world["repo"]), "setup": [marker],
        "verify": {"command": 'test -f "$HOME/.setup-marker" && test ! -e "$HOME/.claude/.credentials.json"',
                   "result": "exit_code", "timeout_s": 60}})
    login = world["home"] / ".claude" / ".credentials.json"
    login.parent.mkdir(parents=True)
    login.write_text('{"token": "subscription-login"}')
    env = {k: v for k, v in _env(world).items() if k not in claude.KEYS}
    student = AgentStudent(CommandCfg(preset="generic", argv=("true",), confine="off"), project_root=world["repo"],
                           model=None, env=env)
    reply = student.run(SKILL, item)
    assert not (world["home"] / ".setup-marker").exists()  # the user's HOME was not theirs to write
    assert reply.score is not None and reply.score.hard == 1.0, reply.trace  # setup and verify share their home


def test_the_confine_key_is_validated_and_landlock_refuses_a_kernel_without_it(monkeypatch, capsys, tmp_path):
    err = error_of(config_from_dict, {"model": {"student": {"command": {"confine": "maybe"}}}})
    assert "model.student.command.confine: 'maybe' is not one of auto, landlock, off" in err.message
    for written in ("off", False):  # (YAML reads a bare `confine: off` as false)
        assert config_from_dict({"model": {"student": {"command": {"confine": written}}}}).model.student.command \
            .confine == "off"

    monkeypatch.setattr(sandbox, "abi", lambda: 0)  # a kernel without Landlock (our own seam)
    monkeypatch.setattr(sandbox, "_noticed", set())
    with pytest.raises(ConfigError) as info:
        sandbox.resolve("landlock")
    assert "model.student.command.confine is landlock" in info.value.message
    assert "auto" in info.value.hint
    with pytest.raises(LLMError) as refused:
        CommandStudent(CommandCfg(preset="generic", argv=("true",), confine="landlock"), env={"PATH": "/usr/bin:/bin"})
    assert refused.value.kind == "config" and "confine" in refused.value.message
    first, second = sandbox.resolve("auto"), sandbox.resolve("auto")
    said = capsys.readouterr().err
    assert said.count("rollouts are not confined") == 1, said  # once per process
    assert first.state == second.state == "unavailable" and not first.active
    assert first.wrap(["true"], sandbox.grants([tmp_path]), {}) == ["true"]
    student = CommandStudent(CommandCfg(preset="generic", argv=("true",)), env={"PATH": "/usr/bin:/bin"})
    assert student.fingerprint()["confine"] == "unavailable"  # the run's records say the rollouts were not confined


def test_grants_name_the_rollout_folders_and_no_more(tmp_path):
    rollout = sandbox.rollout_grants([tmp_path / "ws", tmp_path / "ws" / "..", tmp_path / "tmp"],
                                     [tmp_path / "prompt.txt"])
    assert rollout.dirs[:2] == (str(tmp_path / "ws"), str(tmp_path)) and "/dev/shm" in rollout.dirs
    assert "/tmp" not in rollout.dirs and "/" not in rollout.dirs and str(Path.home()) not in rollout.dirs
    assert str(tmp_path / "prompt.txt") in rollout.files and "/dev/null" in rollout.files
    assert rollout.file_dirs == ("/dev/pts",)  # (not /proc: /proc/sys is root's way out)
    assert sandbox.parse_args([*rollout.args(), "--", "echo", "hi"]) == (rollout, ["echo", "hi"])
    with pytest.raises(ValueError):
        sandbox.parse_args(["--write"])
    # profile user: the agent's own config folders and files in the user's home, never the home itself
    environ = {"HOME": str(tmp_path / "home")}
    user = plan(claude.PROFILE, Settings("user", environ=environ))
    dirs, files = user.writable(tmp_path / "unused")
    assert dirs == (str(tmp_path / "home" / ".claude"),) and files == (str(tmp_path / "home" / ".claude.json"),)
    hermetic = plan(claude.PROFILE, Settings("hermetic", environ=environ))
    assert hermetic.writable(tmp_path / "rollout-home")[0] == (str(tmp_path / "rollout-home"),)
    assert profile.PROFILES == ("hermetic", "user")


@LANDLOCK
def test_the_wrapper_refuses_a_missing_program_before_anything_starts(tmp_path):
    confinement = sandbox.resolve("landlock")
    with pytest.raises(FileNotFoundError):
        confinement.wrap(["no-such-agent-program"], sandbox.grants([tmp_path]), {"PATH": str(tmp_path)})
    line = confinement.wrap("echo hi", sandbox.grants([tmp_path]), {})
    assert isinstance(line, str) and line.startswith("exec ") and line.endswith("-- /bin/sh -c 'echo hi'")


KILLER = """\
import os, signal, socket, sys
try:
    os.kill(int(sys.argv[1]), signal.SIGTERM)
    print("signalled")
except PermissionError:
    print("refused")
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\\0" + sys.argv[2])
    print("connected")
except OSError:
    print("no-connect")
"""


@pytest.mark.skipif(sandbox.abi() < 6, reason="Landlock scopes need ABI 6 (Linux 6.12)")
@pytest.mark.parametrize("confine", ["landlock", "off"])
def test_a_confined_command_cannot_signal_or_reach_an_abstract_socket_outside_its_rollout(tmp_path, confine):
    """The user's other processes (here a `sleep`, standing for their editor or skillgit itself) and an abstract
    Unix socket made outside the rollout (an X11 display, a D-Bus bus) are out of reach; `off` shows both are."""
    import socket
    import subprocess

    victim = subprocess.Popen(["sleep", "60"])
    server = socket.socket(socket.AF_UNIX)
    name = f"skillgit-test-{os.getpid()}-{confine}"
    server.bind("\0" + name)
    server.listen(1)
    try:
        argv = sandbox.resolve(confine).wrap([sys.executable, "-c", KILLER, str(victim.pid), name],
                                             sandbox.rollout_grants([tmp_path]), dict(os.environ))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        expected = ["refused", "no-connect"] if confine == "landlock" else ["signalled", "connected"]
        assert done.stdout.split() == expected
        if confine == "off":
            assert victim.wait(timeout=10) == -15
        else:
            assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
        server.close()


@LANDLOCK
@pytest.mark.agent_cli
def test_the_real_claude_completes_a_confined_rollout_and_cannot_write_the_users_home(world, tmp_path):
    exe = ac.require_cli("claude")
    # (claude's own permission check refuses a `touch` of a path outside its folder: a script it wrote is not read)
    escape = f"echo pwned >> {world['home']}/.bashrc; echo pwned > {world['repo']}/.git/hooks/pre-push\n"
    (tmp_path / "escape.sh").write_text(escape)
    script = [bash("printf ok > done.txt"), bash(f"sh {tmp_path / 'escape.sh'}"),
              bash("ls $TMPDIR && echo tmp-ok"), text("Done.")]
    with AgentServer(script) as server:
        env = {**os.environ, **ac.claude_env(world["home"], server.base_url),
               "PATH": f"{exe.parent}:{os.environ['PATH']}"}
        student = AgentStudent(CommandCfg(preset="claude", timeout_s=180, allowed_tools=("Bash", "Read")),
                               project_root=world["repo"], model=None, env=env)
        item = Item("t1", "Create done.txt.", metadata={
            "workspace": {"fixture": "app"}, "task_dir": str(world["repo"]),
            "verify": {"command": "test -f done.txt", "result": "exit_code", "timeout_s": 30}})
        reply = student.run(SKILL, item)
        said = "\n".join(r.messages_text() for r in server.agent_requests())
    assert reply.text == "Done." and reply.score is not None and reply.score.hard == 1.0, reply.trace
    assert "Permission denied" in said and "tmp-ok" in said, said[-2000:]
    assert not (world["home"] / ".bashrc").exists() and not (world["repo"] / ".git" / "hooks" / "pre-push").exists()
    assert student.fingerprint()["confine"] == "landlock"


@LANDLOCK
def test_a_confined_daemonizing_agent_and_verifier_leave_no_process_after_a_rollout(world):
    """The wrapper execs the command (its pid, group and scope id are the ones `process.run` tracks): a confined
    agent and verifier that daemonize (double fork + setsid) leave nothing running."""
    from tests.test_agentic_escape import DAEMONIZE, _none_left, _pids

    agent = (sys.executable, str(DAEMONIZE), "{workspace}/pids", "agent", "--touch", "done.txt")
    item = Item("t1", "make done.txt", metadata={
        "workspace": {"fixture": "app"}, "task_dir": str(world["repo"]), "setup": ["mkdir pids"],
        "verify": {"command": f"python {DAEMONIZE} pids verifier && test -f done.txt", "result": "exit_code",
                   "timeout_s": 60}})
    student = AgentStudent(CommandCfg(preset="generic", argv=agent, output="text", timeout_s=60),
                           project_root=world["repo"], model=None, env=_env(world), keep_workspaces=True)
    reply = student.run(SKILL, item)
    assert student.workspaces.pool_folder is not None
    pids = student.workspaces.pool_folder / "1" / "ws" / "pids"  # (kept: --keep-workspaces)
    try:
        assert reply.score is not None and reply.score.hard == 1.0, reply.trace
        assert len(_pids(pids, "*-daemon")) == len(_pids(pids, "*-leader")) == 2  # the agent and the verifier
        assert _none_left(pids) == []
    finally:
        for pid in _pids(pids):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        student.workspaces.close()
        shutil.rmtree(student.workspaces.pool_folder, ignore_errors=True)  # (a kept pool stays otherwise)
