"""skillgit.sleep readers and harvest: every reader on its fixtures (real Claude Code, Codex, Copilot CLI and
OpenCode files; hand-built ones for VS Code chat and Cursor), discovery under a home folder, scoping to this
repository (cwd or git remote), the skip reasons (replays of every agent included), unknown-record counting and
warnings, incremental harvests against a real git repository (sessions deduplicated across files), and the sleep
inbox (read, scoped, trimmed without losing a line appended meanwhile)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skillgit.sleep import REPLAY_MARKER, HarvestState, Session, harvest, normalize_remote
from skillgit.sleep.readers import get_reader, readers, sources
from skillgit.sleep.readers.copilot_vscode import _replay

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
REMOTE = "https://github.com/example/dateparse.git"


# ------------------------------------------------------------------------------------------------ builders
def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def make_repo(path: Path, remote: str = REMOTE) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    (path / "README.md").write_text("demo\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "init")
    git(path, "remote", "add", "origin", remote)
    return path


class ClaudeSession:
    """Writes a Claude Code session file in the documented JSONL shape (see skillgit/sleep/readers/claude.py)."""

    def __init__(self, session_id: str, cwd: Path | str, *, entrypoint: str = "cli", start_minute: int = 0,
                 sidechain: bool = False, agent_id: str | None = None, day: str = "2025-10-03") -> None:
        self.session_id, self.cwd, self.entrypoint = session_id, str(cwd), entrypoint
        self.sidechain, self.agent_id = sidechain, agent_id
        self.records: list[dict[str, Any]] = [{"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}}]
        self.tick = start_minute * 60
        self.day = day
        self.calls = 0

    def _base(self, kind: str) -> dict[str, Any]:
        self.tick += 1
        ts = f"{self.day}T{10 + self.tick // 3600:02d}:{self.tick // 60 % 60:02d}:{self.tick % 60:02d}.000Z"
        rec = {"parentUuid": None, "isSidechain": self.sidechain, "userType": "external", "cwd": self.cwd,
               "sessionId": self.session_id, "version": "2.0.14", "gitBranch": "main", "type": kind,
               "uuid": f"u{len(self.records)}", "timestamp": ts, "entrypoint": self.entrypoint}
        if self.agent_id:
            rec["agentId"] = self.agent_id
        return rec

    def user(self, text: str) -> ClaudeSession:
        self.records.append({**self._base("user"), "message": {"role": "user", "content": text}})
        return self

    def say(self, text: str) -> ClaudeSession:
        self.records.append({**self._base("assistant"), "message": {
            "role": "assistant", "model": "m", "content": [{"type": "text", "text": text}]}})
        return self

    def tool(self, name: str, tool_input: dict[str, Any], output: str, is_error: bool = False) -> ClaudeSession:
        self.calls += 1
        call_id = f"toolu_{self.session_id[:4]}_{self.calls}"
        self.records.append({**self._base("assistant"), "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}]}})
        self.records.append({**self._base("user"), "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": output, "is_error": is_error}]}})
        return self

    def bash(self, command: str, output: str, is_error: bool = False) -> ClaudeSession:
        return self.tool("Bash", {"command": command, "description": "run"}, output, is_error)

    def edit(self, path: str) -> ClaudeSession:
        return self.tool("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated")

    def raw(self, record: dict[str, Any]) -> ClaudeSession:
        self.records.append(record)
        return self

    def path(self, home: Path) -> Path:
        slug = self.cwd.replace("/", "-")
        name = f"agent-{self.agent_id}.jsonl" if self.agent_id else f"{self.session_id}.jsonl"
        return home / ".claude" / "projects" / slug / name

    def write(self, home: Path) -> Path:
        target = self.path(home)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return target


def build_cursor_home(home: Path) -> Path:
    """Real SQLite `state.vscdb` files under `home`, from the reviewable JSON dump in the cursor fixture folder."""
    dump = json.loads((FIXTURES / "cursor" / "state_vscdb.json").read_text())
    user = home / ".config" / "Cursor" / "User"
    ws = user / "workspaceStorage" / "9f8e7d6c"
    ws.mkdir(parents=True)
    (user / "globalStorage").mkdir(parents=True)
    (ws / "workspace.json").write_text(json.dumps(dump["workspace"]["workspace.json"]))

    def db(path: Path, tables: dict[str, dict[str, Any]]) -> None:
        con = sqlite3.connect(path)
        for table in ("ItemTable", "cursorDiskKV"):
            con.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            for key, value in tables.get(table, {}).items():
                con.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, json.dumps(value)))
        con.commit()
        con.close()

    db(ws / "state.vscdb", {"ItemTable": dump["workspace"]["ItemTable"]})
    db(user / "globalStorage" / "state.vscdb", dump["global"])
    return ws / "state.vscdb"


def opencode_dump() -> dict[str, Any]:
    return json.loads((FIXTURES / "opencode" / "opencode-db.json").read_text())


def build_opencode_db(path: Path, dump: dict[str, Any] | None = None) -> Path:
    """A real `opencode.db`: the tables and rows the real OpenCode 1.18.33 wrote (the JSON dump of the fixture)."""
    dump = dump or opencode_dump()
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    for table, sql in dump["schema"].items():
        con.execute(sql)
        for row in dump["rows"][table]:
            cols = list(row)
            con.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [row[c] for c in cols])
    con.commit()
    con.close()
    return path


def build_opencode_storage(storage: Path, dump: dict[str, Any] | None = None) -> list[Path]:
    """The same rows in OpenCode's older JSON file layout (the fields `json-migration.ts` reads back)."""
    dump = dump or opencode_dump()
    files = []
    for s in dump["rows"]["session"]:
        info = {"id": s["id"], "projectID": s["project_id"], "parentID": s["parent_id"], "directory": s["directory"],
                "title": s["title"], "version": s["version"], "permission": json.loads(s["permission"] or "null"),
                "time": {"created": s["time_created"], "updated": s["time_updated"]}}
        target = storage / "session" / s["project_id"] / f"{s['id']}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(info))
        files.append(target)
    for m in dump["rows"]["message"]:
        target = storage / "message" / m["session_id"] / f"{m['id']}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"id": m["id"], "sessionID": m["session_id"], **json.loads(m["data"])}))
    for p in dump["rows"]["part"]:
        target = storage / "part" / p["message_id"] / f"{p['id']}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"id": p["id"], "messageID": p["message_id"], "sessionID": p["session_id"],
                                      **json.loads(p["data"])}))
    return sorted(files)


