"""Claude Code sessions: `~/.claude/projects/<project-slug>/<session>.jsonl` (and sub-agent files below it).

Format (one JSON object per line): `type` is user | assistant | system | summary | queue-operation |
file-history-snapshot | attachment | progress | custom-title …; conversation records carry `message` (`role`,
`content` as a string or a list of `text` / `tool_use` / `tool_result` / `thinking` / `image` blocks), `uuid`,
`parentUuid`, `sessionId`, `cwd`, `gitBranch`, `timestamp`, `isSidechain`, `entrypoint` (`cli` interactive,
`sdk-*` for `claude -p` and the SDKs), `version`, `userType`.

Contracts:
- Tool results arrive as `user` records whose content holds `tool_result` blocks: they attach to the agent turn.
- `isMeta` / `isCompactSummary` / tool-injected (`sourceToolUseID`) user records and `<local-command-stdout>`
  echoes are not a person's words; a `<command-name>/x</command-name>` record becomes the text `/x args`.
- Sidechain (sub-agent) records never enter the main turns; a file made only of them is a `sidechain` session
  whose turns are the sub-agent's and whose id is `<parent sessionId>/agent-<agentId>` (sub-agent files repeat
  the parent's `sessionId`).
- Types outside `KNOWN_TYPES` are skipped and counted, never an error. `CLAUDE_CONFIG_DIR` moves the root.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import Session
from skillgit.sleep.readers._common import TurnBuilder, as_dict, read_jsonl, text_of, tool_call, tool_result

SOURCE = "claude"
# the documented types plus those real Claude Code 2.1 files hold (tests/fixtures/transcripts/claude/)
KNOWN_TYPES = frozenset({
    "user", "assistant", "system", "summary", "queue-operation", "file-history-snapshot", "attachment", "progress",
    "custom-title", "agent-name", "last-prompt", "tag", "pr-link", "mode", "permission-mode", "atis-latch",
    "api-request", "api-request-shape", "api-request-blob", "tools-used", "cost-state",
})
_COMMAND = re.compile(r"<command-name>\s*(/?[^<]*?)\s*</command-name>(?:.*?<command-args>(.*?)</command-args>)?",
                      re.DOTALL)


def root(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    configured = (environ or {}).get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else home / ".claude"


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    projects = root(home, environ) / "projects"
    if not projects.is_dir():
        return []
    return sorted(p for p in projects.rglob("*.jsonl") if p.is_file())


def _user_text(text: str) -> str | None:
    """A person's text, or None for echoes that are not (command output, caveats)."""
    stripped = text.strip()
    if stripped.startswith(("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>")):
        return None
    match = _COMMAND.search(stripped)
    if match and stripped.startswith(("<command-name>", "<command-message>")):
        name, args = match.group(1).strip(), (match.group(2) or "").strip()
        return f"{name} {args}".strip()
    return stripped


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def read(path: Path) -> Iterable[Session]:
    counts: Counter[str] = Counter()
    builder, side_builder = TurnBuilder(), TurnBuilder()
    meta: dict[str, Any] = {}
    total = main_records = side_records = 0
    first_ts = last_ts = None
    for rec in read_jsonl(path, counts):
        total += 1
        kind = rec.get("type")
        if kind not in KNOWN_TYPES:
            counts[str(kind)] += 1
            continue
        ts = rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None
        if ts:
            first_ts = first_ts or ts
            last_ts = ts
        for key, field_name in (("sessionId", "session_id"), ("cwd", "cwd"), ("gitBranch", "git_branch"),
                                ("version", "client_version"), ("entrypoint", "entrypoint"), ("agentId", "agent_id")):
            if isinstance(rec.get(key), str) and rec[key] and field_name not in meta:
                meta[field_name] = rec[key]
        if kind not in ("user", "assistant"):
            continue
        if rec.get("isSidechain"):
            side_records += 1
            target = side_builder
        else:
            main_records += 1
            target = builder
        message = as_dict(rec.get("message"))
        blocks = _blocks(message.get("content"))
        if kind == "user":
            if rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("sourceToolUseID"):
                continue
            texts = []
            for block in blocks:
                if block.get("type") == "tool_result":
                    target.result(tool_result(text_of(block.get("content")), bool(block.get("is_error")),
                                              str(block.get("tool_use_id") or "")), ts)
                elif block.get("type") == "text":
                    said = _user_text(str(block.get("text") or ""))
                    if said:
                        texts.append(said)
            if texts:
                target.user("\n".join(texts), ts)
        else:
            for block in blocks:
                if block.get("type") == "text":
                    target.agent_text(str(block.get("text") or ""), ts)
                elif block.get("type") == "tool_use":
                    target.call(tool_call(str(block.get("name") or ""), block.get("input"), str(block.get("id") or "")),
                                 ts)
    entrypoint = meta.get("entrypoint")
    sidechain = side_records > 0 and main_records == 0
    session_id = meta.get("session_id") or path.stem
    if sidechain and meta.get("agent_id"):  # a sub-agent file repeats its parent's sessionId
        session_id = f"{session_id}/agent-{meta['agent_id']}"
    yield Session(
        source=SOURCE,
        session_id=session_id,
        cwd=meta.get("cwd"),
        git_branch=meta.get("git_branch"),
        started=first_ts,
        ended=last_ts,
        entrypoint=entrypoint,
        headless=bool(entrypoint and entrypoint.startswith("sdk")),
        sidechain=sidechain,
        client_version=meta.get("client_version"),
        turns=(side_builder if sidechain else builder).build(),
        path=str(path),
        unknown_records=dict(counts),
        total_records=total,
    )
