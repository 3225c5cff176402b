"""`skillgit sleep adopt`: bring a reviewed night's branch into the skill branch — fast-forward only, never forced.

Contracts:
- `plan(store, branch, date)` says what adopting would do: the skill branch's tip, the night branch's tip, whether a
  fast-forward is possible, and the exact `git` commands (and a pull-request route) a person can run instead.
- `adopt(store, plan)` moves the skill branch to the night's tip only when the skill branch's tip is an ancestor
  of it (a fast-forward), under the skill branch's run lock (never while a `skillgit train` works on it), with
  compare-and-swap on the tip it checked. A worktree that has the skill branch checked out is moved with
  `git merge --ff-only` there (branch, index and files together; git refuses if the person's uncommitted changes
  would be overwritten, and then nothing changes). If the skill branch moved since the night started (it is not an
  ancestor), a GitStateError names both tips and what to do; nothing is changed.
- Git is reached only through `GitRepo` methods.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillgit.errors import GitStateError, SkillgitError
from skillgit.store import Store
from skillgit.store.git import GitError, RefConflict, RefUpdate


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
    night_tip = repo.ref(f"refs/heads/{branch}")
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


def adopt(store: Store, p: AdoptPlan) -> str:
    """See the module contract; returns the skill branch's new tip."""
    if p.up_to_date:
        return p.skill_tip
    if not p.fast_forward:
        raise GitStateError(
            f"skill branch '{p.skill_branch}' moved since the night of {p.date} started "
            f"({p.skill_tip[:12]} is not in {p.branch}); adopt only fast-forwards",
            f"let the next night train on top of it (`skillgit sleep run`), or merge by hand after review: "
            f"git switch {p.skill_branch} && git merge {p.branch}")
    repo = store.repo
    with store.lock(store.branch):
        if store.tip() != p.skill_tip:
            raise GitStateError(f"skill branch '{p.skill_branch}' moved while adopting",
                                "run `skillgit sleep adopt` again")
        checked_out = [w for w in repo.worktrees() if w.branch == store.branch_ref and not w.bare and w.path.is_dir()]
        try:
            if checked_out:
                repo.ff_merge(checked_out[0].path, p.night_tip)
            else:
                repo.transaction([RefUpdate("update", store.branch_ref, p.night_tip, p.skill_tip)],
                                 f"skillgit sleep: adopt {p.branch}")
        except RefConflict:
            raise GitStateError(f"skill branch '{p.skill_branch}' moved while adopting; nothing was changed",
                                "run `skillgit sleep adopt` again") from None
        except GitError as exc:
            where = str(checked_out[0].path) if checked_out else "the repository"
            raise GitStateError(f"adopting {p.branch} failed: {exc.message}",
                                f"commit or stash your changes in {where}, then run `skillgit sleep adopt {p.date}` "
                                "again; nothing was changed") from None
    return p.night_tip
