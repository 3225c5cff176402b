"""Typed records for harvested agent sessions: `Session` → `Turn` → `ToolCall` / `ToolResult`.

Contracts:
- Every record is frozen and round-trips through `to_dict` / `from_dict` (JSON-safe; readers ignore unknown keys,
  so a newer file stays readable by an older skillgit).
- A `Session` is source-neutral: readers of every agent (Claude Code, Codex, Copilot, Cursor, OpenCode) produce the
  same shape. Turns alternate by meaning, not by record: a `user` turn is something a person typed; an `assistant`
  turn is everything the agent did until the person spoke again (its text, its tool calls, and the results of those
  calls — tool results are never a person's turn).
- `skipped_reason` is None for a session that is a person's work on this project; otherwise one of
  `SKIP_REASONS`. A skipped session that leaves `harvest` carries no turns.
- `is_replay(session)` tells skillgit's own sessions (REPLAY_MARKER in the first user message, or a cwd inside a
  skillgit throwaway workspace), whatever agent ran them.
- `user_turn_count` is the number of user turns the session had, also for a skipped session (whose turns are gone).
- `unknown_records` counts record types the reader did not recognise (and `<malformed>` for unparsable lines);
  `total_records` is the number of records read, so a caller can tell a format change from noise.
- `Turn.skills` are the skills (`SKILL.md` packages) and instruction files (`AGENTS.md`, …) the agent used in that
  assistant turn, as the source recorded them (`SkillUse`); `Session.skills` lists them once each, in order (what
  a skill library needs to route a mined task to the skills its answer used). A turn without skills serialises
  without the key, so digests of older sessions do not change.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from skillgit.agentic.spec import REPLAY_ENV as REPLAY_ENV
from skillgit.agentic.spec import WORKSPACE_PREFIX
from skillgit.types import known_fields

Role = Literal["user", "assistant"]
SkillKind = Literal["skill", "instructions"]
# how a skill entered the turn: the agent's skill tool, the person's command (`/name`, `$name`), the agent reading
# the file itself, or the agent putting it into the context on its own (AGENTS.md, a skill loaded by another one)
SkillHow = Literal["tool", "command", "read", "injected"]
SKILL_KINDS: tuple[str, ...] = ("skill", "instructions")
SKILL_HOWS: tuple[str, ...] = ("tool", "command", "read", "injected")
# unreadable / binary / malformed: the file itself, not the session (harvest.file_problem says what happened)
SkipReason = Literal["unreadable", "binary", "malformed", "headless", "sidechain", "replay", "other-project", "empty"]
SKIP_REASONS: tuple[str, ...] = ("unreadable", "binary", "malformed", "other-project", "replay", "sidechain",
                                 "headless", "empty")
# How harvest recognises the agent sessions skillgit starts itself (agent students, sleep replays), so it never
# learns from them: their workspace folder (agentic.workspace puts every one under <tmp>/skillgit-ws-<hash>/), a
# prompt that carries REPLAY_MARKER (for replays driven by hand), and — for the agents' own hooks, since
# transcripts do not record the environment — REPLAY_ENV=1, which every agent student sets (agentic.spec).
REPLAY_MARKER = "[skillgit-replay]"
REPLAY_WORKSPACE = re.compile(r"(^|[/\\])" + re.escape(WORKSPACE_PREFIX) + r"[0-9a-f]+([/\\]|$)")
MALFORMED = "<malformed>"  # the unknown-record key for lines that are not JSON objects


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation. `summary` is a short human-readable form of the input (a command, a path, or JSON);
    `command` is set for shell tools; `paths` are the files the call names; `writes` is True for edits."""

    name: str
    summary: str = ""
    command: str | None = None
    paths: tuple[str, ...] = ()
    writes: bool = False
    call_id: str = ""

    def to_dict(self) -> dict[str, Any]:  # by hand, not `asdict` (harvest digests every turn): the same keys
        return {"name": self.name, "summary": self.summary, "command": self.command, "paths": list(self.paths),
                "writes": self.writes, "call_id": self.call_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        d = known_fields(cls, data)
        d["paths"] = tuple(d.get("paths") or ())
        return cls(**d)


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned: an excerpt of its output (head and tail, where test summaries live), whether the tool
    reported an error, and the exit code when the source records one."""

    output: str = ""
    is_error: bool = False
    call_id: str = ""
    exit_code: int | None = None
    # set by a reader that cut `output` (readers/_common.excerpt): (head length, the raw text just after the head,
    # the raw text just before the tail), so scrubbing sees a secret the cut split; never serialised or compared,
    # and dropped by `Scrubber.scrub_session`
    cut: tuple[int, str, str] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:  # by hand, not `asdict` (harvest digests every turn): the same keys
        return {"output": self.output, "is_error": self.is_error, "call_id": self.call_id, "exit_code": self.exit_code}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResult:
        d = known_fields(cls, data)
        d.pop("cut", None)  # a reader's, never read back
        return cls(**d)


@dataclass(frozen=True)
class SkillUse:
    """A skill the agent used: `name` (the skill's name, or the instructions file's name such as `AGENTS.md`),
    `kind`, `how` it came in, and `path` (its `SKILL.md` or instructions file, or folder) when the source records it.
    Unknown `kind` / `how` values from a newer file read back as the defaults."""

    name: str
    kind: SkillKind = "skill"
    how: SkillHow = "tool"
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SkillUse:
        d = known_fields(cls, data)
        if d.get("kind") not in SKILL_KINDS:
            d.pop("kind", None)
        if d.get("how") not in SKILL_HOWS:
            d.pop("how", None)
        return cls(**{"name": "", **d})


@dataclass(frozen=True)
class Turn:
    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    timestamp: str | None = None
    skills: tuple[SkillUse, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "role": self.role,
            "text": self.text,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "tool_results": [r.to_dict() for r in self.tool_results],
            "timestamp": self.timestamp,
        }
        if self.skills:
            d["skills"] = [s.to_dict() for s in self.skills]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        return cls(
            role=data.get("role", "user"),
            text=data.get("text", "") or "",
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_results=tuple(ToolResult.from_dict(r) for r in data.get("tool_results") or ()),
            timestamp=data.get("timestamp"),
            skills=tuple(SkillUse.from_dict(s) for s in data.get("skills") or () if isinstance(s, dict)),
        )


@dataclass(frozen=True)
class Session:
    """One agent session as a person had it. `key` (source:session_id) is unique across sources."""

    source: str
    session_id: str
    cwd: str | None = None
    git_branch: str | None = None
    started: str | None = None
    ended: str | None = None
    entrypoint: str | None = None
    headless: bool = False
    sidechain: bool = False
    client_version: str | None = None
    turns: tuple[Turn, ...] = ()
    skipped_reason: str | None = None
    path: str | None = None
    unknown_records: dict[str, int] = field(default_factory=dict)
    total_records: int = 0
    git_commit: str | None = None
    git_remote: str | None = None
    user_turns_seen: int | None = None  # set on a skipped session: how many user turns it had before they were dropped

    @property
    def key(self) -> str:
        return f"{self.source}:{self.session_id}"

    @property
    def user_turns(self) -> tuple[Turn, ...]:
        return tuple(t for t in self.turns if t.role == "user")

    @property
    def user_turn_count(self) -> int:
        return self.user_turns_seen if self.user_turns_seen is not None else len(self.user_turns)

    def with_(self, **changes: Any) -> Session:
        return replace(self, **changes)

    @property
    def skills(self) -> tuple[SkillUse, ...]:
        """Every skill the session's turns used, once per (kind, name), in the order first used."""
        seen: dict[tuple[str, str], SkillUse] = {}
        for turn in self.turns:
            for use in turn.skills:
                seen.setdefault((use.kind, use.name), use)
        return tuple(seen.values())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["turns"] = [t.to_dict() for t in self.turns]
        d["unknown_records"] = dict(self.unknown_records)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Session:
        d = known_fields(cls, data)
        d["turns"] = tuple(Turn.from_dict(t) for t in data.get("turns") or ())
        d["unknown_records"] = dict(data.get("unknown_records") or {})
        return cls(**d)


def is_replay(session: Session) -> bool:
    """True for a session skillgit started itself (see REPLAY_MARKER / REPLAY_WORKSPACE)."""
    first = next((t.text for t in session.turns if t.role == "user" and t.text.strip()), "")
    return REPLAY_MARKER in first[:2000] or bool(session.cwd and REPLAY_WORKSPACE.search(session.cwd))
