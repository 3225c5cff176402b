"""Sleep's readers on what real sessions hold (issue 23 items 1, 4, 5, 8) and the reader list the agent registry
gives (issue 21). The fixtures were written by the real CLIs (tests/fixtures/agent_cli/regenerate.py `readers`,
tests/transcript_scenarios.py) where the CLI runs here, hand-built from public sources otherwise (Cursor, VS Code);
each fixture folder's README says which."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from skillgit.agents import registry
from skillgit.errors import ConfigError
from skillgit.sleep import Session, Turn, harvest
from skillgit.sleep.model import SkillUse
from skillgit.sleep.readers import get_reader, readers, sources
from skillgit.sleep.readers._cursor_transcripts import stamp_time
from skillgit.sleep.readers.claude import headless_of
from skillgit.sleep.scrub import build_scrubber
from tests.test_sleep_harvest import build_opencode_db, make_repo, one

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CURSOR_PROJECT = FIXTURES / "cursor" / "projects" / "srv-demo-dateparse"
# what the person typed in the interactive scenarios (tests/transcript_scenarios.py); `/tidy-notes` runs a skill,
# which the agent then works on, so it is a request; `/mcp`, `/model`, `/skills`, `/exit` and Esc are not
TYPED = ["Append one to notes.md.", "/tidy-notes", "Append two to notes.md.", "ok, stop there"]


def said(session: Session) -> list[str]:
    return [t.text for t in session.turns if t.role == "user"]


def used(session: Session) -> list[tuple[str, str, str]]:
    return [(u.name, u.kind, u.how) for u in session.skills]


def read(source: str, path: Path) -> Session:
    return one(get_reader(source).read(path))


# ------------------------------------------------------------------------------------------------ item 1
def test_claude_codes_own_commands_and_interrupts_are_not_requests():
    session = read("claude", FIXTURES / "claude" / "interactive-commands.jsonl")
    assert said(session) == TYPED  # not /mcp, its output, its caveat, nor `[Request interrupted by user…]`
    assert session.user_turn_count == 4
    text = json.dumps([t.to_dict() for t in session.turns])
    assert "interrupted by user" not in text and "No MCP servers" not in text and "<command-" not in text
    # the real request after /mcp stays a request of its own (it was merged into a "correction")
    assert session.turns[2].role == "user" and session.turns[4].text == "Append two to notes.md."


def _claude_records(*texts: str, entrypoint: str | None = "cli") -> list[dict[str, Any]]:
    records = []
    for i, text in enumerate(texts):
        role = "assistant" if text.startswith("A:") else "user"
        content: Any = ([{"type": "text", "text": text[2:]}] if role == "assistant" else text)
        rec = {"type": role, "sessionId": "s-cmd", "cwd": "/w", "uuid": f"u{i}",
               "timestamp": f"2026-11-20T10:00:{i:02d}Z", "message": {"role": role, "content": content}}
        if entrypoint:
            rec["entrypoint"] = entrypoint
        records.append(rec)
    return records


def _write(path: Path, records: Iterable[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_slash_commands_in_older_and_newer_claude_files_are_dropped_and_a_custom_command_is_kept(tmp_path):
    exit_ = "<command-name>/exit</command-name>\n<command-message>exit</command-message>\n<command-args></command-args>"
    stdout = "<local-command-stdout>Bye!</local-command-stdout>"
    custom = "<command-message>review-pr</command-message>\n<command-name>/review-pr</command-name>\n" \
             "<command-args>42</command-args>"
    path = _write(tmp_path / "s.jsonl", _claude_records(
        "Fix the parser.", "A:Fixed.", "<command-name>/mcp</command-name>", stdout,
        "Now add a test.", "A:Added.", "[Request interrupted by user]", custom, "A:Reviewed.", exit_, stdout))
    session = read("claude", path)
    assert said(session) == ["Fix the parser.", "Now add a test.", "/review-pr 42"]
    # /exit alone (nothing answered it: Claude Code 2.1 writes no stdout for it) is not a request either
    alone = read("claude", _write(tmp_path / "e.jsonl", _claude_records("Hi.", "A:Hello.", exit_)))
    assert said(alone) == ["Hi."]



def test_seven_interactive_sessions_ending_in_exit_mine_no_exit_task_and_mcp_makes_no_correction(tmp_path):
    """The issue's night: `/exit` in 7 sessions was mined as a recurring task; `/mcp` before a request made the
    request a "correction" of the work before it; an interrupt inflated the turn count and failed the work."""
    from skillgit.sleep import HarvestState, mine, split_units
    from tests.test_sleep_harvest import ClaudeSession

    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    exit_ = "<command-name>/exit</command-name>\n<command-message>exit</command-message>\n<command-args></command-args>"
    bye = "<local-command-stdout>Bye!</local-command-stdout>"
    for n in range(7):
        session = ClaudeSession(f"s{n}", repo, start_minute=n, day=f"2025-10-{n + 1:02d}")
        session.user(f"Rename helper{n} to util{n} in src/app.py").edit("src/app.py").say("Renamed.")
        if n == 0:
            session.user("<command-name>/mcp</command-name>").user(bye.replace("Bye!", "No MCP servers"))
            session.user("Now add a docstring to util0").say("Added.")
            session.user("[Request interrupted by user for tool use]")
        session.user(exit_).user(bye).write(home)
    result = harvest(["claude"], home, repo, [], HarvestState(), remote_lookup=None, inbox=False)
    assert len(result.sessions) == 7
    units = [u for s in result.sessions for u in split_units(s)]
    assert not [u for u in units if "exit" in u.request or "interrupted" in u.request]
    assert len(units) == 8 and all(u.corrections == 0 for u in units)
    first = next(s for s in result.sessions if s.session_id == "s0")
    assert first.user_turn_count == 2
    tasks = mine(result.sessions, min_sessions=2).tasks
    assert not [t for t in tasks if "/exit" in t.prompt or "exit" == t.prompt.strip()]

def test_copilot_clis_own_commands_and_interrupts_are_not_requests():
    log = next((FIXTURES / "copilot-cli" / "commands").rglob("events.jsonl"))
    session = read("copilot-cli", log)
    assert said(session) == TYPED and not session.headless
    # the file holds a real interrupt (Ctrl+C: an `abort` event after a tool that never completed), not a request
    assert '"type":"abort"' in log.read_text(encoding="utf-8").replace(" ", "")



def test_a_codex_interrupt_is_not_a_request(tmp_path):
    """Esc in the Codex TUI writes a `<turn_aborted>` user item and a `turn_aborted` event (codex-rs
    `core/src/tasks/mod.rs`); neither is the person's."""
    source = next((FIXTURES / "codex").glob("rollout-*.jsonl"))
    before = said(read("codex", source))
    aborted = [{"timestamp": "2025-10-01T09:09:00.000Z", "type": "response_item", "payload": {
                   "type": "message", "role": "user", "content": [{"type": "input_text", "text":
                   "<turn_aborted>\n  <turn_id>1</turn_id>\n  <reason>interrupted</reason>\n</turn_aborted>"}]}},
               {"timestamp": "2025-10-01T09:09:00.001Z", "type": "event_msg",
                "payload": {"type": "turn_aborted", "reason": "interrupted"}}]
    path = _write(tmp_path / source.name, [*map(json.loads, source.read_text().splitlines()), *aborted])
    assert said(read("codex", path)) == before and before

