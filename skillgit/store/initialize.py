"""`skillgit init`: adopt (or create) a skill in a repository and set the repository up for skillgit.

Decisions, so that `init` is safe to run in a team's existing repository:
- An existing skill is adopted as it is (SKILL.md with front matter, AGENTS.md, CLAUDE.md, GEMINI.md, Copilot's
  and Cursor's instruction files — `.cursor/rules/**`, the legacy `.cursorrules` — or a system prompt `.md`/`.txt`),
  searched in the folder given; several matches are an error listing them all and asking for `--skill` (we never
  guess between AGENTS.md and CLAUDE.md). Only when none exists is a starter SKILL.md written.
- `--branch NAME` (given explicitly) on a kept skillgit.yaml without `skill.branch` writes that one key into it
  (one inserted line, every other byte kept); a kept `skill.branch` is never rewritten, only warned about.
- Outside a repository, a new one is created (its branch: `--branch`, default main).
- `skillgit.yaml` is written at the repository root from the shipped template, never over an existing one.
- Git config (local to the repository): `notes.displayRef` so `git log` shows skillgit notes, `notes.rewriteRef`
  so amend/rebase carry them, and `notes.skillgit.mergeStrategy=cat_sort_uniq` so a plain `git notes merge`
  merges them as skillgit does. Remotes are not touched: push/pull pass explicit refspecs.
- `notes.displayRef` is the glob `refs/notes/skillgit-log*`, not the ref's name: git warns on every `git log`
  about a displayRef naming a ref that does not exist (a fresh `init`, before the first decision), never about a
  glob that matches nothing; once the first decision writes the ref, `git log` shows its short notes.
- Nothing is committed unless asked (`--commit`, which needs the skill branch checked out); otherwise the report
  lists the exact commands. Hooks are installed only with `--hooks`, chaining (never overwriting) existing ones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from string import Template
from typing import Sequence

from skillgit.errors import SkillgitError
from skillgit.resources import hooks_dir, templates_dir
from skillgit.store import refs as R
from skillgit.store.git import GitRepo

CONFIG_NAME = "skillgit.yaml"
HOOK_MARKER = b"skillgit-hook:"
# What `notes.displayRef` is set to (see the docstring). Only the display notes ref matches: no other ref skillgit
# writes starts with that name (remote copies live under refs/notes/skillgit-remote/, scratch refs under -tmp/).
DISPLAY_REF_GLOB = R.DISPLAY_NOTES_REF + "*"
# Where skills usually live, most specific first; searched in the folder `init` is given.
SKILL_NAMES = ("SKILL.md", "AGENTS.md", "CLAUDE.md", "GEMINI.md", ".github/copilot-instructions.md",
               "system_prompt.md", "system_prompt.txt", "system-prompt.md", "system-prompt.txt", "SYSTEM_PROMPT.md",
               "prompt.md", "prompt.txt", ".cursorrules")
# Found files are listed, never chosen among silently: several → `init` asks for --skill. `**/` also matches no
# folder: `.cursor/rules/**/*.mdc` finds `.cursor/rules/a.mdc` and `.cursor/rules/team/b.mdc`.
SKILL_GLOBS = (".claude/skills/*/SKILL.md", ".agents/skills/*/SKILL.md", ".github/skills/*/SKILL.md",
               "skills/*/SKILL.md", ".github/instructions/**/*.instructions.md", ".cursor/rules/**/*.mdc",
               ".cursor/rules/**/*.md")

# Used only when the shipped templates/skills/starter.md cannot be found.
FALLBACK_BODY = """# Task skill

Describe how the agent should approach its tasks. skillgit adds, rewrites and removes guidance here as it
learns from scored runs; every accepted change is a commit (`skillgit log`, `skillgit revert`).
"""


def starter_skill(name: str) -> str:
    """A starter SKILL.md: Claude-Code-style front matter (name, description) and the shipped starter body."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64] or "my-skill"
    template = templates_dir() / "skills" / "starter.md"
    body = template.read_text(encoding="utf-8") if template.is_file() else FALLBACK_BODY
    return (f"---\nname: {slug}\ndescription: How to approach this project's tasks (trained with skillgit; edit "
            f"this line to say when the skill applies).\n---\n\n{body}")


