"""Environments: the benchmarks a skill is trained on, each behind one small contract, found in one registry.

The contract (`skillgit.envs.base.Env`; a third party subclasses it):
- `load(path) -> list[Item]` reads the benchmark's items in its *published* format from a local file or folder
  (raising `TaskFileError` naming the file, the row and the fix). Items get stable ids.
- `run(student, skill, item, sample) -> Reply` runs one item with a skill against the frozen student: one call
  (the default: the item's input as the user message, the skill as the system prompt), or several turns with an
  environment (`skillgit.envs.episode.EpisodeEnv`: `reset`, `step` → observation, done, reward). A multi-turn
  run returns its own `Score` with the reply and its transcript as `Reply.trace` (what the teacher reads); every
  turn is one `student.run`, so each is journaled and metered like any student call.
- `score(item, output) -> Score` is the benchmark's metric (hard, soft, neutral feedback: what the output did
  wrong told without the reference, see `skillgit.scorers`). `teacher_reference(item)` and `judge_texts(items)`
  narrow what a teacher may read and what the leak guard keeps out of the skill (`skillgit.judging`).
- `name`, `summary`, `metric` (named in reports), `source` (where the dataset comes from), `seed_skill` (the
  starting skill `skillgit init --env` writes), `options_default` (the `env.options` it writes) and `sample` (the
  file of `examples/envs/<name>/` it copies when no `--data` is given).

The registry: `_BUILTIN` lists the built-in environments once ("module:attribute" of an `Env` subclass, imported
only when used). Third-party packages join through the `skillgit.envs` entry point group (name → "module:Class"),
exactly as backends join `skillgit.llm.registry` through `skillgit.backends`; a built-in name wins over an entry
point of the same name. `names()` lists both; `get(name, options)` builds one and raises `ConfigError` naming every
known environment for an unknown name, and naming the package for an entry point that cannot be loaded.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Mapping

from skillgit.errors import ConfigError

if TYPE_CHECKING:
    from skillgit.envs.base import Env

ENTRY_POINT_GROUP = "skillgit.envs"

# The built-in environments, in the order users see them.
_BUILTIN: dict[str, str] = {
    "searchqa": "skillgit.envs.searchqa:SearchQA",
    "math": "skillgit.envs.math:MathEnv",
    "docvqa": "skillgit.envs.docvqa:DocVQA",
    "textgame": "skillgit.envs.textgame:TextGame",
    "spreadsheetbench": "skillgit.envs.spreadsheet:SpreadsheetBench",
    "officeqa": "skillgit.envs.officeqa:OfficeQA",
    "alfworld": "skillgit.envs.twgames:ALFWorld",
    "textworld": "skillgit.envs.twgames:TextWorldGames",
}


@dataclass(frozen=True)
class EnvInfo:
    """What `skillgit env list` shows of one environment (built without loading any data)."""

    name: str
    origin: str  # "built-in" or the distribution that registers it ("skillgit-env-x 0.1")
    summary: str
    metric: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "origin": self.origin, "summary": self.summary, "metric": self.metric,
                "source": self.source}


def entry_points(group: str) -> dict[str, metadata.EntryPoint]:
    """The installed entry points of `group`, by name (the first one wins when two packages use one name)."""
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def _origin(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else ep.value


def names() -> tuple[str, ...]:
    """Every environment name: the built-ins, then those installed packages register."""
    return (*_BUILTIN, *(n for n in entry_points(ENTRY_POINT_GROUP) if n not in _BUILTIN))


def _load_class(name: str) -> tuple[Any, str]:
    from skillgit.envs.base import Env

    if name in _BUILTIN:
        module_name, _, attribute = _BUILTIN[name].partition(":")
        cls, origin = getattr(importlib.import_module(module_name), attribute), "built-in"
    else:
        ep = entry_points(ENTRY_POINT_GROUP).get(name)
        if ep is None:
            raise ConfigError(f"env.name: unknown environment '{name}'",
                              f"known environments: {', '.join(names())} (a package adds one through the "
                              f"'{ENTRY_POINT_GROUP}' entry point group; `skillgit env list` shows them)")
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party package: say which, never a traceback
            raise ConfigError(f"env.name: environment '{name}' ({ep.value}, from {_origin(ep)}) cannot be "
                              f"loaded: {type(exc).__name__}: {exc}"[:400],
                              "reinstall or fix that package, or pick another environment") from None
        origin = _origin(ep)
    if not (isinstance(cls, type) and issubclass(cls, Env)):
        raise ConfigError(f"env.name: '{name}' does not name a skillgit.envs.base.Env subclass",
                          "an environment's entry point must be 'module:Class' with Class subclassing Env")
    return cls, origin


def get(name: str, options: Mapping[str, Any] | None = None) -> Env:
    """The environment `name` configured with `options` (`env.options`); ConfigError listing the known ones."""
    cls, _ = _load_class(name)
    env = cls(dict(options or {}))
    if env.name != name:
        env.name = name  # an entry point may register a class under another name: the registered one counts
    return env


def describe(name: str) -> EnvInfo:
    cls, origin = _load_class(name)
    return EnvInfo(name, origin, cls.summary, cls.metric, cls.source)


def infos() -> list[EnvInfo]:
    """Every environment that can be loaded, with a row for each one that cannot (its summary says why)."""
    out = []
    for name in names():
        try:
            out.append(describe(name))
        except ConfigError as exc:
            out.append(EnvInfo(name, "broken", exc.message, "", ""))
    return out


def check(env_cfg: Any, root: Any) -> dict[str, Any] | None:
    """`skillgit doctor`'s row for the configured environment (`env_cfg`: the config's `env` section; None when
    `env.name` is unset): it loads and its data splits, or the error with its fix."""
    name, options = env_cfg.name, env_cfg.options
    if not name:
        return None
    from skillgit.errors import SkillgitError
    from skillgit.tasks import load_splits

    row: dict[str, Any] = {"env": name, "origin": "", "metric": "", "items": 0, "status": "ok", "detail": "",
                           "fix": ""}
    try:
        info = describe(name)
        row.update(origin=info.origin, metric=info.metric)
        splits = load_splits(env_cfg, root, get(name, options).load)
        row["items"] = sum(splits.counts.values())
        row["detail"] = ", ".join(f"{k} {v}" for k, v in splits.counts.items())
    except SkillgitError as exc:
        row.update(status="error", detail=exc.message, fix=exc.hint)
    return row


def metric_of_config(config: Any) -> tuple[str, str] | None:
    """(environment, its metric) of a run's saved config (the YAML text or its mapping) — what reports and PR
    bodies name next to the scores; None when the run trained on no environment or it is no longer installed."""
    if isinstance(config, str):
        import yaml

        try:
            config = yaml.safe_load(config)
        except (yaml.YAMLError, RecursionError):  # (a pulled run's config: nesting too deep for the parser)
            return None
    env = config.get("env") if isinstance(config, Mapping) else None
    name = env.get("name") if isinstance(env, Mapping) else None
    if not isinstance(name, str) or not name:
        return None
    try:
        return name, describe(name).metric
    except ConfigError:
        return None