def copilot_logs() -> dict[str, Path]:
    """The real Copilot CLI logs by kind: `headless` (`copilot -p`) and `tui` (interactive)."""
    logs = {}
    for log in (FIXTURES / "copilot-cli").glob("session-state/*/events.jsonl"):
        logs["headless" if "non-interactive mode" in log.read_text() else "tui"] = log
    return logs


def one(sessions: Any) -> Session:
    items = list(sessions)
    assert len(items) == 1, items
    return items[0]


def calls(session: Session) -> list[tuple[str, str | None, tuple[str, ...], bool]]:
    return [(c.name, c.command, c.paths, c.writes) for t in session.turns for c in t.tool_calls]


# ------------------------------------------------------------------------------------------------ readers on fixtures
def test_registry_lists_every_source_and_rejects_unknown_ones():
    assert sources() == ("claude", "codex", "copilot-cli", "opencode", "copilot-vscode", "cursor")
    with pytest.raises(Exception) as err:
        get_reader("windsurf")
    assert "claude" in str(err.value)


def test_claude_reader_on_real_cli_files():
    folder = FIXTURES / "claude"
    files = sorted(folder.glob("*.jsonl"))
    assert files, "the real Claude Code fixtures are missing"
    by_name = {f.name: one(readers()["claude"].read(f)) for f in files}

    tui = by_name["interactive-tui.jsonl"]
    assert (tui.entrypoint, tui.headless, tui.sidechain, tui.git_branch) == ("cli", False, False, "main")
    assert [t.role for t in tui.turns] == ["user", "assistant"]
    assert tui.turns[0].text == "Append a line to notes.md."
    assert tui.unknown_records == {}  # every record type of a real 2.1 file is known

    fix = by_name["headless-pytest-edit.jsonl"]
    assert fix.headless and fix.entrypoint == "sdk-cli"
    assert [t.role for t in fix.turns] == ["user", "assistant"]  # tool results never become a person's turn
    names = [c[0] for c in calls(fix)]
    assert names == ["Bash", "Read", "Edit", "Bash"]
    results = fix.turns[1].tool_results
    assert results[0].exit_code == 1 and results[0].is_error and "1 failed" in results[0].output
    assert "1 passed" in results[-1].output and not results[-1].is_error
    assert calls(fix)[2][3] is True and calls(fix)[2][2][0].endswith("calc.py")

    skill = by_name["headless-skill.jsonl"]
    users = [t.text for t in skill.turns if t.role == "user"]
    assert users == ["Check that the tests pass."]  # the skill body injected as a user record is not the person

    side = by_name["subagent.sidechain.jsonl"]
    parent = by_name["subagent.jsonl"]
    assert side.sidechain and not parent.sidechain
    assert side.session_id.startswith(parent.session_id + "/agent-")


def test_codex_reader_on_hand_built_and_real_rollouts():
    hand = one(readers()["codex"].read(next((FIXTURES / "codex").glob("rollout-*.jsonl"))))
    assert (hand.cwd, hand.headless, hand.entrypoint) == ("/srv/demo/dateparse", False, "codex_cli_rs")
    assert (hand.git_branch, hand.git_commit, hand.git_remote) == ("main", "1" * 40, REMOTE)
    assert hand.unknown_records == {"future_record_kind": 1}
    assert [t.role for t in hand.turns] == ["user", "assistant"]
    assert "environment_context" not in hand.turns[0].text
    assert calls(hand) == [("shell", "pytest -q tests/test_dates.py", (), False),
                           ("apply_patch", None, ("src/dateparse/core.py",), True),
                           ("shell", "pytest -q tests/test_dates.py", (), False)]
    exit_codes = [r.exit_code for r in hand.turns[1].tool_results]
    assert exit_codes == [1, 0, 0]

    real = one(readers()["codex"].read(FIXTURES / "codex" / "exec-pytest-patch.jsonl"))
    assert real.headless and real.entrypoint == "codex_exec" and real.client_version
    assert real.turns[0].text == "The tests fail. Fix the bug."  # AGENTS.md / environment blocks are not the person
    assert real.unknown_records == {}
    assert [c[1] for c in calls(real) if c[1]] == ["python -m pytest -q", "python -m pytest -q"]