# ------------------------------------------------------------------------------------------------ item 4
def _cursor_home(home: Path, workspace: Path) -> Path:
    """The fixture project's transcripts under `home/.cursor/projects/<slug of workspace>/`, naming `workspace`."""
    slug = str(workspace).strip("/").replace("/", "-").replace("_", "-")
    target = home / ".cursor" / "projects" / slug
    shutil.copytree(CURSOR_PROJECT, target)
    (target / "repo.json").write_text(json.dumps({"workspace": str(workspace)}))
    for path in target.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".txt"):
            path.write_text(path.read_text().replace("/srv/demo/dateparse", str(workspace)))
    return target


def test_cursor_agent_transcripts_are_discovered_and_read(tmp_path):
    home = tmp_path / "home"
    _cursor_home(home, Path("/srv/demo/dateparse"))
    found = get_reader("cursor").discover(home)
    assert sorted(p.suffix for p in found) == [".jsonl", ".jsonl", ".txt"]
    by_id = {s.session_id: s for p in found for s in get_reader("cursor").read(p)}
    nested = by_id["9b1f3c2e-5a7d-4e21-8f3b-6c0d2a9e4b17"]
    # what Cursor injects (`<timestamp>`, `<attached_files>`, a `<system_reminder>` message) is not the person's
    assert said(nested) == ["The date test fails on ISO strings with an offset like +02:00, fix parse_date.",
                            "thanks, looks good"]
    assert nested.cwd == "/srv/demo/dateparse" and not nested.sidechain and not nested.headless
    assert nested.started == "2026-11-25T01:53:00Z"  # 9:53 PM (UTC-4)
    calls = [(c.name, c.command) for t in nested.turns for c in t.tool_calls]
    assert ("Shell", "pytest -q tests/test_dates.py") in calls and nested.unknown_records == {"line/checkpoint": 1}
    sub = by_id["9b1f3c2e-5a7d-4e21-8f3b-6c0d2a9e4b17/subagent-4c2e8a10-3b5f-4d6e-9a71-0e2f4b6d8c93"]
    assert sub.sidechain and said(sub) == ["List the tests that touch parse_date."]
    flat = by_id["5d0a7e91-2c4b-4f83-a6d2-1b9e3f5c7a08"]  # the older plain-text layout
    assert said(flat) == ["Add a --utc flag to the dateparse CLI."]
    calls = [(c.name, c.command) for t in flat.turns for c in t.tool_calls]
    assert calls[1] == ("Shell", "pytest -q tests/test_cli.py")
    assert any("2 passed" in r.output for t in flat.turns for r in t.tool_results)
    assert stamp_time("<timestamp>Monday, Nov 23, 2026, 10:05 AM (UTC+01:00)</timestamp>") == "2026-11-23T09:05:00Z"


