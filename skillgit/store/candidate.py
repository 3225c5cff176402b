"""A step's records in the store: the pending `Candidate`, the `Decision` taken on it, `BranchMoved` when the skill
branch moved under it, and the note records `Store.propose` / `Store.decide` write (typed, or already encoded)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence, Union

from skillgit.errors import GitStateError
from skillgit.frozen import Frozen
from skillgit.types import RejectedEdit


class NoteRecord(Protocol):
    """A typed note record (`CandidateNote`, `GateNote`, `RevertNote`, `ReviewNote`): what it writes."""

    def to_note(self) -> dict[str, Any]: ...


Note = Union[NoteRecord, Mapping[str, Any]]  # a typed record, or an already encoded one (tests, older callers)


def note_dicts(records: Sequence[Note]) -> list[dict[str, Any]]:
    return [dict(r) if isinstance(r, Mapping) else r.to_note() for r in records]


@dataclass(frozen=True, eq=False, repr=False)
class Candidate(Frozen):
    """A proposed skill: commit `sha` (parent = the tip it was built on) held by ref `ref` until decided."""

    sha: str
    ref: str
    parent: str
    blob: str
    run: str
    step: int | str
    note: tuple[dict[str, Any], ...] = ()  # records `decide` writes first (propose with defer_note=True)


class BranchMoved(GitStateError):
    """The skill branch no longer points where a candidate was built; nothing was decided."""

    def __init__(self, branch: str, expected: str, now: str | None, what: str = ""):
        moved = f"{expected[:12]} → {(now or 'deleted')[:12]}"
        by = f" by {what}" if what else ""
        super().__init__(f"skill branch '{branch}' moved while the step worked ({moved}{by})",
                         "nothing was decided and nothing of yours was changed; run `skillgit train` again to "
                         "continue from the new tip (see the new commit with `git log -1 " + branch + "`)")
        self.expected = expected
        self.now = now


@dataclass(frozen=True, eq=False, repr=False)
class Decision(Frozen):
    verdict: str  # accepted | rejected
    run: str
    step: int | str
    commit: str  # the candidate commit
    tip: str  # the skill branch after the decision
    tag: str | None  # rejected/<run>/<step> for a rejection
    score_before: float
    score_after: float
    delta: float
    reason: str
    # what a rejection adds to the negative buffer (newest first), as a read of its note and tag would give them
    # (`negative.note_edits`): a running buffer (`negative.NegativeBuffer`) takes them without reading git
    buffered: tuple[RejectedEdit, ...] = ()
