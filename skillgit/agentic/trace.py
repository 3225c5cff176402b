"""What an agent did, from its machine-readable output: the tool calls and their results, the final message, usage.

Formats (see docs/AGENT_CLIS.md, observed on the real CLIs):
- `claude-stream`: Claude Code `--output-format stream-json --verbose` (also the simulated coding agent): `assistant`
  messages with `tool_use` blocks, `user` messages with `tool_result` blocks, a final `result` event (`result`,
  `usage`, `total_cost_usd`, `num_turns`, `is_error`/`subtype`).
- `codex-json`: `codex exec --json`: `item.completed` items (`command_execution`, `file_change`, `agent_message` —
  the last is the final message), `turn.completed{usage}`.
- `copilot-json`: Copilot CLI `--output-format json`: `assistant.message{content, toolRequests}`,
  `tool.execution_start{toolName, arguments}`, `tool.execution_complete{result}`.
- `opencode-json`: `opencode run --format json`: `tool_use{part.tool, part.state.input/output}`, `text{part.text}`.
- `text`: stdout is the final message.
Lines that are not JSON, and event types not listed, are skipped: a newer CLI never breaks a rollout here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from skillgit.types import Usage

FORMATS = ("claude-stream", "codex-json", "copilot-json", "opencode-json", "text")
CALL_CHARS = 300  # a tool call's input as shown to the teacher
RESULT_CHARS = 600  # a tool result as shown to the teacher


@dataclass(frozen=True)
class Step:
    kind: str  # call | result | text
    name: str = ""
    text: str = ""
    error: bool = False


@dataclass(frozen=True)
class AgentTrace:
    final: str
    steps: tuple[Step, ...] = ()
    usage: Usage = field(default_factory=Usage)
    error: str | None = None  # the agent reported that it failed (e.g. max turns)
    turns: int | None = None

    def render(self, max_steps: int = 60) -> str:
        """The trace for the teacher: one line per call and result, long ones cut in the middle."""
        lines = []
        shown = self.steps if len(self.steps) <= max_steps else (*self.steps[: max_steps // 2],
                                                                Step("text", text=f"[… {len(self.steps) - max_steps} "
                                                                                  "steps omitted …]"),
                                                                *self.steps[-max_steps // 2:])
        for s in shown:
            if s.kind == "call":
                lines.append(f"→ {s.name}: {_cut(s.text, CALL_CHARS)}")
            elif s.kind == "result":
                lines.append(f"← {'error: ' if s.error else ''}{_cut(s.text, RESULT_CHARS)}")
            else:
                lines.append(f"· {_cut(s.text, RESULT_CHARS)}")
        return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split()) if len(text) < limit else text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} […{len(text) - limit} chars…] {text[-half:]}"


def _events(stdout: str) -> Iterator[dict[str, Any]]:
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(c.get("text", c.get("content", ""))) if isinstance(c, dict) else str(c)
                         for c in content)
    return "" if content is None else json.dumps(content)


def parse(stdout: str, fmt: str) -> AgentTrace:
    """The trace of an agent's stdout in format `fmt` (one of `FORMATS`)."""
    if fmt == "claude-stream":
        return _claude(stdout)
    if fmt == "codex-json":
        return _codex(stdout)
    if fmt == "copilot-json":
        return _copilot(stdout)
    if fmt == "opencode-json":
        return _opencode(stdout)
    return AgentTrace(stdout.strip())


def _claude(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final, usage, error, turns, last_text = "", Usage(1), None, None, ""
    for e in _events(stdout):
        kind = e.get("type")
        message = _dict(e.get("message"))
        blocks = _list(message.get("content"))
        if kind == "assistant":
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_use":
                    steps.append(Step("call", str(b.get("name", "")), json.dumps(b.get("input", {}),
                                                                                 ensure_ascii=False)))
                elif b.get("type") == "text" and str(b.get("text", "")).strip():
                    last_text = str(b["text"])
                    steps.append(Step("text", text=last_text))
        elif kind == "user":
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    steps.append(Step("result", text=_text_of(b.get("content")), error=bool(b.get("is_error"))))
        elif kind == "result":
            final = str(e.get("result") or last_text)
            u = _dict(e.get("usage"))
            cache_read = int(u.get("cache_read_input_tokens") or 0)
            prompt = int(u.get("input_tokens") or 0) + cache_read + int(u.get("cache_creation_input_tokens") or 0)
            cost = e.get("total_cost_usd")
            usage = Usage(1, prompt, int(u.get("output_tokens") or 0), cache_read, 0,
                          round(float(cost), 8) if isinstance(cost, (int, float)) else 0.0)
            turns = e.get("num_turns") if isinstance(e.get("num_turns"), int) else None
            subtype = str(e.get("subtype") or "")
            if e.get("is_error") or subtype.startswith("error"):
                # error_max_turns / error_during_execution; an API error is `is_error` with its text as `result`
                error = subtype if subtype.startswith("error") else str(e.get("result") or "error")[:300]
    return AgentTrace(final or last_text, tuple(steps), usage, error, turns)


def _codex(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final, prompt, completion, cached, error = "", 0, 0, 0, None
    for e in _events(stdout):
        item = _dict(e.get("item"))
        if e.get("type") == "item.completed":
            kind = item.get("type")
            if kind == "command_execution":
                steps.append(Step("call", "shell", str(item.get("command", ""))))
                steps.append(Step("result", text=str(item.get("aggregated_output", "")),
                                  error=item.get("exit_code") not in (0, None)))
            elif kind == "file_change":
                changes = _list(item.get("changes"))
                steps.append(Step("call", "apply_patch", ", ".join(f"{c.get('kind')} {c.get('path')}"
                                                                   for c in changes if isinstance(c, dict))))
            elif kind == "agent_message":
                final = str(item.get("text", ""))
                steps.append(Step("text", text=final))
            elif kind == "error":
                error = str(item.get("message", "error"))
        elif e.get("type") == "turn.completed" and isinstance(e.get("usage"), dict):
            u = e["usage"]
            prompt += int(u.get("input_tokens") or 0)
            cached += int(u.get("cached_input_tokens") or 0)
            completion += int(u.get("output_tokens") or 0)
        elif e.get("type") == "turn.failed":
            error = str((e.get("error") or {}).get("message", "turn failed"))
    return AgentTrace(final, tuple(steps), Usage(1, prompt, completion, cached), error if not final else None)


def _copilot(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final = ""
    for e in _events(stdout):
        data = _dict(e.get("data"))
        kind = e.get("type")
        if kind == "tool.execution_start":
            steps.append(Step("call", str(data.get("toolName", "")), json.dumps(data.get("arguments", {}))))
        elif kind == "tool.execution_complete":
            result = data.get("result")
            text = result.get("content", "") if isinstance(result, dict) else result
            steps.append(Step("result", text=_text_of(text), error=data.get("success") is False))
        elif kind == "assistant.message" and str(data.get("content", "")).strip():
            final = str(data["content"])
            steps.append(Step("text", text=final))
    return AgentTrace(final, tuple(steps), Usage(1))


def _opencode(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final = ""
    for e in _events(stdout):
        part = _dict(e.get("part"))
        if e.get("type") == "tool_use":
            state = _dict(part.get("state"))
            steps.append(Step("call", str(part.get("tool", "")), json.dumps(state.get("input", {}))))
            steps.append(Step("result", text=_text_of(state.get("output", "")), error=state.get("status") == "error"))
        elif e.get("type") == "text" and str(part.get("text", "")).strip():
            final = str(part["text"])
            steps.append(Step("text", text=final))
    return AgentTrace(final, tuple(steps), Usage(1))
