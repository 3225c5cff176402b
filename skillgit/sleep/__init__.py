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

Nothing in those three talks to a model or the network; git is only read (remote URLs for scoping, `rev_before`).

On top of them, the nightly pipeline (`skillgit sleep …`, docs/SLEEP.md):

4. **settings** (`settings.SleepSettings`, `open_sleep_project`): the `sleep:` section of skillgit.yaml.
5. **state** (`state`): the harvest state and each night's `NightRecord` and report on `refs/skillgit/sleep`.
6. **replay** (`replay.choose`, `write_splits`): reviewed tasks → stable train/val/test splits by task hash.
7. **night** (`night.run_night`): the privacy gate (`release`), then the normal training loop and gate on a
   `sleep/<date>` branch, never the skill branch; **handoff** (`handoff.HandoffLLM`) lets a person's own agent
   answer the teacher's prompts through files; **report** renders the night in Markdown.
8. **adopt** (fast-forward, `--merge`, `--pr`), **schedule** (cron block or systemd user timer; `--yes` and a
   dollar cap only by explicit choice), **plan** (dry run, status).
"""

from __future__ import annotations

from skillgit.sleep.handoff import HandoffLLM, HandoffPending
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
from skillgit.sleep.readers import Reader, get_reader, readers, sources
from skillgit.sleep.scrub import Redactions, Scrubber, build_scrubber
from skillgit.sleep.settings import SleepSettings, open_sleep_project
from skillgit.sleep.state import NightRecord

__all__ = [
    "REPLAY_MARKER",
    "SKIP_REASONS",
    "FileState",
    "HandoffLLM",
    "HandoffPending",
    "HarvestResult",
    "HarvestState",
    "HarvestWarning",
    "MineResult",
    "MinedTask",
    "MinedTaskFile",
    "NightRecord",
    "Reader",
    "Redactions",
    "Scrubber",
    "Session",
    "SleepSettings",
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
    "open_sleep_project",
    "parse_test_output",
    "read_tasks",
    "readers",
    "rev_before",
    "skip_reason",
    "sources",
    "split_units",
    "write_tasks",
]
