"""The sleep inbox: finished agent sessions waiting for the next `skillgit sleep`.

The Claude Code SessionEnd hook (`assets.SESSION_END_HOOK`) appends one JSON line per finished session to
`<git-common-dir>/skillgit/sleep/inbox.jsonl`: `{"session_id", "transcript_path", "cwd", "ended"}` (`ended` is
UTC ISO-8601). This module reads it (tolerantly: a bad line is counted and skipped, never fatal) and can append to
it from Python with the same shape (`record`), for agents whose hooks call skillgit instead of bash.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgit.integrations.locations import inbox_path


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


def record(root: Path, session_id: str, transcript_path: str, cwd: str, ended: str | None = None) -> InboxEntry:
    """Append one entry (what the bash hook does) and return it."""
    entry = InboxEntry(session_id, transcript_path, cwd,
                       ended or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    path = inbox_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:  # one short write in append mode: lines never interleave
        fh.write(json.dumps(entry.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n")
    return entry
