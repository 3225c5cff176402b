"""Where agents and skillgit keep things on disk (pure path logic, no git commands).

- The repository's common git dir and the sleep inbox's path are the inbox-format leaf's (`skillgit/inbox.py`,
  which `sleep/` reads too).
- Agent config folders, each honouring the variable the agent itself honours: `CLAUDE_CONFIG_DIR` (Claude Code,
  default `~/.claude`; its user MCP servers live in `.claude.json` beside that folder's parent, or inside it when
  the variable is set), `CODEX_HOME` (Codex, default `~/.codex`), `COPILOT_HOME` (Copilot CLI, default
  `~/.copilot`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skillgit.inbox import git_common_dir


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
