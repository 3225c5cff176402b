"""What every demo (`skillgit demo`, `--agentic`, `--library`, `--sleep`) does with its project folder.

- `demo_folder(folder, prefix)`: a context manager giving `(path, kept)`: `folder` resolved and kept when the user
  gave one (`--dir`), else `project` in a new temporary folder that is deleted on the way out, whatever happens.
- `init_demo_repository(folder, hint)`: the demo's repository: a new one on `main` in `folder`, which must be new
  or empty (a SkillgitError with `hint` otherwise, before anything is written), with the demo's git identity in
  the repository's own config for each part of it git knows none of (a fresh machine may have no identity at
  all); the user's global config is never written.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from skillgit.errors import SkillgitError
from skillgit.store.repository import Repository, init_repository

IDENTITY = (("user.name", "skillgit demo"), ("user.email", "demo@skillgit.invalid"))


@contextlib.contextmanager
def demo_folder(folder: Path | None, prefix: str = "skillgit-demo-") -> Iterator[tuple[Path, bool]]:
    """See the module contract."""
    if folder is not None:
        yield Path(folder).resolve(), True
        return
    parent = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield parent / "project", False
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def init_demo_repository(folder: Path, hint: str = "pass --dir with a new or empty folder") -> Repository:
    """See the module contract."""
    if folder.exists() and not folder.is_dir():  # (iterdir raised NotADirectoryError: a traceback)
        raise SkillgitError(f"{folder} is a file, not a folder", hint)
    if folder.exists() and any(folder.iterdir()):
        raise SkillgitError(f"{folder} is not empty", hint)
    folder.mkdir(parents=True, exist_ok=True)
    repo = init_repository(folder, "main")
    for key, value in IDENTITY:
        if not repo.config_get_all(key):
            repo.config_set(key, value)
    return repo
