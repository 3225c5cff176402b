"""All of skillgit's git access: `GitRepo`, from this module and the four beside it (gitproc.py: running git;
gitobjects.py: objects; gitnotes.py: notes; gitwork.py: worktrees and workspaces), the only modules that use
GitPython (imported once, by gitimport.py: one `git version` at import, not two). Everything outside store/ imports
these names from here.

`GitRepo` runs git commands through GitPython's `Git.execute` and offers the plumbing the store needs:
objects (blobs, trees, commits, tags) built without touching any index or working tree, compare-and-swap ref
transactions (`git update-ref --stdin`), notes commits whose trees are computed here (byte for byte what
`git notes append` writes, fanned out like git's), and the few porcelain calls that keep a checked-out worktree
consistent. Every failure of git becomes a `GitError` (a `GitStateError`) with git's own first error line and a
hint; nothing here prints.

Cost: a step's reads (refs, blobs, trees, commits) go through one long-lived `git cat-file --batch-command` per
repository, and its trees and blobs are written through long-lived `git mktree --batch` and
`git hash-object --stdin-paths` processes, so they cost a pipe round trip, not a process. Each such request still
passes the crash-test fault seam (`phase`) like a git command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from skillgit.store import refs as R
from skillgit.store.gitnotes import GitNotes
from skillgit.store.gitproc import (
    EOO,
    IDENTITY_HINT,
    NO_EXT,
    SKILLGIT_IDENTITY,
    GitBase,
    GitError,
    Location,
    RefConflict,
    RefUpdate,
    TreeEntry,
    Worktree,
    _operand,
    _subcommand,
    phase,
)
from skillgit.store.gitwork import GitWork

__all__ = ["GitBase", "GitError", "GitRepo", "IDENTITY_HINT", "Location", "RefConflict", "RefUpdate",
           "SKILLGIT_IDENTITY", "TreeEntry", "Worktree", "_subcommand", "phase"]


class GitRepo(GitNotes, GitWork):
    """A repository opened at `root` (its working tree; the git dir for a bare repository)."""

    def create_branch(self, name: str, at: str) -> bool:
        """Create branch `name` at commit `at` unless it exists (CAS: never moves an existing branch); True when
        it was created."""
        problem = R.branch_problem(name)
        if problem is not None:
            raise GitError(f"invalid branch name {name!r}: {problem}", R.NAME_HINT)
        ref = R.branch_ref(name)
        if self.ref(ref) is not None:
            return False
        self.transaction([RefUpdate("update", ref, self.rev_parse(f"{at}^{{commit}}"), None)],
                         f"skillgit: create {name}")
        return True

    def remote_urls(self) -> list[str]:
        """The URLs of this repository's remotes (fetch and push), sorted, without duplicates."""
        status, out, _ = self._call("config", "--get-regexp", r"^remote\..*\.(url|pushurl)$")
        if status != 0:
            return []
        return sorted({line.split(maxsplit=1)[1] for line in out.decode("utf-8", "replace").splitlines()
                       if len(line.split(maxsplit=1)) == 2})

    def rev_before(self, timestamp: str, ref: str = "HEAD") -> str | None:
        """The commit `ref` reached just before `timestamp` (any date git understands), or None."""
        if R.branch_problem(ref) is not None and ref != "HEAD":
            return None  # (a transcript's branch: `--output=FILE` would make rev-list write a file)
        status, out, _ = self._call("rev-list", "-1", f"--before={timestamp}", EOO, _operand(ref), "--")
        sha = out.decode().strip()
        return sha if status == 0 and sha else None

    # ------------------------------------------------------------------------------------------ remotes
    # A remote is a name, a path or a URL typed by a user: `R.check_remote` refused option-like ones before, and
    # here it always follows `--` (git then also refuses a path that begins with '-': "strange pathname").
    def ls_remote(self, remote: str) -> str:
        return self._run(*NO_EXT, "ls-remote", "--", R.check_remote(remote))

    def fetch(self, remote: str, refspecs: Sequence[str]) -> None:
        self._run(*NO_EXT, "fetch", "--quiet", "--no-tags", "--prune", "--no-write-fetch-head", "--",
                  R.check_remote(remote), *(_operand(s, "refspec") for s in refspecs))

    def push(self, remote: str, refspecs: Sequence[str], *, atomic: bool) -> tuple[int, str]:
        """(status, stderr) of `git push` (atomic when asked); the caller decides what a failure means."""
        status, _, err = self._call(*NO_EXT, "push", "--quiet", *(["--atomic"] if atomic else []), "--",
                                    R.check_remote(remote), *(_operand(s, "refspec") for s in refspecs))
        return status, err

    # ------------------------------------------------------------------------------------------ housekeeping
    def pack_refs(self) -> None:
        self._run("pack-refs", "--all")

    def repack(self, *, geometric: bool = False) -> None:
        """Pack loose objects into a new pack (`git repack -d`); `geometric`: also merge packs so that each holds
        at least twice the objects of the next smaller (`--geometric=2`: a pack per step of a long run would
        otherwise pile up, and objects in small packs are stored without the deltas a larger pack finds)."""
        self._call("repack", "-d", "-q", *(["--geometric=2"] if geometric else []))

    def loose_objects(self) -> int:
        """How many loose objects the repository holds (`git count-objects`; 0 when it cannot tell)."""
        status, out, _ = self._call("count-objects")
        words = out.decode("utf-8", "replace").split()
        return int(words[0]) if status == 0 and words and words[0].isdigit() else 0

    def gc_auto(self, threshold: int | None) -> None:
        """`git gc --auto` in the foreground, with `gc.auto` = `threshold` (None: the repository's own setting)."""
        opts = ["-c", "gc.autoDetach=false", *(["-c", f"gc.auto={threshold}"] if threshold is not None else [])]
        self._call(*opts, "gc", "--auto", "--quiet")

    # ------------------------------------------------------------------------------------------ refs
    def for_each_ref(self, fields: Sequence[str], *patterns: str, sort: str | None = None) -> list[list[str]]:
        """One row of `fields` (for-each-ref atoms without %( )) per ref under `patterns`."""
        fmt = "%1f".join(f"%({f})" for f in fields) + "%1e"
        args = ["for-each-ref", f"--format={fmt}", *([f"--sort={sort}"] if sort else []), EOO, *patterns]
        out = self._run_bytes(*args).decode("utf-8", "replace")
        return [rec.lstrip("\n").split("\x1f") for rec in out.split("\x1e") if rec.strip("\n")]

    def transaction(self, updates: Sequence[RefUpdate], reason: str) -> None:
        """Apply `updates` atomically with compare-and-swap on their old values (all or nothing).
        Raises RefConflict when any old value does not match; then no ref has changed."""
        lines = ["start"]
        for u in updates:  # (one line per update: a space or line break in a value would add a command)
            for value in (u.ref, u.new, u.old):
                if value is not None and (not value or any(c.isspace() for c in value)):
                    raise GitError(f"refusing the ref update {u.ref!r}: a ref or object name holds a space or line "
                                   "break", "nothing was changed by skillgit")
            if u.op == "update":
                lines.append(f"update {u.ref} {u.new} {u.old or self.zero}")
            elif u.op == "delete":
                lines.append(f"delete {u.ref} {u.old}")
            elif u.op == "verify":
                lines.append(f"verify {u.ref} {u.old or self.zero}")
            else:
                raise ValueError(f"unknown ref op {u.op!r}")
        lines += ["prepare", "commit"]
        self._run("update-ref", "-m", reason, "--stdin", input="\n".join(lines) + "\n")

    def delete_ref(self, ref: str) -> None:
        self._call("update-ref", "-d", EOO, _operand(ref, "ref"))


    # ------------------------------------------------------------------------------------------ config
    def config_get_all(self, key: str) -> list[str]:
        status, out, _ = self._call("config", "--get-all", "--", key)
        return out.decode().splitlines() if status == 0 else []

    def config_add(self, key: str, value: str) -> None:
        self._run("config", "--add", "--", key, value)  # (git config reads what follows the key as values)

    def config_unset_value(self, key: str, value: str) -> None:
        """Remove every `key` entry whose value is exactly `value` (no error when there is none)."""
        self._call("config", "--unset-all", "--fixed-value", "--", key, value)

    def config_set(self, key: str, value: str) -> None:
        self._run("config", "--", key, value)

    def git_path(self, name: str) -> Path:
        """`git rev-parse --git-path` (honours core.hooksPath for "hooks")."""
        path = Path(self._run("rev-parse", "--git-path", name))
        return path if path.is_absolute() else (self.root / path)
