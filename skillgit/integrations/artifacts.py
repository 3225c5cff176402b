"""What `skillgit install <agent> --project|--user` puts where: the artifact list per agent and scope.

Three kinds of artifact (frozen dataclasses; the engine in `install.py` plans, writes and removes them):
- `FileArtifact`: a whole file skillgit owns (the skill, slash commands, the hook script).
- `JsonArtifact`: one entry inserted into a JSON/JSONC config someone else owns (`key_path` → `value`, or appended
  to the list at `key_path`).
- `BlockArtifact`: a marker-delimited block appended to a Markdown or TOML file someone else owns.

Locations (checked against each agent's documentation and the CLIs in tests/agent_clis.py):
- claude --project: `.claude/skills/skillgit/SKILL.md`, `.claude/commands/skillgit-*.md`,
  `.claude/hooks/skillgit-session-end.sh`, `.claude/settings.json` (hooks.SessionEnd), `.mcp.json` (mcpServers);
  --user: the same under `~/.claude` (`CLAUDE_CONFIG_DIR`), the MCP server in `~/.claude.json`.
- codex --project: `.agents/skills/skillgit/SKILL.md`, an `AGENTS.md` block, a `.codex/config.toml` block
  (`[mcp_servers.skillgit]`, read for trusted projects); --user: `~/.agents/skills/skillgit/SKILL.md`,
  `~/.codex/AGENTS.md` and `~/.codex/config.toml` blocks (`CODEX_HOME`).
- copilot --project: `.github/skills/skillgit/SKILL.md`, a `.github/copilot-instructions.md` block,
  `.vscode/mcp.json` (servers, VS Code) and `.github/mcp.json` (mcpServers, Copilot CLI, which reads it only in a
  folder the person trusts: `notes` says so; only `--trust-folder`, the person's choice, adds the repository to
  `trustedFolders` in `$COPILOT_HOME/config.json`: `trust_artifact`); --user:
  `~/.copilot/skills/skillgit/SKILL.md`, a `~/.copilot/copilot-instructions.md` block and
  `~/.copilot/mcp-config.json` (`COPILOT_HOME`).

Which agents: those whose `Agent` record (`skillgit/agents/<name>.py`) names an `install` pointer to an
`Installer` (or a plain builder function) — `targets()` reads them from the agents registry; an agent registered at
run time with one is a target like the built-in ones. Nothing here lists agent names.

Roots: every artifact belongs to a root folder skillgit may write in — the repository (project scope), or the home
folder and the agent's own home when its variable names one (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `COPILOT_HOME`;
user scope). `roots()` lists them and `root_of()` picks an artifact's; nothing is written or deleted through a
symlink that leads out of it.

Project-scope MCP entries run `skillgit mcp` by name (the file is shared with a team); user-scope ones name this
installation's console script by absolute path when it exists (no PATH lookup, no `.cmd` shim on Windows). The
skill and commands tell the agent how to install skillgit from this installation's own source
(`provenance.source()`), never by a bare name a package index would resolve.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgit.integrations import assets
from skillgit.integrations import locations as L

SCOPES = ("project", "user")


@dataclass(frozen=True)
class FileArtifact:
    path: Path
    text: str
    executable: bool = False


@dataclass(frozen=True)
class JsonArtifact:
    path: Path
    key_path: tuple[str, ...]
    value: Any
    append: bool = False


@dataclass(frozen=True)
class BlockArtifact:
    path: Path
    block: str  # ends with a newline; starts with `begin`
    begin: str
    style: str = "markdown"  # "markdown" | "toml" (a TOML file must not already define the table)


Artifact = FileArtifact | JsonArtifact | BlockArtifact
Builder = Callable[[str, Path, Mapping[str, str]], "list[Artifact]"]  # (scope, base, env) -> artifacts


@dataclass(frozen=True)
class Installer:
    """One agent's `skillgit install` artifacts: what its `Agent.install` pointer names."""

    build: Builder
    home_env: str = ""  # the variable naming the agent's own home (user scope may write there), "" when none

    def __call__(self, scope: str, base: Path, env: Mapping[str, str]) -> list[Artifact]:
        return self.build(scope, base, env)


