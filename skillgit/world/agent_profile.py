"""What the simulated coding agent loads from the user's profile, the way Claude Code does.

Claude Code reads, besides the project: user skills (`$CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md`), user memory
(`$CLAUDE_CONFIG_DIR/CLAUDE.md`), user settings with hooks (`$CLAUDE_CONFIG_DIR/settings.json`, e.g.
`hooks.SessionStart`) and MCP servers (`mcpServers` of `~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json`);
`$CLAUDE_CONFIG_DIR` defaults to `~/.claude`. The simulated agent does the same (`load`), runs the SessionStart hook
commands at start (`run_session_start`), and says what it loaded in its final message (`describe`), so a test can
see whether a rollout was hermetic. A profile with none of these loads nothing and says nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOOK_TIMEOUT_S = 30


@dataclass(frozen=True)
class UserProfile:
    skills: tuple[str, ...] = ()
    memory: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    session_start: tuple[str, ...] = ()  # hook commands

    def __bool__(self) -> bool:
        return bool(self.skills or self.memory or self.mcp_servers or self.session_start)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(env: Mapping[str, str]) -> UserProfile:
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    own = env.get("CLAUDE_CONFIG_DIR")
    config = Path(own) if own else home / ".claude"
    state = (config if own else home) / ".claude.json"
    skills = tuple(sorted(p.parent.name for p in config.glob("skills/*/SKILL.md")))
    memory = tuple(str(p) for p in (config / "CLAUDE.md",) if p.is_file())
    servers = _json(state).get("mcpServers")
    hooks = _json(config / "settings.json").get("hooks")
    commands: list[str] = []
    for group in (hooks.get("SessionStart") if isinstance(hooks, dict) else None) or []:
        for hook in (group.get("hooks") if isinstance(group, dict) else None) or []:
            if isinstance(hook, dict) and hook.get("type") == "command" and isinstance(hook.get("command"), str):
                commands.append(hook["command"])
    return UserProfile(skills, memory, tuple(sorted(servers)) if isinstance(servers, dict) else (), tuple(commands))


def run_session_start(profile: UserProfile, cwd: Path, env: Mapping[str, str]) -> None:
    for command in profile.session_start:
        try:
            subprocess.run(command, shell=True, cwd=cwd, env=dict(env), timeout=HOOK_TIMEOUT_S, check=False,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue


def describe(profile: UserProfile) -> str:
    """One sentence naming what was loaded from the user's profile ("" when nothing was)."""
    if not profile:
        return ""
    parts = [*(f"skill {s}" for s in profile.skills), *(f"MCP server {m}" for m in profile.mcp_servers),
             *(f"memory {m}" for m in profile.memory), *(f"SessionStart hook `{c}`" for c in profile.session_start)]
    return "Loaded from the user profile: " + ", ".join(parts) + "."
