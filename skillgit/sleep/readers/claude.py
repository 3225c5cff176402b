"""Claude Code sessions: `~/.claude/projects/<project-slug>/<session>.jsonl` (and sub-agent files below it).

Format (one JSON object per line): `type` is user | assistant | system | summary | queue-operation |
file-history-snapshot | attachment | progress | custom-title …; conversation records carry `message` (`role`,
`content` as a string or a list of `text` / `tool_use` / `tool_result` / `thinking` / `image` blocks), `uuid`,
`parentUuid`, `sessionId`, `cwd`, `gitBranch`, `timestamp`, `isSidechain`, `entrypoint` (`cli` interactive,
`sdk-*` for `claude -p` and the SDKs), `promptSource` / `turnOrigin` (`typed` / `human` or `sdk`), `version`.

Contracts:
- Tool results arrive as `user` records whose content holds `tool_result` blocks: they attach to the agent turn.
- Not a person's request, so never a user turn: `isMeta` / `isCompactSummary` / tool-injected (`sourceToolUseID`)
  records; the person's own commands to Claude Code — built-in slash commands (`BUILTIN_COMMANDS`: `/exit`,
  `/mcp`, …), any `<command-name>` record answered by `<local-command-stdout>` (a local command Claude never saw),
  `!` shell input (`<bash-input>`) and `#` memory notes — and their echoes; interrupt markers
  (`[Request interrupted by user…]`). Another `<command-name>/x</command-name>` record (a custom command or a
  skill, which Claude then works on) becomes the text `/x args`.
- Skills (`Turn.skills`): a `Skill` tool call (`{"skill": name}`), and the skill body Claude Code injects after it
  or after `/name` (`Base directory for this skill: <dir>`), which gives the path; SKILL.md / AGENTS.md reads.
- Headless: `entrypoint` decides when a record has it (`sdk-*`). Older files without it are decided by the other
  signals, in order: `promptSource` / `turnOrigin` (`sdk` headless; `typed` / `human` interactive), a
  interactive-only records (file-history-snapshot, mode, permission-mode, turn_duration, slash commands), a
  `queue-operation` enqueue before the first prompt (how `claude -p` delivers it); with none of them, interactive.
- Sidechain (sub-agent) records never enter the main turns; a file made only of them is a `sidechain` session
  whose turns are the sub-agent's and whose id is `<parent sessionId>/agent-<agentId>` (sub-agent files repeat
  the parent's `sessionId`).
- Types outside `KNOWN_TYPES` are skipped and counted, never an error. `CLAUDE_CONFIG_DIR` moves the root.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import Session, SkillHow, SkillUse
from skillgit.sleep.readers._common import (
    Draft,
    TurnBuilder,
    as_dict,
    as_str,
    blocks_of,
    ignore,
    read_jsonl,
    skill_named,
    text_of,
    tool_call,
    tool_result,
)

SOURCE = "claude"
# the documented types plus those real Claude Code 2.1 files hold (tests/fixtures/transcripts/claude/)
KNOWN_TYPES = frozenset({
    "user", "assistant", "system", "summary", "queue-operation", "file-history-snapshot", "attachment", "progress",
    "custom-title", "agent-name", "last-prompt", "tag", "pr-link", "mode", "permission-mode", "atis-latch",
    "api-request", "api-request-shape", "api-request-blob", "tools-used", "cost-state",
})
# Claude Code's built-in commands that act on the CLI itself (docs.claude.com "Slash commands"); the prompt-type
# built-ins (/init, /review, /security-review, /pr-comments) are requests Claude works on and stay
BUILTIN_COMMANDS = frozenset({
    "add-dir", "agents", "bashes", "bug", "clear", "compact", "config", "context", "cost", "doctor", "exit",
    "export", "extra-usage", "fast", "feedback", "help", "hooks", "ide", "install-github-app", "keybindings",
    "login", "logout", "mcp", "memory", "migrate-installer", "model", "output-style", "permissions", "plugin",
    "plugins", "privacy-settings", "quit", "release-notes", "remote-env", "rename", "resume", "rewind", "sandbox",
    "stats", "status", "statusline", "tasks", "terminal-setup", "theme", "todos", "upgrade", "usage", "vim",
})
INTERACTIVE_TYPES = frozenset({"file-history-snapshot", "mode", "permission-mode"})
_COMMAND = re.compile(r"<command-name>\s*(/?[^<]*?)\s*</command-name>(?:.*?<command-args>(.*?)</command-args>)?",
                      re.DOTALL)
_ECHOES = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>", "<bash-input>",
           "<user-memory-input>", "<local-command-caveat>")
_INTERRUPT = re.compile(r"^\[Request (?:interrupted|cancelled) by user[^\]]*\]$")
_SKILL_BASE = re.compile(r"^Base directory for this skill:\s*(\S[^\n]*)")


def root(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    configured = (environ or {}).get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else home / ".claude"


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    projects = root(home, environ) / "projects"
    if not projects.is_dir():
        return []
    return sorted(p for p in projects.rglob("*.jsonl") if p.is_file())


class _Claude(Draft):
    def __init__(self, path: Path) -> None:
        super().__init__(SOURCE, path)
        self.side = TurnBuilder()
        self.main_records = self.side_records = 0
        self.signs: dict[str, bool] = {}  # headless signals: "prompt", "queued", "interactive"
        self.command: tuple[str, TurnBuilder, str | None] | None = None  # a /command waiting for its outcome

    def target(self, rec: dict[str, Any]) -> TurnBuilder:
        if rec.get("isSidechain"):
            self.side_records += 1
            return self.side
        self.main_records += 1
        return self.turns

    def sign(self, name: str, value: bool | None) -> None:
        if value is not None:
            self.signs.setdefault(name, value)

    def settle(self, ran_locally: bool = False) -> None:
        """The waiting /command was a request unless Claude Code answered it locally."""
        if self.command is not None and not ran_locally:
            text, target, ts = self.command
            target.user(text, ts)
        self.command = None


def _command(text: str) -> tuple[str, bool] | None:
    """`/name args` of a `<command-name>` record and whether it is built in; None for other text."""
    match = _COMMAND.search(text)
    if not (match and text.startswith(("<command-name>", "<command-message>"))):
        return None
    name, args = match.group(1).strip(), (match.group(2) or "").strip()
    return f"{name} {args}".strip(), name.lstrip("/").split(":")[-1] in BUILTIN_COMMANDS


def _said(draft: _Claude, target: TurnBuilder, text: str, ts: str | None) -> str | None:
    """The person's words in one text block, or None (see the module contract for what is not)."""
    stripped = text.strip()
    if stripped.startswith(("<local-command-stdout>", "<local-command-stderr>")):
        draft.settle(ran_locally=True)
        return None
    if stripped.startswith(_ECHOES) or _INTERRUPT.match(stripped):
        return None
    command = _command(stripped)
    if command is None:
        return stripped
    draft.sign("interactive", True)
    draft.settle()
    if not command[1]:
        draft.command = (command[0], target, ts)
    return None


