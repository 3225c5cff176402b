"""Sleep's readers on sessions the REAL agent CLIs write now (issue 23 items 1 and 8), offline against the scripted
server on 127.0.0.1: the scenarios of tests/transcript_scenarios.py (the ones that wrote the checked-in fixtures
tests/test_sleep_readers.py reads everywhere). Skipped when a CLI (or tmux, for the interactive ones) is missing,
so a new CLI version that changes its files fails here first."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from skillgit.sleep import Session
from skillgit.sleep.readers import get_reader
from tests import agent_clis as ac
from tests import transcript_scenarios as sc

pytestmark = pytest.mark.agent_cli
TYPED = [sc.FIRST, f"/{sc.SKILL_NAME}", sc.SECOND, sc.THIRD]


def _run(cli: str, scenario: Callable[[Path, Path, Path], Path], tmp_path: Path, tui: bool) -> Path:
    exe = ac.find_cli(cli)
    if exe is None:
        pytest.skip(f"{cli} is not installed (.venv/bin/python -m tests.agent_clis install)")
    if tui and shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (the interactive scenario drives the TUI in tmux)")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return scenario(exe, home, project)


def _said(session: Session) -> list[str]:
    return [t.text for t in session.turns if t.role == "user"]


def _used(sessions: list[Session]) -> set[tuple[str, str]]:
    return {(u.name, u.how) for s in sessions for u in s.skills}


def test_real_interactive_claude_code_commands_interrupts_and_skill(tmp_path):
    path = _run("claude", sc.claude_commands, tmp_path, tui=True)
    (session,) = get_reader("claude").read(path)
    assert _said(session) == TYPED and not session.headless
    assert _used([session]) == {(sc.SKILL_NAME, "command")}
    # what the reader had to drop is really there: the scenario's keys landed when they should (Esc while the
    # slow command ran, /mcp answered)
    raw = path.read_text(encoding="utf-8")
    assert "[Request interrupted by user for tool use]" in raw and "<command-name>/mcp</command-name>" in raw


def test_real_interactive_copilot_cli_commands_interrupts_and_skill(tmp_path):
    """The interrupt is a real one (Ctrl+C, Copilot's cancel; see tests/transcript_scenarios.py): the log holds an
    `abort` event, and the next message opened a turn of its own instead of steering the interrupted one (what
    the Esc Esc this scenario used before left: the slow command moved to the background, the turn going on)."""
    path = _run("copilot", sc.copilot_commands, tmp_path, tui=True)
    (session,) = get_reader("copilot-cli").read(path)
    assert _said(session) == TYPED and not session.headless
    assert _used([session]) == {(sc.SKILL_NAME, "command")}
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert {"reason": "user_initiated"} in [e.get("data") for e in events if e.get("type") == "abort"]
    last = next(e["data"] for e in events if e.get("type") == "user.message" and e["data"].get("content") == sc.THIRD)
    assert last.get("delivery") == "idle", last  # not "steering": the interrupted turn had ended
    assert "moved to background" not in path.read_text(encoding="utf-8")


def test_real_codex_exec_records_the_skill_its_prompt_named(tmp_path):
    path = _run("codex", sc.codex_skill, tmp_path, tui=False)
    (session,) = get_reader("codex").read(path)
    assert _said(session) == [f"${sc.SKILL_NAME} Tidy the notes."] and session.headless
    assert (sc.SKILL_NAME, "command") in _used([session])


def test_real_opencode_run_records_its_skill_tool(tmp_path):
    if shutil.which("rg") is None:
        pytest.skip("OpenCode's skill tool needs ripgrep (apt-get install ripgrep)")
    db = _run("opencode", sc.opencode_skill, tmp_path, tui=False)
    sessions = list(get_reader("opencode").read(db))
    assert (sc.SKILL_NAME, "tool") in _used(sessions)
    # `opencode run` stores a message of several words as it quotes it: "Tidy the notes." with the quotes
    assert any([t.strip('"') for t in _said(s)] == ["Tidy the notes."] for s in sessions)
