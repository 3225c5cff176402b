"""Cursor's agent transcripts: `~/.cursor/projects/<slug>/agent-transcripts/…`, written by the Cursor IDE's agent
and by the Cursor CLI (`cursor-agent`) alike.

Cursor is closed source; the layout rests on public reverse-engineered readers (CHATS-lab/VibeLens
`src/vibelens/ingest/parsers/cursor.py`, the `cli-continues` Cursor parser, nick-fullpath/cursor-history):
- `<slug>` is the workspace path with every run of non-alphanumerics turned into `-` (`/home/u/my_app` →
  `home-u-my-app`); `<slug>/repo.json` may name the folder (`workspace`, `rootPath` or `path`).
- Files: `<uuid>.jsonl` (flat), `<uuid>/<uuid>.jsonl` or `<uuid>/transcript.jsonl` (nested), sub-agents in
  `<uuid>/subagents/<child>.jsonl`; older builds wrote plain text `<uuid>.txt`.
- JSONL: one message per line, `{"role": "user" | "assistant", "message": {"content": [blocks]}}` with
  Anthropic-style blocks (`text`, `tool_use {name, input, id}`, sometimes `tool_result`), plus bookkeeping lines
  (`{"type": "turn_ended", "status"}`). The transcript is a partial export: tool results are mostly absent. No
  per-line timestamps: a user message carries `<timestamp>Sunday, Apr 26, 2026, 9:53 PM (UTC-4)</timestamp>`.
  The person's words are wrapped in `<user_query>…</user_query>`; Cursor injects other elements beside them
  (`INJECTED_TAGS`) and whole messages of its own (`<system_reminder>` …).
- Text: `user:` / `assistant:` (or `A:`) headers; an assistant part holds `[Thinking] …`, prose,
  `[Tool call] Name` followed by indented `key: value` argument lines, and `[Tool result] Name` with the output.

Contracts: `read_transcript(path)` yields one session (none when Cursor's SQLite store holds the same
conversation: the store, which has the tool results, wins); a sub-agent file is a `sidechain` session
`<uuid>/subagent-<child>`; line shapes it does not know are counted (`line/<type>`, `block/<type>`), and a file
it cannot read at all (another suffix) is one unknown record `file/<suffix>`, so harvest warns. Cursor's own
commands (`CURSOR_COMMANDS`: `/model`, `/exit` …) are not requests.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from skillgit.sleep.model import Session
from skillgit.sleep.readers._common import (
    Draft,
    as_dict,
    as_str,
    blocks_of,
    read_json,
    read_jsonl,
    tag_body,
    text_of,
    tool_call,
    tool_result,
    without_tags,
)

SOURCE = "cursor"
TRANSCRIPTS = "agent-transcripts"
READABLE = (".jsonl", ".txt")
INJECTED_TAGS = ("timestamp", "system_reminder", "attached_files", "external_links", "image_files", "cursor_commands",
                 "open_and_recently_viewed_files", "manually_added_selection", "additional_data", "user_info",
                 "rules", "project_layout", "git_status", "agent_skills", "agent_requestable_workspace_rules")
KNOWN_LINES = frozenset({"turn_ended"})
CURSOR_COMMANDS = frozenset({
    "/about", "/auto-run", "/clear", "/commands", "/compress", "/copy-req-id", "/exit", "/feedback", "/help",
    "/logout", "/mcp", "/model", "/new-chat", "/quit", "/resume", "/rules", "/setup-terminal", "/shell", "/usage",
    "/vim",
})
_STAMP = re.compile(r"(?:[A-Za-z]+,\s*)?([A-Za-z]+ \d{1,2}, \d{4}, \d{1,2}:\d{2} [AP]M)\s*(?:\(UTC([+-])(\d{1,2})"
                    r"(?::?(\d{2}))?\))?")
_ROLE = re.compile(r"^(user|assistant|A):\s*$")
_MARKER = re.compile(r"^\[(Thinking|Tool call|Tool result)\]\s*(.*)$")


def transcript_files(home: Path) -> list[Path]:
    """Every file under `~/.cursor/projects/*/agent-transcripts/` (hidden files aside)."""
    projects = home / ".cursor" / "projects"
    if not projects.is_dir():
        return []
    found = (p for p in projects.glob(f"*/{TRANSCRIPTS}/**/*") if p.is_file() and not p.name.startswith("."))
    return sorted(found)


def stamp_time(text: str) -> str | None:
    """The UTC ISO time of a `<timestamp>` element Cursor puts in a user message (None when absent or unreadable)."""
    body = tag_body(text, "timestamp")
    match = _STAMP.search(body or "")
    if match is None:
        return None
    try:
        local = datetime.strptime(match.group(1), "%b %d, %Y, %I:%M %p")
    except ValueError:
        return None
    sign = -1 if match.group(2) == "-" else 1
    offset = timedelta(hours=int(match.group(3) or 0), minutes=int(match.group(4) or 0)) * sign
    moment = local.replace(tzinfo=timezone(offset))
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def typed(text: str) -> str:
    """The person's words in a user message: the `<user_query>` element, else the text without what Cursor
    injects; "" for a message of Cursor's own or one of Cursor's commands."""
    query = tag_body(text, "user_query")
    said = query if query is not None else without_tags(text, INJECTED_TAGS)
    if said.startswith("<") or said.split(" ", 1)[0] in CURSOR_COMMANDS:
        return ""
    return said


# ------------------------------------------------------------------------------------------------ where it ran
def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def _folders_matching(base: Path, rest: str, depth: int) -> Iterator[Path]:
    if not rest:
        yield base
        return
    if depth > 24:
        return
    try:
        entries = [e for e in os.scandir(base) if e.is_dir()]
    except OSError:
        return
    for entry in entries:
        name = _slug(entry.name)
        if name and (rest == name or rest.startswith(name + "-")):
            yield from _folders_matching(Path(entry.path), rest[len(name):].lstrip("-"), depth + 1)


@lru_cache(maxsize=256)
def folder_of_slug(slug: str, root: str = "/") -> str | None:
    """The one existing folder whose path slugs to `slug` (None when none or several do)."""
    found = []
    for folder in _folders_matching(Path(root), slug.strip("-"), 0):
        found.append(folder)
        if len(found) > 1:
            return None
    return str(found[0]) if found else None


def project_folder(project: Path) -> str | None:
    """The workspace folder of `~/.cursor/projects/<slug>`: from its `repo.json`, else from the slug."""
    meta = read_json(project / "repo.json")
    named = next((v for v in (as_dict(meta).get(k) for k in ("workspace", "rootPath", "path")) if as_str(v)), None)
    return named or folder_of_slug(project.name)


def _where(path: Path) -> tuple[Path, str, str | None]:
    """(the project folder, the session id, the parent id of a sub-agent) of a transcript file."""
    parts = path.parts
    if TRANSCRIPTS not in parts:
        return path.parent, path.stem, None
    at = len(parts) - 1 - parts[::-1].index(TRANSCRIPTS)
    inner = parts[at + 1:]
    project = Path(*parts[:at])
    stem = path.stem
    if len(inner) >= 3 and inner[-2] == "subagents":
        return project, f"{inner[0]}/subagent-{stem}", inner[0]
    if stem == "transcript" and len(inner) >= 2:
        return project, inner[-2], None
    return project, stem, None


# ------------------------------------------------------------------------------------------------ JSONL lines
def _user(draft: Draft, blocks: list[dict[str, Any]]) -> None:
    texts, ts = [], None
    for block in blocks:
        if block.get("type") == "text":
            raw = str(block.get("text") or "")
            ts = ts or stamp_time(raw)
            texts.append(typed(raw))
        elif block.get("type") == "tool_result":
            draft.turns.result(tool_result(text_of(block.get("content")), bool(block.get("is_error")),
                                           str(block.get("tool_use_id") or "")), draft.stamp(ts))
        else:
            draft.unknown(f"block/{block.get('type')}")
    draft.turns.user("\n".join(t for t in texts if t), draft.stamp(ts))


def _assistant(draft: Draft, blocks: list[dict[str, Any]]) -> None:
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            draft.turns.agent_text(str(block.get("text") or ""))
        elif kind == "tool_use":
            draft.turns.call(tool_call(str(block.get("name") or ""), block.get("input"), str(block.get("id") or "")))
        elif kind == "tool_result":
            draft.turns.result(tool_result(text_of(block.get("content")), bool(block.get("is_error")),
                                           str(block.get("tool_use_id") or "")))
        elif kind not in ("thinking", "reasoning", "redacted_thinking"):
            draft.unknown(f"block/{kind}")


_ROLES: dict[str, Callable[[Draft, list[dict[str, Any]]], None]] = {"user": _user, "assistant": _assistant}


def _jsonl(draft: Draft) -> None:
    for line in read_jsonl(draft.path, draft.counts):
        draft.total += 1
        role = line.get("role")
        handler = _ROLES.get(role) if isinstance(role, str) else None
        if handler is not None:
            handler(draft, blocks_of(as_dict(line.get("message")).get("content") or line.get("content")))
        elif line.get("type") not in KNOWN_LINES:
            draft.unknown(f"line/{line.get('type') or role}")


# ------------------------------------------------------------------------------------------------ text
def _text_parts(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(role, its lines) of a plain text transcript."""
    role = ""
    body: list[str] = []
    for line in lines:
        match = _ROLE.match(line)
        if match:
            if role:
                yield role, body
            role, body = ("assistant" if match.group(1) == "A" else match.group(1)), []
        else:
            body.append(line)
    if role:
        yield role, body


