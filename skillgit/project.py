"""Finding the project a command works on: the git repository around a folder and its skillgit.yaml.

Pure path logic plus config loading; no git library here (the store opens the repository itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillgit.config import Config, load_config
from skillgit.errors import GitStateError

CONFIG_NAME = "skillgit.yaml"


@dataclass(frozen=True)
class Project:
    root: Path  # the repository's top-level folder (its working tree)
    config: Config
    config_path: Path | None  # None when the project has no skillgit.yaml (all defaults)


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above `start` that holds `.git` (a folder, or a file for worktrees)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    raise GitStateError(f"not a git repository: {here}",
                        "run `skillgit init` here, or pass --repo PATH to a repository")


def open_project(repo: Path | None = None, config: Path | None = None,
                 overrides: tuple[str, ...] | list[str] = ()) -> Project:
    root = find_root(repo)
    path = config if config is not None else root / CONFIG_NAME
    if config is None and not path.exists():
        return Project(root, load_config(None, overrides), None)
    return Project(root, load_config(path, overrides), path)
