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
  `UserMessage` item); only when a file has neither are `response_item` user messages used, minus the content
  items Codex injects (`INJECTED`: `<environment_context>`, AGENTS.md, `<skill>`, `<turn_aborted>` …). Codex's
  own commands (`/status`, `/model` …) never reach the rollout.
- Skills (`Turn.skills`): the injected `<skill><name>…</name><path>…</path>` item of a `$name` mention
  (`codex-rs/core/src/instructions/user_instructions.rs`), the injected `# AGENTS.md instructions for <dir>`
  (kind `instructions`), and SKILL.md files the agent reads with its shell.
- `originator == "codex_exec"` or `source == "exec"` is headless; a `{"subagent": …}` source is a sidechain.
- Unknown top-level types and unknown `response_item` payload types are counted, never an error.
- `CODEX_HOME` moves the root.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.errors import BAD_JSON
from skillgit.sleep.model import Session, SkillUse
from skillgit.sleep.readers._common import (
    Draft,
    as_dict,
    as_str,
    dispatch,
    ignore,
    read_jsonl,
    tag_body,
    text_of,
    tool_call,
    tool_result,
)

SOURCE = "codex"
# the protocol's RolloutItem kinds plus those newer CLIs write (0.169: world_state, token_usage_record)
KNOWN_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
                         "token_usage_record"})
KNOWN_ITEMS = frozenset({
    "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "local_shell_call", "reasoning", "web_search_call", "ghost_snapshot", "compaction", "compaction_summary", "other",
})
INJECTED = ("<environment_context", "<user_instructions", "# AGENTS.md", "<INSTRUCTIONS", "<permissions",
            "<user_shell_command", "<turn_aborted", "<skill")
_AGENTS_MD = re.compile(r"^# AGENTS\.md instructions for (.+)")


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


def _shell_output(text: str) -> tuple[str, int | None]:
    """The shell tool's `{"output": "...", "metadata": {"exit_code": 1}}` string as (output, exit code)."""
    try:
        obj = json.loads(text)
    except BAD_JSON:
        return text, None
    if not (isinstance(obj, dict) and "output" in obj):
        return text, None
    code = as_dict(obj.get("metadata")).get("exit_code")
    return str(obj.get("output") or ""), code if isinstance(code, int) else None


def _output(raw: Any) -> tuple[str, bool, int | None]:
    """(text, is_error, exit_code) of a function_call_output payload in any of its historical shapes."""
    is_error = False
    if isinstance(raw, dict):  # {content, success} (older serialisation of FunctionCallOutputPayload)
        is_error = raw.get("success") is False
        raw = raw.get("content")
    if isinstance(raw, list):
        return text_of(raw), is_error, None
    text = raw if isinstance(raw, str) else ""
    output, code = _shell_output(text) if text.startswith("{") else (text, None)
    return output, is_error, code


def _is_subagent(source: Any) -> bool:
    return (isinstance(source, dict) and "subagent" in source) or (
        isinstance(source, str) and source.startswith("subagent"))


def injected_skill(text: str) -> SkillUse | None:
    """The skill or AGENTS.md an injected user content item carries, if it carries one."""
    text = text.lstrip()
    if text.startswith("<skill"):
        name = tag_body(text, "name")
        return SkillUse(name, "skill", "command", tag_body(text, "path")) if name else None
    match = _AGENTS_MD.match(text)
    if match:
        return SkillUse("AGENTS.md", "instructions", "injected", f"{match.group(1).strip()}/AGENTS.md")
    return None


class _Codex(Draft):
    """Events are collected first: whether `response_item` user messages count depends on the whole file."""

    def __init__(self, path: Path) -> None:
        super().__init__(SOURCE, path)
        self.rollout_meta: dict[str, Any] = {}
        self.events: list[tuple[str, Any, str | None]] = []
        self.has_user_events = False

    def said(self, text: str, ts: str | None) -> None:
        self.has_user_events = True
        self.events.append(("user", text, ts))


# ------------------------------------------------------------------------------------------------ rollout lines
def _meta(draft: _Codex, rec: dict[str, Any]) -> None:
    payload = as_dict(rec.get("payload"))
    if not draft.rollout_meta:
        draft.rollout_meta = payload
        draft.started = draft.started or as_str(payload.get("timestamp")) or as_str(rec.get("timestamp"))


def _turn_context(draft: _Codex, rec: dict[str, Any]) -> None:
    draft.keep(cwd=as_dict(rec.get("payload")).get("cwd"))


