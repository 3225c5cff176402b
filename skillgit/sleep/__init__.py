"""`skillgit sleep`: learn from a team's own agent sessions — harvest, scrub, mine.

The pure core the CLI (`skillgit sleep harvest|mine`), the git-backed state and replay build on:

1. **harvest** (`harvest.harvest`) reads the day's Claude Code, Codex, Copilot (VS Code chat and CLI), Cursor and
   OpenCode sessions under a home folder (`readers`), keeps those that are a person's work on this repository,
   and returns them scrubbed, with what was skipped and why, format warnings, and the next `HarvestState`
   (JSON, kept in git by the caller) so that the next harvest returns only what is new.
2. **scrub** (`scrub.Scrubber`) masks secrets (`skillgit.redact` shapes, credential env values, the repository's
   `.env` values, named variables), e-mail addresses, home paths and configured patterns, and counts each kind.
   Harvest scrubs every session before returning it: no caller ever sees raw transcript text.
3. **mine** (`mine.mine`) cuts sessions into task units (a request, the work after it, and its outcome signals),
   groups similar units across sessions without a model (TF-IDF cosine, average linkage), keeps groups that recur
   or failed, and turns each into a `MinedTask` written to a reviewable JSONL file (`write_tasks` / `read_tasks`).

Nothing here talks to a model or the network; git is only read (remote URLs for scoping, `rev_before`).
"""

from __future__ import annotations

from skillgit.sleep.harvest import (
    FileState,
    HarvestResult,
    HarvestState,
    HarvestWarning,
    SessionMark,
    git_remotes,
    harvest,
    normalize_remote,
    skip_reason,
)
from skillgit.sleep.mine import (
    MinedTask,
    MinedTaskFile,
    MineResult,
    TaskGroup,
    TaskUnit,
    TestRun,
    group_units,
    mine,
    parse_test_output,
    read_tasks,
    rev_before,
    split_units,
    write_tasks,
)
from skillgit.sleep.model import REPLAY_MARKER, SKIP_REASONS, Session, ToolCall, ToolResult, Turn
from skillgit.sleep.readers import READERS, SOURCES, Reader, get_reader
from skillgit.sleep.scrub import Redactions, Scrubber, build_scrubber

__all__ = [
    "READERS",
    "REPLAY_MARKER",
    "SKIP_REASONS",
    "SOURCES",
    "FileState",
    "HarvestResult",
    "HarvestState",
    "HarvestWarning",
    "MineResult",
    "MinedTask",
    "MinedTaskFile",
    "Reader",
    "Redactions",
    "Scrubber",
    "Session",
    "SessionMark",
    "TaskGroup",
    "TaskUnit",
    "TestRun",
    "ToolCall",
    "ToolResult",
    "Turn",
    "build_scrubber",
    "get_reader",
    "git_remotes",
    "group_units",
    "harvest",
    "mine",
    "normalize_remote",
    "parse_test_output",
    "read_tasks",
    "rev_before",
    "skip_reason",
    "split_units",
    "write_tasks",
]
