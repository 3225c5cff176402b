"""The skill's history in git: the only package that talks to git (and `git.py` the only module that spells git
commands).

Modules, lowest first: `refs` (ref and trailer names, pure), `notes` (note/message codecs, pure), `git`
(`GitRepo`: GitPython plumbing), `lock` (run locks), `branch` (the skill branch: tip, CAS ref moves, checked-out
worktrees), `history` (log, step lookup, negative buffer), `sync` (push, pull, gc), `core` (`Store`: propose,
decide, revert, runs), `read` (the read API the CLI, reports and servers call), `initialize` (`skillgit init`).
"""

from skillgit.store.core import Candidate, Decision, Store
from skillgit.store.history import LogEntry

__all__ = ["Store", "Candidate", "Decision", "LogEntry"]