def test_copilot_vscode_reader_json_and_mutation_log():
    chat = FIXTURES / "copilot-vscode" / "User" / "workspaceStorage" / "ab12cd34ef56" / "chatSessions"
    whole = one(readers()["copilot-vscode"].read(next(chat.glob("*.json"))))
    assert whole.cwd == "/srv/demo/dateparse" and whole.started == "2025-10-01T09:00:00Z"
    assert [t.role for t in whole.turns] == ["user", "assistant", "user", "assistant"]
    assert whole.unknown_records == {"part/holographicPreview": 1}
    assert [c[1] for c in calls(whole)] == ["pytest -q tests/test_dates.py", None, "pytest -q tests/test_dates.py"]
    assert calls(whole)[1][3] and calls(whole)[1][2] == ("/srv/demo/dateparse/src/dateparse/core.py",)
    assert [r.exit_code for r in whole.turns[1].tool_results] == [1, 0]

    log = one(readers()["copilot-vscode"].read(next(chat.glob("*.jsonl"))))
    assert [t.text for t in log.turns if t.role == "user"] == ["Add a --utc flag to the dateparse CLI"]
    assert calls(log)[0][2] == ("/srv/demo/dateparse/src/dateparse/cli.py",)
    state = _replay(next(chat.glob("*.jsonl")), __import__("collections").Counter())
    assert state["customTitle"] == "UTC flag" and "hasPendingEdits" not in state


def test_copilot_cli_reader_on_real_cli_logs_tells_headless_from_interactive(tmp_path):
    logs = copilot_logs()
    headless, tui = (one(readers()["copilot-cli"].read(logs[k])) for k in ("headless", "tui"))
    assert (headless.headless, headless.entrypoint, tui.headless, tui.entrypoint) == (True, "copilot -p", False,
                                                                                        "copilot-cli")
    assert (tui.cwd, tui.git_branch, tui.client_version) == ("/home/user/project", "main", "1.0.102")
    assert tui.git_commit and len(tui.git_commit) == 40
    assert headless.unknown_records == {} and tui.unknown_records == {}  # every event type of a real 1.0 log is known
    assert [t.role for t in headless.turns] == ["user", "assistant"]
    assert headless.turns[0].text == "The tests fail. Fix the bug."  # `content`, not the datetime-wrapped form
    assert calls(headless) == [("bash", "python -m pytest -q", (), False),
                               ("edit", None, ("/home/user/project/calc.py",), True),
                               ("bash", "python -m pytest -q", (), False)]
    assert [r.exit_code for r in headless.turns[1].tool_results] == [1, None, 0]  # shellExecution.exitCode
    assert [t.text for t in tui.turns] == ["Append a line to notes.md.", "Appended a line to notes.md."]

    # a sub-agent's events carry parentToolCallId: planted into the real log, they stay out of the main turns
    lines = logs["tui"].read_text().splitlines()
    planted = {"type": "assistant.message", "id": "x", "timestamp": "2026-11-22T18:40:00.000Z", "parentId": None,
               "data": {"messageId": "m", "content": "(sub-agent) internal chatter", "parentToolCallId": "t1"}}
    copy = tmp_path / "events.jsonl"
    copy.write_text("\n".join([*lines[:-1], json.dumps(planted), lines[-1]]) + "\n")
    assert "(sub-agent)" not in " ".join(t.text for t in one(readers()["copilot-cli"].read(copy)).turns)


def test_cursor_reader_on_built_databases(tmp_path):
    db = build_cursor_home(tmp_path)
    sessions = {s.session_id: s for s in readers()["cursor"].read(db)}
    assert set(sessions) == {"c0ffee00-1111-4222-8333-444455556666", "c0ffee00-aaaa-4bbb-8ccc-ddddeeeeffff", "tab-1"}
    agent = sessions["c0ffee00-1111-4222-8333-444455556666"]
    assert agent.cwd == "/srv/demo/dateparse" and agent.git_branch == "main"
    assert agent.unknown_records == {"bubble/30": 1}
    assert [c[:2] for c in calls(agent)] == [("run_terminal_cmd", "pytest -q tests/test_dates.py"),
                                            ("edit_file", None)]
    assert calls(agent)[1][2:] == (("src/dateparse/core.py",), True)
    assert [t.role for t in sessions["tab-1"].turns] == ["user", "assistant"]
    assert readers()["cursor"].discover(tmp_path) == [db]


def test_opencode_reader_on_a_real_database_and_the_json_layout(tmp_path):
    db = build_opencode_db(tmp_path / "opencode.db")
    sessions = list(readers()["opencode"].read(db))
    run, tui = sorted(sessions, key=lambda x: not x.headless)
    assert (run.headless, run.entrypoint, tui.headless, tui.entrypoint) == (True, "opencode run", False, "opencode")
    assert not run.sidechain and not tui.sidechain and run.client_version == "1.18.33"
    assert run.unknown_records == {} and tui.unknown_records == {}
    assert run.turns[0].text == '"The tests fail. Fix the bug."'  # `opencode run` stores the prompt quoted
    assert [c[0] for c in calls(run)] == ["bash", "read", "edit", "bash"] and calls(run)[2][3]
    assert [r.exit_code for r in run.turns[1].tool_results] == [1, None, None, 0]  # metadata.exit of bash
    assert [t.text for t in tui.turns] == ["Append a line to notes.md.", "Appended a line to notes.md."]

    files = build_opencode_storage(tmp_path / "storage")  # the older layout, same records
    from_json = {x.session_id: x for f in files for x in readers()["opencode"].read(f)}
    assert {k: (v.turns, v.headless) for k, v in from_json.items()} == {x.session_id: (x.turns, x.headless)
                                                                        for x in sessions}

    dump = opencode_dump()  # a child session (parent_id set) is a sub-agent
    dump["rows"]["session"][1]["parent_id"] = dump["rows"]["session"][0]["id"]
    child = [x for x in readers()["opencode"].read(build_opencode_db(tmp_path / "child.db", dump)) if x.sidechain]
    assert [x.session_id for x in child] == [dump["rows"]["session"][1]["id"]]


