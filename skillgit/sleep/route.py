"""Routing mined tasks to the skills of a library (issue 25, "Routing in sleep").

Contracts:
- A mined task carries the skill its sessions invoked (`MinedTask.skill`, from the readers' `Turn.skills`; see
  sleep/units.py and `mine.invoked_skill`).
- `route(tasks, skills, default)` maps every library skill name to its tasks, in library order: a task goes to the
  skill it was invoked with when that skill is in the library, else (no skill fired, or one outside the library:
  a personal or plugin skill) to `default`. Every task lands in exactly one skill; the order of tasks is kept.
- `default_skill(cfg, names)`: the library skill whose path is the configuration's `skill.path`, else the first.
- `for_configured_skill(cfg, tasks, root)`: the tasks of the skill the configuration trains — every task without a
  library; with one, those routed to it. A night with a library routes every skill's tasks and trains each in turn
  (sleep/library_night.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from skillgit.config import Config
from skillgit.errors import ConfigError
from skillgit.sleep.mine import MinedTask


def route(tasks: Iterable[MinedTask], skills: Sequence[str], default: str) -> dict[str, tuple[MinedTask, ...]]:
    """See the module contract."""
    if default not in skills:
        raise ConfigError(f"the default skill {default!r} is not in the library ({', '.join(skills) or 'empty'})",
                          "name one of the `skills:` entries")
    routed: dict[str, list[MinedTask]] = {name: [] for name in skills}
    for task in tasks:
        routed[task.skill if task.skill in routed else default].append(task)
    return {name: tuple(found) for name, found in routed.items()}


def default_skill(cfg: Config, library: dict[str, str]) -> str:
    """The library skill (name → path) the configuration's own `skill.path` is, else the first one."""
    if not library:
        raise ConfigError("no `skills:` library is configured", "add a `skills:` section to route tasks by skill")
    own = PurePosixPath(cfg.skill.path).as_posix()
    for name, path in library.items():
        if PurePosixPath(path).as_posix() == own:
            return name
    return next(iter(library))


def for_configured_skill(cfg: Config, tasks: Sequence[MinedTask], root: Path) -> tuple[MinedTask, ...]:
    """The tasks a night training `cfg`'s skill replays: all of them without a `skills:` library; with one, those
    routed to the library skill the configuration trains (`default_skill`: the one whose path is `skill.path`,
    which also receives the tasks no library skill was invoked for)."""
    from skillgit.library.config import entries

    library = {name: e.path for name, e in entries(cfg, root).items()}  # (the list form's globs need the root)
    if not library:
        return tuple(tasks)
    own = default_skill(cfg, library)
    return route(tasks, list(library), own)[own]
