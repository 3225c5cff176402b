"""Routing in sleep with sessions the REAL `claude` CLI wrote (issue 25, "the real claude CLI where installed produces
such sessions offline"): two interactive Claude Code sessions (the TUI in tmux: sleep harvests a person's work and
skips headless `claude -p` runs) against the scripted server on 127.0.0.1, in a temporary HOME, in a repository with
two project skills; in each, three requests: the scripted model calls the Skill tool with one skill, the other, or
none. Then `skillgit sleep mine` (the real CLI) reads that HOME's session files, and each mined task carries — and
routes to — the skill its sessions invoked. Skipped when claude is not installed (test_sleep_route.py covers the
recorded fixture everywhere)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.sleep.mine import read_tasks
from tests import agent_clis as ac
from tests.agent_server import AgentServer, text, tool
from tests.conftest import git
from tests.transcript_scenarios import CLAUDE_BUSY, Tui

pytestmark = pytest.mark.agent_cli

SKILLS = {"deploy": "Use when shipping a release to staging or production: run make deploy with the target.",
          "tidy-tests": "Use when tests fail or are flaky: run pytest quietly, then fix the failing test."}
REQUESTS = (("ship the release to staging", "deploy"), ("make the flaky parser tests pass", "tidy-tests"),
            ("explain the retry backoff settings", None))
CONFIG = """\
skill: {path: .claude/skills/tidy-tests/SKILL.md}
skills:
  deploy: {path: .claude/skills/deploy/SKILL.md}
  tidy-tests: {path: .claude/skills/tidy-tests/SKILL.md}
sleep: {sources: [claude]}
"""


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, description in SKILLS.items():
        skill = path / ".claude" / "skills" / name / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nDo it carefully.\n")
    (path / "skillgit.yaml").write_text(CONFIG)
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "two project skills")
    return path


def _session(claude: Path, server: AgentServer, repo: Path, env: dict[str, str]) -> None:
    """One interactive Claude Code session (the TUI in tmux): the three requests in turn; for each, the scripted
    model calls the Skill tool with its skill (or none) and answers; then `/exit`."""
    first, *rest = [request for request, _ in REQUESTS]
    tui = Tui(ac.claude_interactive_argv(claude, first, allowed_tools=["Read", "Skill"]), repo, env, echoes=True,
              busy=CLAUDE_BUSY)
    try:
        for n, (_, skill) in enumerate(REQUESTS):
            server.script(*([tool("Skill", skill=skill)] if skill else []), text(f"Done {n}."))
            if n:
                tui.type(rest[n - 1])
            said = f"Done {n}."
            assert tui.wait(lambda: server.pending == 0 and said in tui.screen(), 90), tui.screen()  # noqa: B023
            tui.idle()  # the turn has ended: the next request is a new one
        tui.type("/exit")
        tui.wait(lambda: not tui.alive(), 15)
    finally:
        tui.close()


def test_real_claude_sessions_route_each_mined_task_to_the_skill_it_invoked(tmp_path):
    claude = ac.find_cli("claude")
    if claude is None:
        pytest.skip("claude is not installed (.venv/bin/python -m tests.agent_clis install)")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (sleep harvests a person's interactive sessions: the TUI runs in tmux)")
    repo = _repo(tmp_path / "repo")
    home = ac.prepare_claude_home(tmp_path / "home", trusted=[repo])
    with AgentServer() as server:
        env = ac.claude_env(home, server.base_url)
        for _ in range(2):  # each request recurs in two sessions: a task for the miner
            _session(claude, server, repo, env)
        loaded = [r for r in server.agent_requests() if "Base directory for this skill" in r.messages_text()]
    assert loaded  # Claude Code itself loaded the skills' bodies
    assert len(ac.claude_session_files(home)) == 2

    clean = {k: v for k, v in os.environ.items() if not k.startswith("SKILLGIT_")}
    mined = subprocess.run([sys.executable, "-m", "skillgit", "sleep", "mine", "--home", str(home), "--json"],
                           cwd=repo, capture_output=True, text=True, env=clean, timeout=300)
    assert mined.returncode == 0, mined.stderr[-3000:]
    info = json.loads(mined.stdout)
    assert info["sessions"] == 2 and info["new_tasks"] == 3
    tasks = read_tasks(Path(info["file"])).tasks
    assert {t.prompt: t.skill for t in tasks} == dict(REQUESTS)  # the skill travels in the reviewable file

    # what tonight's library night would route to each skill (the dry run plans it as `sleep run` would)
    planned = subprocess.run([sys.executable, "-m", "skillgit", "sleep", "dry-run", "--home", str(home), "--json"],
                             cwd=repo, capture_output=True, text=True, env=clean, timeout=300)
    assert planned.returncode == 0, planned.stderr[-3000:]
    # deploy: its own task; tidy-tests (the skill at skill.path): its own and the one no skill fired for
    assert {k: v["routed"] for k, v in json.loads(planned.stdout)["skills"].items()} == {"deploy": 1, "tidy-tests": 2}

    from skillgit.config import config_from_dict
    from skillgit.sleep.route import for_configured_skill

    skills = {name: {"path": f".claude/skills/{name}/SKILL.md"} for name in SKILLS}
    for own, expected in (("deploy", {"ship the release to staging"}),
                          ("tidy-tests", {"make the flaky parser tests pass"})):
        cfg = config_from_dict({"skill": {"path": skills[own]["path"]}, "skills": skills})
        routed = {t.prompt for t in for_configured_skill(cfg, tasks, repo)}
        # its own task, plus the one no library skill fired for (the default skill takes those: it is configured)
        assert routed - {"explain the retry backoff settings"} == expected