def test_discover_finds_each_source_under_a_home(tmp_path):
    home = tmp_path / "home"
    ClaudeSession("11111111-aaaa", tmp_path / "repo").user("hi").write(home)
    codex = home / ".codex" / "sessions" / "2025" / "10" / "01"
    codex.mkdir(parents=True)
    shutil.copy(next((FIXTURES / "codex").glob("rollout-*.jsonl")), codex)
    (home / ".codex" / "archived_sessions").mkdir()
    shutil.copy(FIXTURES / "codex" / "exec-pytest-patch.jsonl", home / ".codex" / "archived_sessions" / "r.jsonl")
    shutil.copytree(FIXTURES / "copilot-vscode" / "User", home / ".config" / "Code" / "User")
    shutil.copytree(FIXTURES / "copilot-cli" / "session-state", home / ".copilot" / "session-state")
    build_opencode_storage(home / ".local" / "share" / "opencode" / "storage")
    build_opencode_db(home / ".local" / "share" / "opencode" / "opencode.db")
    build_cursor_home(home)
    counts = {source: len(readers()[source].discover(home)) for source in sources()}
    assert counts == {"claude": 1, "codex": 2, "copilot-vscode": 2, "copilot-cli": 2, "cursor": 1, "opencode": 3}
    assert all(not readers()[source].discover(tmp_path / "empty") for source in sources())
    moved = tmp_path / "elsewhere"
    shutil.copytree(home / ".codex", moved)
    assert len(readers()["codex"].discover(tmp_path / "empty", {"CODEX_HOME": str(moved)})) == 2
    shutil.copytree(home / ".copilot", tmp_path / "copilot-home")
    env = {"COPILOT_HOME": str(tmp_path / "copilot-home")}
    assert len(readers()["copilot-cli"].discover(tmp_path / "empty", env)) == 2


