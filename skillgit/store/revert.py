"""`skillgit revert`: a commit on the skill branch that restores an earlier skill (never a rewrite of history).

Contract (`Store.revert` holds the branch's run lock around it): exactly one of `to` (the skill as at that
revision), `rev` (undo that one step: its parent's text when it is the tip, else a 3-way revert of just its
change; refused when that conflicts) or `steps` (the skill before the last N accepted steps). The commit carries
`Skillgit-Revert*` trailers and a `RevertNote`, and moves the branch like an accepted step (compare-and-swap,
checked-out worktrees kept consistent). Reverting to the current text is refused.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from skillgit.errors import GitStateError, SkillgitError
from skillgit.store import history as store_history
from skillgit.store import notes as N
from skillgit.store import refs as R


class Store(store_history.Store, Protocol):
    """What a revert needs of a store (`skillgit.store.core.Store` is one; see history.Store)."""

    def read_skill(self, rev: str | None = None) -> str: ...

    def resolve(self, rev: str) -> str: ...

    def commit_on_branch(self, text: str, subject: str, body: str, trailers: dict[str, str],
                         records: Sequence[Any], reflog: str) -> str: ...


def revert(store: "Store", rev: str | None, to: str | None, steps: int | None, reason: str) -> str:
    """See `Store.revert` (called under the branch's lock)."""
    tip = store.tip()
    current = store.read_skill(tip)
    if to is not None:
        target = store.resolve(to)
        mode, text, subject = "to", store.read_skill(target), f"revert to {to} ({target[:12]})"
    elif rev is not None:
        target = store.resolve(rev)
        if not store.repo.is_ancestor(target, tip):
            raise GitStateError(f"'{rev}' is not on branch '{store.branch}'",
                                f"only accepted steps can be undone; restore any version with --to {rev}")
        parents = store.repo.parents(target)
        if not parents:
            raise GitStateError(f"'{rev}' is the first commit; there is nothing before it", "use --to REV")
        before = store.read_skill(parents[0])
        mode, subject = "rev", f"revert {rev} ({target[:12]})"
        if target == tip:
            text = before
        else:
            text, conflicts = store.repo.merge_file(current, store.read_skill(target), before)
            if conflicts:
                raise GitStateError(f"undoing '{rev}' conflicts with the steps accepted after it",
                                    f"restore a whole version instead: skillgit revert --to {parents[0][:12]}")
    else:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise SkillgitError(f"invalid --steps {steps!r}", "give a whole number of steps, 1 or more")
        accepted = [e for e in store_history.scan(store) if e.verdict == "accepted"]
        if len(accepted) < steps:
            raise GitStateError(f"only {len(accepted)} accepted steps on '{store.branch}', cannot go back {steps}",
                                "see `skillgit log`, or use --to REV")
        target = accepted[-steps].parent or ""
        mode, text, subject = "steps", store.read_skill(target), f"revert {steps} step(s) (to {target[:12]})"
    if text == current:
        raise SkillgitError("nothing to revert: that version equals the current skill",
                            "see `skillgit log` and `skillgit diff` to pick another revision")
    from skillgit.records import RevertNote  # (here: `log` and `status` never build a note record)

    record = RevertNote(mode, target, N.one_line(reason), tip)
    trailers = {R.TRAILER_REVERT: mode, (R.TRAILER_REVERT_TO if mode != "rev" else R.TRAILER_REVERT_OF): target}
    return store.commit_on_branch(text, subject, f"Reason: {N.one_line(reason) or 'none given'}", trailers,
                                  [record], f"skillgit: {subject}")