def _arguments(lines: list[str]) -> dict[str, str]:
    pairs = (line.strip().split(":", 1) for line in lines if ":" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def _assistant_text(draft: Draft, body: list[str]) -> None:
    mode, name, chunk = "text", "", []  # mode: text | Tool call | Tool result
    for line in [*body, "[Thinking]"]:  # a last marker flushes the last chunk
        match = _MARKER.match(line)
        if match is None:
            chunk.append(line)
            continue
        if mode == "text":
            draft.turns.agent_text("\n".join(chunk))
        elif mode == "Tool call":
            draft.turns.call(tool_call(name, _arguments(chunk)))
        elif mode == "Tool result":
            draft.turns.result(tool_result("\n".join(chunk).strip()))
        mode, name, chunk = match.group(1), match.group(2).strip(), []
        if mode == "Thinking":  # the thought is the marker's own line; what follows is the answer again
            mode = "text"


def _text(draft: Draft) -> None:
    try:
        lines = draft.path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        draft.unknown("<unreadable>")
        return
    for role, body in _text_parts(lines):
        draft.total += 1
        if role == "user":
            raw = "\n".join(body)
            draft.turns.user(typed(raw), draft.stamp(stamp_time(raw)))
        else:
            _assistant_text(draft, body)


# ------------------------------------------------------------------------------------------------ the file
def read_transcript(path: Path, in_store: Callable[[Path, str], bool]) -> Iterable[Session]:
    """The session of one transcript file (see the module contract); `in_store(path, id)` tells whether Cursor's
    SQLite store holds that conversation too."""
    project, session_id, parent = _where(path)
    if parent is None and in_store(path, session_id):
        return
    draft = Draft(SOURCE, path)
    if path.suffix == ".jsonl":
        _jsonl(draft)
    elif path.suffix == ".txt":
        _text(draft)
    else:
        draft.total += 1
        draft.unknown(f"file/{path.suffix or path.name}")
    yield draft.session(session_id, cwd=project_folder(project), entrypoint="cursor", sidechain=parent is not None)
