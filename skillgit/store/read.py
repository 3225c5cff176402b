"""The read API over a skill's history: what `skillgit log/show/status`, reports and servers call.

Nothing here writes, and nothing here fails on a malformed note: bad lines are counted and skipped (`corrupt`),
fields of the wrong type are left out of the typed records and listed (`skipped`, `notes.conform`). Records come
back typed (`StepOutcome`, `UpdateRecord`, `RunProgress`); the raw note records stay available for `--full` views.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from skillgit.errors import SkillgitError
from skillgit.store import history as store_history
from skillgit.store import notes as N
from skillgit.store.core import Store
from skillgit.store.history import LogEntry

if TYPE_CHECKING:  # (imported where used: `skillgit log` reads no typed records)
    from skillgit.records import RunProgress, StepOutcome, UpdateRecord


@dataclass(frozen=True)
class StepDetail:
    """One revision of the skill with everything git knows about it."""

    rev: str
    sha: str
    parent: str | None
    subject: str
    body: str
    trailers: Mapping[str, str]
    message: str
    diff: str
    outcome: StepOutcome | None = None  # the decision, when this commit was decided by skillgit
    update: UpdateRecord | None = None  # how the candidate was built
    gate: Mapping[str, Any] | None = None  # the gate's record (per-item val scores, coverage)
    revert: Mapping[str, Any] | None = None
    notes: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)  # every parsable note record, as written
    corrupt_lines: int = 0
    skipped: tuple[str, ...] = ()  # note fields of the wrong type the typed views left out (`notes.conform`)

    def to_dict(self) -> dict[str, Any]:
        return {"rev": self.rev, "sha": self.sha, "parent": self.parent, "subject": self.subject,
                "trailers": dict(self.trailers), "message": self.message, "diff": self.diff,
                "outcome": self.outcome.to_dict() if self.outcome else None,
                "update": self.update.to_dict() if self.update else None, "gate": self.gate, "revert": self.revert,
                "notes": [dict(n) for n in self.notes], "corrupt_lines": self.corrupt_lines,
                "skipped": list(self.skipped)}


def _first(records: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next(iter(N.of_kind(records, kind)), None)


def show(store: Store, rev: str) -> StepDetail:
    """The revision `rev` names (a step, run/step, rejected/run/step, or any git revision)."""
    from skillgit.records import StepOutcome, UpdateRecord

    sha = store.resolve(rev)
    parents = store.repo.parents(sha)
    parent = parents[0] if parents else None
    message = store.repo.commit_message(sha)
    subject, body, trailers = N.parse_message(message)
    diff = store.diff(parent or store.repo.empty_tree(), sha)
    note = N.decode_checked(store.repo.note_text(sha) or "")  # (a collaborator's note: any JSON at all)
    records, skipped = note.records, list(note.skipped)
    decision, candidate = _first(records, "decision"), _first(records, "candidate")
    outcome = update = None
    try:
        outcome = StepOutcome.from_dict({**decision, "sha": sha}) if decision is not None else None
    except (ValueError, TypeError, OverflowError) as exc:
        skipped.append(f"decision: skipped whole ({exc})")
    try:
        update = UpdateRecord.from_dict(candidate) if candidate is not None else None
    except (ValueError, TypeError, OverflowError) as exc:
        skipped.append(f"candidate: skipped whole ({exc})")
    return StepDetail(rev, sha, parent, subject, body, trailers, message, diff, outcome, update,
                      _first(records, "gate"), _first(records, "revert"), tuple(note.raw), note.corrupt_lines,
                      tuple(skipped))


def history(store: Store, run: str | None = None, edits: bool = True) -> list[LogEntry]:
    """Seeds, accepted, rejected (also archived) and revert entries, oldest → newest. `edits=False`: an entry's
    `edits` are only what its commit message or tag lists (the candidate records are not read; for `skillgit log`,
    which does not show them)."""
    return store_history.history(store, run, edits=edits)


def runs(store: Store) -> list[str]:
    """Run ids, most recently saved first."""
    return store.list_runs()


def run_progress(store: Store, run: str | None = None) -> RunProgress:
    """The saved progress of `run` (default: the newest run). SkillgitError (with a hint) when there is none."""
    from skillgit.records import RunProgress

    known = store.list_runs()
    if not known:
        raise SkillgitError("no training run in this repository yet", "start one with `skillgit train`")
    run_id = run or known[0]
    files = store.load_run(run_id)
    if not files or "progress.json" not in files:
        raise SkillgitError(f"unknown run '{run_id}'", f"known runs: {', '.join(known[:5])}")
    try:
        progress = RunProgress.from_dict(json.loads(files["progress.json"]))
    except (ValueError, TypeError) as exc:
        raise SkillgitError(f"run '{run_id}' has an unreadable progress record ({exc})",
                            f"inspect it with `git show refs/skillgit/runs/{run_id}:progress.json`") from None
    # A run saved as running whose process is gone was killed (kill -9, a closed terminal, a machine restart):
    # every run holds its branch's lock while it works, so no live holder means nobody is running it.
    if progress.status == "running" and progress.branch and store.lock_held(progress.branch) is False:
        progress = progress.replace(status="interrupted",
                                    stop_reason="its process is gone (killed?); `skillgit train` resumes it")
    return progress
