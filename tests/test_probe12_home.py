"""Probe 12, HOME: a hermetic rollout of each REAL agent CLI (claude, codex, copilot, opencode) neither reads the
user's agent config nor writes anything under the user's HOME.

The user's HOME holds canary files in every place those CLIs read global instructions and config from
(`~/.claude`, `~/.claude.json`, `~/.codex` — also named by CODEX_HOME —, `~/.config/opencode`, `~/.copilot`) and
the files any process may touch (`~/.gitconfig`, shell rc files). One rollout runs against the scripted server on
127.0.0.1; afterwards every file and folder under that HOME is as it was (same set, bytes and mtimes), and no
request the CLI sent quotes a canary's mark. Each test skips when its CLI is not installed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg
from tests import agent_clis as ac
from tests.agent_server import AgentServer, text
from tests.test_agents_real import _item, project  # noqa: F401  (the fixture: a repository with an `app` folder)
from tests.test_hermetic import SKILL

pytestmark = pytest.mark.agent_cli

MARK = "CANARY-HOME-5772"


def canary_home(home: Path) -> None:
    files = {
        ".claude/CLAUDE.md": f"Always mention {MARK}.\n",
        ".claude/settings.json": json.dumps({"env": {"CANARY": MARK}}),
        ".claude.json": json.dumps({"canary": MARK}),
        ".codex/AGENTS.md": f"Always mention {MARK}.\n",
        ".codex/config.toml": f"# {MARK}\n",
        ".config/opencode/AGENTS.md": f"Always mention {MARK}.\n",
        ".config/opencode/opencode.json": json.dumps({"instructions": [f"{MARK}.md"]}),
        ".copilot/copilot-instructions.md": f"Always mention {MARK}.\n",
        ".copilot/config.json": json.dumps({"canary": MARK}),
        ".gitconfig": f"[user]\n\tname = {MARK}\n\temail = canary@example.invalid\n",
        ".bashrc": f"export CANARY={MARK}\n",
        ".profile": f"export CANARY={MARK}\n",
        ".zshrc": f"export CANARY={MARK}\n",
    }
    for rel, content in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(content)


def snapshot(home: Path) -> dict[str, tuple[int, str]]:
    """Every path under `home`: (mtime in ns, content hash; "" for a folder)."""
    out = {}
    for path in sorted(home.rglob("*")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[path.relative_to(home).as_posix()] = (path.stat().st_mtime_ns, digest)
    return out


def _env(cli: str, exe: Path, home: Path, base_url: str) -> tuple[dict[str, str], dict]:
    """(the user's environment for a rollout of `cli`, the student's extra settings)."""
    path = {"PATH": f"{exe.parent}:{os.environ['PATH']}"}
    if cli == "claude":
        return {**os.environ, **ac.claude_env(home, base_url), **path}, {"allowed_tools": ("Read",)}
    if cli == "codex":
        return ({**os.environ, **ac.codex_env(home), **path, "LAB_KEY": "lab-key-0123456789"},
                {"base_url": f"{base_url}/v1", "api_key_env": "LAB_KEY", "model": "gpt-5.5"})
    if cli == "copilot":
        return ({**os.environ, **ac.copilot_env(home, base_url), **path},
                {"env_passthrough": ("COPILOT_PROVIDER_API_KEY",)})
    return {**os.environ, **ac.opencode_env(home, base_url), **path}, {}


def _rollout(cli: str, root: Path, home: Path, profile: str) -> tuple[str, object]:
    """(what the CLI sent the scripted server, the rollout's score) of one rollout under `profile`."""
    exe = ac.require_cli(cli)
    with AgentServer(default=lambda _req: text("OK")) as server:
        env, extra = _env(cli, exe, home, server.base_url)
        cfg = {k: v for k, v in extra.items() if k in ("allowed_tools", "env_passthrough")}
        student = AgentStudent(CommandCfg(preset=cli, timeout_s=180, profile=profile, **cfg), project_root=root,
                               model=extra.get("model"), env=env, base_url=extra.get("base_url"),
                               api_key_env=extra.get("api_key_env"))
        reply = student.run(SKILL, _item(root))
        assert server.agent_requests(), f"{cli} never asked the scripted server"
        return "\n".join(r.context_text() + r.messages_text() for r in server.agent_requests()), reply.score


@pytest.mark.slow
@pytest.mark.parametrize("cli", ["claude", "codex", "copilot", "opencode"])
def test_a_hermetic_rollout_leaves_the_users_home_as_it_was(cli, project, tmp_path):  # noqa: F811
    home = tmp_path / "user-home"
    canary_home(home)
    before = snapshot(home)
    seen, score = _rollout(cli, project, home, "hermetic")
    assert score is not None and score.hard == 1.0  # type: ignore[attr-defined]
    assert MARK not in seen, f"{cli} read the user's config"
    after = snapshot(home)
    assert after == before, {k: (before.get(k), after.get(k)) for k in set(before) | set(after)
                             if before.get(k) != after.get(k)}
    # the control: profile "user" runs the same CLI in that HOME, and it reads the canary and writes there
    seen, _ = _rollout(cli, project, home, "user")
    assert MARK in seen and snapshot(home) != before
