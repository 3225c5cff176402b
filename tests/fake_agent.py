"""A fake agent module, registered by tests (`skillgit.agents.registry.register("fakeagent",
"tests.fake_agent:AGENT")`) to show that one module makes an agent a full citizen: config validation, doctor and
the agent student take it from the registry, and `skillgit install fakeagent` writes its one artifact. Its program
`fakeagent` is a script the test puts on PATH; its output format `fake-lines` is one `final: TEXT` line."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skillgit.agents.base import Agent, StudentPreset
from skillgit.agents.profile import Profile
from skillgit.agents.trace import AgentTrace

if TYPE_CHECKING:
    from skillgit.integrations.artifacts import Artifact

SCRIPT = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "fakeagent 9.9.9"; exit 0; fi
echo "final: did $2 with HOME=$HOME isolated=$1"
"""


def parse(stdout: str) -> AgentTrace:
    finals = [line[len("final: "):] for line in stdout.splitlines() if line.startswith("final: ")]
    return AgentTrace(finals[-1] if finals else "")


def install(scope: str, base: Path, env: Mapping[str, str]) -> list[Artifact]:
    """Its `skillgit install` artifacts: the skillgit skill where it reads skills (a plain builder function)."""
    from skillgit.integrations.artifacts import FileArtifact

    return [FileArtifact(base / ".fake" / "skills" / "skillgit" / "SKILL.md", f"fake {scope} skill\n")]


AGENT = Agent(
    name="fakeagent",
    title="A fake agent",
    binary="fakeagent",
    install_hint="put tests' fakeagent script on PATH",
    student=StudentPreset(("fakeagent", "{profile_args}", "{prompt}"), ".fake/skills/{name}"),
    trace_format="fake-lines",
    parse=parse,
    profile=Profile(args=("--isolated",)),
    reader="skillgit.sleep.readers.claude",
    install="tests.fake_agent:install",
)
