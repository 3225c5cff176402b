"""The `skills:` section of skillgit.yaml: a library of named skills, each with its own task and trigger sets.

```yaml
skills:
  deploy:
    path: .claude/skills/deploy/SKILL.md   # required: the skill file (or package folder), relative to the root
    tasks: tasks/deploy.jsonl              # its body-track tasks (env.tasks while it trains)
    triggers: triggers/deploy.jsonl        # its trigger cases (the activation track)
    branch: main                           # its skill branch (default: skill.branch)
```
or a list of paths and globs, each expanding to the `SKILL.md` packages it matches (named by their front
matter's `name`, else their folder), with `{name}` in `tasks` / `triggers` filled in per skill:
```yaml
skills:
  - .claude/skills/*                       # every package folder holding a SKILL.md
  - {path: "plugins/*/skills/*", tasks: "tasks/{name}.jsonl", triggers: triggers.jsonl}
```
`entries(cfg, root)` validates it: an unknown key or a missing path is a ConfigError naming `skills.<name>.<key>`
(`skills[<i>].<key>` in the list form) and the fix; a path or glob that leaves the repository is refused, and so is
a match that resolves outside it (a symlink) or lies in `.git`; a glob that matches no package, or two packages
with one name, is an error naming the pattern. `overrides(entry)` are the `--set` lines that make the named skill
the configuration's skill (`skill.path`, `skill.branch`, `env.tasks`), so the body track trains one library skill
exactly as it trains a single skill.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from skillgit.config import Config
from skillgit.errors import ConfigError
from skillgit.library.model import NAME_RE

KEYS = ("path", "tasks", "triggers", "branch")
GLOB_CHARS = "*?["


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


def entries(cfg: Config, root: Path | None = None) -> dict[str, SkillEntry]:
    """The library's skills, name → entry, in the config's order (globs expanded against the files under `root`;
    the list form needs it, the mapping form does not)."""
    section = cfg.skills
    if not section:
        return {}
    if isinstance(section, (list, tuple)):
        if root is None:
            raise ValueError("skills: the list form (paths and globs) is expanded against the repository: pass root")
        return _expand_all(section, Path(root))
    if not isinstance(section, dict):
        raise ConfigError(f"skills: expected a mapping (name → path, tasks, triggers) or a list of paths and globs, "
                          f"got {type(section).__name__}", 'e.g. `skills: [".claude/skills/*"]`')
    out: dict[str, SkillEntry] = {}
    for name, spec in section.items():
        where = f"skills.{name}"
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise ConfigError(f"{where}: {name!r} is not a skill name",
                              "use lowercase letters, digits and hyphens (the skill's `name`)")
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: expected a mapping with path (and tasks, triggers, branch)",
                              f"e.g. `{where}: {{path: .claude/skills/{name}/SKILL.md}}`")
        _known_keys(spec, where)
        if "path" not in spec:
            raise ConfigError(f"{where}.path is missing", f"give the skill's file: `{where}.path: …/SKILL.md`")
        if isinstance(spec["path"], str) and any(c in spec["path"] for c in GLOB_CHARS):
            raise ConfigError(f"{where}.path: {spec['path']!r} is a glob, but a named entry is one skill",
                              f"list globs as items of `skills:` (e.g. `skills: [{spec['path']!r}]`), or name the "
                              "one skill's file")
        branch = spec.get("branch")
        if branch is not None and (not isinstance(branch, str) or not branch.strip()):
            raise ConfigError(f"{where}.branch: expected a branch name", "e.g. main")
        out[name] = SkillEntry(name, _relative(spec["path"], f"{where}.path"),
                               _relative(spec["tasks"], f"{where}.tasks") if spec.get("tasks") is not None else None,
                               _relative(spec["triggers"], f"{where}.triggers")
                               if spec.get("triggers") is not None else None, branch)
    return out


def _known_keys(spec: dict, where: str) -> None:
    for key in spec:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            raise ConfigError(f"unknown config key '{where}.{key}'",
                              f"did you mean '{where}.{close[0]}'?" if close else f"use {', '.join(KEYS)}")


def entry(cfg: Config, name: str, root: Path | None = None) -> SkillEntry:
    found = entries(cfg, root)
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


# ---------------------------------------------------------------------------------------------- the list form
def _expand_all(items: Any, root: Path) -> dict[str, SkillEntry]:
    out: dict[str, SkillEntry] = {}
    for i, item in enumerate(items):
        where = f"skills[{i}]"
        spec = {"path": item} if isinstance(item, str) else item
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: expected a path, a glob or a mapping with path (and tasks, triggers, "
                              "branch)", 'e.g. `- .claude/skills/*` or `- {path: ".claude/skills/*", tasks: '
                              '"tasks/{name}.jsonl"}`')
        _known_keys(spec, where)
        if "path" not in spec:
            raise ConfigError(f"{where}.path is missing", f"give a path or glob: `{where}.path: .claude/skills/*`")
        pattern = _relative(spec["path"], f"{where}.path")
        branch = spec.get("branch")
        if branch is not None and (not isinstance(branch, str) or not branch.strip()):
            raise ConfigError(f"{where}.branch: expected a branch name", "e.g. main")
        for path in packages(root, pattern, f"{where}.path"):
            name = _name_of(root, path)
            if name in out and out[name].path == path:
                continue  # matched by an earlier item too: that item's settings hold
            if name in out:
                raise ConfigError(f"{where}.path: {path} is a second skill named {name!r} (also {out[name].path})",
                                  "give each skill a unique `name` in its front matter, or narrow the glob")
            out[name] = SkillEntry(name, path, _filled(spec, "tasks", name, where),
                                   _filled(spec, "triggers", name, where), branch)
    return out


def _filled(spec: dict, key: str, name: str, where: str) -> str | None:
    """`spec[key]` with `{name}` filled in, checked as a path inside the repository."""
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}.{key}: expected a path", f'e.g. `{key}: "{key}/{{name}}.jsonl"`')
    return _relative(value.replace("{name}", name), f"{where}.{key}")


def packages(root: Path, pattern: str, where: str) -> list[str]:
    """The skill files `pattern` names under `root` (relative POSIX paths, sorted): a folder counts when it holds a
    SKILL.md, a file when it is Markdown. A match in `.git` or resolving outside `root` is refused."""
    root = Path(root)
    top = root.resolve()
    if not any(c in pattern for c in GLOB_CHARS):
        matches = [root / pattern] if (root / pattern).exists() else []
    else:
        matches = sorted(root.glob(pattern))
    found: list[str] = []
    for match in matches:
        rel = PurePosixPath(match.relative_to(root).as_posix())
        if ".git" in rel.parts:
            continue
        skill = match / "SKILL.md" if match.is_dir() else match
        if not skill.is_file() or skill.suffix.lower() != ".md":
            continue
        try:
            skill.resolve().relative_to(top)
        except ValueError:
            raise ConfigError(f"{where}: {rel.as_posix()} resolves outside the repository (a symbolic link?)",
                              "skills must be files inside the repository: remove the link or narrow the glob"
                              ) from None
        found.append(skill.relative_to(root).as_posix())
    if not found:
        raise ConfigError(f"{where}: {pattern!r} matches no skill (a folder holding a SKILL.md, or a .md file) under "
                          f"the repository", "check the pattern; it is relative to the repository root, e.g. "
                          "`.claude/skills/*`")
    return found


def _name_of(root: Path, path: str) -> str:
    """A package's skill name: its front matter's `name`, else its folder's (or file's) name."""
    from skillgit.errors import SkillgitError
    from skillgit.library.model import front_matter

    p = PurePosixPath(path)
    fallback = p.parent.name if p.name == "SKILL.md" else p.stem.lower()
    try:
        data, _ = front_matter((Path(root) / path).read_text(encoding="utf-8"), path)
        name = data.get("name")
    except (SkillgitError, OSError, UnicodeDecodeError):
        name = None
    name = name if isinstance(name, str) and name else fallback
    if not NAME_RE.match(name):
        raise ConfigError(f"skills: {path} is named {name!r}, not a skill name",
                          "give it a front matter `name:` of lowercase letters, digits and hyphens")
    return name
