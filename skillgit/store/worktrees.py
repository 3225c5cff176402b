"""Worktrees that have a branch checked out: the one routine that keeps them consistent when skillgit moves the
branch (an accepted step, a revert, a pull, an adopted night).

Contract:
- `checked_out(repo, branch_ref)`: the worktrees (not bare, still on disk) whose HEAD is `branch_ref`. Every
  move of a branch skillgit makes asks this first; nothing else lists worktrees for that purpose.
- A skillgit commit changes only the skill, so after its ref transaction `sync` brings each checked-out
  worktree's skill (files and index entries) along with ONE `git checkout <commit> -- <path>` per worktree (git
  writes the file, then the index: a kill can leave the file new and the index old, never the reverse, which
  would look like a staged revert). `interrupted` recognises exactly the state such a kill leaves (the tip is a
  skillgit commit, the index holds its parent's skill, the files the parent's or the tip's) and `prepare` finishes
  it, then refuses — changing nothing — when a worktree's skill differs from the tip (the person's own changes).
- A commit that is not skillgit's (a pull, a reviewed night's branch) may change any file: `fast_forward` runs
  `git merge --ff-only` in the worktree that has the branch checked out (branch, index and files together; git
  refuses if it would overwrite uncommitted work, and then nothing changes), otherwise moves the ref with
  compare-and-swap in the same transaction as the caller's other ref updates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from skillgit.errors import GitStateError
from skillgit.store import notes as N
from skillgit.store import refs as R
from skillgit.store.git import GitError, GitRepo, RefUpdate, Worktree


class WorktreeRefused(GitStateError):
    """git refused to move a checked-out branch in `path` (`git merge --ff-only`: local changes are in the way);
    nothing was changed. `detail` is git's own line."""

    def __init__(self, path: Path, detail: str):
        super().__init__(f"git refused to update {path}: {detail}", "see `git status` there")
        self.path = path
        self.detail = detail


def checked_out(repo: GitRepo, branch_ref: str) -> list[Worktree]:
    """The worktrees (not bare, present on disk) that have `branch_ref` checked out."""
    return [w for w in repo.worktrees() if w.branch == branch_ref and not w.bare and w.path.is_dir()]


def interrupted(repo: GitRepo, wt: Worktree, tip: str, path: str) -> bool:
    """True when `wt` shows exactly the state a kill between a skillgit step's branch move and its worktree update
    leaves: the tip is a skillgit commit, and the skill's index entries hold its parent's version while the files
    hold the parent's or the tip's version (nothing of the person's is there to lose)."""
    _, _, trailers = N.parse_message(repo.commit_message(tip))
    if R.TRAILER_RUN not in trailers and R.TRAILER_REVERT not in trailers:
        return False
    parents = repo.parents(tip)
    if not parents or repo.same_path(parents[0], tip, path):
        return False
    if not repo.index_is(wt.path, parents[0], path):
        return False
    return any(repo.worktree_is(wt.path, c, path) for c in (parents[0], tip))


def require_clean(repo: GitRepo, worktrees: Sequence[Worktree], tip: str, path: str, branch: str) -> None:
    """Refuse (changing nothing) when the skill differs from `tip` in a worktree's index or files. The hint never
    suggests committing: a commit made from a stale file would silently undo a skillgit step."""
    for wt in worktrees:
        if repo.index_is(wt.path, tip, path) and repo.worktree_is(wt.path, tip, path):
            continue
        raise GitStateError(
            f"{path} has uncommitted changes in {wt.path}",
            f"keep them with `git -C {wt.path} stash`, run again, then `git stash pop` to re-apply them on the "
            f"trained skill (or discard them: git -C {wt.path} checkout {branch} -- {path})")


def prepare(repo: GitRepo, branch_ref: str, tip: str, path: str, branch: str) -> list[Path]:
    """Finish interrupted updates, then `require_clean`; returns the worktrees that were brought up to date."""
    worktrees = checked_out(repo, branch_ref)
    finished = [wt for wt in worktrees if interrupted(repo, wt, tip, path)]
    for wt in finished:
        repo.checkout_path(wt.path, tip, path)
    require_clean(repo, worktrees, tip, path, branch)
    return [wt.path for wt in finished]


def sync(repo: GitRepo, worktrees: Sequence[Worktree], old: str, new: str, path: str) -> None:
    """After the branch moved old → new (skillgit commits: only the skill differs), bring each worktree's skill
    along. A skill edited in the moment since the check keeps the person's text (the next `prepare` reports it)."""
    for wt in worktrees:
        if repo.worktree_is(wt.path, old, path):
            repo.checkout_path(wt.path, new, path)


def fast_forward(repo: GitRepo, branch_ref: str, target: str, expected: str, reason: str,
                 also: Sequence[RefUpdate] = ()) -> None:
    """Move `branch_ref` from `expected` to its descendant `target`, and apply `also` (other ref updates): in a
    worktree that has it checked out with `git merge --ff-only` (then `also` in one transaction), else all in one
    compare-and-swap transaction. WorktreeRefused when git refuses in the worktree; RefConflict (nothing changed)
    when a ref moved meanwhile."""
    worktrees = checked_out(repo, branch_ref)
    updates = list(also)
    if worktrees:
        try:
            repo.ff_merge(worktrees[0].path, target)
        except GitError as exc:
            raise WorktreeRefused(worktrees[0].path, exc.message.split(": ", 1)[-1]) from None
    else:
        updates.insert(0, RefUpdate("update", branch_ref, target, expected))
    if updates:
        repo.transaction(updates, reason)
