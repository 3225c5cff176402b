"""Working trees under `GitRepo`: the user's checked-out worktrees (kept consistent when a skill branch moves),
per-rollout and pooled workspaces for agentic rollouts, and the fixture store's snapshots."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from skillgit.store.gitimport import gitpython
from skillgit.store.gitproc import _G, EOO, GitBase, GitError, Worktree, _operand


class GitWork(GitBase):
    """Worktrees, workspaces and the working tree's index, all through git porcelain run here."""

    # ------------------------------------------------------------------------------------------ working tree
    def status_paths(self, paths: Sequence[str]) -> list[str]:
        """`git status --porcelain` lines for `paths` (untracked files included)."""
        return self._run("status", "--porcelain", "--untracked-files=all", "--", *paths).splitlines()

    def check_identity(self) -> None:
        """Raise the GitError with the fix (`git config user.name …`) when git has no committer identity."""
        self._run("var", "GIT_COMMITTER_IDENT")

    def commit_paths(self, paths: Sequence[str], message: str) -> str:
        """Add and commit exactly `paths` (nothing else that is staged); returns the new HEAD."""
        self._run("add", "--", *paths)
        self._run("commit", "-q", "-m", message, "--only", "--", *paths)
        return self._run("rev-parse", "HEAD")

    def is_ignored(self, path: str) -> bool:
        """True when git ignores `path` (relative to the root) by any .gitignore, info/exclude or global rule."""
        return self._call("check-ignore", "-q", "--no-index", "--", path)[0] == 0

    # ------------------------------------------------------------------------------------------ workspaces
    # Per-rollout worktrees of the project repository: what skillgit did before pooled workspaces (below). Kept for
    # `bench/workspaces.py` (its baseline) and for `Workspaces.sweep`, which still removes such a worktree left
    # by an older skillgit that was killed.
    def worktree_add(self, path: Path, rev: str) -> None:
        """A detached worktree of this repository at `rev` in `path` (the user's branches are not touched)."""
        self._run("worktree", "add", "--detach", "--quiet", EOO, _operand(str(path), "path"), _operand(rev))

    def worktree_remove(self, path: Path) -> None:
        self._call("worktree", "remove", "--force", "--force", EOO, _operand(str(path), "path"))

    def worktree_prune(self) -> None:
        self._call("worktree", "prune")

    def workspace_diff(self, exclude: Sequence[str] = ()) -> str:
        """The unified diff of everything changed in this working tree since HEAD, new files included, without
        `exclude`d paths (the installed skill). Stages the changes: only for throwaway workspaces."""
        specs = [".", *(f":(exclude){p}" for p in exclude)]
        self._run("add", "-A", "--", *specs)
        return self._run_bytes("diff", "--cached", "--no-color", "--no-ext-diff", "HEAD", "--",
                               *specs).decode("utf-8", "replace")

    # ------------------------------------------------------------------------------------------ pooled workspaces
    # For agentic/workspace.py (issue 22: a rollout costs what changed, not what exists). A pooled workspace is a
    # repository of its own whose objects come from its source (the project repository, or a store of fixture
    # snapshots) through `objects/info/alternates`: its refs, stash, tags, config, hooks and reflogs are its own,
    # so nothing a rollout does there reaches the user's repository. Its metadata as first made is kept aside in a
    # `pristine` folder (outside the workspace) and put back before every rollout (`reset_workspace`), with the
    # index the previous reset left: `checkout --force` then rewrites only the files whose content or stat data
    # differ from that index (what the last rollout touched, and what differs between the two commits), and
    # `clean -ffdx` removes every file git does not track, ignored ones included.
    # skillgit's own commands there run with the git dir pinned (GIT_DIR, GIT_WORK_TREE: never a repository above
    # the workspace), no hooks, no fsmonitor, and pristine metadata (never a config the agent wrote: filters or
    # hooks it set never run in skillgit).
    _QUIET_GIT = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "advice.detachedHead=false")
    # In a fixture's store and workspaces: no attribute changes bytes between object and file (info/attributes
    # wins over the tree's .gitattributes), so the workspace holds the fixture byte for byte.
    VERBATIM_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"

    @classmethod
    def init_workspace(cls: type[_G], path: Path, pristine: Path, *, objects: Path, object_format: str,
                       sparse: Sequence[str] = (), verbatim: bool = False) -> _G:
        """An empty repository at `path` (`git init --template=`: no hooks, no sample files) that borrows the
        objects of `objects` (another repository's object folder) and checks out only the non-cone `sparse`
        patterns when there are any; `verbatim`: VERBATIM_ATTRIBUTES. Its metadata is copied to `pristine/git`."""
        path.mkdir(parents=True, exist_ok=True)
        status, _, err = cls._exec(gitpython.Git(str(path)), ["init", "-q", "--template=",
                                                              f"--object-format={object_format}"])
        if status != 0:
            raise cls._error(["init"], status, err)
        git_dir = path / ".git"
        (git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (git_dir / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n", encoding="utf-8")
        (git_dir / "info").mkdir(exist_ok=True)
        repo = cls(path, git_dir, git_dir, object_format, False)
        if sparse:
            for key, value in (("core.sparseCheckout", "true"), ("core.sparseCheckoutCone", "false")):
                repo._run("config", "--", key, value)
            (git_dir / "info" / "sparse-checkout").write_text("".join(f"{p}\n" for p in sparse), encoding="utf-8")
        if verbatim:
            (git_dir / "info" / "attributes").write_text(GitWork.VERBATIM_ATTRIBUTES, encoding="utf-8")
        shutil.rmtree(pristine / "git", ignore_errors=True)
        shutil.copytree(git_dir, pristine / "git", symlinks=True)
        return repo

    def _pinned(self, *args: str, git_dir: Path | None = None) -> bytes:
        env = {"GIT_DIR": str(git_dir or self.git_dir), "GIT_WORK_TREE": str(self.root)}
        return self._run_bytes(*self._QUIET_GIT, *args, env=env)

    def reset_workspace(self, pristine: Path, commit: str) -> None:
        """Put the pristine metadata back and move the files to `commit` (see the section's comment): afterwards
        the workspace holds exactly `commit`'s tree (its sparse part), nothing else, and HEAD is detached there.
        GitError or OSError when something the last rollout left cannot be undone (e.g. a folder it made
        unwritable): the caller then makes a new workspace."""
        _operand(commit)
        if self.root.is_symlink() or not self.root.is_dir():
            raise GitError(f"workspace {self.root} is no longer a folder", "it is made again")
        git_dir = self.root / ".git"
        if git_dir.is_symlink() or git_dir.is_file():
            git_dir.unlink()
        elif git_dir.exists():
            shutil.rmtree(git_dir)
        shutil.copytree(pristine / "git", git_dir, symlinks=True)
        if (pristine / "index").is_file():
            shutil.copyfile(pristine / "index", git_dir / "index")
        self._pinned("checkout", "--force", "--detach", "--quiet", commit, "--")
        self._pinned("clean", "-ffdxq")
        shutil.copyfile(git_dir / "index", pristine / "index")

    def changes_since(self, pristine: Path, base: str, exclude: Sequence[str] = ()) -> str:
        """The unified diff from commit `base` (the last reset's) to this workspace's files, new files included,
        without `exclude`d paths. Computed in a scratch copy of the pristine metadata and index, so whatever the
        agent did to the workspace's `.git` (commits, config, a removed or replaced `.git`) neither changes it nor
        is changed by it; the index's stat data makes git read only the files that changed."""
        scratch = pristine / "diff"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(pristine / "git", scratch, symlinks=True)
        try:
            if (pristine / "index").is_file():
                shutil.copyfile(pristine / "index", scratch / "index")
            specs = [".", *(f":(exclude){p}" for p in exclude)]
            self._pinned("add", "-A", "--sparse", "--", *specs, git_dir=scratch)
            return self._pinned("diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", EOO,
                                _operand(base), "--", *specs, git_dir=scratch).decode("utf-8", "replace")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @classmethod
    def init_store(cls: type[_G], path: Path) -> _G:
        """A repository whose objects hold fixture snapshots (`snapshot_folder`), byte for byte."""
        repo = cls.init(path, "main")
        (repo.git_dir / "info").mkdir(exist_ok=True)
        (repo.git_dir / "info" / "attributes").write_text(GitWork.VERBATIM_ATTRIBUTES, encoding="utf-8")
        return repo

    def snapshot_folder(self, folder: Path) -> str:
        """A commit of every file of `folder` (ignored ones included) in this store's objects, without touching
        its index, HEAD or refs: the same content always gives the same commit (a fixed identity and date)."""
        fd, index = tempfile.mkstemp(prefix="skillgit-index-")
        os.close(fd)
        os.unlink(index)  # (git refuses an empty index file)
        stamp = "946684800 +0000"
        env = {"GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(folder), "GIT_INDEX_FILE": index,
               "GIT_AUTHOR_NAME": "skillgit", "GIT_AUTHOR_EMAIL": "skillgit@localhost", "GIT_AUTHOR_DATE": stamp,
               "GIT_COMMITTER_NAME": "skillgit", "GIT_COMMITTER_EMAIL": "skillgit@localhost",
               "GIT_COMMITTER_DATE": stamp}
        runner = gitpython.Git(str(folder))
        try:
            for args in ([*self._QUIET_GIT, "add", "-A", "--force", "--", "."], ["write-tree"]):
                status, out, err = self._exec(runner, args, env=env)
                if status != 0:
                    raise self._error(args, status, err)
            tree = out.decode().strip()
            status, out, err = self._exec(runner, ["commit-tree", _operand(tree, "tree"), "-m", "fixture"], env=env)
            if status != 0:
                raise self._error(["commit-tree"], status, err)
            return out.decode().strip()
        finally:
            Path(index).unlink(missing_ok=True)


    # ------------------------------------------------------------------------------------------ worktrees
    def worktrees(self) -> list[Worktree]:
        out = self._run_bytes("worktree", "list", "--porcelain", "-z").decode("utf-8", "replace")
        result: list[Worktree] = []
        for block in out.split("\0\0"):
            fields = dict((line.partition(" ")[0], line.partition(" ")[2]) for line in block.split("\0") if line)
            if "worktree" in fields:
                result.append(Worktree(Path(fields["worktree"]), fields.get("HEAD"), fields.get("branch"),
                                       "bare" in fields))
        return result

    def _in_worktree(self, wt: Path, *args: str, input: str | bytes | None = None) -> str:
        """Run git inside worktree `wt` (its own index and HEAD); pathspecs are taken literally."""
        return self._run("--literal-pathspecs", "-C", str(wt), *args, input=input)

    def index_entries(self, wt: Path, path: str) -> list[tuple[str, str, int]]:
        """(mode, blob, stage) of `path` in worktree `wt`'s index."""
        out = self._in_worktree(wt, "ls-files", "-s", "-z", "--", path)
        rows = []
        for record in out.split("\0"):
            if record:
                meta, _, name = record.partition("\t")
                mode, sha, stage = meta.split()
                if name == path:
                    rows.append((mode, sha, int(stage)))
        return rows

    def worktree_blob(self, wt: Path, path: str) -> str | None:
        """The blob id the working file would get if added (clean/eol filters applied); None when missing."""
        if not (wt / path).is_file():
            return None
        return self._in_worktree(wt, "hash-object", "--", path)

    def checkout_path(self, wt: Path, commit: str, path: str) -> None:
        """Set `path`'s index entry and file in worktree `wt` to their state in `commit`, in ONE git command (git
        writes the file, then the index): a kill can leave the file new and the index old, never the reverse."""
        self._in_worktree(wt, "checkout", "--no-overlay", _operand(commit), "--", path)  # (no --end-of-options)

    def index_is(self, wt: Path, commit: str, path: str) -> bool:
        """True when worktree `wt`'s index holds exactly `commit`'s version of `path` (a file or a folder)."""
        return self._call("--literal-pathspecs", "-C", str(wt), "diff", "--cached", "--quiet", "--no-ext-diff",
                          EOO, _operand(commit), "--", path)[0] == 0

    def index_file_is(self, index_file: Path, commit: str, path: str) -> bool | None:
        """True when the index file `index_file` (not this repository's own index: the one a `git commit` in progress
        builds, which git names to its hooks in GIT_INDEX_FILE) holds exactly `commit`'s version of `path`, False
        when it holds another; None when git cannot compare them (no such index, no such commit). Read only."""
        status = self._call("--literal-pathspecs", "diff", "--cached", "--quiet", "--no-ext-diff", EOO,
                            _operand(commit), "--", path, env={"GIT_INDEX_FILE": str(index_file)})[0]
        return {0: True, 1: False}.get(status)

    def worktree_is(self, wt: Path, commit: str, path: str) -> bool:
        """True when the files of `path` in worktree `wt` are exactly `commit`'s (no change, no untracked file)."""
        if self._call("--literal-pathspecs", "-C", str(wt), "diff", "--quiet", "--no-ext-diff", EOO,
                      _operand(commit), "--", path)[0] != 0:
            return False
        return not self._in_worktree(wt, "ls-files", "--others", "--exclude-standard", "--", path).strip()

    def same_path(self, a: str, b: str, path: str) -> bool:
        """True when `path` is identical in commits `a` and `b`."""
        return self._call("--literal-pathspecs", "diff", "--quiet", "--no-ext-diff", EOO, _operand(a), _operand(b),
                          "--", path)[0] == 0

    def ff_merge(self, wt: Path, commit: str) -> None:
        """`git merge --ff-only` in worktree `wt` (its checked-out branch, index and files move to `commit`)."""
        self._in_worktree(wt, "merge", "--ff-only", "--quiet", EOO, _operand(commit))
