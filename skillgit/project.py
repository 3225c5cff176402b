"""Finding the project a command works on: the git repository around a folder and its skillgit.yaml.

Path logic, one `git rev-parse` (through the store's repository API, `store.repository.locate`, which also says
where the repository's git dir is: the project keeps it as `Project.location`, and `Store.open(project.location …)`
opens the repository without running git again) and config loading; no git is spelled here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from skillgit import config_layers
from skillgit.config import Config
from skillgit.errors import GitStateError

if TYPE_CHECKING:
    from skillgit.store.repository import Location

CONFIG_NAME = "skillgit.yaml"


@dataclass(frozen=True)
class Project:
    root: Path  # the repository's top-level folder (its working tree)
    config: Config
    config_path: Path | None  # None when the project has no skillgit.yaml (all defaults)
    # which layer set each key (a file's path or the command line; `config_layers`); a key not here is a default
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    user_config: Path | None = None  # the user config's path when it exists (`config_layers.user_config_path`)
    # where git found the repository (`locate`), for `Store.open`; None for a project made without asking git
    location: Location | None = field(default=None, compare=False)


def locate(start: Path | None = None) -> Location:
    """Where the git repository at or above `start` is, as one `git rev-parse` there tells: its working tree's
    top folder (`find_root`), git dir, common dir and object format. GitStateError when there is none.

    A `.git` at or above `start` (a folder, or a file for worktrees and submodules) only nominates a repository:
    git confirms it, so a stray or empty `.git` folder (an empty `/tmp/.git`) is not taken for one. Outside any
    `.git` no git runs. GIT_DIR and friends are ignored (skillgit/gitenv.py): the folder decides."""
    here = (start or Path.cwd()).resolve()
    hint = "run `skillgit init` here, or pass --repo PATH to a repository"
    if not any((folder / ".git").exists() for folder in (here, *here.parents)):
        raise GitStateError(f"not a git repository: {here}", hint)
    cwd = next(folder for folder in (here, *here.parents) if folder.is_dir())
    from skillgit.store.repository import locate as locate_repository

    found, err = locate_repository(cwd)
    if found is None:
        said = err.strip().splitlines()
        raise GitStateError(f"not a git repository: {here}" + (f" (git: {said[-1]})" if said else ""), hint)
    return found


def find_root(start: Path | None = None) -> Path:
    """The working tree's top-level folder of the git repository at or above `start`, as git sees it (`locate`:
    a stray `.git` is not a repository; GIT_DIR and friends are ignored)."""
    return locate(start).root.resolve()


def open_project(repo: Path | None = None, config: Path | None = None,
                 overrides: tuple[str, ...] | list[str] = ()) -> Project:
    """The project at or above `repo`: its config is the user config, then the project's file (`config`, default
    skillgit.yaml at the root; none: defaults), then `overrides` (`config_layers`)."""
    location = locate(repo)
    root = location.root.resolve()
    path = config if config is not None else root / CONFIG_NAME
    found = path if config is not None or path.exists() else None
    user = config_layers.existing_user_config()
    origins: dict[str, str] = {}
    cfg = config_layers.load(found, list(overrides), user, origins)
    return Project(root, cfg, found, origins, user, location)
