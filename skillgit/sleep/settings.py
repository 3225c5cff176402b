"""The `sleep:` section of skillgit.yaml, and the project a night trains in.

Contracts:
- `SleepSettings.from_mapping(data)` validates the section: an unknown key, a wrong type or a value out of range is
  a `ConfigError` naming `sleep.<key>`, the bad value and what is allowed ("did you mean …?" for typos). Every key
  is optional; `SleepSettings()` is the default.
- `SleepSettings.with_options(**values)` applies command-line options over the file (None = not given).
- `open_sleep_project(repo, config, overrides)` reads skillgit.yaml (with its `_base_` files) once, takes the
  `sleep:` section out, and builds the rest as the normal `Config` — so a `sleep:` section works whether or not
  `skillgit.config` knows the key. `SleepProject.night(extra)` builds the same config with more `key=value`
  overrides (the night's branch and budgets) and validates it like any config.
- `branch_for(date)` fills `{date}` into `sleep.branch`; it is refused (ConfigError naming `sleep.branch`) when it
  names the skill branch, a `candidates/` branch, or is not a valid branch name — a night never trains on the skill
  branch.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from skillgit import config_layers
from skillgit.config import Config, apply_overrides, config_from_dict
from skillgit.errors import ConfigError
from skillgit.project import CONFIG_NAME, Project, find_root

DEFAULT_TASKS_FILE = ".skillgit/sleep/tasks.jsonl"
DEFAULT_REPORT_DIR = ".skillgit/sleep"
DEFAULT_BRANCH = "sleep/{date}"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# null = no limit (recall_k: null = optimizer.recall_k)
_NO_LIMIT = frozenset({"max_tasks", "max_steps", "max_calls", "max_tokens", "max_cost_usd", "recall_k"})
_DOLLARS = frozenset({"max_cost_usd"})
_OPTION = {"schedule_at": "--at", "max_cost_usd": "--max-cost", "tasks_file": "--tasks",
           "crontab_file": "--crontab-file"}  # key → its CLI option


@dataclass(frozen=True)
class SleepSettings:
    branch: str = DEFAULT_BRANCH  # where a night's training lands; `{date}` is the night (YYYY-MM-DD)
    home: str = "~"  # whose agent sessions are harvested
    sources: tuple[str, ...] = ()  # readers to use; empty = every known one
    tasks_file: str = DEFAULT_TASKS_FILE  # the reviewable mined-task file (relative to the repository root)
    report_dir: str = DEFAULT_REPORT_DIR  # where `<date>.md` night reports are written
    min_sessions: int = 2  # a task must recur in this many sessions (or have failed) to be mined
    threshold: float = 0.3  # similarity above which two requests are the same task
    max_tasks: int | None = 200  # per night: tasks replayed (train + val + test)
    max_steps: int | None = None  # per night: training steps (train.max_steps)
    max_calls: int | None = None  # per night: model calls (budget.max_calls)
    max_tokens: int | None = None  # per night: tokens (budget.max_tokens)
    max_cost_usd: float | None = None  # per night: dollars (budget.max_cost_usd)
    val_share: float = 0.3  # a task whose hash share is below this is a val task
    test_share: float = 0.15  # the next share goes to test, once there are test_min_tasks tasks
    test_min_tasks: int = 10
    scrub_patterns: tuple[str, ...] = ()  # extra regular expressions masked in harvested text
    scrub_env: tuple[str, ...] = ()  # environment variables whose values are masked
    schedule_at: str = "03:00"  # `skillgit sleep schedule` default time (HH:MM, local)
    crontab_file: str = ""  # schedule: keep the cron block in this file, not the user's crontab (sleep/schedule.py)
    judge_over_chars: int = 400  # a longer accepted answer is judged by the teacher (as a reference), not matched
    # a night's reflect recalls the k most similar trajectories of earlier nights and steps (optimizer.recall_k for
    # the night, over every branch of the skill: loop/recall.py); None: optimizer.recall_k as configured
    recall_k: int | None = None

    @classmethod
    def from_mapping(cls, data: Any, where: str = "sleep") -> SleepSettings:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__} {data!r}"[:200],
                              "write it as `sleep:` followed by indented `key: value` lines")
        names = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for raw_key, value in data.items():
            key = str(raw_key)
            if key not in names:
                close = difflib.get_close_matches(key, list(names), n=1, cutoff=0.6)
                raise ConfigError(f"{where}.{key}: unknown key",
                                  f"did you mean '{where}.{close[0]}'?" if close
                                  else f"known keys: {', '.join(sorted(names))}")
            values[key] = _coerce(f"{where}.{key}", value, names[key].default)
        settings = cls(**values)
        settings.check(where)
        return settings

    def with_options(self, **options: Any) -> SleepSettings:
        """These settings with the given command-line values (None = not given) applied and checked."""
        given = {k: v for k, v in options.items() if v is not None}
        unknown = set(given) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"unknown sleep settings: {sorted(unknown)}")
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
        updated = dataclasses.replace(self, **given)
        updated.check("option")
        return updated

    def check(self, where: str = "sleep") -> None:
        """ConfigError naming the first setting out of range (its key as `where.key`, or its option for "option")."""
        problem = self._number_problem() or self._text_problem()
        if problem is not None:
            key, value, allowed = problem
            name = _OPTION.get(key, f"--{key.replace('_', '-')}") if where == "option" else f"{where}.{key}"
            raise ConfigError(f"{name}: {value!r} is not allowed", allowed)

    def _number_problem(self) -> tuple[str, Any, str] | None:
        for key in ("min_sessions", "test_min_tasks", "judge_over_chars"):
            if getattr(self, key) < 1:
                return key, getattr(self, key), "use a whole number of 1 or more"
        for key in ("max_tasks", "max_steps", "max_calls", "max_tokens"):
            value = getattr(self, key)
            if value is not None and value < 1:
                return key, value, "use a whole number of 1 or more, or leave it out for no limit"
        if self.recall_k is not None and self.recall_k < 0:
            return "recall_k", self.recall_k, "use a whole number of 0 (off) or more, or leave it out"
        if self.max_cost_usd is not None and self.max_cost_usd <= 0:
            return "max_cost_usd", self.max_cost_usd, "use a positive amount of dollars, e.g. 2.50"
        for key in ("threshold", "val_share", "test_share"):
            if not 0.0 < getattr(self, key) < 1.0:
                return key, getattr(self, key), "use a number between 0 and 1 (exclusive)"
        if self.val_share + self.test_share >= 1.0:
            return ("test_share", self.test_share,
                    f"val_share + test_share must stay below 1 (val_share is {self.val_share})")
        return None

    def _text_problem(self) -> tuple[str, Any, str] | None:
        if not self.branch.strip() or "{" in self.branch.replace("{date}", ""):
            return "branch", self.branch, "a branch name; `{date}` is the only placeholder, e.g. sleep/{date}"
        if not re.fullmatch(r"(?:[01]\d|2[0-3]):[0-5]\d", self.schedule_at):
            return "schedule_at", self.schedule_at, "a time of day as HH:MM (24 hours), e.g. 03:00"
        for key in ("tasks_file", "report_dir", "home"):
            if not str(getattr(self, key)).strip():
                return key, getattr(self, key), "a path"
        from skillgit.sleep.readers import sources

        known = sources()
        for source in self.sources:
            if source not in known:
                close = difflib.get_close_matches(source, known, n=1, cutoff=0.6)
                return "sources", source, ((f"did you mean '{close[0]}'? " if close else "")
                                           + f"known sources: {', '.join(known)}")
        for pattern in self.scrub_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                return "scrub_patterns", pattern, f"a Python regular expression ({exc})"
        return None

    def branch_for(self, date: str, skill_branch: str) -> str:
        """The night's branch (see the module contract)."""
        check_date(date)
        name = self.branch.replace("{date}", date).strip()
        short = name.removeprefix("refs/heads/")
        if short == skill_branch.removeprefix("refs/heads/"):
            raise ConfigError(f"sleep.branch: {self.branch!r} names the skill branch '{skill_branch}'",
                              "a night never trains on the skill branch; use e.g. sleep/{date}")
        if short.startswith("candidates/") or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/-]*", short) \
                or ".." in short or short.endswith((".lock", "/", ".")) or "//" in short:
            raise ConfigError(f"sleep.branch: {name!r} is not a usable branch name",
                              "use letters, digits, '.', '_', '-' and '/', e.g. sleep/{date}")
        return short

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


