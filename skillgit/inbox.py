"""The sleep inbox's format: finished agent sessions waiting for the next `skillgit sleep`.

The Claude Code SessionEnd hook (`integrations.assets.SESSION_END_HOOK`) appends one JSON line per finished session
to `inbox_path(root)` = `<git-common-dir>/skillgit/sleep/inbox.jsonl`: `{"session_id", "transcript_path", "cwd",
"ended"}` (`ended` is UTC ISO-8601). `read_inbox` reads it tolerantly (a bad line is counted and skipped, never
fatal); harvest's side (reading leftover spools, trimming what was harvested) is `sleep/readers/inbox.py`.

A leaf (pure path logic and JSON, no git command): the writer's side (`integrations/`) and the reader's side
(`sleep/`) both depend on it and never on each other for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgit.errors import GitStateError


def git_common_dir(root: Path) -> Path:
    """The common git dir of the repository whose working tree is `root` (a worktree's `.git` file points into
    the main one)."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:
        text = dot.read_text(encoding="utf-8").strip()
    except OSError:
        raise GitStateError(f"not a git repository: {root}", "run this inside a git repository") from None
    if not text.startswith("gitdir:"):
        raise GitStateError(f"unreadable .git file in {root}", "check `git rev-parse --git-dir` there")
    gitdir = Path(text.removeprefix("gitdir:").strip())
    gitdir = gitdir if gitdir.is_absolute() else (root / gitdir)
    common = gitdir / "commondir"
    if common.is_file():
        target = Path(common.read_text(encoding="utf-8").strip())
        return (target if target.is_absolute() else gitdir / target).resolve()
    return gitdir.resolve()


def inbox_path(root: Path) -> Path:
    return git_common_dir(root) / "skillgit" / "sleep" / "inbox.jsonl"


@dataclass(frozen=True)
class InboxEntry:
    session_id: str
    transcript_path: str
    cwd: str
    ended: str

    def to_dict(self) -> dict[str, str]:
        return {"session_id": self.session_id, "transcript_path": self.transcript_path, "cwd": self.cwd,
                "ended": self.ended}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InboxEntry:
        values = {k: data.get(k) for k in ("session_id", "transcript_path", "cwd", "ended")}
        if not all(isinstance(v, str) for v in values.values()) or not values["session_id"]:
            raise ValueError("an inbox line needs string session_id, transcript_path, cwd and ended")
        return cls(**values)  # type: ignore[arg-type]


def read_inbox(root: Path) -> tuple[list[InboxEntry], int]:
    """The entries of the repository at `root`, oldest first, and the number of unreadable lines skipped."""
    path = inbox_path(root)
    if not path.is_file():
        return [], 0
    entries, bad = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            entries.append(InboxEntry.from_dict(json.loads(line)))
        except (ValueError, TypeError, AttributeError):
            bad += 1
    return entries, bad