@dataclass
class InitReport:
    root: Path
    skill_path: str
    branch: str
    created_repo: bool = False
    created_skill: bool = False
    config_written: bool = False
    config_changes: list[str] = field(default_factory=list)  # keys written into a kept skillgit.yaml
    env_ignored: bool = False  # `.env` was added to .gitignore
    committed: str | None = None
    hooks: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)  # commands the user still has to run
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**asdict(self), "root": str(self.root)}


def _find_skill(folder: Path) -> list[Path]:
    found = [folder / name for name in SKILL_NAMES if (folder / name).is_file()]
    for pattern in SKILL_GLOBS:
        found += sorted(p for p in folder.glob(pattern) if p.is_file() and p not in found)
    return found


def _relative(repo: GitRepo, path: Path) -> str:
    try:
        return path.resolve().relative_to(repo.root.resolve()).as_posix()
    except ValueError:
        raise SkillgitError(f"{path} is outside the repository {repo.root}",
                            "put the skill file inside the repository") from None


def render_config(skill_path: str, branch: str) -> str:
    """The shipped skillgit.yaml template with the skill's path and branch filled in (as YAML strings)."""
    template = Template((templates_dir() / CONFIG_NAME).read_text(encoding="utf-8"))
    return template.safe_substitute(skill_path=json.dumps(skill_path), branch=json.dumps(branch))


def install_hooks(repo: GitRepo) -> list[str]:
    """Install the shipped hooks into the repository's hooks folder (honours core.hooksPath). An existing
    foreign hook is kept as `<name>.local` and called by ours; an older skillgit hook is replaced."""
    dest_dir = repo.git_path("hooks")
    dest_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for src in sorted(hooks_dir().iterdir()):
        if not src.is_file() or src.name.startswith((".", "_")) or src.suffix in (".py", ".pyc", ".md"):
            continue
        ours, dest = src.read_bytes(), dest_dir / src.name
        if dest.exists():
            existing = dest.read_bytes()
            if existing == ours:
                done.append(f"{src.name}: already installed")
                continue
            if HOOK_MARKER not in existing:
                local = dest.with_name(dest.name + ".local")
                if local.exists():
                    raise SkillgitError(f"{dest} and {local} both exist; not overwriting either",
                                        f"merge them into {local.name} by hand, remove {dest.name}, run again")
                dest.rename(local)
                done.append(f"{src.name}: installed; your previous hook was kept as {local.name} and still runs")
            else:
                done.append(f"{src.name}: updated")
        else:
            done.append(f"{src.name}: installed")
        tmp = dest.with_name(f".{dest.name}.skillgit-tmp")
        tmp.write_bytes(ours)
        tmp.chmod(0o755)
        os.replace(tmp, dest)
    return done


def _configure(repo: GitRepo) -> None:
    """Plain `git log` shows the short human notes (never the JSON records); both note refs follow rewrites and
    merge line by line."""
    configure_notes(repo)


def configure_notes(repo: GitRepo) -> None:
    # older skillgit displayed the JSON records, then named the display ref exactly: the glob replaces both
    for old in (R.NOTES_REF, R.DISPLAY_NOTES_REF):
        if old in repo.config_get_all("notes.displayRef"):
            repo.config_unset_value("notes.displayRef", old)
    if DISPLAY_REF_GLOB not in repo.config_get_all("notes.displayRef"):
        repo.config_add("notes.displayRef", DISPLAY_REF_GLOB)
    for ref in R.NOTES_REFS:
        if ref not in repo.config_get_all("notes.rewriteRef"):
            repo.config_add("notes.rewriteRef", ref)
    for name in ("skillgit", "skillgit-log"):
        if not repo.config_get_all(f"notes.{name}.mergeStrategy"):
            repo.config_set(f"notes.{name}.mergeStrategy", "cat_sort_uniq")