def check_date(date: str) -> str:
    if not _DATE.fullmatch(date or ""):
        raise ConfigError(f"--date: {date!r} is not a date", "write the night as YYYY-MM-DD, e.g. 2026-01-31")
    return date


def _coerce(key: str, value: Any, default: Any) -> Any:
    """`value` as the type of `default` (None-able keys accept null); ConfigError naming `key` otherwise."""
    if isinstance(default, tuple):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
            raise ConfigError(f"{key}: expected a list of strings, got {value!r}"[:200], f"e.g. `{key.split('.')[-1]}: "
                                                                                      "[claude, codex]`")
        return tuple(items)
    if value is None:
        if key.rpartition(".")[2] in _NO_LIMIT:
            return None
        raise ConfigError(f"{key}: must not be empty", f"give a value or remove the key (default: {default!r})")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}", "write true or false")
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected text, got {type(value).__name__} {value!r}"[:200],
                              "quote the value if YAML reads it as something else")
        return value
    wants_float = isinstance(default, float) or key.rpartition(".")[2] in _DOLLARS
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (not wants_float and isinstance(value, float)):
        kind = "a number" if wants_float else "a whole number"
        raise ConfigError(f"{key}: expected {kind}, got {type(value).__name__} {value!r}"[:200], f"write {kind}")
    return float(value) if wants_float else int(value)


