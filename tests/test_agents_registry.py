"""The agent registry (issue 21, "one home per agent"): one table, lazy imports, errors that list the choices, and
an agent added as one module appears in config validation, `doctor` and the agent student."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit import sandbox
from skillgit.agents import registry
from skillgit.agents.base import Agent
from skillgit.config import config_from_dict
from skillgit.config_validate import ENUMS
from skillgit.errors import ConfigError
from tests.conftest import git, run_cli_inproc
from tests.fake_agent import SCRIPT


@pytest.fixture
def fake_agent(tmp_path, monkeypatch):
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "fakeagent").write_text(SCRIPT)
    (bin_dir / "fakeagent").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    registry.register("fakeagent", "tests.fake_agent:AGENT")
    yield bin_dir
    registry.unregister("fakeagent")


def test_importing_the_registry_imports_no_agent_module():
    code = ("import sys, skillgit.agents.registry, skillgit.config_validate\n"
            "print([m for m in sys.modules if m.startswith('skillgit.agents.') and m.rsplit('.', 1)[1] in "
            "('claude', 'codex', 'copilot', 'opencode', 'simulated', 'generic', 'cursor', 'copilot_vscode')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_one_table_with_every_agent_and_the_lists_derived_from_it():
    assert registry.names() == ("claude", "codex", "copilot", "opencode", "simulated", "generic", "copilot-vscode",
                                "cursor")
    assert registry.student_names() == ("claude", "codex", "copilot", "opencode", "simulated", "generic")
    assert registry.answer_names() == ("claude", "codex", "generic")
    assert registry.trace_formats() == ("claude-stream", "codex-json", "copilot-json", "opencode-json", "text")
    assert "model.*.command.preset" not in ENUMS  # read from the registry when a value is checked
    for agent in registry.agents():
        assert isinstance(agent, Agent)
        # every pointer resolves: a moved reader or install function fails here, not in a user's night
        if agent.reader:
            assert registry.resolve_pointer(agent.reader).SOURCE
        if agent.install:
            assert callable(registry.resolve_pointer(agent.install))
    assert set(registry.readers()) == {"claude", "codex", "copilot", "opencode", "copilot-vscode", "cursor"}
    assert set(registry.install_targets()) == {"claude", "codex", "copilot"}
    from skillgit.integrations import artifacts

    assert artifacts.targets() == ("claude", "codex", "copilot")
    assert [artifacts.installer(a).home_env for a in artifacts.targets()] == [
        "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME"]


def test_unknown_names_are_errors_that_list_the_choices():
    with pytest.raises(ConfigError) as info:
        registry.get("claud")
    assert "unknown agent 'claud'" in info.value.message and "claude, codex" in info.value.hint
    with pytest.raises(ConfigError) as info:
        registry.student("cursor")
    assert "cannot be used with student_backend: agent" in info.value.message
    assert "claude, codex, copilot, opencode, simulated, generic" in info.value.hint
    with pytest.raises(ConfigError) as info:
        config_from_dict({"model": {"student_backend": "agent", "student": {"command": {"preset": "cursr"}}}})
    assert "did you mean 'cursor'" not in info.value.hint  # cursor is no student: never suggested
    with pytest.raises(ConfigError) as info:
        config_from_dict({"model": {"student": {"command": {"output": "claude-json"}}}})
    assert "claude-stream" in info.value.message
    with pytest.raises(ConfigError, match="command.profile"):
        config_from_dict({"model": {"student": {"command": {"profile": "laptop"}}}})
    with pytest.raises(ValueError):
        registry.register("claude", "tests.fake_agent:AGENT")  # built-in names cannot be replaced


def test_a_registered_agent_module_appears_in_config_validation_doctor_and_the_student(fake_agent, make_repo):
    registry.unregister("fakeagent")
    with pytest.raises(ConfigError):  # before: not an agent skillgit knows
        config_from_dict({"model": {"student_backend": "agent", "student": {"command": {"preset": "fakeagent"}}}})
    registry.register("fakeagent", "tests.fake_agent:AGENT")
    cfg = config_from_dict({"model": {"student_backend": "agent", "student_model": "default", "student": {
        "command": {"preset": "fakeagent", "output": "fake-lines"}}}})
    assert cfg.model.student.command.preset == "fakeagent"
    assert "fakeagent" in registry.student_names() and "fake-lines" in registry.trace_formats()

    root = make_repo({"app/README.md": "# app\n", "skill/SKILL.md": "---\nname: s\ndescription: d\n---\nRULE\n"})
    (root / "skillgit.yaml").write_text("skill: {path: skill}\nmodel:\n  student_backend: agent\n"
                                        "  student_model: default\n  student: {command: {preset: fakeagent}}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "config")
    proc = run_cli_inproc("doctor", "--json", cwd=root)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = next(a for a in report["agents"] if a["agent"] == "fakeagent")
    assert row["installed"] and row["version"] == "fakeagent 9.9.9"
    student = report["roles"][1]
    assert student["backend"] == "agent" and student["status"] == "ok"
    assert student["detail"].startswith("answered 'did Reply with the single word OK.")  # its preset and parser

    # the agent student runs it with its isolation switch and a fresh home, like any built-in agent
    from skillgit.agentic.student import AgentStudent
    from skillgit.config import CommandCfg
    from skillgit.types import Item

    agent = AgentStudent(CommandCfg(preset="fakeagent"), project_root=root, model=None, env=dict(os.environ))
    item = Item("t", "work", metadata={"workspace": {"fixture": "app"}, "task_dir": str(root),
                                       "verify": {"command": "true"}})
    said = agent.run("---\nname: s\ndescription: d\n---\nRULE\n", item).text
    assert said.startswith("did work with HOME=") and said.endswith("/home isolated=--isolated")
    assert os.environ["HOME"] not in said
    assert student["agent"] == {"agent": "fakeagent", "version": "fakeagent 9.9.9",
                                "config": student["agent"]["config"], "profile": "hermetic",
                                "confine": "landlock" if sandbox.abi() else "unavailable"}

    # install's targets come from the registry too: the fake agent's one artifact is written and removed
    from skillgit.integrations import artifacts

    assert artifacts.targets()[-1] == "fakeagent" and "fakeagent" in registry.install_targets()
    done = run_cli_inproc("install", "fakeagent", "--project", cwd=root)
    assert done.returncode == 0, done.stderr
    assert (root / ".fake/skills/skillgit/SKILL.md").read_text() == "fake project skill\n"
    done = run_cli_inproc("uninstall", "fakeagent", "--project", cwd=root)
    assert done.returncode == 0, done.stderr
    assert not (root / ".fake").exists()
    registry.unregister("fakeagent")
    gone = run_cli_inproc("install", "fakeagent", "--project", cwd=root)
    assert gone.returncode == 2 and "unknown agent 'fakeagent'" in gone.stderr
    assert "claude, codex, copilot" in gone.stderr
    registry.register("fakeagent", "tests.fake_agent:AGENT")


def test_doctor_lists_the_agent_clis_and_how_to_install_a_missing_one(make_repo, tmp_path):
    root = make_repo()
    proc = run_cli_inproc("doctor", "--json", cwd=root, env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    agents = {a["agent"]: a for a in json.loads(proc.stdout)["agents"]}
    assert list(agents) == ["claude", "codex", "copilot", "opencode", "simulated"]  # runnable agents, table order
    assert agents["simulated"]["installed"] and agents["simulated"]["version"].startswith("sim-coder ")
    for name in ("claude", "codex", "copilot", "opencode"):
        if not agents[name]["installed"]:
            assert agents[name]["fix"].startswith("npm install -g")
    assert proc.returncode == 0  # a missing CLI the config does not use is no failure
    table = run_cli_inproc("doctor", cwd=root, env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}).stdout
    assert "agent CLIs" in table and "sim-coder" in table


def _listed_agents(verb: str, cwd: Path) -> list[str]:
    """The agents `skillgit VERB --help` lists for its AGENT argument."""
    proc = run_cli_inproc(verb, "--help", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "agent" in line and "TEXT" in line)
    return row.split("TEXT", 1)[1].split("[required]")[0].strip(" │").split(" | ")


def test_install_and_uninstall_help_list_the_registry_s_install_targets(tmp_path):
    """The agents of `install --help` / `uninstall --help` are the registry's install targets, not a hand-written
    list: an agent registered with install artifacts appears, and goes when it is unregistered."""
    for verb in ("install", "uninstall"):
        assert _listed_agents(verb, tmp_path) == ["claude", "codex", "copilot"]
    registry.register("fakeagent", "tests.fake_agent:AGENT")
    try:
        for verb in ("install", "uninstall"):
            assert _listed_agents(verb, tmp_path) == ["claude", "codex", "copilot", "fakeagent"]
    finally:
        registry.unregister("fakeagent")
    assert _listed_agents("install", tmp_path) == ["claude", "codex", "copilot"]
