"""GitHub Copilot CLI sessions: `~/.copilot/session-state/<session>/events.jsonl` (older: `<session>.jsonl`).

Format: one session event per line, `{id, timestamp, parentId, ephemeral?, type, data}`, with the event types and
`data` shapes of the public schema github/copilot-sdk `nodejs/src/generated/session-events.ts` (generated from
`session-events.schema.json`): `session.start` {sessionId, copilotVersion, startTime, context {cwd, gitRoot,
repository, branch}}, `session.resume`, `user.message` {content, transformedContent, attachments, source},
`assistant.message` {messageId, content, toolRequests, parentToolCallId}, `tool.execution_start` {toolCallId,
toolName, arguments, parentToolCallId}, `tool.execution_complete` {toolCallId, success, result {content,
detailedContent}, error {message}, parentToolCallId}, `subagent.*`, `hook.*`, `assistant.turn_start|turn_end`,
`session.info|error|model_change|truncation|compaction_*|shutdown` …. The on-disk location is not in that schema;
it is the one public session viewers read (e.g. qiaolei81/copilot-session-viewer README).

Real files of Copilot CLI 1.0.102 (tests/fixtures/transcripts/copilot-cli/, made by the real CLI) add
`system.message` {role, content: the system prompt}, `session.usage_record`, `context.headCommit` and
`tool.execution_complete.shellExecution.exitCode`.

Contracts: events that carry `parentToolCallId` belong to a sub-agent and stay out of the main turns; tool calls
come from `tool.execution_start` (the `toolRequests` of a message announce the same calls); types outside
`KNOWN_TYPES` are counted. Headless (`copilot -p`): its system prompt says "You are running in non-interactive
mode" (`HEADLESS_SIGN`; the interactive CLI's does not), so such a session is `headless`, entrypoint `copilot -p`.
`COPILOT_HOME` moves the root (default `~/.copilot`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import Session
from skillgit.sleep.readers._common import TurnBuilder, as_dict, read_jsonl, text_of, tool_call, tool_result

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
    "system.message", "session.usage_record",
})
HEADLESS_SIGN = "running in non-interactive mode"


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


def read(path: Path) -> Iterable[Session]:
    counts: Counter[str] = Counter()
    builder = TurnBuilder()
    meta: dict[str, Any] = {}
    total = 0
    first_ts = last_ts = None
    for event in read_jsonl(path, counts):
        total += 1
        kind = event.get("type")
        if kind not in KNOWN_TYPES:
            counts[str(kind)] += 1
            continue
        data = as_dict(event.get("data"))
        ts = event.get("timestamp") if isinstance(event.get("timestamp"), str) else None
        if ts:
            first_ts = first_ts or ts
            last_ts = ts
        if kind in ("session.start", "session.resume"):
            context = as_dict(data.get("context"))
            for key, value in (("session_id", data.get("sessionId")), ("version", data.get("copilotVersion")),
                               ("cwd", context.get("cwd")), ("branch", context.get("branch")),
                               ("repository", context.get("repository")), ("commit", context.get("headCommit"))):
                if isinstance(value, str) and value and key not in meta:
                    meta[key] = value
            continue
        if kind == "system.message":
            meta["headless"] = meta.get("headless") or HEADLESS_SIGN in text_of(data.get("content"))
            continue
        if data.get("parentToolCallId"):
            continue  # a sub-agent's own traffic
        if kind == "user.message":
            builder.user(text_of(data.get("content")), ts)
        elif kind == "assistant.message":
            builder.agent_text(text_of(data.get("content")), ts)
        elif kind == "tool.execution_start":
            builder.call(tool_call(str(data.get("toolName") or ""), data.get("arguments"),
                                   str(data.get("toolCallId") or "")), ts)
        elif kind == "tool.execution_complete":
            result = as_dict(data.get("result"))
            error = as_dict(data.get("error"))
            output = text_of(result.get("content")) or text_of(error.get("message"))
            code = as_dict(data.get("shellExecution")).get("exitCode")
            builder.result(tool_result(output, data.get("success") is False, str(data.get("toolCallId") or ""),
                                       code if isinstance(code, int) else None), ts)
    session_id = meta.get("session_id") or (path.parent.name if path.name == "events.jsonl" else path.stem)
    yield Session(
        source=SOURCE,
        session_id=session_id,
        cwd=meta.get("cwd"),
        git_branch=meta.get("branch"),
        started=first_ts,
        ended=last_ts,
        entrypoint="copilot -p" if meta.get("headless") else "copilot-cli",
        headless=bool(meta.get("headless")),
        client_version=meta.get("version"),
        turns=builder.build(),
        path=str(path),
        unknown_records=dict(counts),
        total_records=total,
        git_remote=meta.get("repository"),
        git_commit=meta.get("commit"),
    )