# ---------------------------------------------------------------------------------------------- the project
@dataclass(frozen=True)
class SleepProject:
    """A project as a night sees it: the normal `Project`, the sleep settings, and what built the config (so the
    night can add overrides and rebuild it)."""

    project: Project
    settings: SleepSettings
    data: dict[str, Any] = field(default_factory=dict)  # the merged config mapping without `sleep:`
    overrides: tuple[str, ...] = ()

    @property
    def root(self) -> Path:
        return self.project.root

    @property
    def config(self) -> Config:
        return self.project.config

    def night(self, extra: Sequence[str]) -> Project:
        """The project with `extra` overrides after the user's (a night's branch and budgets)."""
        cfg = config_from_dict(apply_overrides(self.data, [*self.overrides, *extra]))
        return dataclasses.replace(self.project, config=cfg)

    def path(self, relative: str) -> Path:
        """`relative` under the repository root (an absolute path as given). One that leaves the repository — `..`,
        or a symbolic link in it (a committed `.skillgit -> /elsewhere`: the task file and night reports were
        written there) — is refused."""
        path = Path(relative).expanduser()
        if path.is_absolute():
            return path
        real, root = Path(os.path.realpath(self.root / path)), Path(os.path.realpath(self.root))
        if real != root and root not in real.parents:
            raise ConfigError(f"{relative} resolves to {real}, outside the repository",
                              "a relative sleep path must stay in the repository: remove the symbolic link on its "
                              "way (`ls -l` its folders), or give an absolute path")
        return self.root / path


def open_sleep_project(repo: Path | None = None, config: Path | None = None,
                       overrides: Sequence[str] = ()) -> SleepProject:
    """See the module contract."""
    root = find_root(repo)
    path = config if config is not None else root / CONFIG_NAME
    has_file = config is not None or path.exists()
    # `project_data` resolves the user config and `_base_` files exactly as open_project does; `sleep:` is ours, so
    # it is taken out before the rest is validated.
    user = config_layers.existing_user_config()
    data: dict[str, Any] = config_layers.project_data(Path(path) if has_file else None, user=user)
    section = data.pop("sleep", None)
    settings = SleepSettings.from_mapping(section)
    cfg = config_from_dict(apply_overrides(data, list(overrides)))
    return SleepProject(Project(root, cfg, Path(path) if has_file else None), settings, data, tuple(overrides))