def _injected(draft: _Claude, target: TurnBuilder, rec: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
    """A record Claude Code wrote into the conversation itself: only a skill body matters (it names the skill)."""
    for block in blocks:
        match = _SKILL_BASE.match(str(block.get("text") or "").strip())
        if match:
            folder = match.group(1).strip()
            how: SkillHow = "tool" if rec.get("sourceToolUseID") else "command"
            draft.settle()
            target.skill(SkillUse(re.split(r"[/\\]", folder.rstrip("/\\"))[-1], "skill", how, f"{folder}/SKILL.md"))


def _user(draft: _Claude, rec: dict[str, Any]) -> None:
    target, ts = draft.target(rec), draft.stamp(rec.get("timestamp"))
    blocks = blocks_of(as_dict(rec.get("message")).get("content"))
    if rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("sourceToolUseID"):
        _injected(draft, target, rec, blocks)
        return
    if "prompt" not in draft.signs:  # the first record that tells wins (`sign`)
        draft.sign("prompt", _sdk_origin(rec))
    texts = []
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_result":
            target.result(tool_result(text_of(block.get("content")), bool(block.get("is_error")),
                                      str(block.get("tool_use_id") or "")), ts)
        elif kind == "text":
            said = _said(draft, target, str(block.get("text") or ""), ts)
            if said:
                texts.append(said)
    if texts:
        draft.settle()
        target.user("\n".join(texts), ts)


def _sdk_origin(rec: dict[str, Any]) -> bool | None:
    origin = as_str(rec.get("promptSource")) or as_str(rec.get("turnOrigin"))
    return None if origin is None else origin == "sdk"


def _assistant(draft: _Claude, rec: dict[str, Any]) -> None:
    target, ts = draft.target(rec), draft.stamp(rec.get("timestamp"))
    if draft.command is not None:
        draft.settle()
    for block in blocks_of(as_dict(rec.get("message")).get("content")):
        kind = block.get("type")
        if kind == "text":
            target.agent_text(str(block.get("text") or ""), ts)
        elif kind == "tool_use":
            name, tool_input = str(block.get("name") or ""), block.get("input")
            target.call(tool_call(name, tool_input, str(block.get("id") or "")), ts)
            if name == "Skill":
                args = as_dict(tool_input)
                target.skill(skill_named(args.get("skill") or args.get("command"), "tool"))


def _queue(draft: _Claude, rec: dict[str, Any]) -> None:
    draft.stamp(rec.get("timestamp"))
    if rec.get("operation") == "enqueue" and not draft.main_records:
        draft.sign("queued", True)


def _system(draft: _Claude, rec: dict[str, Any]) -> None:
    draft.stamp(rec.get("timestamp"))
    if rec.get("subtype") == "turn_duration":
        draft.sign("interactive", True)


def _interactive(draft: _Claude, rec: dict[str, Any]) -> None:
    draft.stamp(rec.get("timestamp"))
    draft.sign("interactive", True)


def _other(draft: _Claude, rec: dict[str, Any]) -> None:
    draft.stamp(rec.get("timestamp"))


HANDLERS: dict[str, Callable[[_Claude, dict[str, Any]], None]] = {
    **dict.fromkeys(KNOWN_TYPES, _other), **dict.fromkeys(INTERACTIVE_TYPES, _interactive),
    "user": _user, "assistant": _assistant, "queue-operation": _queue, "system": _system, "summary": ignore,
}


def headless_of(entrypoint: str | None, signs: Mapping[str, bool]) -> bool:
    """Headless or not, by the recorded entrypoint, else by the other signals (see the module contract)."""
    if entrypoint:
        return entrypoint.startswith("sdk")
    if "prompt" in signs:
        return bool(signs["prompt"])
    return bool(signs.get("queued")) and not signs.get("interactive")


# the session's metadata: (its key, the record field it comes from); the first non-empty string wins
_META: tuple[tuple[str, str], ...] = (
    ("session_id", "sessionId"), ("cwd", "cwd"), ("git_branch", "gitBranch"), ("client_version", "version"),
    ("entrypoint", "entrypoint"), ("agent_id", "agentId"))


def read(path: Path) -> Iterable[Session]:
    draft = _Claude(path)
    meta, missing, handlers = draft.meta, _META, HANDLERS
    for rec in read_jsonl(path, draft.counts):
        draft.total += 1
        if missing:  # only the fields still missing are looked up (`Draft.keep`'s rule)
            found = False
            for key, name in missing:
                value = rec.get(name)
                if value and isinstance(value, str):
                    meta[key], found = value, True
            if found:
                missing = tuple(m for m in missing if m[0] not in meta)
        kind = rec.get("type")  # `dispatch`, inlined (a call per record)
        handler = handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            draft.unknown(kind)
        else:
            handler(draft, rec)
    draft.command = None  # a /command nothing answered did nothing Claude worked on
    meta = draft.meta
    sidechain = draft.side_records > 0 and draft.main_records == 0
    session_id = meta.get("session_id") or path.stem
    if sidechain and meta.get("agent_id"):  # a sub-agent file repeats its parent's sessionId
        session_id = f"{session_id}/agent-{meta['agent_id']}"
    if sidechain:
        draft.turns = draft.side
    entrypoint = meta.get("entrypoint")
    yield draft.session(session_id, cwd=meta.get("cwd"), git_branch=meta.get("git_branch"), entrypoint=entrypoint,
                        headless=headless_of(entrypoint, draft.signs), sidechain=sidechain,
                        client_version=meta.get("client_version"))
