"""`skillgit sleep adopt`: bring a reviewed night's branch into the skill branch — fast-forward, or with `--merge` a
merge commit; never forced, never over anyone's uncommitted work.

Contracts:
- `plan(store, branch, date, report)` says what adopting would do: the skill branch's tip, the night branch's tip,
  whether a fast-forward is possible, and the exact `git` commands (and a pull-request route; `report` is shown as
  given: callers pass a repository-relative path) a person can run instead.
- `adopt(store, plan, merge=False)` works under the skill branch's run lock (never while a `skillgit train` works
  on it). First it finishes an interrupted worktree update of a skillgit step (`Store.prepare_worktrees`), which
  also refuses — changing nothing — when the skill has uncommitted changes in a worktree that has the skill branch
  checked out. Then, with compare-and-swap on the tip it planned with:
  - fast-forward when the skill branch's tip is an ancestor of the night's tip;
  - otherwise, only with `merge`: a merge commit (parents: the skill tip, the night tip) whose tree is the skill
    tip's with the skill file 3-way merged (`git merge-file`); refused with a hint when the texts conflict, or when
    the night's branch changed anything but the skill file; without `merge`, a GitStateError names both tips and
    the ways on; nothing is changed.
  A worktree that has the skill branch checked out is moved with `git merge --ff-only <target>` there (branch,
  index and files together; git refuses if it would overwrite the person's uncommitted changes, and then nothing
  changes); otherwise the ref moves in one transaction.
- Refs move only through `Store` (`Store.fast_forward`, the store's one checked-out-worktree routine;
  `Store.merge_skill` builds the merge commit).
"""

from __future__ import annotations

from dataclasses import dataclass

from skillgit.errors import GitStateError, SkillgitError
from skillgit.store import Store
from skillgit.store.core import BranchMoved
from skillgit.store.worktrees import WorktreeRefused


@dataclass(frozen=True)
class AdoptPlan:
    date: str
    branch: str  # the night's branch
    skill_branch: str
    skill_tip: str
    night_tip: str
    fast_forward: bool  # the skill branch's tip is an ancestor of the night's tip
    up_to_date: bool  # nothing to adopt (the night's tip is already in the skill branch)
    commands: tuple[str, ...]  # what a person can run instead, exactly

    def to_dict(self) -> dict[str, object]:
        return {"date": self.date, "branch": self.branch, "skill_branch": self.skill_branch,
                "skill_tip": self.skill_tip, "night_tip": self.night_tip, "fast_forward": self.fast_forward,
                "up_to_date": self.up_to_date, "commands": list(self.commands)}


def plan(store: Store, branch: str, date: str, report: str | None = None) -> AdoptPlan:
    repo = store.repo
    night_tip = store.branch_tip(branch)
    if night_tip is None:
        raise SkillgitError(f"there is no branch '{branch}' for the night of {date}",
                            "see the nights with `skillgit sleep status`, or run one with `skillgit sleep run`")
    skill_tip = store.tip()
    up_to_date = repo.is_ancestor(night_tip, skill_tip)
    ff = repo.is_ancestor(skill_tip, night_tip)
    sk = store.branch
    commands = [f"git log --oneline {sk}..{branch}", f"git diff {sk} {branch} -- {store.skill_path}",
                f"git switch {sk} && git merge --ff-only {branch}"]
    body = f" --body-file {report}" if report else ""
    commands.append(f"git push origin {branch} && gh pr create --base {sk} --head {branch} "
                    f"--title 'skillgit sleep: night of {date}'{body}")
    return AdoptPlan(date, branch, sk, skill_tip, night_tip, ff and not up_to_date, up_to_date, tuple(commands))


def adopt(store: Store, p: AdoptPlan, *, merge: bool = False) -> str:
    """See the module contract; returns the skill branch's new tip."""
    if p.up_to_date:
        return p.skill_tip
    if not p.fast_forward and not merge:
        raise GitStateError(
            f"skill branch '{p.skill_branch}' moved since the night of {p.date} started "
            f"({p.skill_tip[:12]} is not in {p.branch}); a fast-forward is not possible",
            f"`skillgit sleep adopt {p.date} --merge` makes a merge commit (refused on conflicts), `--pr` proposes "
            "it for review, or let the next night train on top of it (`skillgit sleep run`)")
    with store.lock(store.branch):
        store.prepare_worktrees()  # a skillgit step killed mid-update is finished; the person's skill edits refuse
        if store.tip() != p.skill_tip:
            raise GitStateError(f"skill branch '{p.skill_branch}' moved while adopting",
                                "run `skillgit sleep adopt` again")
        target = p.night_tip if p.fast_forward else merge_commit(store, p)
        try:
            store.fast_forward(target, expected=p.skill_tip, reason=f"skillgit sleep: adopt {p.branch}")
        except BranchMoved:
            raise GitStateError(f"skill branch '{p.skill_branch}' moved while adopting; nothing was changed",
                                "run `skillgit sleep adopt` again") from None
        except WorktreeRefused as exc:
            raise GitStateError(
                f"git refused to move '{p.skill_branch}' in {exc.path} to {target[:12]}: {exc.detail}",
                f"nothing was changed; files there that the night also changes ({store.skill_path}) are in the way "
                f"(see `git status` in {exc.path}); once they are out of the way, run `skillgit sleep adopt "
                f"{p.date}` again") from None
    return target


def merge_commit(store: Store, p: AdoptPlan) -> str:
    """The merge commit of `--merge` (see the module contract); written as an object only, no ref moves."""
    message = (f"skillgit sleep: merge {p.branch} into {p.skill_branch}\n\nThe night of {p.date}'s gated edits "
               f"to {store.skill_path}, merged after '{p.skill_branch}' moved on.\n")
    return store.merge_skill(p.skill_tip, p.night_tip, message, names=(p.skill_branch, p.branch))
