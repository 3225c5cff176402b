"""Codex CLI sessions: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` and `~/.codex/archived_sessions/`.

Format (openai/codex, `codex-rs/protocol/src/protocol.rs`: `RolloutLine {timestamp, #[flatten] item}` with
`RolloutItem` tagged `{"type", "payload"}`): `session_meta` (`SessionMetaLine`: id, timestamp, cwd, originator,
cli_version, instructions, source cli|vscode|exec|mcp|{subagent}, model_provider, git {commit_hash, branch,
repository_url}), `response_item` (`codex-rs/protocol/src/models.rs` `ResponseItem`: message {role, content
[input_text|output_text]}, function_call {name, arguments (a JSON string), call_id}, function_call_output {call_id,
output: a string or content items}, custom_tool_call {name, input, call_id}, custom_tool_call_output,
local_shell_call {action {command}}, reasoning, web_search_call, ghost_snapshot, compaction), `event_msg`
(`EventMsg` tagged by `type`: user_message {message}, agent_message, token_count, exec_command_end …),
`turn_context` and `compacted`. Older files (before the tagged form) hold a bare meta object, then bare items.

Contracts:
- The person's words come from `event_msg/user_message` (or, in newer CLIs, `event_msg/item_completed` with a
  `UserMessage` item); only when a file has neither are `response_item` user messages used, minus the injected
  `<environment_context>` / `<user_instructions>` / AGENTS.md content items.
- `originator == "codex_exec"` or `source == "exec"` is headless; a `{"subagent": …}` source is a sidechain.
- Unknown top-level types and unknown `response_item` payload types are counted, never an error.
- `CODEX_HOME` moves the root.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import Session
from skillgit.sleep.readers._common import TurnBuilder, as_dict, read_jsonl, text_of, tool_call, tool_result

SOURCE = "codex"
# the protocol's RolloutItem kinds plus those newer CLIs write (0.169: world_state, token_usage_record)
KNOWN_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
                         "token_usage_record"})
KNOWN_ITEMS = frozenset({
    "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "local_shell_call", "reasoning", "web_search_call", "ghost_snapshot", "compaction", "compaction_summary", "other",
})
_INJECTED = ("<environment_context", "<user_instructions", "# AGENTS.md", "<INSTRUCTIONS", "<permissions",
             "<user_shell_command", "<turn_aborted")


def root(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    configured = (environ or {}).get("CODEX_HOME")
    return Path(configured) if configured else home / ".codex"


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    base = root(home, environ)
    found: list[Path] = []
    for sub in ("sessions", "archived_sessions"):
        folder = base / sub
        if folder.is_dir():
            found.extend(p for p in folder.rglob("*.jsonl") if p.is_file())
    return sorted(found)


def _output(raw: Any) -> tuple[str, bool, int | None]:
    """(text, is_error, exit_code) of a function_call_output payload in any of its historical shapes."""
    is_error = False
    exit_code = None
    if isinstance(raw, dict):  # {content, success} (older serialisation of FunctionCallOutputPayload)
        is_error = raw.get("success") is False
        raw = raw.get("content")
    if isinstance(raw, list):
        return text_of(raw), is_error, None
    text = raw if isinstance(raw, str) else ""
    if text.startswith("{"):
        try:  # the shell tool's {"output": "...", "metadata": {"exit_code": 1, "duration_seconds": 0.4}}
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "output" in obj:
            meta = as_dict(obj.get("metadata"))
            code = meta.get("exit_code")
            exit_code = code if isinstance(code, int) else None
            text = str(obj.get("output") or "")
    return text, is_error, exit_code


def _is_subagent(source: Any) -> bool:
    return (isinstance(source, dict) and "subagent" in source) or (
        isinstance(source, str) and source.startswith("subagent"))


def read(path: Path) -> Iterable[Session]:
    counts: Counter[str] = Counter()
    meta: dict[str, Any] = {}
    events: list[tuple[str, Any, str | None]] = []
    total = 0
    first_ts = last_ts = None
    has_user_events = False
    for rec in read_jsonl(path, counts):
        total += 1
        kind, payload = rec.get("type"), rec.get("payload")
        if "payload" not in rec:  # the older, untagged layout
            if kind is None and "id" in rec and "timestamp" in rec:
                kind, payload = "session_meta", rec
            elif rec.get("record_type") == "state":
                continue
            elif kind in KNOWN_ITEMS:
                kind, payload = "response_item", rec
        ts = rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None
        if ts and kind != "session_meta":
            first_ts = first_ts or ts
            last_ts = ts
        if kind not in KNOWN_TYPES:
            counts[str(kind)] += 1
            continue
        payload = payload if isinstance(payload, dict) else {}
        if kind == "session_meta":
            if not meta:
                meta = payload
                first_ts = first_ts or payload.get("timestamp") or ts
        elif kind == "turn_context":
            meta.setdefault("cwd", payload.get("cwd"))
        elif kind == "event_msg":
            done = as_dict(payload.get("item"))
            if payload.get("type") == "user_message":
                has_user_events = True
                events.append(("user", str(payload.get("message") or ""), ts))
            elif payload.get("type") == "item_completed" and done.get("type") == "UserMessage":
                has_user_events = True  # newer CLIs: the typed message as a completed turn item
                events.append(("user", text_of(done.get("content")), ts))
        elif kind == "response_item":
            item = str(payload.get("type"))
            if item not in KNOWN_ITEMS:
                counts[f"response_item/{item}"] += 1
            else:
                events.append((item, payload, ts))
    builder = TurnBuilder()
    for item, payload, ts in events:
        if item == "user":
            builder.user(payload, ts)
        elif item == "message":
            role = payload.get("role")
            if role == "assistant":
                builder.agent_text(text_of(payload.get("content")), ts)
            elif role == "user" and not has_user_events:
                items = payload.get("content") if isinstance(payload.get("content"), list) else [payload.get("content")]
                said = [t for t in map(text_of, items) if t.strip() and not t.lstrip().startswith(_INJECTED)]
                builder.user("\n".join(said), ts)
        elif item in ("function_call", "custom_tool_call"):
            args = payload.get("arguments") if item == "function_call" else payload.get("input")
            builder.call(tool_call(str(payload.get("name") or ""), args, str(payload.get("call_id") or "")), ts)
        elif item == "local_shell_call":
            action = as_dict(payload.get("action"))
            builder.call(tool_call("local_shell", {"command": action.get("command")},
                                   str(payload.get("call_id") or payload.get("id") or "")), ts)
        elif item in ("function_call_output", "custom_tool_call_output"):
            text, is_error, code = _output(payload.get("output"))
            builder.result(tool_result(text, is_error, str(payload.get("call_id") or ""), code), ts)
    git = as_dict(meta.get("git"))
    source = meta.get("source")
    originator = meta.get("originator") if isinstance(meta.get("originator"), str) else None
    yield Session(
        source=SOURCE,
        session_id=str(meta.get("id") or path.stem),
        cwd=meta.get("cwd") if isinstance(meta.get("cwd"), str) else None,
        git_branch=git.get("branch"),
        started=first_ts,
        ended=last_ts,
        entrypoint=originator or (source if isinstance(source, str) else None),
        headless=originator == "codex_exec" or source == "exec",
        sidechain=_is_subagent(source),
        client_version=meta.get("cli_version"),
        turns=builder.build(),
        path=str(path),
        unknown_records=dict(counts),
        total_records=total,
        git_commit=git.get("commit_hash"),
        git_remote=git.get("repository_url"),
    )