def test_a_cursor_transcript_of_an_unknown_shape_is_warned_about_not_skipped_silently(tmp_path):
    repo = make_repo(tmp_path / "dateparse")
    home = tmp_path / "home"
    target = _cursor_home(home, repo)
    (target / "agent-transcripts" / "0a0a0a0a-1111-2222-3333-444455556666.md").write_text("# a new format\n")
    result = harvest(["cursor"], home, repo, remote_lookup=None, inbox=False)
    assert sorted(s.session_id[:8] for s in result.sessions) == ["5d0a7e91", "9b1f3c2e"]
    assert sorted(s.skipped_reason or "" for s in result.skipped) == ["empty", "sidechain"]  # the .md: nothing read
    assert result.unknown_records["cursor"].get("file/.md") == 1
    assert any("0a0a0a0a" in w.path for w in result.warnings), result.warnings


# ------------------------------------------------------------------------------------------------ item 5
def test_copilot_in_vs_code_keeps_only_the_persons_requests_to_copilot():
    session = read("copilot-vscode", next((FIXTURES / "copilot-vscode" / "injected").glob("*.json")))
    # three requests: the person's, one that is only <environment_info>/<workspace_info> Copilot injected, and one
    # another extension's chat participant (@azure) answered
    assert said(session) == ["Add a --utc flag to the dateparse CLI"]
    text = json.dumps([t.to_dict() for t in session.turns])
    assert "environment_info" not in text and "resource groups" not in text


def _without(path: Path, keys: tuple[str, ...], tmp_path: Path) -> Path:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return _write(tmp_path / path.name, ({k: v for k, v in r.items() if k not in keys} for r in records))


@pytest.mark.parametrize("fixture, headless", [("headless-pytest-edit.jsonl", True), ("headless-skill.jsonl", True),
                                               ("interactive-tui.jsonl", False),
                                               ("interactive-commands.jsonl", False)])
def test_a_claude_file_without_entrypoint_is_decided_by_its_other_signals(fixture, headless, tmp_path):
    path = FIXTURES / "claude" / fixture
    assert read("claude", path).headless is headless  # entrypoint decides
    older = read("claude", _without(path, ("entrypoint",), tmp_path))
    assert older.entrypoint is None and older.headless is headless  # promptSource / turn_duration / …
    (tmp_path / "oldest").mkdir()
    oldest = read("claude", _without(path, ("entrypoint", "promptSource", "turnOrigin"), tmp_path / "oldest"))
    assert oldest.headless is headless  # the queue-operation before the prompt, interactive-only records


def test_headless_of_orders_the_signals():
    assert headless_of("sdk-cli", {"interactive": True}) and not headless_of("cli", {"prompt": True})
    assert headless_of(None, {"prompt": True, "interactive": True})
    assert not headless_of(None, {"queued": True, "interactive": True})
    assert headless_of(None, {"queued": True}) and not headless_of(None, {})


# ------------------------------------------------------------------------------------------------ item 8
def test_each_reader_records_the_skills_a_session_invoked():
    claude = read("claude", FIXTURES / "claude" / "interactive-commands.jsonl")
    assert used(claude) == [("tidy-notes", "skill", "command")]
    answer = next(t for t in claude.turns if t.skills)  # the command's skill belongs to the answer to it
    assert answer.role == "assistant" and answer.text == "Tidied."
    assert answer.skills[0].path and answer.skills[0].path.endswith(".claude/skills/tidy-notes/SKILL.md")
    assert used(read("claude", FIXTURES / "claude" / "headless-skill.jsonl")) == [("tidy-tests", "skill", "tool")]
    assert used(read("codex", FIXTURES / "codex" / "exec-skill.jsonl"))[0] == ("tidy-notes", "skill", "command")
    log = next((FIXTURES / "copilot-cli" / "commands").rglob("events.jsonl"))
    assert used(read("copilot-cli", log)) == [("tidy-notes", "skill", "command")]
    cursor = read("cursor", next(CURSOR_PROJECT.glob("agent-transcripts/9b1f*/9b1f*.jsonl")))
    assert used(cursor) == [("tidy-tests", "skill", "read")]
    vscode = read("copilot-vscode", next((FIXTURES / "copilot-vscode" / "injected").glob("*.json")))
    assert used(vscode) == [("tidy-tests", "skill", "read")]
    # sessions without a skill record none (the plain fixtures)
    assert used(read("claude", FIXTURES / "claude" / "headless-pytest-edit.jsonl")) == []