def mcp_launcher(scope: str) -> tuple[str, list[str]]:
    """The command an agent runs to start skillgit's MCP server."""
    if scope == "project":
        return "skillgit", ["mcp"]
    script = Path(sys.executable).parent / ("skillgit.exe" if os.name == "nt" else "skillgit")
    if script.is_file():
        return str(script), ["mcp"]
    return shutil.which("skillgit") or "skillgit", ["mcp"]


def install_hint() -> str:
    """What the installed skill and commands tell the user when skillgit is missing: the exact source of the
    installation that wrote them (never a bare name a package index would resolve)."""
    from skillgit.provenance import source

    return source().install_hint(["mcp"])


def _skill(folder: Path) -> FileArtifact:
    return FileArtifact(folder / assets.NAME / "SKILL.md", assets.skill_md(install_hint()))


def _claude(scope: str, base: Path, env: Mapping[str, str]) -> list[Artifact]:
    folder = base / ".claude" if scope == "project" else L.claude_dir(base, env)
    hook = folder / "hooks" / "skillgit-session-end.sh"
    if scope == "project":  # $CLAUDE_PROJECT_DIR: the same file wherever the repository is cloned
        hook_command = 'bash "$CLAUDE_PROJECT_DIR/.claude/hooks/skillgit-session-end.sh"'
        mcp_file = base / ".mcp.json"
    else:
        hook_command = f'bash "{hook.as_posix()}"'
        mcp_file = L.claude_user_json(base, env)
    command, args = mcp_launcher(scope)
    return [
        _skill(folder / "skills"),
        *(FileArtifact(folder / "commands" / f"skillgit-{c.name}.md", c.text(install_hint=install_hint()))
          for c in assets.COMMANDS),
        FileArtifact(hook, assets.SESSION_END_HOOK, executable=True),
        JsonArtifact(folder / "settings.json", ("hooks", "SessionEnd"), assets.hook_group(hook_command), append=True),
        JsonArtifact(mcp_file, ("mcpServers", assets.NAME), {"type": "stdio", "command": command, "args": args}),
    ]


def _codex(scope: str, base: Path, env: Mapping[str, str]) -> list[Artifact]:
    command, args = mcp_launcher(scope)
    if scope == "project":
        skills, agents_md, config = base / ".agents" / "skills", base / "AGENTS.md", base / ".codex" / "config.toml"
    else:
        home = L.codex_home(base, env)
        skills, agents_md, config = base / ".agents" / "skills", home / "AGENTS.md", home / "config.toml"
    return [
        _skill(skills),
        BlockArtifact(agents_md, assets.markdown_block(), assets.BLOCK_BEGIN),
        BlockArtifact(config, assets.toml_block(command, args), assets.TOML_BEGIN, style="toml"),
    ]


def _copilot(scope: str, base: Path, env: Mapping[str, str]) -> list[Artifact]:
    command, args = mcp_launcher(scope)
    cli_server = {"type": "local", "command": command, "args": args, "tools": ["*"]}
    if scope == "project":
        return [
            _skill(base / ".github" / "skills"),
            BlockArtifact(base / ".github" / "copilot-instructions.md", assets.markdown_block(), assets.BLOCK_BEGIN),
            JsonArtifact(base / ".vscode" / "mcp.json", ("servers", assets.NAME),
                         {"type": "stdio", "command": command, "args": args}),
            JsonArtifact(base / ".github" / "mcp.json", ("mcpServers", assets.NAME), cli_server),
        ]
    home = L.copilot_home(base, env)
    return [
        _skill(home / "skills"),
        BlockArtifact(home / "copilot-instructions.md", assets.markdown_block(), assets.BLOCK_BEGIN),
        JsonArtifact(home / "mcp-config.json", ("mcpServers", assets.NAME), cli_server),
    ]


def targets() -> tuple[str, ...]:
    """The agents `skillgit install` can put skillgit into, in the registry's order."""
    from skillgit.agents import registry

    return tuple(registry.install_targets())


