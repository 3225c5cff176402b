"""The record of one coding agent, and the typed pieces it is made of.

An `Agent` is everything skillgit knows of one agent, in one frozen record that its own module
(`skillgit/agents/<name>.py`) defines as `AGENT`:
- `student`: how it runs as a student on agentic tasks (`StudentPreset`: argv template, where the skill is
  installed, which variables it keeps, its model flag, its skill tool); None when skillgit cannot run it.
- `answer`: how the `command` backend runs it for one text answer per item (`AnswerPreset`); None when it has none.
- `teacher_argv`: the argv template when it runs as the agent teacher (`skillgit.teacher`); empty: the student
  preset's argv (a real agent edits its working folder the same way whatever it is asked).
- `trace_format` / `parse`: the name and the parser of its machine-readable output (`agents.trace.AgentTrace`).
- `profile`: its hermetic-profile rules (`agents.profile.Profile`: where it keeps config and login, which
  switches make it ignore user-level MCP servers and plugins, what its fresh home must hold).
- `version_args`: the argv tail that prints its version (`agents.version.probe` caches the answer).
- `reader`, `install`: lazy import paths ("module" or "module:attribute") of its sleep transcript reader and its
  `skillgit install` artifacts; they are not imported here (`registry.resolve_pointer` does, on demand).
- `install_hint`, `load_fix`: what to tell a user whose agent is missing, or whose agent could not load the skill.

Argv templates are tuples of strings; each element is filled with `{placeholder}`s, and these elements expand to
zero or more elements: `{model_args}` (the preset's `model_args` when a model is set), `{profile_args}` (the
profile's switches and settings, see `agents.profile`), `{max_turns_args}` and `{allowed_tools}` (claude).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from skillgit.agents.profile import Profile
from skillgit.agents.trace import AgentTrace


@dataclass(frozen=True)
class StudentPreset:
    """How an agent runs once per agentic task (the `agent` student backend)."""

    argv: tuple[str, ...]  # empty: the command comes from model.student.command.argv (generic)
    install_dir: str  # where the skill package goes, relative to the workspace; `{name}` is the skill's name
    keep_env: tuple[str, ...] = ()  # secret-named variables the agent keeps (its own credentials, base URL)
    model_args: tuple[str, ...] = ()  # what `{model_args}` expands to; `{model}` inside is the model name
    skill_tool: str = ""  # the tool the agent loads a skill with ("Skill", "skill"); "" when it reads the file


@dataclass(frozen=True)
class AnswerPreset:
    """How the `command` backend runs an agent for one text answer per item."""

    argv: tuple[str, ...]
    install_path: str  # where the skill goes (one file), relative to the scratch workspace
    output: str = "text"  # "claude_json" (Claude Code's --output-format json result) | "text"


@dataclass(frozen=True)
class Agent:
    """One coding agent (see the module docstring)."""

    name: str
    title: str
    binary: str = ""
    install_hint: str = ""
    student: StudentPreset | None = None
    answer: AnswerPreset | None = None
    teacher_argv: tuple[str, ...] = ()
    trace_format: str = ""
    parse: Callable[[str], AgentTrace] | None = None
    profile: Profile = field(default_factory=Profile)
    version_args: tuple[str, ...] = ("--version",)
    reader: str = ""
    install: str = ""
    load_fix: Callable[[str], str] | None = None  # why a skill load failed → the fix to name

    def fix_for(self, why: str) -> str:
        """What to tell a user whose agent could not load the skill (`why`: the agent's own error text)."""
        specific = self.load_fix(why) if self.load_fix else ""
        return specific or (f"run `{self.binary or self.name}` by hand in a copy of the workspace "
                            "(train --keep-workspaces keeps them) and make its skill loading work")
