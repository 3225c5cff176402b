"""The read API over a skill's history: what `skillgit log/show/status`, reports and servers call.

Nothing here writes but the caches of `log` and `status` (`cached=True`, `warm_caches`), and nothing here fails
on a malformed note: bad lines are counted and skipped (`corrupt`), fields of the wrong type are left out of the
typed records and listed (`skipped`, `notes.conform`). Records come back typed (`StepOutcome`, `CandidateNote`,
`GateNote`, `RevertNote`, `RunProgress`: `skillgit.records`); the raw note records stay available for `--full`
views.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from skillgit.errors import SkillgitError
from skillgit.frozen import Frozen
from skillgit.store import history as store_history
from skillgit.store import notes as N
from skillgit.store.core import Store
from skillgit.store.history import LogEntry

if TYPE_CHECKING:  # (imported where used: `log` reads no note record and no run's progress)
    from skillgit.records import CandidateNote, GateNote, RevertNote, RunProgress, StepOutcome, UpdateRecord


@dataclass(frozen=True, eq=False, repr=False)
class StepDetail(Frozen):
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
    candidate: CandidateNote | None = None  # how the candidate was built
    gate: GateNote | None = None  # the gate's record (per-item val scores, coverage, checks)
    revert: RevertNote | None = None
    notes: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)  # every parsable note record, as written
    corrupt_lines: int = 0
    skipped: tuple[str, ...] = ()  # note fields of the wrong type the typed views left out (`notes.conform`)

    @property
    def update(self) -> UpdateRecord | None:
        return self.candidate.update if self.candidate else None

    def to_dict(self) -> dict[str, Any]:
        """`show --json` (docs/JSON.md): the typed records as their notes write them."""
        return {"rev": self.rev, "sha": self.sha, "parent": self.parent, "subject": self.subject,
                "trailers": dict(self.trailers), "message": self.message, "diff": self.diff,
                "outcome": self.outcome.to_dict() if self.outcome else None,
                "update": self.candidate.to_note() if self.candidate else None,
                "gate": self.gate.to_note() if self.gate else None,
                "revert": self.revert.to_note() if self.revert else None,
                "notes": [dict(n) for n in self.notes], "corrupt_lines": self.corrupt_lines,
                "skipped": list(self.skipped)}


def show(store: Store, rev: str) -> StepDetail:
    """The revision `rev` names (a step, run/step, rejected/run/step, or any git revision)."""
    sha = store.resolve(rev)
    parents = store.repo.parents(sha)
    parent = parents[0] if parents else None
    message = store.repo.commit_message(sha)
    subject, body, trailers = N.parse_message(message)
    diff = store.diff(parent or store.repo.empty_tree(), sha)
    note = store.note(sha)  # (a collaborator's note: any JSON at all)
    from skillgit.records import StepNotes

    typed = StepNotes.from_records(note.records, sha, skipped=note.skipped)
    return StepDetail(rev, sha, parent, subject, body, trailers, message, diff, typed.decision, typed.candidate,
                      typed.gate, typed.revert, tuple(note.raw), note.corrupt_lines, typed.skipped)


def history(store: Store, run: str | None = None, edits: bool = True, cached: bool = False) -> list[LogEntry]:
    """Seeds, accepted, rejected (also archived) and revert entries, oldest → newest. `edits=False`: an entry's
    `edits` are only what its commit message or tag lists (the candidate records are not read; for `skillgit log`,
    which does not show them). `cached`: answered from what an earlier process read in the same ref state, and
    kept for the next one (`store/logcache.py`; for commands that print the history, never a training run)."""
    if not cached:
        return store_history.history(store, run, edits=edits)
    from skillgit.store.logcache import cached_history

    entries = cached_history(store, edits, lambda: store_history.history(store, None, edits=edits))
    return entries if run is None else [e for e in entries if e.run == run]


def runs(store: Store) -> list[str]:
    """Run ids, most recently saved first."""
    return store.list_runs()


def run_progress(store: Store, run: str | None = None) -> RunProgress:
    """The saved progress of `run` (default: the newest run). SkillgitError (with a hint) when there is none."""
    known = store.list_runs()
    if not known:
        raise SkillgitError("no training run in this repository yet", "start one with `skillgit train`")
    run_id = run or known[0]
    files = store.load_run(run_id)
    if not files or "progress.json" not in files:
        raise SkillgitError(f"unknown run '{run_id}'", f"known runs: {', '.join(known[:5])}")
    from skillgit.records import RunProgress

    try:
        progress = RunProgress.from_dict(json.loads(files["progress.json"]))
    except (ValueError, RecursionError, TypeError) as exc:
        raise SkillgitError(f"run '{run_id}' has an unreadable progress record ({exc})",
                            f"inspect it with `git show refs/skillgit/runs/{run_id}:progress.json`") from None
    # A run saved as running whose process is gone was killed (kill -9, a closed terminal, a machine restart):
    # every run holds its branch's lock while it works, so no live holder means nobody is running it.
    if progress.status == "running" and progress.branch and store.lock_held(progress.branch) is False:
        progress = progress.replace(status="interrupted",
                                    stop_reason="its process is gone (killed?); `skillgit train` resumes it")
    return progress


def val_trend(store: Store, progress: RunProgress, cached: bool = False) -> list[float | None]:
    """The val scores of the run's seed and accepted steps, in history order (`status`'s trend line): read from the
    run's own commits and notes (`history.run_scores`), the whole history only when those do not hold all of
    the run's accepted steps (a run trained onto another branch, a reset or pulled branch). `cached`: what an
    earlier process read in the same ref state (`store/logcache.py`)."""
    if cached:
        from skillgit.store.logcache import cached_value

        found = cached_value(store, "status", _trend_key(progress), lambda: val_trend(store, progress))
        if isinstance(found, list) and all(v is None or type(v) in (int, float) for v in found):
            return found
    scores = store_history.run_scores(store, progress.run, progress.accepted)
    if scores is None:
        scores = _trend(store_history.history(store, progress.run, edits=False), progress.run)
    return scores


def _trend_key(progress: RunProgress) -> str:
    return f"{progress.run}\0{progress.accepted}"


def _trend(entries: list[LogEntry], run: str) -> list[float | None]:
    return [e.score for e in entries if e.run == run and e.verdict in ("seed", "accepted")]


def warm_caches(store: Store, progress: RunProgress) -> None:
    """Write what the first `skillgit log` and `skillgit status` after the run `progress` read (the history without
    edits; the run's val trend, taken from the same entries: what `val_trend` reads when `run_scores` cannot
    answer), as a run does once its last ref has moved (`store/logcache.py`). Never raises: a cache must not stop
    a run."""
    from skillgit.store import logcache

    try:
        logcache.warm(store, lambda: store_history.history(store, None, edits=False),
                      _trend_key(progress), lambda entries: _trend(entries, progress.run))
    except (SkillgitError, OSError, ValueError):
        pass
