"""Any other agent: `model.student.command.argv` is its command line (placeholders in README "Train a skill for
Claude Code / Codex / Copilot"). It gets a fresh home like every agent (no switches: skillgit does not know its
flags); its stdout is read as `command.output` says (default `text`: stdout is the final message); its identity in
the fingerprint is a hash of the program's bytes."""

from __future__ import annotations

from skillgit.agents.base import Agent, AnswerPreset, StudentPreset
from skillgit.agents.trace import text_trace

AGENT = Agent(
    name="generic",
    title="a command of your own",
    student=StudentPreset((), ".skill/{name}"),
    answer=AnswerPreset((), "SKILL.md"),
    trace_format="text",
    parse=text_trace,
    version_args=(),
)

__all__ = ["AGENT"]
