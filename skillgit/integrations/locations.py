"""Where agents and skillgit keep things on disk (pure path logic, no git commands).

- `git_common_dir(root)`: the repository's common git dir (a worktree's `.git` file points into the main one).
- `inbox_path(root)`: `<git-common-dir>/skillgit/sleep/inbox.jsonl`, where the SessionEnd hook records sessions.
- Agent config folders, each honouring the variable the agent itself honours: `CLAUDE_CONFIG_DIR` (Claude Code,
  default `~/.claude`; its user MCP servers live in `.claude.json` beside that folder's parent, or inside it when
  the variable is set), `CODEX_HOME` (Codex, default `~/.codex`), `COPILOT_HOME` (Copilot CLI, default
  `~/.copilot`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skillgit.errors import GitStateError


def git_common_dir(root: Path) -> Path:
    """The common git dir of the repository whose working tree is `root`."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:
        text = dot.read_text(encoding="utf-8").strip()
    except OSError:
        raise GitStateError(f"not a git repository: {root}", "run this inside a git repository") from None
    if not text.startswith("gitdir:"):
        raise GitStateError(f"unreadable .git file in {root}", "check `git rev-parse --git-dir` there")
    gitdir = Path(text.removeprefix("gitdir:").strip())
    gitdir = gitdir if gitdir.is_absolute() else (root / gitdir)
    common = gitdir / "commondir"
    if common.is_file():
        target = Path(common.read_text(encoding="utf-8").strip())
        return (target if target.is_absolute() else gitdir / target).resolve()
    return gitdir.resolve()


def inbox_path(root: Path) -> Path:
    return git_common_dir(root) / "skillgit" / "sleep" / "inbox.jsonl"


def claude_dir(home: Path, env: Mapping[str, str]) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"


def claude_user_json(home: Path, env: Mapping[str, str]) -> Path:
    """Claude Code's user-level state file, which holds user-scope MCP servers (`mcpServers`)."""
    return Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"


def codex_home(home: Path, env: Mapping[str, str]) -> Path:
    return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"


def copilot_home(home: Path, env: Mapping[str, str]) -> Path:
    return Path(env["COPILOT_HOME"]) if env.get("COPILOT_HOME") else home / ".copilot"


def user_manifest(home: Path) -> Path:
    return home / ".skillgit" / "integrations.json"


def project_manifest(root: Path) -> Path:
    return git_common_dir(root) / "skillgit" / "integrations.json"
