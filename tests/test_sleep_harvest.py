"""skillgit.sleep readers and harvest: every reader on its fixtures (real Claude Code and Codex files, hand-built
ones for the rest), discovery under a home folder, scoping to this repository (cwd or git remote), the skip
reasons, unknown-record counting and warnings, and incremental harvests against a real git repository."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skillgit.sleep import REPLAY_MARKER, HarvestState, Session, harvest, normalize_remote
from skillgit.sleep.readers import READERS, SOURCES, get_reader
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


def build_opencode_db(path: Path) -> Path:
    """A real `opencode.db` with the session/message/part columns of session.sql.ts, filled from the JSON fixture."""
    storage = FIXTURES / "opencode" / "storage"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT, directory TEXT,"
                " title TEXT, version TEXT, time_created INTEGER, time_updated INTEGER)")
    con.execute("CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,"
                " time_updated INTEGER, data TEXT)")
    con.execute("CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER,"
                " time_updated INTEGER, data TEXT)")
    for file in storage.glob("session/*/*.json"):
        s = json.loads(file.read_text())
        con.execute("INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?)", (s["id"], s["projectID"], s.get("parentID"), "",
                    s["directory"], s["title"], s["version"], s["time"]["created"], s["time"]["updated"]))
    for file in storage.glob("message/*/*.json"):
        m = json.loads(file.read_text())
        data = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
        con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (m["id"], m["sessionID"], m["time"]["created"],
                                                              m["time"]["created"], json.dumps(data)))
        for pf in (storage / "part" / m["id"]).glob("*.json"):
            p = json.loads(pf.read_text())
            pdata = {k: v for k, v in p.items() if k not in ("id", "messageID", "sessionID")}
            con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (p["id"], m["id"], m["sessionID"], 0, 0,
                                                                  json.dumps(pdata)))
    con.commit()
    con.close()
    return path


def one(sessions: Any) -> Session:
    items = list(sessions)
    assert len(items) == 1, items
    return items[0]


def calls(session: Session) -> list[tuple[str, str | None, tuple[str, ...], bool]]:
    return [(c.name, c.command, c.paths, c.writes) for t in session.turns for c in t.tool_calls]


# ------------------------------------------------------------------------------------------------ readers on fixtures
def test_registry_lists_every_source_and_rejects_unknown_ones():
    assert SOURCES == ("claude", "codex", "copilot-vscode", "copilot-cli", "cursor", "opencode")
    with pytest.raises(Exception) as err:
        get_reader("windsurf")
    assert "claude" in str(err.value)


def test_claude_reader_on_real_cli_files():
    folder = FIXTURES / "claude"
    files = sorted(folder.glob("*.jsonl"))
    assert files, "the real Claude Code fixtures are missing"
    by_name = {f.name: one(READERS["claude"].read(f)) for f in files}

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
    hand = one(READERS["codex"].read(next((FIXTURES / "codex").glob("rollout-*.jsonl"))))
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

    real = one(READERS["codex"].read(FIXTURES / "codex" / "exec-pytest-patch.jsonl"))
    assert real.headless and real.entrypoint == "codex_exec" and real.client_version
    assert real.turns[0].text == "The tests fail. Fix the bug."  # AGENTS.md / environment blocks are not the person
    assert real.unknown_records == {}
    assert [c[1] for c in calls(real) if c[1]] == ["python -m pytest -q", "python -m pytest -q"]


def test_copilot_vscode_reader_json_and_mutation_log():
    chat = FIXTURES / "copilot-vscode" / "User" / "workspaceStorage" / "ab12cd34ef56" / "chatSessions"
    whole = one(READERS["copilot-vscode"].read(next(chat.glob("*.json"))))
    assert whole.cwd == "/srv/demo/dateparse" and whole.started == "2025-10-01T09:00:00Z"
    assert [t.role for t in whole.turns] == ["user", "assistant", "user", "assistant"]
    assert whole.unknown_records == {"part/holographicPreview": 1}
    assert [c[1] for c in calls(whole)] == ["pytest -q tests/test_dates.py", None, "pytest -q tests/test_dates.py"]
    assert calls(whole)[1][3] and calls(whole)[1][2] == ("/srv/demo/dateparse/src/dateparse/core.py",)
    assert [r.exit_code for r in whole.turns[1].tool_results] == [1, 0]

    log = one(READERS["copilot-vscode"].read(next(chat.glob("*.jsonl"))))
    assert [t.text for t in log.turns if t.role == "user"] == ["Add a --utc flag to the dateparse CLI"]
    assert calls(log)[0][2] == ("/srv/demo/dateparse/src/dateparse/cli.py",)
    state = _replay(next(chat.glob("*.jsonl")), __import__("collections").Counter())
    assert state["customTitle"] == "UTC flag" and "hasPendingEdits" not in state


def test_copilot_cli_reader_keeps_sub_agent_traffic_out():
    s = one(READERS["copilot-cli"].read(next((FIXTURES / "copilot-cli").glob("session-state/*/events.jsonl"))))
    assert (s.cwd, s.git_branch, s.git_remote, s.client_version) == ("/srv/demo/dateparse", "main",
                                                                      "example/dateparse", "0.0.350")
    assert s.unknown_records == {"session.teleport": 1}
    text = " ".join(t.text for t in s.turns)
    assert "(sub-agent)" not in text
    assert [c[0] for c in calls(s)] == ["bash", "str_replace_editor", "bash"]
    assert [r.exit_code for r in s.turns[1].tool_results] == [1, None, 0]


def test_cursor_reader_on_built_databases(tmp_path):
    db = build_cursor_home(tmp_path)
    sessions = {s.session_id: s for s in READERS["cursor"].read(db)}
    assert set(sessions) == {"c0ffee00-1111-4222-8333-444455556666", "c0ffee00-aaaa-4bbb-8ccc-ddddeeeeffff", "tab-1"}
    agent = sessions["c0ffee00-1111-4222-8333-444455556666"]
    assert agent.cwd == "/srv/demo/dateparse" and agent.git_branch == "main"
    assert agent.unknown_records == {"bubble/30": 1}
    assert [c[:2] for c in calls(agent)] == [("run_terminal_cmd", "pytest -q tests/test_dates.py"),
                                            ("edit_file", None)]
    assert calls(agent)[1][2:] == (("src/dateparse/core.py",), True)
    assert [t.role for t in sessions["tab-1"].turns] == ["user", "assistant"]
    assert READERS["cursor"].discover(tmp_path) == [db]


def test_opencode_reader_json_layout_and_database(tmp_path):
    storage = FIXTURES / "opencode" / "storage"
    main = one(READERS["opencode"].read(next(storage.glob("session/*/ses_*a.json"))))
    child = one(READERS["opencode"].read(next(storage.glob("session/*/ses_*b.json"))))
    assert not main.sidechain and child.sidechain
    assert [t.text for t in main.turns if t.role == "user"] == ["why is test_dates failing? fix the date parser"]
    assert main.unknown_records == {"part/hologram": 1}
    assert [r.exit_code for r in main.turns[1].tool_results] == [1, None, 0]

    db = build_opencode_db(tmp_path / "opencode.db")
    from_db = {s.session_id: s for s in READERS["opencode"].read(db)}
    assert from_db[main.session_id].turns == main.turns
    assert from_db[child.session_id].sidechain


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
    shutil.copytree(FIXTURES / "opencode" / "storage", home / ".local" / "share" / "opencode" / "storage")
    build_opencode_db(home / ".local" / "share" / "opencode" / "opencode.db")
    build_cursor_home(home)
    counts = {source: len(READERS[source].discover(home)) for source in SOURCES}
    assert counts == {"claude": 1, "codex": 2, "copilot-vscode": 2, "copilot-cli": 1, "cursor": 1, "opencode": 3}
    assert all(not READERS[source].discover(tmp_path / "empty") for source in SOURCES)
    moved = tmp_path / "elsewhere"
    shutil.copytree(home / ".codex", moved)
    assert len(READERS["codex"].discover(tmp_path / "empty", {"CODEX_HOME": str(moved)})) == 2


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
    assert all(k.startswith("claude:~/.claude/projects/") for k in state.files)  # no home path in the state

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
    shutil.copytree(FIXTURES / "opencode" / "storage", home / ".local" / "share" / "opencode" / "storage")
    build_cursor_home(home)
    # the fixtures live in /srv/demo/dateparse; point them at this test's repository
    for path in home.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            path.write_text(path.read_text().replace("/srv/demo/dateparse", str(repo)))
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
    assert [s.skipped_reason for s in result.skipped] == ["sidechain"]  # the OpenCode child session
    assert result.warnings == ()


def test_harvest_of_real_claude_code_files_laid_out_as_on_disk(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    project = home / ".claude" / "projects" / str(repo).replace("/", "-")
    parent = one(READERS["claude"].read(FIXTURES / "claude" / "subagent.jsonl")).session_id
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
