"""Which library skill a run, a step or a commit belongs to: how `log`, `status`, `show`, `report`, `pr` and
`check` group by skill when `skills:` is configured.

Contract:
- `library(cfg, root)`: the configured skills (name → `SkillEntry`), empty for a single-skill project — every view
  then stays exactly as it was.
- `run_skill(store, run, cfg)`: the skill a run trained — read from the run's own record (its saved
  `config.yaml`'s `skill.path`, matched against the library's paths); for the activation track, whose steps have no
  run record, from its run id (`activation-<skill>-…`); for `train --all`, from `<run>.<skill>`. None when it is
  none of the library's (a run from before the library, a collaborator's).
- `skill_of_commit(store, sha, cfg)`: the library skill whose file a commit changed (its first parent's diff), for
  `show` on any revision.
- `project_for(repo, config, skill, extra)`: the project with `--skill NAME`'s overrides applied (its path, branch
  and tasks), or the configured one; `store_for(project)`: its store — in a library project whose `skill.path`
  names no file, the first library skill's (one history per branch: the log is the branch's, not a file's).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional

from skillgit.errors import SkillgitError

if TYPE_CHECKING:
    from skillgit.config import Config
    from skillgit.library import config as lib_config
    from skillgit.store import Store


def __getattr__(name: str) -> Any:
    """`views.lib_config`: the library's config module, imported when a view first needs it (a project without
    `skills:` never does: `log` and `status` read no library)."""
    if name == "lib_config":
        from skillgit.library import config

        return config
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def library(cfg: Config, root: Path) -> dict[str, lib_config.SkillEntry]:
    if not cfg.skills:
        return {}
    from skillgit.library import config as lib_config

    return lib_config.entries(cfg, root)


def skill_file(path: str) -> str:
    """A library entry's path as a skill file (a package folder → its SKILL.md)."""
    path = path.rstrip("/")
    return path if path.endswith(".md") else f"{path}/SKILL.md"


def _by_path(cfg: Config, root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, e in library(cfg, root).items():
        out[e.path.rstrip("/")] = name
        out[skill_file(e.path)] = name
    return out


def run_skill(store: Store, run: str, cfg: Config, _paths: dict[str, str] | None = None) -> str | None:
    paths = _paths if _paths is not None else _by_path(cfg, store.repo.root)  # (callers of many runs pass it)
    names = set(paths.values())
    if not names or not run:
        return None
    head, dot, tail = run.rpartition(".")
    if dot and tail in names:
        return tail
    if run.startswith("activation-"):
        found = [n for n in names if run.startswith(f"activation-{n}-")]
        if found:
            return max(found, key=len)
    files = store.load_run(run) or {}
    import yaml  # (here: a project without `skills:` never reads a run's config, and `log` imports no YAML)

    try:
        data = yaml.safe_load(files.get("config.yaml", "")) or {}
    except (yaml.YAMLError, RecursionError):  # (a run ref arrives through `pull`: nesting too deep for the parser)
        return None
    path = (data.get("skill") or {}).get("path") if isinstance(data, dict) else None
    return paths.get(str(path).rstrip("/")) if path else None


def run_skills(store: Store, runs: Iterable[str], cfg: Config) -> dict[str, str]:
    """run → skill for the runs that belong to a library skill (each run's record read once)."""
    paths = _by_path(cfg, store.repo.root)
    out: dict[str, str] = {}
    for run in dict.fromkeys(runs):
        skill = run_skill(store, run, cfg, paths)
        if skill:
            out[run] = skill
    return out


def skill_of_commit(store: Store, sha: str, cfg: Config) -> str | None:
    """The library skill whose file `sha` changed against its first parent (None: none, or not a library)."""
    paths = _by_path(cfg, store.repo.root)
    if not paths:
        return None
    parents = store.repo.parents(sha)
    diff = store.repo.diff(parents[0] if parents else store.repo.empty_tree(), sha, sorted(paths))
    for line in diff.splitlines():
        if line.startswith(("+++ b/", "--- a/")):
            path = line[6:]
            for known, name in paths.items():
                if path == known or path.startswith(known + "/"):
                    return name
    return None


def newest_run(store: Store, cfg: Config, skill: str) -> str | None:
    """The newest run (by its last save) that trained `skill`."""
    paths = _by_path(cfg, store.repo.root)
    return next((r for r in store.list_runs() if run_skill(store, r, cfg, paths) == skill), None)


def project_for(repo: Optional[Path], config: Optional[Path], skill: Optional[str], extra: list[str] | None = None
                ) -> Any:
    from skillgit.project import open_project

    if not skill:
        return open_project(repo, config, list(extra or []))
    base = open_project(repo, config, list(extra or []))
    from skillgit.library import config as lib_config

    entry = lib_config.entry(base.config, skill, base.root)
    return open_project(repo, config, lib_config.overrides(entry) + list(extra or []))


def store_for(project: Any) -> Store:
    from skillgit.store import Store

    cfg = project.config
    where = project.location or project.root  # (where git found it: not asked again)
    try:
        return Store.open(where, cfg.skill.path, cfg.skill.branch)
    except SkillgitError:
        found = list(library(cfg, project.root).values())
        if not found:
            raise
        first = found[0]
        return Store.open(where, skill_file(first.path), first.branch or cfg.skill.branch)


def step_skill(store: Store, detail: Any, cfg: Config) -> str | None:
    """The library skill of a step (`read.show`'s detail): its run's skill, else the file its commit changed."""
    if not cfg.skills:
        return None
    from skillgit.store import refs as R

    run = detail.trailers.get(R.TRAILER_RUN, "")
    return (run_skill(store, run, cfg) if run else None) or skill_of_commit(store, detail.sha, cfg)


def with_own_total(store: Store, progress: Any) -> Any:
    """A `train --all` skill run's progress with the skill's own total steps (`library.all.own_total`) in place of
    its last turn's cap; any other run's as it is."""
    if "." not in progress.run:  # not `<library run>.<skill>` (and `status` of any other run imports no library)
        return progress
    from skillgit.library.all import own_total

    total = own_total(store.git_dir, progress.run)
    return progress.replace(total_steps=total) if total is not None else progress