def test_opencodes_skill_tool_is_recorded(tmp_path):
    dump = json.loads((FIXTURES / "opencode" / "opencode-skill-db.json").read_text())
    db = build_opencode_db(tmp_path / "opencode.db", dump)
    sessions = list(get_reader("opencode").read(db))
    assert any(("tidy-notes", "skill", "tool") in used(s) for s in sessions), [used(s) for s in sessions]


def test_skills_survive_serialisation_and_scrubbing(tmp_path):
    session = read("claude", FIXTURES / "claude" / "interactive-commands.jsonl")
    again = Session.from_dict(json.loads(json.dumps(session.to_dict())))
    assert again.skills == session.skills
    assert Turn.from_dict({"role": "assistant", "skills": [{"name": "x", "kind": "weird", "how": "new"}]}).skills \
        == (SkillUse("x"),)  # a newer file's values read back as the defaults
    assert "skills" not in Turn("user", "hi").to_dict()  # older digests do not change
    scrubbed, _ = build_scrubber(homes=["/home/user"]).scrub_session(session)
    assert [u.name for u in scrubbed.skills] == ["tidy-notes"]
    assert all("/home/user/" not in (u.path or "") for u in scrubbed.skills)


# ------------------------------------------------------------------------------------------------ issue 21
def test_an_agent_registered_with_a_reader_is_harvested_without_any_other_file_changing(tmp_path):
    from skillgit.sleep.settings import SleepSettings
    from tests import fake_reader

    assert "fakelog" not in sources()
    with pytest.raises(ConfigError, match="unknown session source 'fakelog'"):
        get_reader("fakelog")
    with pytest.raises(ConfigError, match="sleep.sources"):
        SleepSettings.from_mapping({"sources": ["claude", "fakelog"]})
    registry.register("fakelog", "tests.fake_reader:AGENT")
    try:
        assert sources()[-1] == "fakelog" and readers()["fakelog"].read is fake_reader.read
        assert SleepSettings.from_mapping({"sources": ["claude", "fakelog"]}).sources == ("claude", "fakelog")
        repo = make_repo(tmp_path / "proj")
        home = tmp_path / "home"
        (home / ".fakelog").mkdir(parents=True)
        (home / ".fakelog" / "s1.log").write_text(f"{repo}\nFix the date parser.\nFixed.\n")
        result = harvest(None, home, repo, remote_lookup=None, inbox=False)
        assert [(s.source, s.session_id, said(s)) for s in result.sessions] == [
            ("fakelog", "s1", ["Fix the date parser."])]
    finally:
        registry.unregister("fakelog")
    assert "fakelog" not in sources()


def test_exit_codes_are_read_as_the_whole_regex_reads_them_from_any_text():
    # exit_code_in tries its regex only where a match can start: it must find what a search of the whole text finds
    import random

    from skillgit.sleep.readers._common import _EXIT_CODE, exit_code_in

    def whole(text: str) -> int | None:
        match = _EXIT_CODE.search(text)
        return int(match.group(1)) if match else None

    words = ["exit", "exited", " with", " code", " status", "process ", "Process ", ":", " ", "\n", "\t", "1", "-2",
             "x", "É", "EXİT", "Exit", "EXIT", "_", "sys.exit(", "myexit"]
    rng = random.Random(7)
    texts = ["Exit code 1", "process exited with code 2", "EXITED WITH CODE 4", "exit status: -5", "sys.exit(1)",
             "the exit code is 3", "Process Exited With Code 12", "ÉTAT exit code 6", "", "nothing"]
    texts += ["".join(rng.choice(words) for _ in range(rng.randint(1, 14))) for _ in range(5000)]
    assert [exit_code_in(t) for t in texts] == [whole(t) for t in texts]
    assert exit_code_in("ok\nProcess exited with code 2\n") == 2 and exit_code_in("sys.exit(0) in main") is None