def _event(draft: _Codex, rec: dict[str, Any]) -> None:
    payload, ts = as_dict(rec.get("payload")), as_str(rec.get("timestamp"))
    done = as_dict(payload.get("item"))
    if payload.get("type") == "user_message":
        draft.said(str(payload.get("message") or ""), ts)
    elif payload.get("type") == "item_completed" and done.get("type") == "UserMessage":
        draft.said(text_of(done.get("content")), ts)  # newer CLIs: the typed message as a completed turn item


def _item(draft: _Codex, rec: dict[str, Any]) -> None:
    payload = as_dict(rec.get("payload"))
    item = str(payload.get("type"))
    if item not in KNOWN_ITEMS:
        draft.unknown(f"response_item/{item}")
    else:
        draft.events.append((item, payload, as_str(rec.get("timestamp"))))


LINE_HANDLERS: dict[str, Callable[[_Codex, dict[str, Any]], None]] = {
    "session_meta": _meta, "turn_context": _turn_context, "event_msg": _event, "response_item": _item,
    "compacted": ignore, "world_state": ignore, "token_usage_record": ignore,
}


def _line_kind(rec: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(type, the record in the tagged form) of a rollout line; None for a line to skip (older state records)."""
    kind = rec.get("type")
    if "payload" in rec:
        return kind, rec
    if kind is None and "id" in rec and "timestamp" in rec:  # the older, untagged layout
        return "session_meta", {"type": "session_meta", "payload": rec}
    if rec.get("record_type") == "state":
        return kind, None
    if kind in KNOWN_ITEMS:
        return "response_item", {"type": "response_item", "payload": rec, "timestamp": rec.get("timestamp")}
    return kind, rec


# ------------------------------------------------------------------------------------------------ turns
def _message(draft: _Codex, payload: dict[str, Any], ts: str | None) -> None:
    role = payload.get("role")
    if role == "assistant":
        draft.turns.agent_text(text_of(payload.get("content")), ts)
    elif role == "user":
        content = payload.get("content")
        items = [text_of(i) for i in (content if isinstance(content, list) else [content])]
        for text in items:
            draft.turns.skill(injected_skill(text))
        if not draft.has_user_events:
            said = [t for t in items if t.strip() and not t.lstrip().startswith(INJECTED)]
            draft.turns.user("\n".join(said), ts)


def _call(draft: _Codex, payload: dict[str, Any], ts: str | None) -> None:
    args = payload.get("arguments") if payload.get("type") == "function_call" else payload.get("input")
    draft.turns.call(tool_call(str(payload.get("name") or ""), args, str(payload.get("call_id") or "")), ts)


def _local_shell(draft: _Codex, payload: dict[str, Any], ts: str | None) -> None:
    action = as_dict(payload.get("action"))
    draft.turns.call(tool_call("local_shell", {"command": action.get("command")},
                               str(payload.get("call_id") or payload.get("id") or "")), ts)


def _call_output(draft: _Codex, payload: dict[str, Any], ts: str | None) -> None:
    text, is_error, code = _output(payload.get("output"))
    draft.turns.result(tool_result(text, is_error, str(payload.get("call_id") or ""), code), ts)


def _user_event(draft: _Codex, text: Any, ts: str | None) -> None:
    draft.turns.user(text, ts)


EVENT_HANDLERS: dict[str, Callable[[_Codex, Any, str | None], None]] = {
    "user": _user_event, "message": _message, "function_call": _call, "custom_tool_call": _call,
    "local_shell_call": _local_shell, "function_call_output": _call_output, "custom_tool_call_output": _call_output,
}


def read(path: Path) -> Iterable[Session]:
    draft = _Codex(path)
    for line in read_jsonl(path, draft.counts):
        draft.total += 1
        kind, rec = _line_kind(line)
        if rec is None:
            continue
        if kind != "session_meta":
            draft.stamp(rec.get("timestamp"))
        dispatch(LINE_HANDLERS, kind, draft, rec)
    for item, payload, ts in draft.events:
        handler = EVENT_HANDLERS.get(item)
        if handler is not None:
            handler(draft, payload, ts)
    meta = draft.rollout_meta
    git, source = as_dict(meta.get("git")), meta.get("source")
    originator = as_str(meta.get("originator"))
    yield draft.session(
        str(meta.get("id") or path.stem), cwd=as_str(meta.get("cwd")) or draft.meta.get("cwd"),
        git_branch=git.get("branch"), entrypoint=originator or (source if isinstance(source, str) else None),
        headless=originator == "codex_exec" or source == "exec", sidechain=_is_subagent(source),
        client_version=meta.get("cli_version"), git_commit=git.get("commit_hash"),
        git_remote=git.get("repository_url"))
