"""The sleep inbox, harvest's side: read the transcript paths agents recorded, then trim what was harvested.

Not a session reader (it is not in `READERS`): the second place harvest finds session files, next to each reader's
`discover` under a home folder. The SessionEnd hook (`skillgit.integrations.assets.SESSION_END_HOOK`) appends
`{"session_id", "transcript_path", "cwd", "ended"}` lines (the format: `skillgit/inbox.py`) to
`<git-common-dir>/skillgit/sleep/inbox.jsonl`; a path listed there is harvested even when it lies outside the
home folder harvest scans.

Invariants:
- `read_lines` never raises on content: a line that is not an inbox entry comes back with `entry=None`.
- `trim` removes exactly the consumed lines and never loses a line appended meanwhile. Writers only ever append one
  line per `open(O_APPEND)` + single write (the hook's `>>` redirection). `trim` first renames the inbox
  to a spool file (atomic: later appends create a fresh inbox), waits `SETTLE_S` for a writer that opened the old
  file just before the rename, then appends the spool's unconsumed lines back to the inbox in one O_APPEND write
  and deletes the spool. A crash leaves the spool behind; `read_lines` reads leftover spools and the next `trim`
  finishes them (at worst a line is listed twice, which harvest's session dedupe absorbs).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from skillgit.errors import SkillgitError
from skillgit.inbox import InboxEntry, inbox_path

SPOOL_INFIX = ".trim-"  # inbox.jsonl.trim-<ns>-<pid>: an inbox being trimmed
SETTLE_S = 0.05


@dataclass(frozen=True)
class InboxLine:
    raw: str  # the line as written, without its newline: the identity `trim` removes
    entry: InboxEntry | None  # None: not an inbox entry (consumed, with a warning)


def locate(repo_root: Path | str) -> Path | None:
    """The inbox file of the repository at `repo_root` (it may not exist), or None outside a git repository."""
    try:
        return inbox_path(Path(repo_root))
    except (SkillgitError, OSError):
        return None


def _spools(inbox: Path) -> list[Path]:
    return sorted(inbox.parent.glob(inbox.name + SPOOL_INFIX + "*")) if inbox.parent.is_dir() else []


def _lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()]


def _parse(raw: str) -> InboxEntry | None:
    try:
        data = json.loads(raw)
        return InboxEntry.from_dict(data) if isinstance(data, dict) else None
    except (ValueError, TypeError):
        return None


def read_lines(inbox: Path) -> list[InboxLine]:
    """Every line waiting in the inbox and in leftover spools, oldest first."""
    raws = [raw for spool in _spools(inbox) for raw in _lines(spool)] + _lines(inbox)
    return [InboxLine(raw, _parse(raw)) for raw in raws]


def transcript(entry: InboxEntry) -> Path:
    """The entry's transcript as an absolute path (a relative one is taken from the session's cwd)."""
    path = Path(os.path.expanduser(entry.transcript_path))
    return path if path.is_absolute() else Path(entry.cwd or ".") / path


def _append(inbox: Path, lines: list[str]) -> None:
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    fd = os.open(inbox, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def trim(inbox: Path, consumed: Iterable[str]) -> int:
    """Remove one occurrence of each consumed line from the inbox (see the module invariants); returns how many
    lines were removed."""
    todo = Counter(consumed)
    if not todo:
        return 0
    if inbox.exists():
        spool = inbox.with_name(f"{inbox.name}{SPOOL_INFIX}{time.time_ns():020d}-{os.getpid()}")
        try:
            os.rename(inbox, spool)
        except FileNotFoundError:  # another trim took it meanwhile: its spool is handled below or by it
            pass
        time.sleep(SETTLE_S)
    removed = 0
    for spool in _spools(inbox):
        keep = []
        for raw in _lines(spool):
            if todo[raw] > 0:
                todo[raw] -= 1
                removed += 1
            else:
                keep.append(raw)
        if keep:
            _append(inbox, keep)
        spool.unlink(missing_ok=True)
    return removed
