"""What `skillgit sleep` remembers, kept in git on `refs/skillgit/sleep` (never in the home folder).

Layout of the ref: a chain of commits (each the parent of the next, like a run ref) whose tree holds small files:

| path | what |
| --- | --- |
| `state.json` | the `HarvestState`: which session files and sessions earlier harvests saw |
| `nights/<date>.json` | that night's `NightRecord` (counts, splits, scores, edits, cost, redactions) |
| `nights/<date>.md` | that night's report in Markdown (also usable as a pull-request body) |

Contracts:
- `load(repo)` reads the ref (`SleepState`; an empty state when there is none) with a fixed number of git calls.
- `save(repo, files, message, expected)` commits `files` over the current tree (other files are kept) and moves
  the ref with compare-and-swap on `expected` (the head `load` returned): if another process saved meanwhile
  nothing changes and a SkillgitError says so. Only `GitRepo` methods touch git.
- The ref holds counts, hashes, ids and skill edits — never transcript text (that stays in the reviewable task file
  in the working tree). It is local to this clone: `skillgit push` does not push it (harvest state is per machine).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from skillgit.errors import GitStateError
from skillgit.sleep.harvest import HarvestState
from skillgit.store.git import GitRepo, RefConflict, RefUpdate

SLEEP_REF = "refs/skillgit/sleep"
STATE_FILE = "state.json"
NIGHTS_DIR = "nights"


def night_json(date: str) -> str:
    return f"{NIGHTS_DIR}/{date}.json"


def night_md(date: str) -> str:
    return f"{NIGHTS_DIR}/{date}.md"


@dataclass(frozen=True)
class NightRecord:
    """One night: what was harvested and mined, what was replayed, what the gate decided and what it cost.

    `status`: finished | stopped (a budget) | waiting (handoff answers pending) | nothing (no usable task)."""

    date: str
    status: str
    reason: str = ""
    branch: str = ""
    run: str = ""
    skill_branch: str = ""
    base: str = ""  # the skill branch's tip the night's branch started from
    tip: str = ""  # the night's branch after training
    harvest: dict[str, Any] = field(default_factory=dict)  # sessions, skipped {reason: n}, warnings, files
    mined: dict[str, Any] = field(default_factory=dict)  # units, groups, tasks, new_tasks
    tasks: dict[str, Any] = field(default_factory=dict)  # file, reviewed, approval, used, train/val/test, excluded
    scores: dict[str, Any] = field(default_factory=dict)  # seed/final → {val, test}
    accepted: int = 0
    rejected: int = 0
    edits: tuple[dict[str, Any], ...] = ()  # per decided step: step, verdict, delta, reason, edits
    usage: dict[str, Any] = field(default_factory=dict)  # calls, tokens, cost_usd
    budget: dict[str, Any] = field(default_factory=dict)
    redactions: dict[str, int] = field(default_factory=dict)
    handoff: dict[str, Any] = field(default_factory=dict)  # folder, pending
    started: str = ""
    ended: str = ""
    adopted: str = ""  # the skill branch's tip after `skillgit sleep adopt`

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["edits"] = [dict(e) for e in self.edits]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NightRecord:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["edits"] = tuple(dict(e) for e in data.get("edits") or () if isinstance(e, Mapping))
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class SleepState:
    harvest: HarvestState
    nights: tuple[str, ...]  # dates with a record, oldest first
    head: str | None  # the ref's commit (None: nothing saved yet)


def load(repo: GitRepo) -> SleepState:
    head = repo.ref(SLEEP_REF)
    if head is None:
        return SleepState(HarvestState(), (), None)
    entries = {e.name: e.sha for e in repo.ls_tree(head, recursive=True) if e.type == "blob"}
    state = HarvestState()
    if STATE_FILE in entries:
        state = HarvestState.from_json(_blob_text(repo, entries[STATE_FILE]))
    nights = sorted(name[len(NIGHTS_DIR) + 1:-5] for name in entries
                    if name.startswith(NIGHTS_DIR + "/") and name.endswith(".json"))
    return SleepState(state, tuple(nights), head)


def read(repo: GitRepo, path: str) -> str | None:
    """A file of the sleep ref's tree, or None."""
    if repo.ref(SLEEP_REF) is None:
        return None
    data = repo.blob_at(SLEEP_REF, path)
    return data.decode("utf-8", "replace") if data is not None else None


def night(repo: GitRepo, date: str) -> NightRecord | None:
    text = read(repo, night_json(date))
    return NightRecord.from_dict(json.loads(text)) if text else None


def save(repo: GitRepo, files: Mapping[str, str], message: str, expected: str | None) -> str:
    """See the module contract; returns the new commit."""
    old = repo.ref(SLEEP_REF)
    if old != expected:
        raise _moved()
    entries = {e.name: e.sha for e in repo.ls_tree(old, recursive=True) if e.type == "blob"} if old else {}
    for path, text in files.items():
        entries[path] = repo.write_blob(text.encode("utf-8"))
    tree = repo.build_tree(entries)
    commit = repo.commit_tree(tree, [old] if old else [], message.rstrip("\n") + "\n")
    try:
        repo.transaction([RefUpdate("update", SLEEP_REF, commit, old)], f"skillgit sleep: {message.splitlines()[0]}")
    except RefConflict:
        raise _moved() from None
    return commit


def _moved() -> GitStateError:
    return GitStateError(f"{SLEEP_REF} changed while this command ran (another `skillgit sleep` at work?)",
                         "nothing was saved by this command; run it again")


def _blob_text(repo: GitRepo, sha: str) -> str:
    return repo.cat(sha).decode("utf-8", "replace")
