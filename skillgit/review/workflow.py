"""`skillgit check --print-workflow`: the shipped GitHub Actions workflow, filled in for this project.

Contract: `render(template, settings)` returns the template with only the lines it marks replaced, every other
byte kept (comments included):
- `SKILL_BRANCH: …  # skill.branch` → the project's skill.branch;
- the `paths:` entries marked `# skill.path`, `# config` and `# env.tasks` → skill.path, the config file and the
  task file(s) (`env.split_dir`, else `env.tasks`), relative to the repository; a folder becomes `folder/**`;
  glob characters in a name are escaped, so a path filter matches that file only;
- the `<NAME>: ${{ secrets.<NAME> }}  # api key` line → the student backend's key variable (its api_key_env, else
  the backend's default) for the openai, azure and anthropic backends; kept as shipped for the others;
- the `run: …  # skillgit version` line → `python -m pip install "<requirement>"`, the exact source of the running
  skillgit (`provenance.source()`: a git URL at a commit, or a wheel with its hash) — never the bare name
  `skillgit`, which a package index would resolve to someone else's package. When the source is unknown or only
  on this machine (a folder that is not a pushed, clean checkout), the line fails the job with a message saying
  to set it, and `install_warning` says why (the CLI prints it on stderr).
A template without one of these markers is an error (the shipped file and this module drifted apart).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from skillgit import provenance
from skillgit.errors import SkillgitError
from skillgit.project import Project
from skillgit.provenance import Source

KEY_ENV = {"openai": "OPENAI_API_KEY", "azure": "AZURE_OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# The marked lines (see the contract); `comment` is the marker comment, kept as it is.
_PATH_ENTRY = re.compile(r'^(?P<indent>\s*)- "[^"]*"\s*(?P<comment># (?P<tag>skill\.path|config|env\.tasks)\b.*)$')
_BRANCH = re.compile(r"^(?P<indent>\s*)SKILL_BRANCH:\s*\S+\s*(?P<comment># skill\.branch.*)$")
_KEY = re.compile(r"^(?P<indent>\s*)[A-Z0-9_]+: \$\{\{ secrets\.[A-Z0-9_]+ \}\}\s*(?P<comment># api key.*)$")
_INSTALL = re.compile(r"^(?P<indent>\s*)run: [^#]*(?P<comment># skillgit version.*)$")
# the install line when skillgit cannot name its own source: the job fails and says what to do
UNPINNED = ('echo "::error::skillgit check --print-workflow could not name the source of skillgit, set it on this '
            'line (see the comment above)" && exit 1')
_GLOB = re.compile(r"([*?\[\]!+\\])")


@dataclass(frozen=True)
class WorkflowSettings:
    """What the workflow is filled with: repository-relative paths, the branch, the key's name, the version."""

    skill_branch: str
    skill_paths: tuple[str, ...]
    config_paths: tuple[str, ...]
    task_paths: tuple[str, ...]
    key_env: str | None  # None: keep the template's key line
    install: str  # the install step's command: `python -m pip install "<requirement>"`, or UNPINNED


def _filter(root: Path, path: Path | str) -> str:
    """A path filter matching `path` (a folder: everything in it), relative to `root`, glob characters escaped."""
    full = (root / path).resolve() if not Path(path).is_absolute() else Path(path).resolve()
    try:
        rel = full.relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = Path(path).as_posix()  # outside the repository: a pull request cannot change it anyway
    escaped = _GLOB.sub(r"\\\1", rel)
    return f"{escaped}/**" if full.is_dir() else escaped


def install_command(source: Source) -> str:
    """The install step's command for `source` (see the module contract)."""
    requirement = source.requirement()
    return UNPINNED if requirement is None else f'python -m pip install "{requirement}"'


def install_warning(source: Source) -> str | None:
    """Why the printed workflow's install line must be set by hand, or None when it names the exact source."""
    if source.requirement() is not None:
        return None
    return (f"the workflow's install step cannot name this skillgit's source ({source.describe()}); it fails until "
            f"you set it: {source.install_hint()}")


def settings(project: Project, source: Source) -> WorkflowSettings:
    cfg, root = project.config, project.root
    tasks = cfg.env.split_dir or cfg.env.tasks
    backend = cfg.model.student_backend
    key = (cfg.model.student.api_key_env or KEY_ENV[backend]) if backend in KEY_ENV else None
    config = project.config_path or root / "skillgit.yaml"
    return WorkflowSettings(cfg.skill.branch, (_filter(root, cfg.skill.path),), (_filter(root, config),),
                            (_filter(root, tasks),), key, install_command(source))


def _at(left: str, column: int, comment: str) -> str:
    """`left`, then `comment` in `column` (the template's) when it still fits, else two spaces after `left`."""
    return f"{left}{' ' * max(2, column - len(left))}{comment}"


def render(template: str, s: WorkflowSettings) -> str:
    paths = {"skill.path": s.skill_paths, "config": s.config_paths, "env.tasks": s.task_paths}
    seen: set[str] = set()
    out: list[str] = []
    for line in template.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        if m := _PATH_ENTRY.match(body):
            if m["tag"] not in seen:  # one marked line per kind: it becomes one line per path
                seen.add(m["tag"])
                comment = body[m.start("comment"):]
                out += [_at(f'{m["indent"]}- {json.dumps(p)}', m.start("comment"), comment) + end
                        for p in paths[m["tag"]]]
        elif m := _BRANCH.match(body):
            seen.add("skill.branch")
            out.append(_at(f'{m["indent"]}SKILL_BRANCH: {json.dumps(s.skill_branch)}', m.start("comment"),
                           m["comment"]) + end)
        elif m := _KEY.match(body):
            seen.add("api key")
            left = (f'{m["indent"]}{s.key_env}: ${{{{ secrets.{s.key_env} }}}}' if s.key_env
                    else body[:m.start("comment")].rstrip())
            out.append(_at(left, m.start("comment"), m["comment"]) + end)
        elif m := _INSTALL.match(body):
            seen.add("skillgit version")
            out.append(_at(f'{m["indent"]}run: {s.install}', m.start("comment"), m["comment"]) + end)
        else:
            out.append(line)
    missing = {*paths, "skill.branch", "api key", "skillgit version"} - seen
    if missing:
        raise SkillgitError(f"the shipped workflow template has no line marked {', '.join(sorted(missing))}",
                            "reinstall skillgit from its source (its templates/github/skillgit-check.yml was changed)")
    return "".join(out)


def render_for(project: Project, source: Source | None = None) -> str:
    """The shipped workflow filled in for `project`, installing `source` (default: this skillgit's own)."""
    from skillgit.resources import templates_dir

    template = (templates_dir() / "github" / "skillgit-check.yml").read_text(encoding="utf-8")
    return render(template, settings(project, provenance.source() if source is None else source))
