"""Branches skillgit starts beside the skill branch, and bringing one back into it.

Contract:
- `start(repo, name, at, reason)`: create branch `name` at commit `at` with one compare-and-swap update ("must not
  exist yet"): a `train --branch` review branch, a night's `sleep/<date>` branch. Returns False, changing nothing,
  when the branch exists (callers decide whether to continue it); GitStateError when it appears meanwhile; an
  invalid name is refused before git sees it (`refs.check_branch`).
- `merge_skill(repo, skill_path, ours, theirs, message)`: the merge commit `skillgit sleep adopt --merge` makes
  (parents: `ours`, `theirs`) whose tree is `ours`' with the skill file 3-way merged (`git merge-file`); written as
  an object only, no ref moves. Refused (GitStateError with a hint) when the branches share no history, when
  `theirs` changed anything but the skill file, or when the texts conflict.
- Moving the skill branch to such a commit is `Store.fast_forward` (the one checked-out-worktree routine).
"""

from __future__ import annotations

from skillgit.errors import GitStateError
from skillgit.store import refs as R
from skillgit.store.git import GitRepo, RefConflict, RefUpdate


def start(repo: GitRepo, name: str, at: str, reason: str) -> bool:
    """See the module contract."""
    R.check_branch(name)
    ref = R.branch_ref(name)
    if repo.ref(ref) is not None:
        return False
    try:
        repo.transaction([RefUpdate("update", ref, at, None)], reason)
    except RefConflict:
        raise GitStateError(f"branch '{name.removeprefix('refs/heads/')}' appeared while skillgit was creating it",
                            "run the same command again (it continues the branch if it starts at the skill "
                            "branch)") from None
    return True


def merge_skill(repo: GitRepo, path: str, ours: str, theirs: str, message: str, *, names: tuple[str, str]) -> str:
    """See the module contract; `names` are the two branches' names for the messages (ours, theirs)."""
    mine, other = names
    base = repo.merge_base(ours, theirs)
    if base is None:
        raise GitStateError(f"'{other}' and '{mine}' share no history", "merge them by hand")
    base_blob = repo.tree_entry(base, path)
    theirs_only_skill = repo.replace_in_tree(theirs, path, base_blob.sha, base_blob.mode) if base_blob else None
    if theirs_only_skill != repo.mktree(repo.ls_tree(base)):
        raise GitStateError(f"the branch '{other}' changes more than {path}; adopt merges only the skill",
                            f"merge it by hand after review: git switch {mine} && git merge {other}")

    def text(rev: str) -> str:
        data = repo.blob_at(rev, path)
        return data.decode("utf-8") if data is not None else ""

    merged, conflicts = repo.merge_file(text(ours), text(base), text(theirs))
    if conflicts:
        raise GitStateError(
            f"{path} changed on '{mine}' and on '{other}' in the same places ({conflicts} conflict(s)); "
            "nothing was changed",
            f"let the next night train on top of '{mine}' (`skillgit sleep run`), or merge by hand: "
            f"git switch {mine} && git merge {other}")
    mode = repo.tree_entry(ours, path) or base_blob
    tree = repo.replace_in_tree(ours, path, repo.write_blob(merged.encode("utf-8")), mode.mode if mode else "100644")
    return repo.commit_tree(tree, [ours, theirs], message)