# ------------------------------------------------------------------------------------------------ harvest
def test_harvest_keeps_this_repository_and_gives_every_filtered_session_its_reason(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    ClaudeSession("aaaa0001", repo).user("add a --utc flag").say("done").write(home)
    ClaudeSession("aaaa0002", repo / "src").user("rename parse to parse_date").say("ok").write(home)
    ClaudeSession("aaaa0003", tmp_path / "other-project").user("unrelated").say("ok").write(home)
    ClaudeSession("aaaa0004", repo, entrypoint="sdk-cli").user("headless").say("ok").write(home)
    ClaudeSession("aaaa0001", repo, sidechain=True, agent_id="f00d").user("sub-agent prompt").say("x").write(home)
    ClaudeSession("aaaa0006", repo).user(f"{REPLAY_MARKER} replay of task t1").say("ok").write(home)
    empty = ClaudeSession("aaaa0007", repo)
    empty.raw({**empty._base("system"), "subtype": "turn_duration"}).write(home)  # here, but nobody spoke

    result = harvest(["claude"], home, repo, [REMOTE], HarvestState(), remote_lookup=None)
    assert sorted(s.session_id for s in result.sessions) == ["aaaa0001", "aaaa0002"]
    reasons = {s.session_id: s.skipped_reason for s in result.skipped}
    assert reasons == {"aaaa0003": "other-project", "aaaa0004": "headless", "aaaa0001/agent-f00d": "sidechain",
                       "aaaa0006": "replay", "aaaa0007": "empty"}
    assert all(not s.turns for s in result.skipped)  # nothing a filtered session said leaves harvest
    assert result.summary()["skipped"] == {"empty": 1, "headless": 1, "other-project": 1, "replay": 1,
                                           "sidechain": 1}


def test_harvest_matches_another_clone_by_its_git_remote(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    clone = make_repo(tmp_path / "worktrees" / "clone", remote="git@github.com:Example/dateparse.git")
    stranger = make_repo(tmp_path / "stranger", remote="https://github.com/example/other.git")
    ClaudeSession("bbbb0001", clone).user("fix the date test in the clone").write(home)
    ClaudeSession("bbbb0002", stranger).user("not ours").write(home)
    codex_dir = home / ".codex" / "sessions" / "2025" / "10" / "01"
    codex_dir.mkdir(parents=True)
    shutil.copy(next((FIXTURES / "codex").glob("rollout-*.jsonl")), codex_dir)  # cwd /srv/…, remote recorded

    result = harvest(["claude", "codex"], home, repo, [REMOTE], HarvestState())
    assert sorted(s.session_id for s in result.sessions) == ["5973b6c0-94b8-487b-a530-2aeb6098ae0e", "bbbb0001"]
    assert [s.session_id for s in result.skipped] == ["bbbb0002"]
    assert harvest(["claude"], home, repo, [], HarvestState()).sessions == ()  # without remotes, cwd only


def test_normalize_remote_forms():
    forms = ["https://github.com/Example/dateparse.git", "git@github.com:example/dateparse.git",
             "ssh://git@github.com/example/dateparse", "https://user@github.com/example/dateparse/"]
    assert {normalize_remote(f) for f in forms} == {"github.com/example/dateparse"}
    assert normalize_remote("ssh://git@host:2222/org/repo.git") == "host/org/repo"


def test_unknown_record_types_are_counted_and_a_format_change_is_a_warning(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    odd = ClaudeSession("cccc0001", repo).user("fix the build").say("ok")
    for i in range(3):
        odd.raw({"type": "hologram", "n": i})
    odd.write(home)
    garbage = ClaudeSession("cccc0002", repo).write(home)
    garbage.write_text("not json\n" * 3 + json.dumps({"type": "quantum-turn"}) + "\n")
    fine = ClaudeSession("cccc0003", repo).user("a normal session").say("ok").user("more").say("ok")
    fine = fine.raw({"type": "hologram"}).write(home)

    result = harvest(["claude"], home, repo, [], HarvestState())
    assert result.unknown_records == {"claude": {"hologram": 4, "<malformed>": 3, "quantum-turn": 1}}
    warned = {Path(w.path).name: w for w in result.warnings}
    assert set(warned) == {"cccc0001.jsonl", "cccc0002.jsonl"}  # 1 of 6 records in `fine` stays below 20 %
    assert warned["cccc0001.jsonl"].counts == {"hologram": 3}
    assert "format may have changed" in warned["cccc0002.jsonl"].message
    assert fine.name not in warned
    assert [s.session_id for s in result.sessions] == ["cccc0001", "cccc0003"]


def test_a_file_without_readable_turns_is_a_warning(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    s = ClaudeSession("dddd0001", repo)
    for i in range(4):  # records of a known type, but no conversation at all: a renamed message shape
        s.raw({**s._base("user"), "message": {"role": "user", "payload": f"renamed field {i}"}})
    s.write(home)
    result = harvest(["claude"], home, repo, [], HarvestState())
    assert [w.message.split(":")[0] for w in result.warnings] == ["5 records but no readable turn"]
    assert [x.skipped_reason for x in result.skipped] == ["empty"]


def test_incremental_harvest_returns_only_what_is_new(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    first = ClaudeSession("eeee0001", repo).user("first task").say("done")
    first.write(home)
    ClaudeSession("eeee0002", repo).user("second task").say("done").write(home)

    r1 = harvest(["claude"], home, repo, [], HarvestState())
    assert len(r1.sessions) == 2 and r1.first_new_turn == {"claude:eeee0001": 0, "claude:eeee0002": 0}
    state = HarvestState.from_json(r1.state.to_json())  # the lead keeps this in git
    assert state == r1.state
    assert all(re.fullmatch(r"claude:home/[0-9a-f]{20}", k) for k in state.files)  # no home path, no user name

    r2 = harvest(["claude"], home, repo, [], state)
    assert r2.sessions == () and r2.skipped == () and r2.files_read == 0 and r2.files_unchanged == 2

    ClaudeSession("eeee0003", repo).user("a new session").say("ok").write(home)
    r3 = harvest(["claude"], home, repo, [], r2.state)
    assert [s.session_id for s in r3.sessions] == ["eeee0003"]

    first.user("and one more thing").say("sure").write(home)  # the first session grows
    r4 = harvest(["claude"], home, repo, [], r3.state)
    assert [s.session_id for s in r4.sessions] == ["eeee0001"]
    assert r4.first_new_turn == {"claude:eeee0001": 2}
    assert harvest(["claude"], home, repo, [], r4.state).sessions == ()

    skipped = ClaudeSession("eeee0004", tmp_path / "elsewhere").user("x")
    skipped.write(home)
    r5 = harvest(["claude"], home, repo, [], r4.state)
    assert [s.skipped_reason for s in r5.skipped] == ["other-project"]
    skipped.say("grows").write(home)
    r6 = harvest(["claude"], home, repo, [], r5.state)
    assert r6.skipped == () and r6.sessions == ()  # a skipped session is reported once


def test_harvest_over_every_source_at_once(tmp_path):
    home = tmp_path / "home"
    repo = make_repo(tmp_path / "srv" / "demo" / "dateparse")
    shutil.copytree(FIXTURES / "copilot-vscode" / "User", home / ".config" / "Code" / "User")
    shutil.copytree(FIXTURES / "copilot-cli" / "session-state", home / ".copilot" / "session-state")
    build_opencode_db(home / ".local" / "share" / "opencode" / "opencode.db")
    build_cursor_home(home)
    # the fixtures live in /srv/demo/dateparse (hand-built) or /home/user/project (real); point them at this repository
    for path in home.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            text = path.read_text().replace("/srv/demo/dateparse", str(repo))
            path.write_text(text.replace("/home/user/project", str(repo)))
    con = sqlite3.connect(home / ".local" / "share" / "opencode" / "opencode.db")
    con.execute("UPDATE session SET directory = ?", (str(repo),))
    con.commit()
    con.close()
    for db in home.rglob("state.vscdb"):
        con = sqlite3.connect(db)
        con.execute("UPDATE ItemTable SET value = replace(value, '/srv/demo/dateparse', ?)", (str(repo),))
        con.commit()
        con.close()
    result = harvest(None, home, repo, [REMOTE], HarvestState())
    by_source: dict[str, int] = {}
    for s in result.sessions:
        by_source[s.source] = by_source.get(s.source, 0) + 1
    assert by_source == {"copilot-vscode": 2, "copilot-cli": 1, "cursor": 3, "opencode": 1}
    assert sorted((s.source, s.skipped_reason) for s in result.skipped) == [("copilot-cli", "headless"),
                                                                           ("opencode", "headless")]
    assert result.warnings == ()


def test_harvest_of_real_claude_code_files_laid_out_as_on_disk(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    project = home / ".claude" / "projects" / str(repo).replace("/", "-")
    parent = one(readers()["claude"].read(FIXTURES / "claude" / "subagent.jsonl")).session_id
    layout = {name: project / name for name in ("interactive-tui.jsonl", "headless-pytest-edit.jsonl",
                                                 "headless-skill.jsonl", "subagent.jsonl")}
    layout["subagent.sidechain.jsonl"] = project / parent / "subagents" / "agent-a0e5df3de00c6ee15.jsonl"
    for name, target in layout.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        # the files were recorded in /home/user/project; move them into this test's repository
        target.write_text((FIXTURES / "claude" / name).read_text().replace("/home/user/project", str(repo)))

    result = harvest(["claude"], home, repo, [], HarvestState())
    assert [s.turns[0].text for s in result.sessions] == ["Append a line to notes.md."]
    assert sorted(s.skipped_reason or "" for s in result.skipped) == ["headless", "headless", "headless",
                                                                      "sidechain"]
    assert result.warnings == () and result.unknown_records == {}
    assert "/home/user" not in json.dumps(result.to_dict())


# ------------------------------------------------------------------------------------------------ replay, dedupe, inbox
def _real_tui_sessions(home: Path, repo: Path, prompt: str, cwd: Path | None = None) -> None:
    """The real interactive Copilot CLI and OpenCode sessions, moved into `repo` (or `cwd`) with `prompt`."""
    where = str(cwd or repo)
    log = copilot_logs()["tui"]
    target = home / ".copilot" / "session-state" / log.parent.name / "events.jsonl"
    target.parent.mkdir(parents=True)
    events = [json.loads(line) for line in log.read_text().replace("/home/user/project", where).splitlines()]
    for event in events:
        if event["type"] == "user.message":
            event["data"]["content"] = prompt
    target.write_text("".join(json.dumps(e) + "\n" for e in events))
    dump = opencode_dump()
    tui = next(r for r in dump["rows"]["session"] if r["permission"] is None)
    dump["rows"]["session"] = [{**tui, "directory": where}]
    for part in dump["rows"]["part"]:
        part["data"] = part["data"].replace('"Append a line to notes.md."', json.dumps(prompt))
    build_opencode_db(home / ".local" / "share" / "opencode" / "opencode.db", dump)


def test_replay_sessions_of_every_agent_are_filtered_by_marker_or_workspace(tmp_path):
    repo = make_repo(tmp_path / "repo")
    marked = tmp_path / "marked"
    _real_tui_sessions(marked, repo, f"{REPLAY_MARKER} Append a line to notes.md.")
    ClaudeSession("ffff0001", repo).user(f"{REPLAY_MARKER} fix the test").say("ok").write(marked)
    result = harvest(None, marked, repo, [], HarvestState(), remote_lookup=None, inbox=False)
    assert result.sessions == ()
    assert sorted((s.source, s.skipped_reason) for s in result.skipped) == [
        ("claude", "replay"), ("copilot-cli", "replay"), ("opencode", "replay")]

    # a replay in a throwaway workspace (a worktree of this repository: the same remote), whatever its prompt
    workspace = make_repo(tmp_path / "skillgit-ws-0123456789ab" / "77-x" / "ws")
    ws_home = tmp_path / "ws-home"
    _real_tui_sessions(ws_home, repo, "Append a line to notes.md.", cwd=workspace)
    result = harvest(["copilot-cli", "opencode"], ws_home, repo, [REMOTE], HarvestState(), inbox=False)
    assert [s.skipped_reason for s in result.skipped] == ["replay", "replay"] and result.sessions == ()

    plain = tmp_path / "plain"  # the same real sessions, typed by a person: kept
    _real_tui_sessions(plain, repo, "Append a line to notes.md.")
    kept = harvest(["copilot-cli", "opencode"], plain, repo, [], HarvestState(), inbox=False)
    assert sorted(s.source for s in kept.sessions) == ["copilot-cli", "opencode"]


def test_skipped_sessions_keep_their_user_turn_count(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    ClaudeSession("abab0001", repo, entrypoint="sdk-cli").user("one").say("a").user("two").say("b").write(home)
    result = harvest(["claude"], home, repo, [], HarvestState(), inbox=False)
    (skipped,) = result.skipped
    assert skipped.turns == () and skipped.user_turn_count == 2
    assert Session.from_dict(skipped.to_dict()).user_turn_count == 2


def test_a_codex_session_moved_to_archived_sessions_is_not_new_again(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    live = home / ".codex" / "sessions" / "2025" / "10" / "01" / "rollout-2025-10-01T09-00-00-abc.jsonl"
    live.parent.mkdir(parents=True)
    live.write_text(next((FIXTURES / "codex").glob("rollout-*.jsonl")).read_text())
    first = harvest(["codex"], home, repo, [REMOTE], HarvestState(), inbox=False)
    assert len(first.sessions) == 1
    archived = home / ".codex" / "archived_sessions" / live.name
    archived.parent.mkdir(parents=True)
    live.rename(archived)
    again = harvest(["codex"], home, repo, [REMOTE], HarvestState.from_json(first.state.to_json()), inbox=False)
    assert again.sessions == () and again.skipped == () and again.files_read == 1
    from skillgit.sleep.harvest import _state_key

    # the vanished file is forgotten
    assert list(again.state.files) == [_state_key("codex", archived, archived.resolve(), home.resolve())]
    with archived.open("a") as fh:  # it grows after the move: only that is new
        fh.write(json.dumps({"timestamp": "2025-10-01T10:00:00Z", "type": "event_msg",
                             "payload": {"type": "user_message", "message": "one more thing"}}) + "\n")
    grown = harvest(["codex"], home, repo, [REMOTE], again.state, inbox=False)
    assert [s.key for s in grown.sessions] == [first.sessions[0].key]
    assert grown.first_new_turn == {first.sessions[0].key: len(first.sessions[0].turns)}


def _inbox_line(session_id: str, transcript: Path, cwd: Path) -> str:
    return json.dumps({"session_id": session_id, "transcript_path": str(transcript), "cwd": str(cwd),
                       "ended": "2025-10-03T12:00:00Z"}, separators=(",", ":"))


def test_the_inbox_brings_sessions_from_another_home_and_is_trimmed_without_losing_new_lines(tmp_path):
    from skillgit.sleep.harvest import consume_inbox

    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    other_home = tmp_path / "other-home"  # e.g. a container or another user: harvest does not scan it
    ours = ClaudeSession("acac0001", repo).user("add a --utc flag").say("done").write(other_home)
    theirs = ClaudeSession("acac0002", tmp_path / "elsewhere").user("unrelated").say("ok").write(other_home)
    inbox = repo / ".git" / "skillgit" / "sleep" / "inbox.jsonl"
    inbox.parent.mkdir(parents=True)
    lines = [_inbox_line("acac0001", ours, repo), _inbox_line("acac0002", theirs, repo),
             _inbox_line("gone", tmp_path / "missing.jsonl", repo), "not json"]
    inbox.write_text("".join(line + "\n" for line in lines))

    result = harvest(None, home, repo, [], HarvestState(), remote_lookup=None)
    assert [s.session_id for s in result.sessions] == ["acac0001"]  # scoped and filtered like any session
    assert [(s.session_id, s.skipped_reason) for s in result.skipped] == [("acac0002", "other-project")]
    assert sorted(result.inbox.consumed) == sorted(lines) and result.inbox.found == 4
    assert len(result.warnings) == 2  # the missing transcript and the unreadable line
    assert str(tmp_path) not in result.state.to_json()  # files outside home are keyed by a hash

    late = _inbox_line("acac0003", tmp_path / "late.jsonl", repo)  # appended after harvest read the inbox
    with inbox.open("a") as fh:
        fh.write(late + "\n")
    assert harvest(None, home, repo, [], HarvestState(), remote_lookup=None).inbox.found == 5  # read-only
    assert consume_inbox(result) == 4
    assert inbox.read_text() == late + "\n"
    assert [p.name for p in inbox.parent.iterdir()] == ["inbox.jsonl"]  # no spool left behind

    again = harvest(None, home, repo, [], result.state, remote_lookup=None)  # the next night: nothing new
    assert again.sessions == () and again.inbox.consumed == (late,)


def test_inbox_trim_finishes_a_crashed_trim_and_keeps_lines_that_failed(tmp_path):
    from skillgit.sleep.readers import inbox as inbox_files

    inbox = tmp_path / "inbox.jsonl"
    spool = tmp_path / f"inbox.jsonl{inbox_files.SPOOL_INFIX}00000000000000000001-1"
    spool.write_text('{"a":1}\n{"b":2}\n')  # a trim that crashed after its rename
    inbox.write_text('{"c":3}\n')
    assert [line.raw for line in inbox_files.read_lines(inbox)] == ['{"a":1}', '{"b":2}', '{"c":3}']
    assert inbox_files.trim(inbox, ['{"a":1}', '{"c":3}']) == 2
    assert inbox.read_text() == '{"b":2}\n' and not spool.exists()
    assert inbox_files.trim(inbox, []) == 0 and inbox.read_text() == '{"b":2}\n'


def test_a_streaming_harvest_hands_each_session_to_the_miner_and_holds_none(tmp_path):
    # what a night does (sleep/night.collect): the miner gets every kept, scrubbed session as it is read, with its
    # first new turn, and mines what it mines from the held sessions
    from skillgit.sleep.mine import Miner, mine

    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    grown = ClaudeSession("ffff0001", repo).user("fix the date parser test").bash("pytest -q", "1 failed in 0.1s")
    grown.write(home)
    for n, minute in ((2, 5), (3, 9)):
        (ClaudeSession(f"ffff000{n}", repo, start_minute=minute).user("fix the date parser test")
         .bash("pytest -q", "1 passed in 0.1s").write(home))
    ClaudeSession("ffff0009", tmp_path / "elsewhere").user("not this project").write(home)
    held = harvest(["claude"], home, repo, [], HarvestState())
    got: list[tuple[str, int]] = []
    miner = Miner()

    def sink(session: Session, first_new_turn: int) -> None:
        got.append((session.key, first_new_turn))
        miner.add(session, first_new_turn)

    streamed = harvest(["claude"], home, repo, [], HarvestState(), sink=sink)
    assert streamed.sessions == () and streamed.streamed == 3 and streamed.summary()["sessions"] == 3
    assert sorted(got) == sorted((s.key, 0) for s in held.sessions)
    assert streamed.state == held.state and [s.session_id for s in streamed.skipped] == ["ffff0009"]
    assert miner.result().tasks == mine(held.sessions).tasks != ()

    grown.user("still failing").bash("pytest -q", "1 failed in 0.1s").write(home)  # it grows: only the new part
    got.clear()
    again = harvest(["claude"], home, repo, [], streamed.state, sink=sink)
    assert len(got) == 1 and got[0][0] == "claude:ffff0001" and got[0][1] > 0
    assert again.streamed == 1 and again.first_new_turn == {got[0][0]: got[0][1]}


def test_a_secret_the_excerpt_cut_split_is_masked_on_the_side_harvest_keeps(tmp_path):
    # a long tool output is kept as head + tail (readers/_common.excerpt); a credential whose name fell in the cut
    # part and whose value opens the tail, or a known secret value cut in two by the head's end, must not be kept
    from skillgit.sleep.readers._common import HEAD_CHARS, TAIL_CHARS, excerpt
    from skillgit.sleep.scrub import build_scrubber

    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ4trsW9Zk"  # an AWS secret access key's shape: no prefix of its own
    known = "correct-horse-battery-staple-42"  # a .env value: masked by value, whatever it looks like
    tail_split = "x" * 3000 + "\naws_secret_access_key = " + aws + "\n" + "y" * (TAIL_CHARS - len(aws) - 1)
    head_split = "c" * (HEAD_CHARS - 9) + " " + known + "\n" + "d" * 4000
    plain = "token = compute_token(user)\n" + "e " * 3000 + "\npassword_hint = lookup_hint(user)\n"
    (ClaudeSession("cccc0001", repo).user("read the config").bash("cat deploy.log", tail_split)
     .bash("cat run.log", head_split).bash("cat app.py", plain).write(home))
    scrubber = build_scrubber(secrets=[known], environ={}, homes=[])
    kept: list[Session] = []
    result = harvest(["claude"], home, repo, [], HarvestState(), scrubber=scrubber, remote_lookup=None,
                     sink=lambda s, first: kept.append(s))
    outputs = [r.output for t in kept[0].turns for r in t.tool_results]
    flat = json.dumps([s.to_dict() for s in kept])
    for fragment in (aws[:12], aws[-12:], known[:8], known[-8:]):
        assert fragment not in flat, f"{fragment!r} leaked through an excerpt's cut"
    assert outputs[0].endswith("y" * 40) and "chars cut]" in outputs[0] and "\n***\n" in outputs[0]
    assert outputs[1].startswith("c" * 40) and outputs[1].split("\n…[")[0] == "c" * (HEAD_CHARS - 9) + " ***"
    assert outputs[2] == excerpt(plain)  # nothing secret near a cut: the reader's excerpt as it was
    assert all(r.cut is None for t in kept[0].turns for r in t.tool_results)  # the raw margins are dropped
    assert result.redactions.secrets >= 2


def test_harvest_keeps_a_preview_of_what_a_tool_read_and_the_whole_excerpt_of_a_command(tmp_path):
    # only what is kept is scrubbed: a read's output is kept as its head (nothing past harvest reads it), a shell
    # command's as the reader's head + tail (the test verdict is last); a secret the preview's cut splits is masked,
    # and the session's digest is the reader's, so the next harvest finds nothing new
    from skillgit.sleep.readers._common import excerpt
    from skillgit.sleep.scrub import PREVIEW_CHARS, build_scrubber

    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    source = "".join(f"{n:>6}\tdef step_{n}(x):\n" for n in range(400))
    split = "c" * (PREVIEW_CHARS - 12) + "\napi_key = 'Zq8Rk2Lw9Xv4Tn7P'\n" + "d" * 3000
    log = "collected 90 items\n" + "." * 4000 + "\n1 failed, 89 passed in 0.5s"
    (ClaudeSession("dddd0001", repo).user("fix step 3").tool("Read", {"file_path": "src/steps.py"}, source)
     .tool("Grep", {"pattern": "api_key"}, split).bash("pytest -q", log, is_error=True).write(home))
    scrubber = build_scrubber(environ={}, homes=[])
    first = harvest(["claude"], home, repo, [], HarvestState(), scrubber=scrubber, remote_lookup=None)
    read, grep, test = (r.output for t in first.sessions[0].turns for r in t.tool_results)
    assert read == f"{source[:PREVIEW_CHARS]}\n…[{len(source) - PREVIEW_CHARS} chars cut]…\n"
    assert "Zq8Rk2" not in grep and grep.startswith("c" * 40) and "api_key = '***" in grep
    assert test == excerpt(log) and test.endswith("1 failed, 89 passed in 0.5s")
    again = harvest(["claude"], home, repo, [], first.state, scrubber=scrubber, remote_lookup=None)
    assert again.sessions == () and again.files_unchanged == 1
    written = ClaudeSession("dddd0001", repo).path(home)
    os.utime(written, ns=(written.stat().st_atime_ns, written.stat().st_mtime_ns + 10**9))  # read again: same digest
    reread = harvest(["claude"], home, repo, [], first.state, scrubber=scrubber, remote_lookup=None)
    assert reread.files_read == 1 and reread.sessions == ()


def test_the_scrubbers_memo_of_short_strings_follows_the_secret_values(monkeypatch):
    # a short string is scrubbed once per set of secret values; a secret set after that is masked all the same,
    # and every repeat is counted
    from skillgit.sleep.model import ToolCall, Turn
    from skillgit.sleep.scrub import build_scrubber

    scrubber = build_scrubber(environ={}, homes=[])
    value = "late-value-" + "7f3e" * 4
    text = f"deploy --to prod {value}"
    session = Session("claude", "m1", turns=(Turn("assistant", tool_calls=(ToolCall("Bash", text, text),)),))
    assert scrubber.scrub_session(session)[0].turns[0].tool_calls[0].command == text
    monkeypatch.setenv("SLEEP_MEMO_TOKEN", value)
    clean, counts = scrubber.scrub_session(session)
    assert clean.turns[0].tool_calls[0].command == "deploy --to prod ***" and counts.secrets == 2
    assert scrubber.scrub_session(session)[1].secrets == 2


def test_a_known_secret_the_summarys_cut_split_is_masked(tmp_path):
    # a tool call's summary is cut at SUMMARY_CHARS ("…"): a known secret value split by that cut leaves its first
    # characters at the end of the summary, where no whole-value match finds them; the command is kept whole
    from skillgit.sleep.readers._common import SUMMARY_CHARS
    from skillgit.sleep.scrub import build_scrubber

    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    known = "correct-horse-battery-staple-42"
    command = "echo " + "a" * (SUMMARY_CHARS - 20) + " " + known + " && pytest -q"
    (ClaudeSession("eeee0001", repo).user("deploy it").bash(command, "ok").write(home))
    scrubber = build_scrubber(secrets=[known], environ={}, homes=[])
    kept: list[Session] = []
    harvest(["claude"], home, repo, [], HarvestState(), scrubber=scrubber, remote_lookup=None,
            sink=lambda s, first: kept.append(s))
    calls = [c for t in kept[0].turns for c in t.tool_calls]
    assert calls and calls[0].summary.endswith("***…") and len(calls[0].summary) < SUMMARY_CHARS + 3
    assert known not in (calls[0].command or "") and "***" in (calls[0].command or "")
    flat = json.dumps([s.to_dict() for s in kept])
    assert known[:4] not in flat, "the start of a known secret leaked through a summary's cut"