def init_project(path: Path | str = ".", *, skill: str | None = None, branch: str | None = None,
                 commit: bool = False, hooks: bool = False, extra: Sequence[str] = ()) -> InitReport:
    """Set up skillgit in (or create) the repository at `path`; see the module docstring for the rules. `extra`:
    more paths (files or folders, relative to the root) to commit with them (`init --env`'s copied sample)."""
    folder = Path(path).expanduser().resolve()
    repo, created_repo = _open_or_create(folder, branch)
    current = repo.current_branch()
    explicit_branch = branch is not None
    branch = branch or current or "main"
    if not repo.valid_branch_name(branch):
        raise SkillgitError(f"invalid branch name '{branch}'", "pass --branch NAME with a valid branch name")

    skill_file = _skill_file(repo, folder, skill)
    rel = _relative(repo, skill_file)
    report = InitReport(repo.root, rel, branch, created_repo)
    if commit and current != branch:  # checked before anything is written
        raise SkillgitError(f"--commit needs branch '{branch}' checked out (HEAD is on {current or 'no branch'})",
                            f"git switch {branch}, then run `skillgit init --commit` again")
    if commit:
        repo.check_identity()  # no identity: its fix, before anything is written or staged
    _ensure_skill(repo, skill_file, rel, report)
    _ensure_config(repo, rel, branch, explicit_branch, report)
    _configure(repo)
    if hooks:
        report.hooks = install_hooks(repo)
    paths = [rel, CONFIG_NAME, *extra]
    if _ignore_dotenv(repo):
        report.env_ignored = True
    ignore = repo.root / ".gitignore"
    if ignore.exists() and ".env" in ignore.read_text(encoding="utf-8").splitlines():
        paths.append(".gitignore")
    _commit_or_advise(repo, paths, rel, branch, current, commit, report)
    return report


def _open_or_create(folder: Path, branch: str | None) -> tuple[GitRepo, bool]:
    """(the repository at `folder`, True when it was created here with `branch` or main as its unborn HEAD)."""
    try:
        repo = GitRepo.open(folder) if folder.is_dir() else None
    except SkillgitError:
        repo = None
    created = repo is None
    if repo is None:
        repo = GitRepo.init(folder, branch or "main")
    if repo.bare:
        raise SkillgitError(f"{repo.root} is a bare repository", "run `skillgit init` in a clone with a working tree")
    return repo, created


def _skill_file(repo: GitRepo, folder: Path, skill: str | None) -> Path:
    """The skill file asked for, else the one skill file found, else `SKILL.md` (SkillgitError when several are
    found: the user chooses)."""
    if skill:
        return Path(skill) if Path(skill).is_absolute() else folder / skill
    found = _find_skill(folder)
    if len(found) > 1:
        names = ", ".join(_relative(repo, p) for p in found)
        raise SkillgitError(f"several possible skill files: {names}",
                            f"choose one: skillgit init --skill {_relative(repo, found[0])}")
    return found[0] if found else folder / "SKILL.md"


def _ensure_skill(repo: GitRepo, skill_file: Path, rel: str, report: InitReport) -> None:
    """Write the starter skill when there is none; refuse a folder or a file that is not UTF-8 text."""
    if skill_file.is_dir():
        raise SkillgitError(f"{rel} is a folder, not a skill file", "pass --skill PATH to a Markdown or text file")
    if not skill_file.exists():
        skill_file.parent.mkdir(parents=True, exist_ok=True)
        skill_file.write_text(starter_skill(repo.root.name), encoding="utf-8")
        report.created_skill = True
        return
    try:
        skill_file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SkillgitError(f"{rel} is not UTF-8 text", "skills must be UTF-8 text files") from None


def _ensure_config(repo: GitRepo, rel: str, branch: str, explicit_branch: bool, report: InitReport) -> None:
    """Write skillgit.yaml when there is none; else add an explicit non-default branch it lacks and warn where it
    names another skill or branch."""
    config = repo.root / CONFIG_NAME
    if not config.exists():
        config.write_text(render_config(rel, branch), encoding="utf-8")
        report.config_written = True
        return
    if explicit_branch and branch != "main" and add_skill_branch(config, branch):  # "main": the default
        report.config_changes.append(f"set skill.branch: {branch} in the kept {CONFIG_NAME} (it had none)")
    report.warnings += _config_mismatch(config, rel, branch)


