"""The skill's history in git: the only package that talks to git (and `git.py` with the modules it is assembled from
the only ones that spell git commands), and the only one that writes skillgit's refs.

Modules, lowest first: `refs` (ref and trailer names, pure), `notes` (note/message codecs and `conform`, pure),
`gitproc` (running git: errors, the fault seam, long-lived processes), `gitobjects` (blobs, trees, commits),
`gitnotes` (notes trees), `gitwork` (worktrees, workspaces), `git` (`GitRepo`, assembled from those: refs,
transactions, remotes), `candidate` (`Candidate`, `Decision`, `BranchMoved`), `lock` (run locks), `fileref` (refs of
small files: runs, the sleep state), `worktrees` (the one checked-out-worktree routine), `branches` (review and
night branches, adopting one), `history` (log, step lookup, negative buffer), `revert`, `sync` (push, pull, gc),
`skilltree` (the skill in a commit's tree: a file or a package folder, read, written, exported), `core` (`Store`:
propose, decide, typed notes, revert, runs, branches), `read` (the read API the CLI, reports and servers call),
`repository` (the repository API for code outside the store: agent workspaces, provenance, sleep),
`initialize` (`skillgit init`).

Outside this package, git is reached through `Store`, `store.read` and `store.repository` only (`store.git` is
imported nowhere else: tests/test_centre.py).
"""

from skillgit.store.core import Candidate, Decision, Store
from skillgit.store.history import LogEntry

__all__ = ["Store", "Candidate", "Decision", "LogEntry"]
