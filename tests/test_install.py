"""`skillgit install|uninstall claude|codex|copilot --project|--user` in a scratch repository and a scratch HOME
that already hold the user's own AGENTS.md, settings and MCP configs: install, a second install (a no-op), then
uninstall must leave both trees byte-identical to before — full trees, `.git` included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.errors import SkillgitError
from skillgit.integrations import artifacts as A
from skillgit.integrations import assets, jsonedit
from skillgit.integrations.install import install, uninstall
from tests import agent_clis as ac
from tests.agent_server import AgentServer
from tests.agent_server import text as reply

USER_FILES_REPO = {
    "AGENTS.md": "# Team agents\n\nAlways run the tests.\n",
    ".claude/settings.json": '{\n  "permissions": {\n    "allow": ["Bash(npm test:*)"]\n  },\n'
                             '  "hooks": {\n    "SessionEnd": [\n      {"hooks": [{"type": "command", '
                             '"command": "echo bye"}]}\n    ]\n  }\n}\n',
    ".vscode/mcp.json": '// VS Code MCP servers (JSONC)\n{\n\t"servers": {\n\t\t"other": {"type": "stdio", '
                        '"command": "other-mcp"},\n\t},\n}\n',
    ".github/copilot-instructions.md": "Use tabs.",  # no final newline
    ".codex/config.toml": 'model = "o4-mini"\n\n[mcp_servers.other]\ncommand = "other"\n',
}
USER_FILES_HOME = {
    ".claude/settings.json": '{"theme": "dark"}\n',
    ".claude.json": '{\n  "numStartups": 3,\n  "mcpServers": {}\n}\n',
    ".codex/config.toml": 'approval_policy = "on-request"\n',
    ".codex/AGENTS.md": "Prefer small commits.\r\nNo emojis.\r\n",  # CRLF
    ".copilot/mcp-config.json": '{"mcpServers": {"other": {"type": "local", "command": "x", "tools": ["*"]}}}',
    ".agents/README": "mine\n",
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def snapshot(root: Path) -> dict[str, tuple[str, bytes | str | None, bool]]:
    """Every folder, file and symlink under `root` (.git included): kind, bytes (a link: its target), executable
    bit. Symlinks are not followed."""
    out: dict[str, tuple[str, bytes | str | None, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = os.path.relpath(path, root)
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path), False)
            elif path.is_dir():
                out[rel] = ("dir", None, False)
            else:
                out[rel] = ("file", path.read_bytes(), os.access(path, os.X_OK))
    return out


@pytest.fixture
def scratch(make_repo, tmp_path, monkeypatch):
    repo = make_repo({"README.md": "# scratch\n", **USER_FILES_REPO})
    home = tmp_path / "home"
    _write(home, USER_FILES_HOME)
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME"):
        monkeypatch.delenv(name, raising=False)
    return repo, home


@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("agent", ["claude", "codex", "copilot"])
def test_install_twice_then_uninstall_leaves_repo_and_home_byte_identical(scratch, agent, scope):
    repo, home = scratch
    before_repo, before_home = snapshot(repo), snapshot(home)

    first = install(agent, scope, repo=repo, home=home)
    assert first.changed and not first.warnings
    after_repo, after_home = snapshot(repo), snapshot(home)
    assert (after_repo, after_home) != (before_repo, before_home)
    base = repo if scope == "project" else home
    for art in A.artifacts(agent, scope, base):
        text = art.path.read_text(encoding="utf-8")
        if isinstance(art, A.FileArtifact):
            assert text == art.text
        elif isinstance(art, A.JsonArtifact):
            jsonedit.parse(text)  # still JSON/JSONC, and holds the entry
            assert jsonedit.plan_insert(text, art.key_path, art.value, art.append) is None
        else:
            assert art.block.replace("\n", "\r\n" if "\r\n" in text else "\n") in text
    # the user's own content is all still there
    for root, files in ((repo, USER_FILES_REPO), (home, USER_FILES_HOME)):
        for rel, text in files.items():
            if (root / rel).exists() and rel.endswith(".json"):
                mine = jsonedit.parse(text).to_python()
                theirs = jsonedit.parse((root / rel).read_text()).to_python()
                assert all(theirs[k] == v for k, v in mine.items() if k not in ("hooks", "mcpServers", "servers"))

    second = install(agent, scope, repo=repo, home=home)
    assert not second.changed and {a.what for a in second.actions} <= {"unchanged", "skip"}
    assert (snapshot(repo), snapshot(home)) == (after_repo, after_home)

    removed = uninstall(agent, scope, repo=repo, home=home)
    assert removed.changed and not removed.warnings
    assert snapshot(repo) == before_repo
    assert snapshot(home) == before_home
    assert not uninstall(agent, scope, repo=repo, home=home).changed  # nothing left to remove


def test_every_agent_and_scope_together_then_removed_in_another_order(scratch):
    repo, home = scratch
    before = snapshot(repo), snapshot(home)
    pairs = [(a, s) for a in A.targets() for s in A.SCOPES]
    for agent, scope in pairs:
        install(agent, scope, repo=repo, home=home)
    for agent, scope in reversed(pairs[::2] + pairs[1::2]):
        uninstall(agent, scope, repo=repo, home=home)
    assert (snapshot(repo), snapshot(home)) == before


def test_a_file_changed_after_install_is_left_alone_with_a_warning(scratch):
    repo, home = scratch
    install("claude", "project", repo=repo, home=home)
    skill = repo / ".claude" / "skills" / "skillgit" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nMy own note.\n")
    settings = repo / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace('"allow": [', '"allow": ["Bash(make:*)", '))
    mcp_json = repo / ".mcp.json"
    mcp_json.write_text(mcp_json.read_text().replace('"args": [', '"args": ["--verbose", '))  # our entry, changed

    again = install("claude", "project", repo=repo, home=home)
    assert not again.changed and any("SKILL.md was changed" in w for w in again.warnings)

    report = uninstall("claude", "project", repo=repo, home=home)
    warnings = " | ".join(report.warnings)
    assert skill.read_text().endswith("My own note.\n")  # kept, with a warning
    assert ".claude/skills/skillgit/SKILL.md was changed after skillgit installed it" in warnings
    # settings.json changed elsewhere: only skillgit's hook entry is removed, their new permission stays
    assert json.loads(settings.read_text()) == {
        "permissions": {"allow": ["Bash(make:*)", "Bash(npm test:*)"]},
        "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "echo bye"}]}]}}
    assert ".claude/settings.json changed after install: removed only skillgit's entry" in warnings
    # skillgit's own entry was edited: left alone, with a warning
    assert "--verbose" in mcp_json.read_text() and "skillgit's entry in .mcp.json was changed" in warnings
    assert not (repo / ".claude" / "commands" / "skillgit-status.md").exists()


def test_a_foreign_file_in_the_way_stops_the_install_before_anything_is_written(scratch):
    repo, home = scratch
    _write(repo, {".claude/commands/skillgit-train.md": "my own train command\n"})
    before = snapshot(repo), snapshot(home)
    with pytest.raises(SkillgitError) as err:
        install("claude", "project", repo=repo, home=home)
    assert "nothing installed" in err.value.message and ".claude/commands/skillgit-train.md" in err.value.message
    assert "move .claude/commands/skillgit-train.md away" in err.value.hint
    assert (snapshot(repo), snapshot(home)) == before

    _write(home, {".codex/config.toml": '[mcp_servers.skillgit]\ncommand = "mine"\n'})
    with pytest.raises(SkillgitError) as err:
        install("codex", "user", repo=repo, home=home)
    assert "already defines [mcp_servers.skillgit]" in err.value.message


def test_a_dangling_or_out_of_tree_symlink_in_the_way_stops_the_install(scratch, tmp_path):
    repo, home = scratch
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "AGENTS.md").write_text("someone else's file\n")
    commands = repo / ".claude" / "commands"
    commands.mkdir()
    (commands / "skillgit-train.md").symlink_to(outside / "nowhere.md")  # dangling
    (repo / "AGENTS.md").unlink()
    (repo / "AGENTS.md").symlink_to(outside / "AGENTS.md")  # a file outside the repository
    before = snapshot(repo), snapshot(home), snapshot(outside)
    with pytest.raises(SkillgitError) as err:
        install("claude", "project", repo=repo, home=home)
    message = err.value.message
    assert "nothing installed" in message and "skillgit-train.md: it is a dangling symlink" in message
    with pytest.raises(SkillgitError) as err:
        install("codex", "project", repo=repo, home=home)
    assert f"AGENTS.md: it is a symlink to {outside / 'AGENTS.md'}, outside {repo}" in err.value.message
    assert "make AGENTS.md a plain file" in err.value.hint
    assert (snapshot(repo), snapshot(home), snapshot(outside)) == before  # nothing written, through links or not
    assert not (outside / "nowhere.md").exists()


def test_an_in_tree_symlink_is_written_through_and_uninstall_never_deletes_a_symlink(scratch):
    repo, home = scratch
    (repo / "docs").mkdir()
    (repo / "AGENTS.md").rename(repo / "docs" / "AGENTS.md")
    (repo / "AGENTS.md").symlink_to(Path("docs") / "AGENTS.md")  # a common layout: one instructions file, linked
    before = snapshot(repo)
    install("codex", "project", repo=repo, home=home)
    assert (repo / "AGENTS.md").is_symlink() and assets.SNIPPET_BODY in (repo / "docs" / "AGENTS.md").read_text()
    # someone swaps skillgit's own skill file for a symlink to an identical copy of it
    skill = repo / ".agents" / "skills" / "skillgit" / "SKILL.md"
    copy = repo / "docs" / "skillgit-skill.md"
    copy.write_text(skill.read_text())
    skill.unlink()
    skill.symlink_to(copy)
    report = uninstall("codex", "project", repo=repo, home=home)
    assert skill.is_symlink() and any("SKILL.md is now a symlink" in w for w in report.warnings)
    skill.unlink()
    copy.unlink()
    (repo / ".agents" / "skills" / "skillgit").rmdir()
    (repo / ".agents" / "skills").rmdir()
    (repo / ".agents").rmdir()
    assert snapshot(repo) == before  # the link is still a link, and the linked file has its exact bytes back


@pytest.mark.parametrize(("rel", "agent", "problem"), [
    (".claude/commands/skillgit-status.md", "claude", "it is a folder, where skillgit's file goes"),
    (".mcp.json", "claude", "it is a folder, where skillgit's file goes"),
    (".codex/config.toml", "codex", "it is a folder, where skillgit's file goes"),
    (".github/skills", "copilot", "is a file, where a folder goes"),
])
def test_a_folder_where_a_file_goes_or_a_file_where_a_folder_goes_is_a_clear_error(scratch, rel, agent, problem):
    repo, home = scratch
    path = repo / rel
    if rel.endswith("skills"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not a folder\n")
    else:
        if path.is_file():
            path.unlink()
        path.mkdir(parents=True)
    before = snapshot(repo)
    with pytest.raises(SkillgitError) as err:
        install(agent, "project", repo=repo, home=home)
    assert "nothing installed" in err.value.message and problem in err.value.message
    assert snapshot(repo) == before


def test_a_folder_found_where_skillgits_file_was_is_left_alone_on_uninstall(scratch):
    repo, home = scratch
    install("claude", "project", repo=repo, home=home)
    status = repo / ".claude" / "commands" / "skillgit-status.md"
    status.unlink()
    status.mkdir()
    report = uninstall("claude", "project", repo=repo, home=home)
    assert status.is_dir() and any("skillgit-status.md" in w and "is a folder" in w for w in report.warnings)
    assert not (repo / ".claude" / "commands" / "skillgit-train.md").exists()


def test_an_empty_git_folder_above_is_not_a_repository(tmp_path, monkeypatch):
    from skillgit.errors import GitStateError
    from skillgit.project import find_root

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # whatever holds tmp_path stays out
    (tmp_path / ".git").mkdir()  # what a stray `mkdir /tmp/.git` leaves
    inner = tmp_path / "work" / "sub"
    inner.mkdir(parents=True)
    with pytest.raises(GitStateError) as err:
        find_root(inner)
    assert f"not a git repository: {inner}" in err.value.message
    with pytest.raises(SkillgitError):
        install("codex", "project", repo=inner, home=tmp_path / "home")
    assert list((tmp_path / "work").rglob("*")) == [inner]  # nothing written under the fake repository
    # a real repository below it is found as before, from any folder inside it
    subprocess.run(["git", "init", "-q", str(tmp_path / "work")], check=True)
    assert find_root(inner) == (tmp_path / "work").resolve()


def test_the_projects_trained_skill_is_never_touched(make_repo, tmp_path):
    repo = make_repo({"AGENTS.md": "# trained skill\n", "skillgit.yaml": "skill:\n  path: AGENTS.md\n"})
    report = install("codex", "project", repo=repo, home=tmp_path)
    assert (repo / "AGENTS.md").read_text() == "# trained skill\n"
    assert any("AGENTS.md: it is the skill this project trains" in w for w in report.warnings)
    assert (repo / ".agents" / "skills" / "skillgit" / "SKILL.md").is_file()


def test_an_older_install_that_nobody_changed_is_updated_in_place(scratch, monkeypatch):
    repo, home = scratch
    before = snapshot(repo)
    monkeypatch.setattr(assets, "SNIPPET_BODY", "## skillgit\nold text\n")
    install("codex", "project", repo=repo, home=home)
    assert "old text" in (repo / "AGENTS.md").read_text()
    monkeypatch.undo()
    report = install("codex", "project", repo=repo, home=home)
    assert {a.path: a.what for a in report.actions}["AGENTS.md"] == "update"
    text = (repo / "AGENTS.md").read_text()
    assert "old text" not in text and assets.SNIPPET_BODY in text and text.startswith(USER_FILES_REPO["AGENTS.md"])
    uninstall("codex", "project", repo=repo, home=home)
    assert snapshot(repo) == before


def test_user_scope_follows_the_agents_own_home_variables(scratch, monkeypatch, tmp_path):
    repo, home = scratch
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))
    install("codex", "user", repo=repo, home=home)
    install("copilot", "user", repo=repo, home=home)
    assert "[mcp_servers.skillgit]" in (tmp_path / "codex-home" / "config.toml").read_text()
    server = json.loads((tmp_path / "copilot-home" / "mcp-config.json").read_text())["mcpServers"]["skillgit"]
    assert server["type"] == "local" and server["args"] == ["mcp"] and server["tools"] == ["*"]
    assert Path(server["command"]).name.startswith("skillgit") or server["command"] == "skillgit"
    uninstall("codex", "user", repo=repo, home=home)
    uninstall("copilot", "user", repo=repo, home=home)
    assert not (tmp_path / "codex-home").exists() and not (tmp_path / "copilot-home").exists()


def test_the_command_line_installs_and_uninstalls(scratch, cli):
    repo, home = scratch
    before = snapshot(repo)
    env = {"HOME": str(home)}
    dry = cli("install", "copilot", "--dry-run", "--json", cwd=repo, env=env)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["actions"] and snapshot(repo) == before
    done = cli("install", "copilot", "--project", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    assert "installed for copilot in this repository" in done.stderr and (repo / ".github" / "mcp.json").is_file()
    gone = cli("uninstall", "copilot", "--json", cwd=repo, env=env)
    assert gone.returncode == 0 and json.loads(gone.stdout)["changed"] is True
    assert snapshot(repo) == before
    bad = cli("install", "cursor", cwd=repo, env=env)
    assert bad.returncode == 2 and "unknown agent 'cursor'" in bad.stderr


# ------------------------------------------------------------------------------------------------ real CLIs
def _cli(name: str) -> Path:
    exe = ac.find_cli(name)
    if exe is None:
        pytest.skip(f"{name} is not installed (.venv/bin/python -m tests.agent_clis install)")
    return exe


def _skillgit_env() -> dict[str, str]:
    """What an agent needs to start this installation's `skillgit mcp`: its bin folder first on PATH."""
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    env.update({k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ})
    return env


