"""Probe 11, argv: a task's prompt (a task file, a task mined from a transcript) never becomes an agent CLI option.

The hole: the agent presets passed the prompt as an argv element of its own with no `--` before it: `claude -p
{prompt}` (`-p` is a flag; the prompt is an operand), the claude and codex answer presets and `opencode run
{prompt}`. A prompt `--version` made claude print its version and never ask the model; `--settings=<json>` or
`--permission-mode=bypassPermissions` would have changed what the agent may do. Now every preset puts the prompt
last, after `--` (copilot: `--prompt=<text>`, whose value cannot read as an option), and `launch.expand` refuses
a prompt starting with `-` in a user's template where it would stand alone without `--` before it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from skillgit.agentic.student import AgentStudent
from skillgit.agents import launch, registry
from skillgit.config import CommandCfg
from skillgit.errors import ConfigError
from skillgit.llm.command import CommandStudent
from skillgit.types import Item
from tests import agent_clis as ac
from tests.agent_server import AgentServer, text
from tests.test_agents_real import project  # noqa: F401  (the fixture: a repository with an `app` fixture folder)
from tests.test_hermetic import SKILL

HOSTILE_PROMPT = "--version"


def _templates() -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for agent in registry.agents():
        if agent.student and agent.student.argv:
            out.append((f"{agent.name} student", tuple(agent.student.argv)))
        if agent.answer and agent.answer.argv:
            out.append((f"{agent.name} answer", tuple(agent.answer.argv)))
        if agent.teacher_argv:
            out.append((f"{agent.name} teacher", tuple(agent.teacher_argv)))
    return out


def test_every_preset_puts_the_prompt_where_it_cannot_be_an_option():
    templates = _templates()
    assert {"claude student", "claude answer", "codex student", "codex answer", "copilot student",
            "opencode student"} <= {name for name, _ in templates}
    lists = {"{model_args}": (), "{profile_args}": (), "{max_turns_args}": (), "{allowed_tools}": ("Read",)}
    for name, template in templates:
        if not any("{prompt}" in e for e in template):
            continue  # (a prompt file only)
        argv = launch.expand(template, {"prompt": HOSTILE_PROMPT}, lists)  # refused if it could be an option
        i = next(i for i, e in enumerate(argv) if e.endswith(HOSTILE_PROMPT))
        assert argv[i - 1] == "--" or argv[i].startswith("--prompt="), (name, argv)


def test_a_users_template_without_dashdash_refuses_a_prompt_starting_with_dash(tmp_path):
    """The generic preset runs the user's argv: a prompt that would stand alone as `-…` is refused (config error
    naming the fix) and the program never starts; after `--` the same prompt is passed as the operand it is."""
    ran = tmp_path / "ran"
    script = tmp_path / "agent.py"
    script.write_text(f"import sys; open({str(ran)!r}, 'w').write(repr(sys.argv[1:])); print('OK')\n")
    item = Item("t1", HOSTILE_PROMPT)
    # (confine off: the fake agent reports into the test's folder, outside its rollout)
    bare = CommandStudent(CommandCfg(preset="generic", argv=(sys.executable, str(script), "{prompt}"), confine="off"),
                          env=dict(os.environ))
    with pytest.raises(ConfigError) as info:
        bare.run("# skill\n", item)
    assert "starts with '-'" in info.value.message and "'--'" in info.value.hint
    assert not ran.exists()
    ended = CommandStudent(CommandCfg(preset="generic", argv=(sys.executable, str(script), "--", "{prompt}"),
                                      confine="off"),
                           env=dict(os.environ))
    assert ended.run("# skill\n", item).text.strip() == "OK"
    assert ran.read_text() == repr(["--", HOSTILE_PROMPT])


def _env(name: str, exe: Path, home: Path, base_url: str) -> dict[str, str]:
    env = {"claude": lambda: ac.claude_env(home, base_url),
           "copilot": lambda: ac.copilot_env(home, base_url),
           "opencode": lambda: ac.opencode_env(home, base_url)}[name]()
    return {**os.environ, **env, "PATH": f"{exe.parent}:{os.environ['PATH']}"}


@pytest.mark.agent_cli
@pytest.mark.parametrize("name", ["claude", "copilot", "opencode"])
def test_the_real_agent_gets_a_dash_prompt_as_its_prompt(name, project, tmp_path):  # noqa: F811
    exe = ac.require_cli(name)
    if name == "claude":
        ac.prepare_claude_home(tmp_path / "home")
    item = Item("t1", HOSTILE_PROMPT, metadata={
        "workspace": {"fixture": "app"}, "task_dir": str(project),
        "verify": {"command": "true", "result": "exit_code", "timeout_s": 30}})
    with AgentServer(default=lambda _req: text("OK")) as server:
        student = AgentStudent(CommandCfg(preset=name, timeout_s=180, allowed_tools=("Read",)),
                               project_root=project, model=None,
                               env=_env(name, exe, tmp_path / "home", server.base_url))
        reply = student.run(SKILL, item)
        asked = [r.messages_text() for r in server.agent_requests()]
    assert any(HOSTILE_PROMPT in m for m in asked), asked  # the model was asked (claude printed its version)
    assert reply.text == "OK"
