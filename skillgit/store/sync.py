"""Sharing and housekeeping: `skillgit push`, `skillgit pull` and `skillgit gc`.

What moves between clones: the skill branch (fast-forward only), the `rejected/*` tags, the notes (always merged
line by line with `cat_sort_uniq`, never overwritten), the run refs and the gc archive (merged as a union).
All refspecs are given explicitly, so nothing depends on the remote's configured fetch refspecs, and everything
fetched lands first in skillgit's own namespace (`refs/notes/skillgit-remote/<remote>`,
`refs/skillgit/remote/<remote>/…`) before being integrated with compare-and-swap transactions. The branches
runs trained onto for review (`train --branch`) are fetched there too (`…/heads/<name>`), never to a local branch;
a clone that has no local skill branch yet gets one from the remote (`track_remote_branch`, before the store opens).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

from skillgit.errors import GitStateError, SkillgitError
from skillgit.store import history as store_history
from skillgit.store import refs as R
from skillgit.store.git import GitError, GitRepo, RefUpdate, TreeEntry
from skillgit.store.lock import alive
from skillgit.store.worktrees import WorktreeRefused


class Store(store_history.Store, Protocol):
    """What push, pull and gc need of a store (`skillgit.store.core.Store` is one; see history.Store)."""

    branch_ref: str

    def tip(self) -> str: ...

    def list_runs(self) -> list[str]: ...

    def prepare_worktrees(self) -> list[Path]: ...

    def fast_forward(self, target: str, *, expected: str, reason: str, also: Sequence[RefUpdate] = ()) -> None: ...

    def update_refs(self, updates: list[RefUpdate], reason: str, expected_tip: str | None = None) -> None: ...

    def maintain(self, *, pack_now: bool = False) -> None: ...


@dataclass
class SyncReport:
    remote: str
    branch: str = "up to date"  # up to date | fast-forwarded | ahead | pushed | created
    notes_merged: bool = False
    tags: int = 0  # rejected tags created locally (pull) or archived tags deleted remotely (push)
    runs: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # refs left alone because both sides changed them

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GcReport:
    folded: int
    kept: int
    archive: str | None


def _remote_refs(store: "Store", remote: str) -> dict[str, str]:
    return _remote_refs_of(store.repo, remote)


def _remote_refs_of(repo: GitRepo, remote: str) -> dict[str, str]:
    try:
        out = repo.ls_remote(remote)
    except GitError as exc:
        raise GitStateError(f"cannot reach remote '{remote}': {exc.message.split(': ', 1)[-1]}",
                            "check `git remote -v` (add one with `git remote add origin URL`) or pass a path/URL"
                            ) from None
    refs = {}
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        if name and not name.endswith("^{}"):
            refs[name] = sha
    return refs


def _fetch(store: "Store", remote: str, refspecs: list[str]) -> None:
    if refspecs:
        store.repo.fetch(remote, refspecs)


def _merged_archive(store: "Store", other: str | None, remote: str) -> tuple[str | None, str | None]:
    """(old, new) for refs/skillgit/archive after taking in `other` (union of both archives' entries)."""
    repo = store.repo
    old = repo.ref(R.ARCHIVE_REF)
    if other is None or old == other or (old is not None and repo.is_ancestor(other, old)):
        return old, old
    if old is None or repo.is_ancestor(old, other):
        return old, other
    entries: dict[str, TreeEntry] = {e.name: e for e in repo.ls_tree(other)}
    entries.update({e.name: e for e in repo.ls_tree(old)})
    tree = repo.mktree(entries.values())
    return old, repo.commit_tree(tree, [old, other], f"skillgit: merge archive from {remote}\n")



def _merge_fetched(store: "Store", remote: str, remote_refs, notes_ref: str, prefix: str, report
                   ) -> tuple[list[RefUpdate], str | None]:
    """The ref updates that fold the fetched notes (cat_sort_uniq) and gc archive into ours, and the merged
    archive; `report.notes_merged` says whether the notes changed."""
    repo = store.repo
    updates: list[RefUpdate] = []
    # The caller fetched the remote's notes into `notes_ref` (and its display notes into `notes_ref`-log) just
    # before, when the remote has any.
    for ours, theirs in ((R.NOTES_REF, notes_ref), (R.DISPLAY_NOTES_REF, notes_ref + "-log")):
        fetched = repo.ref(theirs) if ours in remote_refs else None
        if fetched is not None:
            old, new = repo.merged_notes(fetched, ours)
            if new != old:
                updates.append(RefUpdate("update", ours, new, old))
                report.notes_merged = True
    old_archive, archive = _merged_archive(store, repo.ref(f"{prefix}archive"), remote)
    if archive != old_archive:
        updates.append(RefUpdate("update", R.ARCHIVE_REF, archive, old_archive))
    return updates, archive


def _notes_specs(remote_refs: dict[str, str], notes_ref: str) -> list[str]:
    """Fetch refspecs for the remote's data notes (→ `notes_ref`) and display notes (→ `notes_ref`-log)."""
    pairs = ((R.NOTES_REF, notes_ref), (R.DISPLAY_NOTES_REF, notes_ref + "-log"))
    return [f"+{ours}:{theirs}" for ours, theirs in pairs if ours in remote_refs]


def _tracking(remote: str) -> tuple[str, str]:
    """(notes ref, ref prefix) where a remote's skillgit refs are fetched to."""
    c = R.remote_component(remote)
    return f"{R.REMOTE_NOTES_PREFIX}{c}", f"{R.REMOTE_PREFIX}{c}/"


def _archived_keys(store: "Store", archive: str | None) -> set[str]:
    if archive is None:
        return set()
    return {e.name for e in store.repo.ls_tree(archive)}


def _run_branch_specs(store: "Store", remote_refs: dict[str, str], prefix: str) -> list[str]:
    """Fetch refspecs for the branches that runs (ours and the ones just fetched) trained onto other than the skill
    branch (`train --branch review/x`) and that the remote has: each lands on `<prefix>heads/<name>`, where `log`
    finds the run's accepted steps when no local branch of that name exists (`history.other_run_branches`). The
    names come from collaborators' run records: one that is not a valid branch name is skipped."""
    repo = store.repo
    runs = [row[0] for row in repo.for_each_ref(["refname"], R.RUNS_PREFIX, f"{prefix}runs/")]
    names: set[str] = set()
    for blob in repo.cat_batch(f"{ref}:progress.json" for ref in runs).values():
        try:
            branch = json.loads(blob[1]).get("branch") if blob else None
        except (ValueError, RecursionError, AttributeError):
            continue
        if isinstance(branch, str) and branch != store.branch and R.branch_problem(branch) is None:
            names.add(branch)
    return [f"+{R.branch_ref(name)}:{prefix}heads/{name}" for name in sorted(names)
            if R.branch_ref(name) in remote_refs]


def remote_head_branch(remote_refs: dict[str, str]) -> str | None:
    """The branch the remote's HEAD points to, as far as `ls-remote` shows it (the one branch at HEAD's commit;
    `main`, then `master` when several are), or None."""
    head = remote_refs.get("HEAD")
    at = [name[len("refs/heads/"):] for name, sha in remote_refs.items()
          if sha == head and name.startswith("refs/heads/")]
    return at[0] if len(at) == 1 else next((b for b in ("main", "master") if b in at), None)


def track_remote_branch(root: Path, branch: str, remote: str = "origin") -> bool:
    """Create the local skill branch from `remote`'s when only the remote has it — a clone whose default branch
    (the remote's HEAD) is another one, `master` say — as `git switch <branch>` would (with its upstream when
    `remote` is a configured remote), without touching the checkout. True when it was created; False when the
    branch exists here. GitStateError when neither has it, naming the remote's default branch and the fix."""
    R.check_remote(remote)
    R.check_branch(branch, "skill branch")
    repo = GitRepo.open(root)
    ref = R.branch_ref(branch)
    if repo.ref(ref) is not None:
        return False
    remote_refs = _remote_refs_of(repo, remote)
    if ref not in remote_refs:
        head = remote_head_branch(remote_refs)
        where = f" (its default branch is '{head}')" if head else ""
        raise GitStateError(f"skill branch '{branch}' is neither here nor on {remote}{where}",
                            f"set skill.branch: {head} in skillgit.yaml, or pass -c skill.branch={head}" if head
                            else "set skill.branch in skillgit.yaml to the branch the skill is trained on")
    repo.fetch(remote, [f"{ref}:{ref}"])  # without `+`: creates it, never moves an existing one
    if repo.config_get_all(f"remote.{remote}.url"):
        repo.config_set(f"branch.{branch}.remote", remote)
        repo.config_set(f"branch.{branch}.merge", ref)
    return True


def pull(store: "Store", remote: str = "origin") -> SyncReport:
    """Fetch the remote's skill branch, tags, notes, runs and archive and integrate them: the branch only by
    fast-forward (GitStateError when it diverged; then nothing local changes), notes merged, tags and runs
    added or fast-forwarded (a run changed on both sides is kept local and reported as a conflict). A remote
    that git could read as an option (`--upload-pack=…`) is refused before anything runs (SkillgitError, exit 2)."""
    R.check_remote(remote)
    repo, report = store.repo, SyncReport(remote)
    remote_refs = _remote_refs(store, remote)
    from skillgit.store.initialize import configure_notes

    configure_notes(repo)  # a fresh clone has no notes config: `git log` shows the short notes once pulled
    notes_ref, prefix = _tracking(remote)
    _fetch(store, remote, _pull_specs(store, remote_refs, notes_ref, prefix))
    _fetch(store, remote, _run_branch_specs(store, remote_refs, prefix))  # review branches, once runs name them

    # The branch first: a diverged branch stops the pull before anything local changes.
    local, theirs = store.tip(), repo.ref(f"{prefix}branch") if store.branch_ref in remote_refs else None
    fast_forward = _branch_moves(store, remote, prefix, local, theirs, report)

    updates, archive = _merge_fetched(store, remote, remote_refs, notes_ref, prefix, report)
    updates += _fetched_tags(store, prefix, _archived_keys(store, archive), report)
    updates += _fetched_runs(store, prefix, report)
    if fast_forward:
        assert theirs is not None  # fast_forward implies it
        _fast_forward_pulled(store, remote, local, theirs, updates)
        report.branch = "fast-forwarded"
    elif updates:
        store.update_refs(updates, f"skillgit: pull from {remote}")
    return report


def _pull_specs(store: "Store", remote_refs: dict[str, str], notes_ref: str, prefix: str) -> list[str]:
    """The refspecs `pull` fetches into `prefix` (the remote's tracking refs)."""
    specs = []
    if store.branch_ref in remote_refs:
        specs.append(f"+{store.branch_ref}:{prefix}branch")
    specs += _notes_specs(remote_refs, notes_ref)
    if R.ARCHIVE_REF in remote_refs:
        specs.append(f"+{R.ARCHIVE_REF}:{prefix}archive")
    return specs + [f"+{R.REJECTED_PREFIX}*:{prefix}tags/*", f"+{R.RUNS_PREFIX}*:{prefix}runs/*"]


def _branch_moves(store: "Store", remote: str, prefix: str, local: str, theirs: str | None,
                  report: SyncReport) -> bool:
    """True when the fetched branch `theirs` fast-forwards `local`; "ahead" in the report when ours is ahead;
    GitStateError (nothing local changed yet) when the two diverged."""
    if theirs is None or theirs == local:
        return False
    if store.repo.is_ancestor(local, theirs):
        return True
    if not store.repo.is_ancestor(theirs, local):
        raise GitStateError(f"skill branch '{store.branch}' has diverged from {remote}",
                            f"merge them with git (git merge {prefix}branch), then push")
    report.branch = "ahead"
    return False


def _fetched_tags(store: "Store", prefix: str, archived: set[str], report: SyncReport) -> list[RefUpdate]:
    """Ref updates adding the fetched rejected tags we lack (not those folded into our archive); a tag that
    differs from ours is a conflict and ours stays."""
    repo, updates = store.repo, []
    for ref, obj in repo.for_each_ref(["refname", "objectname"], f"{prefix}tags/"):
        name = ref[len(prefix) + len("tags/"):]
        step = R.parse_step_ref(f"{R.REJECTED_PREFIX}{name}")
        mine = repo.ref(f"{R.REJECTED_PREFIX}{name}")
        if step is None or R.archive_key(*step) in archived or mine == obj:
            continue
        if mine is not None:
            report.conflicts.append(f"refs/tags/rejected/{name}")
            continue
        updates.append(RefUpdate("update", f"{R.REJECTED_PREFIX}{name}", obj, None))
        report.tags += 1
    return updates


def _fetched_runs(store: "Store", prefix: str, report: SyncReport) -> list[RefUpdate]:
    """Ref updates adding or fast-forwarding the fetched runs; a run changed on both sides is a conflict (ours
    stays)."""
    repo, updates = store.repo, []
    for ref, obj in repo.for_each_ref(["refname", "objectname"], f"{prefix}runs/"):
        run = ref[len(prefix) + len("runs/"):]
        mine = repo.ref(f"{R.RUNS_PREFIX}{run}")
        if mine == obj or (mine is not None and repo.is_ancestor(obj, mine)):
            continue
        if mine is not None and not repo.is_ancestor(mine, obj):
            report.conflicts.append(f"{R.RUNS_PREFIX}{run}")
            continue
        updates.append(RefUpdate("update", f"{R.RUNS_PREFIX}{run}", obj, mine))
        report.runs.append(run)
    return updates


def _fast_forward_pulled(store: "Store", remote: str, local: str, theirs: str, updates: list[RefUpdate]) -> None:
    """Move the skill branch from `local` to `theirs` together with `updates`, as `git merge --ff-only` would in a
    worktree that has it checked out."""
    # A kill between an accepted step's branch move and its worktree update leaves the checked-out skill one
    # version behind; fast-forwarding over that (or stashing it, as git would advise) reverts the step.
    store.prepare_worktrees()
    try:  # checked out: git does exactly what `git merge --ff-only` does there (it refuses on local changes)
        store.fast_forward(theirs, expected=local, reason=f"skillgit: pull from {remote}", also=updates)
    except WorktreeRefused as exc:
        raise GitStateError(f"cannot fast-forward '{store.branch}' in {exc.path}: {exc.detail}",
                            "stash your local changes (git stash), run `skillgit pull` again, "
                            "then `git stash pop`") from None


def push(store: "Store", remote: str = "origin") -> SyncReport:
    """Merge the remote's notes (and archive) into ours first, then push branch, tags, notes, runs and archive in
    one atomic push without force: a remote that moved on is never overwritten (pull first). A remote git could
    read as an option is refused before anything runs (SkillgitError, exit 2)."""
    R.check_remote(remote)
    repo, report = store.repo, SyncReport(remote, branch="pushed")
    remote_refs = _remote_refs(store, remote)
    notes_ref, prefix = _tracking(remote)
    specs = _notes_specs(remote_refs, notes_ref)
    if R.ARCHIVE_REF in remote_refs:
        specs.append(f"+{R.ARCHIVE_REF}:{prefix}archive")
    _fetch(store, remote, specs)
    updates, archive = _merge_fetched(store, remote, remote_refs, notes_ref, prefix, report)
    if updates:
        store.update_refs(updates, f"skillgit: merge from {remote} before push")

    refspecs = _push_refspecs(store, remote_refs, _archived_keys(store, archive), report)
    if remote_refs.get(store.branch_ref) == store.tip():
        report.branch = "up to date"
    elif store.branch_ref not in remote_refs:
        report.branch = "created"
    status, err = repo.push(remote, refspecs, atomic=True)
    if status != 0 and "atomic" in err and "support" in err:
        status, err = repo.push(remote, refspecs, atomic=False)
    if status != 0:
        lines = [line.strip() for line in err.splitlines() if line.strip()]
        why = next((line for line in lines if "rejected" in line or "error:" in line), lines[0] if lines else "")
        raise GitStateError(f"push to {remote} was refused: {why.removeprefix('error: ')}",
                            f"the remote has changes you do not have: run `skillgit pull {remote}` and push again")
    return report


def _push_refspecs(store: "Store", remote_refs: dict[str, str], archived: set[str],
                   report: SyncReport) -> list[str]:
    """What `push` sends: branch, tags, runs, the notes and archive we have, and deletions of the remote's tags
    that gc folded into the (now pushed) archive."""
    repo = store.repo
    refspecs = [f"{store.branch_ref}:{store.branch_ref}", f"{R.REJECTED_PREFIX}*:{R.REJECTED_PREFIX}*",
                f"{R.RUNS_PREFIX}*:{R.RUNS_PREFIX}*"]
    for ref in (*R.NOTES_REFS, R.ARCHIVE_REF):
        if repo.ref(ref) is not None:
            refspecs.append(f"{ref}:{ref}")
    for name in remote_refs:
        step = R.parse_step_ref(name) if name.startswith(R.REJECTED_PREFIX) else None
        if step and R.archive_key(*step) in archived and repo.ref(name) is None:
            refspecs.append(f":{name}")
            report.tags += 1
    return refspecs


def _drop_stale_scratch_refs(store: "Store") -> None:
    """Scratch notes refs (`refs/notes/skillgit-tmp/<pid>-…`) outlive only a killed process: drop those whose
    process is gone."""
    for (ref,) in store.repo.for_each_ref(["refname"], R.NOTES_TMP_PREFIX):
        pid = ref[len(R.NOTES_TMP_PREFIX):].split("-", 1)[0]
        if not (pid.isdigit() and alive(int(pid))):
            store.repo.delete_ref(ref)


def gc(store: "Store", keep: int = 20) -> GcReport:
    """Fold every rejected tag but the newest `keep` into `refs/skillgit/archive`: one commit whose tree holds a
    JSON record per folded step (tag message, commit, parent) and whose parents include the folded candidate
    commits, so they and their notes stay reachable after `git gc --prune=now`. Then pack all refs."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise SkillgitError(f"invalid --keep {keep!r}", "give how many recent rejected tags to keep (0 or more)")
    repo = store.repo
    live = [e for e in store_history.scan(store) if e.verdict == "rejected" and not e.archived]
    fold = live[: len(live) - keep] if keep else live
    archive = repo.ref(R.ARCHIVE_REF)
    if fold:
        tag_objs = {ref: obj for ref, obj in repo.for_each_ref(["refname", "objectname"], R.REJECTED_PREFIX)}
        raw = repo.cat_batch(tag_objs.values())
        commit_msgs = repo.messages([e.sha for e in fold])
        entries = {e.name: e for e in repo.ls_tree(archive)} if archive else {}
        updates, docs = [], []
        for e in fold:
            ref = f"refs/tags/{e.tag}"
            obj = tag_objs[ref]
            kind, content = raw.get(obj) or ("", b"")
            text = content.decode("utf-8", "replace")
            doc = {"v": 1, "run": e.run, "step": e.step, "commit": e.sha, "parent": e.parent, "date": e.date,
                   "tag": e.tag, "tag_object": obj, "tag_raw": text if kind == "tag" else "",
                   "tag_message": text.partition("\n\n")[2] if kind == "tag" else "",
                   "commit_message": commit_msgs.get(e.sha, "")}
            docs.append(json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=1).encode())
            updates.append(RefUpdate("delete", ref, old=obj))
        # one git process for all the records (one `hash-object` per folded tag took seconds for 1,000 tags)
        for e, blob in zip(fold, repo.write_blobs(docs)):
            key = R.archive_key(e.run, e.step)
            entries[key] = TreeEntry("100644", "blob", blob, key)
        tree = repo.mktree(entries.values())
        parents = ([archive] if archive else []) + list(dict.fromkeys(e.sha for e in fold))
        new = repo.commit_tree(tree, parents, f"skillgit gc: fold {len(fold)} rejected step(s)\n")
        store.update_refs([RefUpdate("update", R.ARCHIVE_REF, new, archive), *updates],
                          f"skillgit gc: fold {len(fold)} rejected tags")
        archive = new
    _drop_stale_scratch_refs(store)
    repo.pack_refs()
    store.maintain(pack_now=True)  # the archive records (one per folded tag) are new loose objects
    return GcReport(len(fold), len(live) - len(fold), archive)
