"""The `skills:` section of skillgit.yaml: a library of named skills, each with its own task and trigger sets.

```yaml
skills:
  deploy:
    path: .claude/skills/deploy/SKILL.md   # required: the skill file (or package folder), relative to the root
    tasks: tasks/deploy.jsonl              # its body-track tasks (env.tasks while it trains)
    triggers: triggers/deploy.jsonl        # its trigger cases (the activation track)
    branch: main                           # its skill branch (default: skill.branch)
```
`entries(cfg)` validates it: an unknown key or a missing path is a ConfigError naming `skills.<name>.<key>` and
the fix; a path that leaves the repository is refused. `overrides(entry)` are the `--set` lines that make the
named skill the configuration's skill (`skill.path`, `skill.branch`, `env.tasks`), so the body track trains one
library skill exactly as it trains a single skill.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from skillgit.config import Config
from skillgit.errors import ConfigError
from skillgit.library.model import NAME_RE

KEYS = ("path", "tasks", "triggers", "branch")


@dataclass(frozen=True)
class SkillEntry:
    name: str
    path: str
    tasks: str | None = None
    triggers: str | None = None
    branch: str | None = None


def _relative(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: expected a path relative to the repository root, got {value!r}"[:200],
                          f"e.g. `{key}: .claude/skills/deploy/SKILL.md`")
    p = PurePosixPath(value.strip())
    if p.is_absolute() or ".." in p.parts:
        raise ConfigError(f"{key}: {value!r} is outside the repository", "give a path relative to the root")
    return p.as_posix()


def entries(cfg: Config) -> dict[str, SkillEntry]:
    out: dict[str, SkillEntry] = {}
    for name, spec in (cfg.skills or {}).items():
        where = f"skills.{name}"
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise ConfigError(f"{where}: {name!r} is not a skill name",
                              "use lowercase letters, digits and hyphens (the skill's `name`)")
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: expected a mapping with path (and tasks, triggers, branch)",
                              f"e.g. `{where}: {{path: .claude/skills/{name}/SKILL.md}}`")
        for key in spec:
            if key not in KEYS:
                close = difflib.get_close_matches(str(key), KEYS, n=1)
                raise ConfigError(f"unknown config key '{where}.{key}'",
                                  f"did you mean '{where}.{close[0]}'?" if close else f"use {', '.join(KEYS)}")
        if "path" not in spec:
            raise ConfigError(f"{where}.path is missing", f"give the skill's file: `{where}.path: …/SKILL.md`")
        branch = spec.get("branch")
        if branch is not None and (not isinstance(branch, str) or not branch.strip()):
            raise ConfigError(f"{where}.branch: expected a branch name", "e.g. main")
        out[name] = SkillEntry(name, _relative(spec["path"], f"{where}.path"),
                               _relative(spec["tasks"], f"{where}.tasks") if spec.get("tasks") is not None else None,
                               _relative(spec["triggers"], f"{where}.triggers")
                               if spec.get("triggers") is not None else None, branch)
    return out


def entry(cfg: Config, name: str) -> SkillEntry:
    found = entries(cfg)
    if name not in found:
        if not found:
            raise ConfigError(f"--skill {name}: skillgit.yaml has no `skills:` section",
                              "list the library's skills under `skills:` (name → path, tasks, triggers)")
        raise ConfigError(f"--skill {name}: no such skill in `skills:`", f"choose one of {', '.join(found)}")
    return found[name]


def overrides(e: SkillEntry) -> list[str]:
    out = [f"skill.path={e.path}"]
    if e.branch:
        out.append(f"skill.branch={e.branch}")
    if e.tasks:
        out.append(f"env.tasks={e.tasks}")
    return out
