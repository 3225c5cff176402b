"""What an agent did, from its machine-readable output: the shared record and the helpers every parser uses.

Each agent's module parses its own format into an `AgentTrace` (`Agent.parse`); `agentic.trace.parse` picks the
parser by format name. A parser skips lines that are not JSON and event types it does not know: a newer CLI never
breaks a rollout.

`AgentTrace.render()` is what the teacher reads: one entry per call, result and message, long ones cut in the
middle. Whitespace is kept as the agent wrote it (a Python body keeps its indentation, a heredoc its lines); a tool
input that is a mapping is shown as its keys, with multi-line string values on their own lines.

`skill_load(trace, name, install_rel, skill_tool)` says whether the agent loaded the installed skill: a call of its
skill tool naming the skill (exactly: `{"skill": "demo"}`, not `demo-x`), or any call whose input names the
installed path (a Read, a `cat`); the call's result (paired by call id, else the next result) decides between
loaded and failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from skillgit.types import Usage

CALL_CHARS = 300  # a tool call's input as shown to the teacher
RESULT_CHARS = 600  # a tool result as shown to the teacher


@dataclass(frozen=True)
class Step:
    kind: str  # call | result | text
    name: str = ""
    text: str = ""
    error: bool = False
    call_id: str = ""  # pairs a result with its call when the format says so


@dataclass(frozen=True)
class AgentTrace:
    final: str
    steps: tuple[Step, ...] = ()
    usage: Usage = field(default_factory=Usage)
    error: str | None = None  # the agent reported that it failed (e.g. max turns)
    turns: int | None = None

    def render(self, max_steps: int = 60) -> str:
        """The trace for the teacher: one entry per call and result, long ones cut in the middle."""
        lines = []
        shown = self.steps if len(self.steps) <= max_steps else (*self.steps[: max_steps // 2],
                                                                Step("text", text=f"[… {len(self.steps) - max_steps} "
                                                                                  "steps omitted …]"),
                                                                *self.steps[-max_steps // 2:])
        for s in shown:
            if s.kind == "call":
                lines.append(f"→ {s.name}: {cut(s.text, CALL_CHARS)}")
            elif s.kind == "result":
                lines.append(f"← {'error: ' if s.error else ''}{cut(s.text, RESULT_CHARS)}")
            else:
                lines.append(f"· {cut(s.text, RESULT_CHARS)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class SkillLoad:
    """Whether a rollout loaded the skill: `state` is loaded | failed | unseen; `why` the failure's text."""

    state: str
    why: str = ""


def cut(text: str, limit: int) -> str:
    """`text` without leading blank lines and trailing whitespace, its middle cut out when over `limit`. Inner
    whitespace (indentation, newlines) is kept."""
    text = text.rstrip()
    while text.startswith("\n") or text.startswith("\r"):
        text = text[1:]
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} […{len(text) - limit} chars…] {text[-half:]}"


def show_input(value: Any) -> str:
    """A tool input as the teacher reads it: a string as it is; a mapping of one-line scalars as compact JSON; a
    mapping holding multi-line text as `key: value` lines, each multi-line value on the lines after its key."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and any(isinstance(v, str) and "\n" in v for v in value.values()):
        parts = []
        for key, v in value.items():
            if isinstance(v, str) and "\n" in v:
                parts.append(f"{key}:\n{v}")
            else:
                parts.append(f"{key}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}")
        return "\n".join(parts)
    return json.dumps({} if value is None else value, ensure_ascii=False)


def events(stdout: str) -> Iterator[dict[str, Any]]:
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c.get("text", c.get("content", ""))) if isinstance(c, dict) else str(c)
                         for c in content)
    return "" if content is None else json.dumps(content)


def text_trace(stdout: str) -> AgentTrace:
    """The `text` format: stdout is the final message."""
    return AgentTrace(stdout.strip())


def skill_load(trace: AgentTrace, name: str, install_rel: str, skill_tool: str = "") -> SkillLoad:
    """Did the agent load skill `name`, installed at `install_rel` (relative to the workspace)? See the module
    docstring. A failed attempt followed by a successful one is loaded."""
    steps = trace.steps
    failed = ""
    for i, step in enumerate(steps):
        if step.kind != "call":
            continue
        by_tool = bool(skill_tool) and step.name.lower() == skill_tool.lower() and \
            (f'"{name}"' in step.text or step.text.strip() == name)  # the skill itself, not one named like it
        if not by_tool and not (install_rel and install_rel in step.text):
            continue
        result = _result_of(steps, i)
        if result is not None and result.error:
            failed = failed or result.text.strip() or "the tool reported an error"
            continue
        return SkillLoad("loaded")
    return SkillLoad("failed", failed) if failed else SkillLoad("unseen")


def _result_of(steps: tuple[Step, ...], i: int) -> Step | None:
    call = steps[i]
    later = steps[i + 1:]
    if call.call_id:
        match = next((s for s in later if s.kind == "result" and s.call_id == call.call_id), None)
        if match is not None:
            return match
    return next((s for s in later if s.kind == "result"), None)
