"""`skillgit train --branch NAME`: train onto a review branch, and remember the branch it was started from.

Contract:
- `prepare(store, name)` (`store`: the skill branch's) makes `name` a branch that starts at the skill branch:
  created at its tip when missing (one compare-and-swap ref update: "must not exist yet"), continued when it exists
  and contains the skill branch's tip, refused with a hint when it does not (the skill branch moved on since: merge
  it in first), when `name` is the skill branch itself or a `candidates/` branch, or not a valid branch name.
  The skill branch is never moved, and neither is anything else.
- `record(store, run, base, head, seed)` appends one `ReviewNote` `{run, base, head}` to the note of the commit
  the run starts from (its seed), once per run; `recorded_base(reviews, run)` reads it back. Notes travel with
  `skillgit push` / `pull` (merged, never overwritten), so `skillgit pr` finds the base in any clone.
- Every ref write goes through `Store` (`Store.start_branch`, `Store.add_note`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from skillgit.errors import GitStateError, SkillgitError
from skillgit.project import Project
from skillgit.records import ReviewNote
from skillgit.store import Store
from skillgit.store import refs as R


@dataclass(frozen=True)
class ReviewBranch:
    """The branch a run trains onto (`head`), the skill branch it starts at (`base`) and where it started."""

    base: str
    head: str
    start: str  # the commit `head` pointed to when training began (or would start at, in a dry run)
    created: bool  # created now
    existed: bool  # it existed already: training continues it

    @property
    def exists(self) -> bool:
        return self.created or self.existed

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "head": self.head, "start": self.start, "created": self.created,
                "existed": self.existed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ReviewBranch":
        return cls(str(data.get("base", "")), str(data.get("head", "")), str(data.get("start", "")),
                   bool(data.get("created", False)), bool(data.get("existed", False)))


def _check_name(store: Store, name: str) -> str:
    short = name.removeprefix("refs/heads/")
    if short == store.branch:
        raise SkillgitError(f"--branch {name} is the skill branch itself",
                            f"name a new review branch, e.g. --branch review/{store.branch}-1, or train without "
                            f"--branch to train on '{store.branch}' directly")
    R.check_branch(name, "--branch")  # (before git sees it: `@`, U+202E, a leading '-')
    if not store.repo.valid_branch_name(short):
        raise SkillgitError(f"invalid branch name {name!r}", "use a name git accepts, e.g. review/better-dates")
    if R.branch_ref(short).startswith(R.CANDIDATES_PREFIX):
        raise SkillgitError(f"--branch {name} is inside candidates/, where skillgit keeps undecided steps",
                            "pick another name, e.g. review/better-dates")
    return short


def prepare(store: Store, name: str, *, create: bool = True) -> ReviewBranch:
    """Create (at the skill branch's tip) or continue the review branch `name`; see the module's contract.
    With `create=False` (a dry run) nothing is written and a missing branch is reported as it would start."""
    short = _check_name(store, name)
    tip = store.tip()
    head = store.branch_tip(short)
    if head is not None:
        if not store.repo.is_ancestor(tip, head):
            raise GitStateError(f"branch '{short}' does not contain the tip of '{store.branch}' ({tip[:12]}): "
                                f"'{store.branch}' moved on since it was started",
                                f"bring it up to date first (git switch {short} && git merge {store.branch}), or "
                                f"train onto a new branch name")
        return ReviewBranch(store.branch, short, head, created=False, existed=True)
    if create:
        store.start_branch(short, tip, f"skillgit: start review branch {short} at {store.branch}")
    return ReviewBranch(store.branch, short, tip, created=create, existed=False)


def prepare_project(project: Project, name: str, *, create: bool = True) -> ReviewBranch:
    """`prepare` on the project's skill branch (`skill.branch` as configured, before `--branch` applies)."""
    cfg = project.config
    return prepare(Store.open(project.root, cfg.skill.path, cfg.skill.branch), name, create=create)


def record(store: Store, run: str, branch: ReviewBranch, seed: str) -> bool:
    """Note on `seed` (the commit the run starts from) that `run` trains `branch.head` from `branch.base`.
    Written once per run; returns True when a record was added."""
    if recorded_base(store.step_notes(seed).reviews, run) == branch.base:  # (a bad line elsewhere: no stop)
        return False
    store.add_note(seed, [ReviewNote(run, branch.base, branch.head)])
    return True


def recorded_base(reviews: Iterable[ReviewNote], run: str) -> str | None:
    """The base branch a review record names for `run`, or None."""
    for review in reviews:
        if review.run == run and R.branch_problem(review.base) is None:
            return review.base  # (a collaborator's note: a name git could read as an option is not taken)
    return None