@pytest.mark.agent_cli
def test_real_codex_and_copilot_sessions_see_the_installed_skill_instructions_and_mcp_server(scratch, tmp_path):
    repo, _ = scratch
    codex, copilot = _cli("codex"), _cli("copilot")
    home = tmp_path / "agent-home"  # the agents' own HOME: the user scope goes there
    home.mkdir()
    for agent in ("codex", "copilot"):
        install(agent, "project", repo=repo, home=home)
        install(agent, "user", repo=repo, home=home)
    snippet = "adopting learned changes is a person's decision"
    mcp_line = "- mcp__skillgit: skillgit trains this repository's agent skill"
    for _attempt in range(3):  # a cold start of the MCP server on a busy machine can miss codex's first listing
        with AgentServer([reply("ok")]) as server:
            argv = ac.codex_exec_argv(codex, "Say ok.", server.base_url, model="gpt-5.5")
            proc = ac.run_cli(argv, cwd=repo, env=ac.codex_env(home, extra=_skillgit_env()))
            first = server.agent_requests()[0]
        if mcp_line in json.dumps(first.body):
            break
    assert proc.returncode == 0, proc.stderr
    # codex reads the installed user config: its own `mcp list` names the server and our command
    listed = ac.run_cli([str(codex), "mcp", "list"], cwd=repo, env=ac.codex_env(home, extra=_skillgit_env()))
    assert "skillgit" in listed.stdout and "mcp" in listed.stdout, listed.stdout + listed.stderr
    context, messages = first.context_text(), first.messages_text()
    assert "- skillgit: Inspect and safely train this repository's skill" in context  # .agents/skills
    assert snippet in messages and USER_FILES_REPO["AGENTS.md"].strip().splitlines()[-1] in messages  # AGENTS.md
    # the session itself lists the MCP server's tools when the server answered within codex's startup window
    # (the server's own protocol is tested through the SDK client in test_mcp_server.py); on a machine loaded by
    # the rest of the suite a cold start can miss all three sessions, which is a timing fact, not a broken install
    if mcp_line not in json.dumps(first.body):
        import warnings

        warnings.warn("codex listed no skillgit MCP tools within its startup window on this busy machine", stacklevel=1)
    with AgentServer([reply("ok")]) as server:
        proc = ac.run_cli(ac.copilot_prompt_argv(copilot, "Say ok."), cwd=repo,
                          env=ac.copilot_env(home, server.base_url, extra=_skillgit_env()))
        first = server.agent_requests()[0]
    assert proc.returncode == 0, proc.stderr
    system = first.system_text()
    assert "<name>skillgit</name>" in system and snippet in system and "Use tabs." in system
    assert {"skillgit-log", "skillgit-show", "skillgit-train", "skillgit-review_summary"} <= set(first.tool_names())


