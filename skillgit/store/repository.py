"""The repository API for code outside `store/`: the one door to git besides `Store` and `store.read`.

`store/git.py` (`GitRepo`) is the store's own plumbing and is imported only inside `store/`. Code elsewhere that
needs a repository rather than a skill's history — agent workspaces and the scratch repositories of agent
students, provenance, the sleep harvest (remotes, the commit a transcript ran at), the sleep state, the project's
top folder, the demo — opens one here and sees it as a `Repository`:

- `open_repository(path)` and `init_repository(path, branch)` (GitStateError when there is no repository;
  nothing is created except by `init_repository`); `locate(cwd)`: the working tree around a folder and where its
  repository is (a `Location`, from one git process; None outside one), which `Store.open` takes instead of a
  folder without asking git again (the project's top folder: `project.py`).
- `Repository`: the methods of `GitRepo` such code may call — reads (refs, commits, trees, blobs, config, remotes,
  ignore rules), the plumbing of scratch workspaces (worktrees, snapshots, diffs, commits of paths a command
  owns) and `create_branch` (a branch that does not exist yet, never a moved one). It has no ref transaction and
  no notes: skillgit's own refs — skill branches, candidates, rejected tags, notes, runs, review and night
  branches, adoption — are written by `Store`, and the sleep state ref by `file_ref(repository, ref)` (a
  `store.fileref.FileRef`, compare-and-swap). mypy holds callers to this list; tests/test_centre.py holds the
  imports to this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Protocol, Sequence, cast

from skillgit.store.fileref import FileRef
from skillgit.store.git import GitRepo, Location, TreeEntry


class Repository(Protocol):
    """What code outside the store may ask of a repository (see the module docstring)."""

    @property
    def root(self) -> Path: ...

    @property
    def common_dir(self) -> Path: ...

    @property
    def object_format(self) -> str: ...

    def close(self) -> None: ...

    # reads
    def ref(self, name: str) -> str | None: ...

    def commit_of(self, rev: str) -> str | None: ...

    def rev_parse(self, rev: str) -> str: ...

    def rev_before(self, timestamp: str, ref: str = "HEAD") -> str | None: ...

    def is_ancestor(self, ancestor: str, descendant: str) -> bool: ...

    def for_each_ref(self, fields: Sequence[str], *patterns: str, sort: str | None = None) -> list[list[str]]: ...

    def tree_entry(self, treeish: str, path: str) -> TreeEntry | None: ...

    def ls_tree(self, treeish: str, recursive: bool = False) -> list[TreeEntry]: ...

    def blob_at(self, rev: str, path: str) -> bytes | None: ...

    def cat_batch(self, names: Iterable[str]) -> dict[str, tuple[str, bytes] | None]: ...

    def config_get_all(self, key: str) -> list[str]: ...

    def remote_urls(self) -> list[str]: ...

    def is_ignored(self, path: str) -> bool: ...

    def status_paths(self, paths: Sequence[str]) -> list[str]: ...

    # scratch workspaces and files a command owns
    def config_set(self, key: str, value: str) -> None: ...

    def check_identity(self) -> None: ...

    def commit_paths(self, paths: Sequence[str], message: str) -> str: ...

    def worktree_add(self, path: Path, rev: str) -> None: ...

    def worktree_remove(self, path: Path) -> None: ...

    def worktree_prune(self) -> None: ...

    def workspace_diff(self, exclude: Sequence[str] = ()) -> str: ...

    def create_branch(self, name: str, at: str) -> bool: ...

    # pooled agent workspaces (agentic/workspace.py): a workspace's own repository and the fixture snapshots
    def reset_workspace(self, pristine: Path, commit: str) -> None: ...

    def changes_since(self, pristine: Path, base: str, exclude: Sequence[str] = ()) -> str: ...

    def snapshot_folder(self, folder: Path) -> str: ...


def open_repository(path: Path | str) -> Repository:
    """The repository containing `path`; GitStateError (with a hint) when there is none."""
    return GitRepo.open(path)


def init_repository(path: Path, branch: str) -> Repository:
    """A new repository at `path` whose first branch is `branch`."""
    return GitRepo.init(path, branch)


def init_workspace(path: Path, pristine: Path, *, objects: Path, object_format: str, sparse: Sequence[str] = (),
                   verbatim: bool = False) -> Repository:
    """A pooled agent workspace at `path` borrowing the objects of `objects` (`GitRepo.init_workspace`)."""
    return GitRepo.init_workspace(path, pristine, objects=objects, object_format=object_format, sparse=sparse,
                                  verbatim=verbatim)


def init_snapshot_store(path: Path) -> Repository:
    """A repository holding fixture snapshots byte for byte (`GitRepo.init_store`)."""
    return GitRepo.init_store(path)


def locate(cwd: Path) -> tuple[Location | None, str]:
    """(the working tree git finds from folder `cwd` and where its repository is, or None; git's complaint)."""
    return GitRepo.locate(cwd)


def file_ref(repository: Repository, ref: str) -> FileRef:
    """A skillgit ref of small files in `repository` (the sleep state): read it, save to it with CAS."""
    return FileRef(cast(GitRepo, repository), ref)


__all__ = ["Location", "Repository", "TreeEntry", "open_repository", "init_repository", "init_workspace",
           "init_snapshot_store", "locate", "file_ref"]