def _commit_or_advise(repo: GitRepo, paths: list[str], rel: str, branch: str, current: str | None, commit: bool,
                      report: InitReport) -> None:
    """Commit the changed `paths` (with --commit), or list the git commands that would."""
    changed = repo.status_paths(paths)
    files = [line[3:].strip('"') for line in changed]
    pending = [p for p in paths if any(f == p or f.startswith(p.rstrip("/") + "/") for f in files)]
    if commit and pending:
        report.committed = repo.commit_paths(pending, f"skillgit: track {rel}")
    elif pending:
        quoted = " ".join(pending)
        if current != branch:
            report.todo.append(f"git switch {branch}" if repo.ref(R.branch_ref(branch)) else f"git switch -c {branch}")
        report.todo += [f"git add {quoted}", f"git commit -m 'Track {rel} with skillgit' -- {quoted}"]


def _ignore_dotenv(repo: GitRepo) -> bool:
    """Make sure `.env` (where the config tells users to put API keys) is ignored; True when .gitignore changed."""
    if repo.is_ignored(".env"):
        return False
    ignore = repo.root / ".gitignore"
    text = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    ignore.write_text(text + ("" if not text or text.endswith("\n") else "\n") + ".env\n", encoding="utf-8")
    return True


def _config_mismatch(config: Path, rel: str, branch: str) -> list[str]:
    """Warnings when an existing skillgit.yaml names another skill file or branch than the one just set up."""
    import yaml

    try:
        skill = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("skill") or {}
    except (yaml.YAMLError, AttributeError):
        return [f"{CONFIG_NAME} is not valid YAML; fix it (skill.path: {rel}, skill.branch: {branch})"]
    out = []
    if skill.get("path", "SKILL.md") != rel:
        out.append(f"{CONFIG_NAME} trains skill.path '{skill.get('path', 'SKILL.md')}'; set it to '{rel}' "
                   "to train this file")
    if "branch" not in skill and branch != "main":
        out.append(f"{CONFIG_NAME} has no skill.branch, so skillgit trains 'main', not '{branch}': run "
                   f"`skillgit init --branch {branch}` to write it")
    elif skill.get("branch", "main") != branch:
        out.append(f"{CONFIG_NAME} uses skill.branch '{skill.get('branch')}', not '{branch}'; edit skill.branch "
                   f"there to train '{branch}'")
    return out


_SKILL_LINE = re.compile(r"^skill:[ \t]*(#.*)?$")  # a block mapping `skill:` at the top level
_CHILD_LINE = re.compile(r"^([ \t]+)[^ \t#\r\n]")


def add_skill_branch(config: Path, branch: str) -> bool:
    """Write `skill.branch: <branch>` into an existing skillgit.yaml that has no skill.branch, as one inserted line
    (every other byte, comments included, kept); True when written. Nothing is written unless the edited text
    parses to the original mapping plus that one key: flow style, anchors or an unreadable file are left alone
    (then `_config_mismatch` warns)."""
    import yaml

    raw = config.read_bytes()
    try:
        text = raw.decode("utf-8")
        before = yaml.safe_load(text) or {}
    except (UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(before, dict) or not isinstance(before.get("skill", {}) or {}, dict):
        return False
    if "branch" in (before.get("skill") or {}):
        return False
    edited = _with_branch_line(text, before, branch)
    if edited is None:
        return False
    try:
        after = yaml.safe_load(edited)
    except yaml.YAMLError:
        return False
    expected = {**before, "skill": {**(before.get("skill") or {}), "branch": branch}}
    if after != expected:
        return False
    tmp = config.with_name(f".{config.name}.skillgit-tmp")
    tmp.write_bytes(edited.encode("utf-8"))
    shutil.copymode(config, tmp)
    os.replace(tmp, config)
    return True


def _with_branch_line(text: str, before: dict, branch: str) -> str | None:
    """`text` with `branch: <branch>` inserted under its top-level `skill:` block (or a new block appended), or
    None when the file has a `skill` key that is not such a block (flow style: left alone)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    value = json.dumps(branch)
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if _SKILL_LINE.match(line.rstrip("\r\n"))), None)
    if at is None:
        if "skill" in before:
            return None
        tail = "" if not text or text.endswith("\n") else newline
        edited = f"{text}{tail}{newline if text.strip() else ''}skill:{newline}  branch: {value}{newline}"
    else:
        child = next((m.group(1) for line in lines[at + 1:] if (m := _CHILD_LINE.match(line))), "  ")
        lines.insert(at + 1, f"{child}branch: {value}  # accepted skills land here (written by skillgit init)"
                             f"{newline}")
        edited = "".join(lines)
    return edited