@pytest.mark.agent_cli
def test_claude_connects_to_the_installed_mcp_server(scratch):
    repo, home = scratch
    claude = _cli("claude")
    install("claude", "user", repo=repo, home=home)
    env = {"HOME": str(home), **_skillgit_env()}
    got = subprocess.run([str(claude), "mcp", "get", "skillgit"], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert "Connected" in got.stdout, got.stdout + got.stderr
    assert "User config" in got.stdout



@pytest.mark.agent_cli
def test_claude_with_both_scopes_records_a_session_once_and_mcp_list_records_nothing(scratch, tmp_path):
    """Issue 23 item 13: the SessionEnd hook installed in the user and the project settings runs twice per session
    (it wrote two lines), and `claude mcp list` fires SessionEnd for a transcript it never writes."""
    from skillgit.inbox import inbox_path, read_inbox

    repo, _ = scratch
    claude = _cli("claude")
    home = tmp_path / "agent-home"
    home.mkdir()
    install("claude", "project", repo=repo, home=home)
    install("claude", "user", repo=repo, home=home)
    with AgentServer([reply("ok")]) as server:
        proc = ac.run_cli(ac.claude_print_argv(claude, "Say ok.", allowed_tools=["Read"]), cwd=repo,
                          env=ac.claude_env(home, server.base_url, extra=_skillgit_env()))
    assert proc.returncode == 0, proc.stderr
    session_id = next(e for e in ac.parse_jsonl(proc.stdout) if e.get("subtype") == "init")["session_id"]
    lines = inbox_path(repo).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["session_id"] == session_id, lines
    assert Path(json.loads(lines[0])["transcript_path"]).is_file()
    with AgentServer([reply("ok")]) as server:
        listed = ac.run_cli([str(claude), "mcp", "list"], cwd=repo,
                            env=ac.claude_env(home, server.base_url, extra=_skillgit_env()))
    assert listed.returncode == 0, listed.stderr
    assert inbox_path(repo).read_text().splitlines() == lines
    assert [e.session_id for e in read_inbox(repo)[0]] == [session_id]


def test_the_codex_block_gives_a_long_train_call_an_hour():
    block = assets.toml_block("skillgit", ["mcp"])
    assert "startup_timeout_sec = 30\n" in block and "tool_timeout_sec = 3600\n" in block
    import inspect

    from skillgit.integrations import tools
    assert inspect.signature(tools.train).parameters["timeout_s"].default <= assets.TOOL_TIMEOUT_SEC


@pytest.mark.agent_cli
def test_real_codex_reads_the_installed_timeouts(scratch, tmp_path):
    repo, _ = scratch
    codex = _cli("codex")
    home = tmp_path / "agent-home"
    home.mkdir()
    install("codex", "user", repo=repo, home=home)
    got = ac.run_cli([str(codex), "mcp", "get", "skillgit", "--json"], cwd=repo, env=ac.codex_env(home))
    assert got.returncode == 0, got.stdout + got.stderr
    server = json.loads(got.stdout)
    # codex's own reading of the keys (a misspelt key reads as null): the train tool may run for an hour
    assert server["startup_timeout_sec"] == 30 and server["tool_timeout_sec"] == assets.TOOL_TIMEOUT_SEC
