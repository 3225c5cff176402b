"""Folders skillgit keeps under the shared temporary folder (`/tmp`), where every local user may create names.

Contract of `claim(folder)`: `folder` (a fixed, guessable name such as `<tmp>/skillgit-ws-<hash>`) is made ours
and private before anything is put in it. A missing folder is created with mode 0700. An existing one must be a
real folder (not a symlink) owned by this user, else `SkillgitError` naming it, its owner and the fix — another
user who made that name first could otherwise read, swap or plant the files skillgit puts there (a workspace
whose code a verifier runs, a prompt quoting a transcript). An existing folder of ours that others may enter (an
older skillgit made it 0755) is set to 0700. `is_ours(folder)` is the same test without creating or raising, for
code that only cleans up. Where the system has no user ids (Windows), both accept any real folder.

Contract of `recorded_folder(prefix)` / `sweep_recorded()`: an agent run that is not part of a workspace pool (a
command student's rollout: `skillgit-rollout-`; an activation-track agent run: `skillgit-activation-`) gets a new
private folder `<tmp>/<prefix><pid>-<random>` (mkdtemp: mode 0700, an unguessable name), where it passes
`record=folder` to `process.run`. Its owner removes it when the run ends; when skillgit was killed (kill -9) first,
the next `sweep_recorded` of this user — called when a `CommandStudent` or an `AgentRunner` is built — kills what
its commands left running (`process.kill_recorded`) and removes it: every folder of RECORDED_PREFIXES whose pid is
no live process, owned by this user (never this process's own, never another user's).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from skillgit import process
from skillgit.errors import SkillgitError

ROLLOUT_PREFIX = "skillgit-rollout-"  # a command student's rollout (skillgit/llm/command.py)
ACTIVATION_PREFIX = "skillgit-activation-"  # an activation-track agent run (skillgit/library/agent.py)
RECORDED_PREFIXES = (ROLLOUT_PREFIX, ACTIVATION_PREFIX)
_RECORDED = re.compile(f"(?:{'|'.join(map(re.escape, RECORDED_PREFIXES))})([0-9]+)-[^/]+")


def _why_not_ours(st: os.stat_result) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to user id {st.st_uid}, not to you ({os.getuid()})"
    return None


def is_ours(folder: Path) -> bool:
    try:
        return _why_not_ours(folder.lstat()) is None
    except OSError:
        return False


def claim(folder: Path) -> Path:
    """See the module contract; returns `folder`."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = folder.lstat()
    why = _why_not_ours(st)
    if why is not None:
        raise SkillgitError(f"{folder} cannot hold skillgit's files: {why}, so someone else could read or change "
                            "what skillgit puts there", f"remove {folder} (ask its owner or root if it is not "
                            "yours), or point TMPDIR at a folder of your own")
    if hasattr(os, "getuid") and st.st_mode & 0o077:
        folder.chmod(0o700)
    return folder


def recorded_folder(prefix: str, parent: Path | None = None) -> Path:
    """A new folder `<parent or tmp>/<prefix><pid>-<random>` for one agent run and its records (module contract);
    `prefix` is one of RECORDED_PREFIXES, so that `sweep_recorded` finds it."""
    if prefix not in RECORDED_PREFIXES:
        raise ValueError(f"unknown recorded folder prefix {prefix!r}")
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


def sweep_recorded(parent: Path | None = None) -> int:
    """Kill what the agent runs of a skillgit that is gone left running and remove their folders (module contract),
    in `parent` (default: the system's temporary folder); returns how many folders were removed."""
    from skillgit.store.lock import alive

    where = Path(parent or tempfile.gettempdir())
    try:
        names = os.listdir(where)
    except OSError:
        return 0
    removed = 0
    for name in names:
        match = _RECORDED.fullmatch(name)
        if match is None or int(match[1]) == os.getpid() or alive(int(match[1])) or not is_ours(where / name):
            continue
        process.kill_recorded(where / name)
        shutil.rmtree(where / name, ignore_errors=True)
        removed += 1
    return removed
