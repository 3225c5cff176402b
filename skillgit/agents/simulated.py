"""The offline simulated coding agent (`python -m skillgit.world.agent`, skillgit/world/agent.py).

It reads the skill like Claude Code (`.claude/skills/<name>/`), writes Claude Code's stream-json, and loads a user
profile the way Claude Code does (skills, settings hooks, MCP servers and memory under `$CLAUDE_CONFIG_DIR`, default
`~/.claude`, and `~/.claude.json`), so the hermetic profile is tested offline against the same rules.
"""

from __future__ import annotations

import sys

from skillgit.agents import claude
from skillgit.agents.base import Agent, StudentPreset
from skillgit.agents.profile import Profile

AGENT = Agent(
    name="simulated",
    title="the simulated coding agent",
    binary=sys.executable,
    install_hint="it is part of skillgit",
    student=StudentPreset(
        (sys.executable, "-m", "skillgit.world.agent", "--output-format", "stream-json", "--prompt-file",
         "{prompt_file}", "--seed", "{seed}", "--sample", "{sample}"),
        ".claude/skills/{name}",
    ),
    # as the agent teacher: the simulated world's teacher, reading the evidence files (skillgit/world/agent_teacher.py)
    teacher_argv=(sys.executable, "-m", "skillgit.world.agent_teacher", "--output-format", "stream-json",
                  "--prompt-file", "{prompt_file}", "--seed", "{seed}"),
    trace_format=claude.AGENT.trace_format,
    parse=claude.parse,
    profile=Profile(user_config=claude.PROFILE.user_config),
    version_args=("-m", "skillgit.world.agent", "--version"),
)

__all__ = ["AGENT"]
