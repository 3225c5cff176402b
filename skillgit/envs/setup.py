"""`skillgit init --env NAME [--data PATH]`: a repository set up to train on one environment.

Decisions (on top of `skillgit.store.initialize.init_project`, whose rules all hold):
- Everything is checked before anything is written: the environment exists (the error lists the known ones) and
  its loader reads the data (the error names the file, the row and the fix).
- Without `--data`, the environment's shipped sample folder (`examples/envs/<name>/`) is copied to `data/<name>/`
  in the repository, so a newcomer trains on it at once; with `--data`, `env.tasks` names that path (relative to the
  repository when it lies inside, absolute otherwise) and nothing is copied; `--data hf:NAME[@CONFIG][:SPLIT]`
  reads the rows through the `datasets` library (`skillgit.hfsource`) and `env.tasks` keeps that spec.
- The skill: `--skill` as given; else an existing SKILL.md is adopted; else the environment's seed skill is
  written as SKILL.md.
- skillgit.yaml: a freshly written one gets an `env:` section naming the environment, its data and its default
  options (every other section is the shipped template's); a kept one is never rewritten: the report says which
  two keys to set.
- `--commit` commits after the env section is written (init is run again with commit, which is idempotent).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from skillgit import envs, hfsource
from skillgit.envs.base import Env
from skillgit.errors import SkillgitError
from skillgit.resources import example_dir

CONFIG_NAME = "skillgit.yaml"


@dataclass
class EnvSetup:
    env: str
    tasks: str  # env.tasks as written
    copied_sample: bool = False
    wrote_seed_skill: bool = False
    config_updated: bool = False
    notes: list[str] = field(default_factory=list)


def sample_path(name: str) -> Path | None:
    """The shipped sample data of environment `name` (None when it ships none)."""
    env = envs.get(name)
    if not env.sample:
        return None
    path = example_dir("envs") / name / env.sample
    return path if path.exists() else None


def env_block(name: str, tasks: str, options: dict) -> str:
    env = envs.get(name)
    lines = ["env:", f"  name: {json.dumps(name)}  # metric: {env.metric}; `skillgit env list` shows the others",
             f"  tasks: {json.dumps(tasks)}  # the benchmark's data, in its published format",
             '  split_ratio: "2:1:7"  # train:val:test']
    if options:
        lines.append("  options:")
        lines += [f"    {key}: {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def set_env_section(config: Path, block: str) -> None:
    """Replace the `env:` section (the template's last top-level section) of a freshly written config."""
    text = config.read_text(encoding="utf-8")
    start = text.find("\nenv:\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + block
    else:
        end = len(text)
        for line_start in range(start + 6, len(text)):
            if text[line_start - 1] == "\n" and text[line_start] not in " #\n":
                end = line_start
                break
        text = text[:start + 1] + block + text[end:]
    config.write_text(text, encoding="utf-8")


def prepare(folder: Path, name: str, data: Path | None, skill: str | None) -> tuple[EnvSetup, str | None]:
    """Check the environment and its data, copy the sample, write the seed skill. Returns the setup so far and
    the `--skill` to pass to init. Raises before writing anything when the environment or data is wrong."""
    env = envs.get(name)
    folder = Path(folder).expanduser().resolve()
    if data is not None and hfsource.is_spec(str(data)):  # through `datasets`: env.tasks keeps the spec
        spec = hfsource.rebase(str(data), folder)
        env.load(hfsource.local_path(spec, folder))
        setup = EnvSetup(name, spec, wrote_seed_skill=skill is None and not (folder / "SKILL.md").exists())
        return setup, _seed_skill(folder, env, skill)
    source = Path(data).expanduser().resolve() if data is not None else sample_path(name)
    if source is None:
        raise SkillgitError(f"environment '{name}' ships no sample data", "pass --data PATH to its benchmark data")
    if not source.exists():
        raise SkillgitError(f"--data: not found: {source}", "pass the path of the benchmark's data file or folder")
    env.load(source)  # TaskFileError (a ConfigError) naming the file and row when the format is wrong
    setup = EnvSetup(name, "")
    if data is None:  # the sample's whole folder: its data file and what it names (DocVQA's documents/)
        target = folder / "data" / name
        if not target.exists():
            shutil.copytree(source.parent, target, ignore=shutil.ignore_patterns("__pycache__", ".*"))
            setup.copied_sample = True
        source = target / source.name
    try:
        setup.tasks = source.relative_to(folder).as_posix()
    except ValueError:
        setup.tasks = str(source)
    setup.wrote_seed_skill = skill is None and not (folder / "SKILL.md").exists()
    return setup, _seed_skill(folder, env, skill)


def _seed_skill(folder: Path, env: Env, skill: str | None) -> str:
    """The `--skill` for init: as given, else SKILL.md (written with the environment's seed skill if missing)."""
    if skill is not None:
        return skill
    skill_file = folder / "SKILL.md"
    if not skill_file.exists():
        skill_file.parent.mkdir(parents=True, exist_ok=True)
        skill_file.write_text(env.seed_skill or f"# {env.name}\n", encoding="utf-8")
    return "SKILL.md"


def finish(setup: EnvSetup, root: Path, config_written: bool, options: dict | None = None) -> None:
    """Write the env section into a freshly written skillgit.yaml, or say what to set in a kept one."""
    env = envs.get(setup.env)
    config = Path(root) / CONFIG_NAME
    if config_written:
        set_env_section(config, env_block(setup.env, setup.tasks, dict(options or env.options_default)))
        setup.config_updated = True
    else:
        setup.notes.append(f"kept the existing {CONFIG_NAME}: set `env.name: {setup.env}` and "
                           f"`env.tasks: {setup.tasks}` in it to train on this environment")
