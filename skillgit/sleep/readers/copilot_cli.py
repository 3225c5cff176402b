"""GitHub Copilot CLI sessions: `~/.copilot/session-state/<session>/events.jsonl` (older: `<session>.jsonl`).

Format: one session event per line, `{id, timestamp, parentId, ephemeral?, type, data}`, with the event types and
`data` shapes of the public schema github/copilot-sdk `nodejs/src/generated/session-events.ts` (generated from
`session-events.schema.json`, which the CLI also ships): `session.start` {sessionId, copilotVersion, startTime,
context {cwd, gitRoot, repository, branch, headCommit}}, `session.resume`, `user.message` {content,
transformedContent, attachments, source, isAutopilotContinuation}, `assistant.message` {messageId, content,
toolRequests, parentToolCallId}, `tool.execution_start` {toolCallId, toolName, arguments, parentToolCallId},
`tool.execution_complete` {toolCallId, success, result {content, detailedContent}, error {message},
parentToolCallId}, `skill.invoked` {name, path, source, trigger user-invoked|agent-invoked|context-load},
`subagent.*`, `hook.*`, `abort` {reason}, `assistant.turn_start|turn_end`, `session.info|error|model_change|
truncation|compaction_*|shutdown` …. The on-disk location is not in that schema; it is the one public session
viewers read (e.g. qiaolei81/copilot-session-viewer README).

Real files of Copilot CLI 1.0.102 (tests/fixtures/transcripts/copilot-cli/, made by the real CLI) add
`system.message` {role, content: the system prompt}, `session.usage_record`, `context.headCommit` and
`tool.execution_complete.shellExecution.exitCode`.

Contracts: events that carry `parentToolCallId` (or an `agentId`) belong to a sub-agent and stay out of the main
turns; tool calls come from `tool.execution_start` (the `toolRequests` of a message announce the same calls);
types outside `KNOWN_TYPES` are counted. Not a person's turn: a `user.message` with a `source` (`skill-<name>`
for a hidden skill injection, `agent-<id>` for an inter-agent prompt) or `isAutopilotContinuation`; the CLI's own
slash commands and interrupts (`abort`) are events of their own, never a `user.message`. Skills: `skill.invoked`
(trigger user-invoked → `command`, agent-invoked → `tool`, context-load → `injected`) and SKILL.md reads.
Headless (`copilot -p`): its system prompt says "You are running in non-interactive mode" (`HEADLESS_SIGN`; the
interactive CLI's does not), so such a session is `headless`, entrypoint `copilot -p`.
`COPILOT_HOME` moves the root (default `~/.copilot`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import Session, SkillHow
from skillgit.sleep.readers._common import (
    Draft,
    as_dict,
    as_str,
    dispatch,
    ignore,
    read_jsonl,
    skill_named,
    text_of,
    tool_call,
    tool_result,
)

SOURCE = "copilot-cli"
KNOWN_TYPES = frozenset({
    "session.start", "session.resume", "session.error", "session.idle", "session.title_changed", "session.info",
    "session.warning", "session.model_change", "session.mode_changed", "session.plan_changed",
    "session.workspace_file_changed", "session.handoff", "session.truncation", "session.snapshot_rewind",
    "session.shutdown", "session.usage_info", "session.compaction_start", "session.compaction_complete",
    "user.message", "pending_messages.modified", "assistant.turn_start", "assistant.intent", "assistant.reasoning",
    "assistant.reasoning_delta", "assistant.message", "assistant.message_delta", "assistant.turn_end",
    "assistant.usage", "assistant.thinking", "abort", "tool.user_requested", "tool.execution_start",
    "tool.execution_partial_result", "tool.execution_progress", "tool.execution_complete", "skill.invoked",
    "subagent.started", "subagent.completed", "subagent.failed", "subagent.selected", "hook.start", "hook.end",
    "system.message", "session.usage_record", "skill.invoked_ref", "session.context_changed",
})
HEADLESS_SIGN = "running in non-interactive mode"
NOT_TYPED = ("skill-", "agent-")  # user.message sources that are not the person typing
_TRIGGERS: dict[str, SkillHow] = {"user-invoked": "command", "agent-invoked": "tool", "context-load": "injected"}


def root(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    configured = (environ or {}).get("COPILOT_HOME")
    return Path(configured) if configured else home / ".copilot"


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    state = root(home, environ) / "session-state"
    if not state.is_dir():
        return []
    found = [p for p in state.glob("*/events.jsonl") if p.is_file()]
    found.extend(p for p in state.glob("*.jsonl") if p.is_file())
    return sorted(found)


class _Copilot(Draft):
    headless = False


def _start(draft: _Copilot, event: dict[str, Any]) -> None:
    data = as_dict(event.get("data"))
    context = as_dict(data.get("context"))
    draft.keep(session_id=data.get("sessionId"), version=data.get("copilotVersion"), cwd=context.get("cwd"),
               branch=context.get("branch"), repository=context.get("repository"), commit=context.get("headCommit"))


def _system(draft: _Copilot, event: dict[str, Any]) -> None:
    draft.headless = draft.headless or HEADLESS_SIGN in text_of(as_dict(event.get("data")).get("content"))


def _typed(data: dict[str, Any]) -> bool:
    source = as_str(data.get("source"))
    return not (data.get("isAutopilotContinuation") or (source and source.startswith(NOT_TYPED)))


def _user(draft: _Copilot, data: dict[str, Any], ts: str | None) -> None:
    if _typed(data):
        draft.turns.user(text_of(data.get("content")), ts)


def _assistant(draft: _Copilot, data: dict[str, Any], ts: str | None) -> None:
    draft.turns.agent_text(text_of(data.get("content")), ts)


def _tool_start(draft: _Copilot, data: dict[str, Any], ts: str | None) -> None:
    draft.turns.call(tool_call(str(data.get("toolName") or ""), data.get("arguments"),
                               str(data.get("toolCallId") or "")), ts)


def _tool_done(draft: _Copilot, data: dict[str, Any], ts: str | None) -> None:
    output = text_of(as_dict(data.get("result")).get("content")) or text_of(as_dict(data.get("error")).get("message"))
    code = as_dict(data.get("shellExecution")).get("exitCode")
    draft.turns.result(tool_result(output, data.get("success") is False, str(data.get("toolCallId") or ""),
                                   code if isinstance(code, int) else None), ts)


def _skill(draft: _Copilot, data: dict[str, Any], ts: str | None) -> None:
    how = _TRIGGERS.get(str(data.get("trigger")), "tool")
    draft.turns.skill(skill_named(data.get("name"), how, data.get("path")))


CONVERSATION: dict[str, Callable[[_Copilot, dict[str, Any], str | None], None]] = {
    "user.message": _user, "assistant.message": _assistant, "tool.execution_start": _tool_start,
    "tool.execution_complete": _tool_done, "skill.invoked": _skill,
}


def _conversation(draft: _Copilot, event: dict[str, Any]) -> None:
    data = as_dict(event.get("data"))
    if data.get("parentToolCallId") or event.get("agentId"):
        return  # a sub-agent's own traffic
    CONVERSATION[str(event.get("type"))](draft, data, as_str(event.get("timestamp")))


HANDLERS: dict[str, Callable[[_Copilot, dict[str, Any]], None]] = {
    **dict.fromkeys(KNOWN_TYPES, ignore), **dict.fromkeys(CONVERSATION, _conversation),
    "session.start": _start, "session.resume": _start, "system.message": _system,
}


def read(path: Path) -> Iterable[Session]:
    draft = _Copilot(SOURCE, path)
    for event in read_jsonl(path, draft.counts):
        draft.total += 1
        kind = event.get("type")
        if kind in HANDLERS:
            draft.stamp(event.get("timestamp"))
        dispatch(HANDLERS, kind, draft, event)
    meta = draft.meta
    session_id = meta.get("session_id") or (path.parent.name if path.name == "events.jsonl" else path.stem)
    yield draft.session(session_id, cwd=meta.get("cwd"), git_branch=meta.get("branch"),
                        entrypoint="copilot -p" if draft.headless else "copilot-cli", headless=draft.headless,
                        client_version=meta.get("version"), git_remote=meta.get("repository"),
                        git_commit=meta.get("commit"))
