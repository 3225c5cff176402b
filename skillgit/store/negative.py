"""The negative buffer: edits of rejected candidates, newest step first, each with its step's score change and
the gate's reason (what the teacher is shown so that it does not propose them again).

Two ways to the same list:
- `negative_buffer(store, limit)` reads it from git: the history scan (every rejected tag of the repository, the
  gc archive) in history order and the notes of the newest rejected steps;
- `NegativeBuffer` is a training run's copy of its newest entries: read from git once (`negative_buffer`, by
  `Trainer._buffers`), then extended by each rejection this process decides (`add`, from the `Decision` the store
  returns: the entries its note yields, computed by `note_edits` exactly as a read of that note would). A run
  asked for the buffer at every step, and each read listed every rejected tag of the repository: a step's reads
  grew with the history.

Why a running copy equals a fresh read: a rejection this process decides is built on the skill branch's tip, so
in history order (`history._history_order`) it comes after every entry anchored on an older commit of the chain,
and after the earlier entries built on the same tip (same run: its decision sequence; an older date otherwise).
What a running copy does not see is a rejection another process writes meanwhile (a run on another branch): the
next process that reads the buffer from git does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skillgit.store import notes as N
from skillgit.store import refs as R
from skillgit.store.history import LogEntry, _rejected_entry, concurrently, log_records, read_notes, scan
from skillgit.types import Edit, RejectedEdit

if TYPE_CHECKING:
    from skillgit.store.candidate import Decision
    from skillgit.store.history import Store


def note_edits(records: list[dict[str, Any]], entry: LogEntry) -> list[RejectedEdit]:
    """The buffer entries of one rejected step: its candidate record's edits (the tag's summaries when its note has
    none), each with the step's delta and reason (the decision record's, else the tag's)."""
    decision = next(iter(N.of_kind(records, "decision")), {})
    delta = N.to_float(decision.get("delta"))
    delta = delta if delta is not None else (entry.delta if entry.delta is not None else 0.0)
    reason = str(decision.get("reason") or entry.reason)
    return [RejectedEdit(edit, delta, reason, entry.run, entry.step) for edit in _edits_of(records, entry)]


def decided_edits(run: str, step: int | str, commit: str, parent: str, tag_message: str, commit_message: str,
                  note: list[dict[str, Any]]) -> tuple[RejectedEdit, ...]:
    """The buffer entries of a rejection being decided (`Store.decide`): what `negative_buffer` will read of it
    once its tag and `note` (the records appended to the candidate's note) are in git — exactly, when the
    candidate had no note before its decision (its records deferred to it: `propose(defer_note=True)`, as the
    loop's candidates are)."""
    parsed = R.parse_step_ref(R.rejected_ref(run, step))
    if parsed is None:
        return ()
    entry = _rejected_entry(*parsed, commit, parent, "0", tag_message, commit_message)
    return tuple(note_edits(log_records(N.encode(note))[0], entry))


def _edits_of(records: list[dict[str, Any]], entry: LogEntry) -> list[Edit]:
    edits = [Edit.from_dict(x) for c in N.of_kind(records, "candidate") for x in c.get("edits", [])
             if isinstance(x, dict) and isinstance(x.get("op"), str)]
    if edits:
        return edits
    # No candidate record (e.g. tags pulled without notes): fall back to the summaries in the tag message.
    out = []
    for line in entry.edits:
        op, _, text = line.partition(": ")
        out.append(Edit(op=op, content=text, rationale="(from the tag summary)"))
    return out


def negative_buffer(store: "Store", limit: int) -> list[RejectedEdit]:
    """Up to `limit` edits of rejected candidates, newest step first, with that step's delta and reason, read from
    git. Bad notes are skipped here (the buffer must never stop a training run); `history.read_notes` reports them."""
    if limit <= 0:
        return []
    # List the notes once (not once per chunk), and read chunks that double in size, so that a long run of
    # rejected steps without edits costs a few calls, not one per 16.
    entries, mapping = concurrently(lambda: scan(store), store.repo.notes_map)
    rejected = [e for e in reversed(entries) if e.verdict == "rejected"]
    out: list[RejectedEdit] = []
    start, chunk = 0, max(limit, 16)
    while start < len(rejected):
        batch = rejected[start:start + chunk]
        start, chunk = start + chunk, chunk * 2
        notes = read_notes(store, [e.sha for e in batch], mapping)
        for e in batch:
            out += note_edits(notes.get(e.sha, ([], 0))[0], e)
            if len(out) >= limit:
                return out[:limit]
    return out


@dataclass
class NegativeBuffer:
    """A run's negative buffer as it goes: the newest `keep` entries (newest first), read from git once and then
    extended by the rejections this process decides. `newest(n)` for n ≤ keep is what `negative_buffer(store, n)`
    would read (see the module docstring for when it would not)."""

    keep: int
    entries: list[RejectedEdit] = field(default_factory=list)

    def newest(self, limit: int) -> list[RejectedEdit]:
        return self.entries[:max(0, min(limit, self.keep))]

    def add(self, decision: "Decision") -> None:
        """Put a decision's entries first (an acceptance has none); the oldest beyond `keep` are dropped."""
        if decision.buffered:
            self.entries[:0] = decision.buffered
            del self.entries[self.keep:]
