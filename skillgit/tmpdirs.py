"""Folders skillgit keeps under the shared temporary folder (`/tmp`), where every local user may create names.

Contract of `claim(folder)`: `folder` (a fixed, guessable name such as `<tmp>/skillgit-ws-<hash>`) is made ours
and private before anything is put in it. A missing folder is created with mode 0700. An existing one must be a
real folder (not a symlink) owned by this user, else `SkillgitError` naming it, its owner and the fix — another
user who made that name first could otherwise read, swap or plant the files skillgit puts there (a workspace
whose code a verifier runs, a prompt quoting a transcript). An existing folder of ours that others may enter (an
older skillgit made it 0755) is set to 0700. `is_ours(folder)` is the same test without creating or raising, for
code that only cleans up. Where the system has no user ids (Windows), both accept any real folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from skillgit.errors import SkillgitError


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
