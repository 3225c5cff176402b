"""What an agent did, from its machine-readable output: the tool calls and their results, the final message, usage.

The record (`AgentTrace`, `Step`) and the shared helpers live in `skillgit.agents.trace`; each format's parser
lives with its agent (`skillgit/agents/<agent>.py`, see docs/AGENT_CLIS.md for the formats observed on the real
CLIs): `claude-stream` (Claude Code and the simulated coding agent), `codex-json`, `copilot-json`,
`opencode-json`, and `text` (stdout is the final message). `formats()` lists them from the agent registry.
Lines that are not JSON, and event types not listed, are skipped: a newer CLI never breaks a rollout here.
"""

from __future__ import annotations

from skillgit.agents import registry
from skillgit.agents.trace import CALL_CHARS, RESULT_CHARS, AgentTrace, SkillLoad, Step, skill_load

__all__ = ["CALL_CHARS", "RESULT_CHARS", "AgentTrace", "SkillLoad", "Step", "formats", "parse", "skill_load"]


def formats() -> tuple[str, ...]:
    """Every output format an agent student can be read as."""
    return registry.trace_formats()


def parse(stdout: str, fmt: str) -> AgentTrace:
    """The trace of an agent's stdout in format `fmt` (one of `formats()`; ConfigError for another)."""
    return registry.parser(fmt)(stdout)