def installer(agent: str) -> Installer:
    """`agent`'s installer from the agents registry; SkillgitError naming the targets for any other name."""
    from skillgit.agents import registry
    from skillgit.errors import SkillgitError

    pointer = registry.install_targets().get(agent)
    if pointer is None:
        raise SkillgitError(f"unknown agent '{agent}'", f"use one of: {', '.join(targets())}")
    found = registry.resolve_pointer(pointer)
    return found if isinstance(found, Installer) else Installer(found)


def roots(agent: str, scope: str, base: Path, env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The folders `agent`'s artifacts in `scope` live in (see the module docstring)."""
    if scope == "project":
        return (base,)
    env = os.environ if env is None else env
    var = installer(agent).home_env
    return (base, Path(env[var])) if var and env.get(var) else (base,)


def root_of(path: Path, folders: tuple[Path, ...]) -> Path | None:
    """The innermost of `folders` that holds `path` (as written), or None when none does."""
    path = Path(os.path.normpath(os.path.abspath(path)))
    holding = [f for f in folders if Path(os.path.normpath(os.path.abspath(f))) in (path, *path.parents)]
    return max(holding, key=lambda f: len(Path(os.path.abspath(f)).parts), default=None)


def copilot_trusts(folder: Path, env: Mapping[str, str], home: Path | None = None) -> bool:
    """Whether the Copilot CLI trusts `folder`: it or a folder above it is in `trustedFolders` (older versions:
    `trusted_folders`) of `$COPILOT_HOME/config.json`. An unreadable config counts as not trusting."""
    from skillgit.integrations import jsonedit

    config = L.copilot_home(home or Path(env.get("HOME") or Path.home()), env) / "config.json"
    try:
        data = jsonedit.parse(config.read_text(encoding="utf-8")).to_python()
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    listed = [*(data.get("trustedFolders") or []), *(data.get("trusted_folders") or [])] \
        if isinstance(data, dict) else []
    here = Path(os.path.realpath(folder))
    return any(isinstance(f, str) and Path(os.path.realpath(f)) in (here, *here.parents) for f in listed)


def trust_artifact(base: Path, home: Path, env: Mapping[str, str]) -> tuple[JsonArtifact, Path]:
    """`install copilot --project --trust-folder` (the person's explicit choice): the repository appended to
    `trustedFolders` in the Copilot CLI's `$COPILOT_HOME/config.json`, and that folder (the artifact's root).
    Recorded in the project's manifest like any artifact; uninstall removes exactly that entry."""
    folder = L.copilot_home(home, env)
    return JsonArtifact(folder / "config.json", ("trustedFolders",), str(base), append=True), folder


def notes(agent: str, scope: str, base: Path, env: Mapping[str, str]) -> list[str]:
    """What the person still has to do before `agent` loads what `install` wrote. The Copilot CLI reads a
    repository's MCP servers (`.github/mcp.json`, `.mcp.json`) only in a folder the person trusts — `copilot mcp
    list` says "No MCP servers configured" until then (issue 23, item 9). Trusting a folder lets the agent read and
    run its files: the person's decision, so install says how and never trusts it for them."""
    if agent != "copilot" or scope != "project" or copilot_trusts(base, env):
        return []
    config = L.copilot_home(Path(env.get("HOME") or Path.home()), env) / "config.json"
    return [f"Copilot CLI loads this repository's MCP servers (.github/mcp.json) only in a folder you trust: start "
            f"`copilot` here once and trust the folder (that adds it to trustedFolders in {config}), or run "
            "`copilot -p … --trust-folder` (or let `skillgit install copilot --project --trust-folder` add it; "
            "uninstall removes it); then `copilot mcp list` shows \"Workspace servers: skillgit\". "
            "(VS Code reads .vscode/mcp.json without this.)"]


def artifacts(agent: str, scope: str, base: Path, env: Mapping[str, str] | None = None) -> list[Artifact]:
    """The artifacts of `agent` in `scope`; `base` is the repository root (project) or the home folder (user)."""
    return installer(agent)(scope, base, os.environ if env is None else env)


CLAUDE = Installer(_claude, "CLAUDE_CONFIG_DIR")
CODEX = Installer(_codex, "CODEX_HOME")
COPILOT = Installer(_copilot, "COPILOT_HOME")
