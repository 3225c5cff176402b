"""The Claude Code plugin (plugins/claude-code): generated from `skillgit.integrations.assets`, self-contained,
checked by the REAL `claude` CLI (`plugin validate`, a `--plugin-dir` session and a marketplace install, both run
offline against the scripted server in tests/agent_server.py), and its SessionEnd hook run directly.

Tests marked `agent_cli` skip when claude is not installed (`.venv/bin/python -m tests.agent_clis install`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from skillgit.inbox import inbox_path, read_inbox
from skillgit.integrations import assets
from tests import agent_clis as ac
from tests.agent_server import AgentServer, text, tool
from tests.conftest import git

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "plugins" / "claude-code"
CODEX = ROOT / "integrations" / "codex"
HOOK = PLUGIN / "hooks" / "session-end.sh"
MCP_PREFIX = "mcp__plugin_skillgit_skillgit__"


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*") if p.is_file()}


def test_the_checked_in_plugin_and_codex_files_are_exactly_the_assets():
    # regenerate with: .venv/bin/python -m skillgit.integrations.assets
    assert _tree(PLUGIN) == assets.claude_plugin_files()
    assert _tree(CODEX) == assets.codex_files()
    assert (ROOT / ".claude-plugin" / "marketplace.json").read_text() == assets.repository_marketplace()
    for rel in assets.EXECUTABLE:
        assert os.access(PLUGIN / rel, os.X_OK), rel


def test_the_generator_has_a_real_help_and_refuses_a_folder_that_is_not_a_checkout(tmp_path):
    run = [sys.executable, "-m", "skillgit.integrations.assets"]
    helped = subprocess.run([*run, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python -m skillgit.integrations.assets")
    refused = subprocess.run([*run, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "is not a skillgit repository checkout" in refused.stderr
    assert list(tmp_path.iterdir()) == []  # no `./--help` tree, nothing written into a stranger's folder


def test_the_plugin_is_self_contained_and_never_adopts_changes():
    files = assets.claude_plugin_files()
    probe = 'here=$(cd "$bin/../../.." 2>/dev/null && pwd)\n'  # the launchers look for a checkout, only to name it
    for rel, content in files.items():
        if rel.startswith("bin/"):
            assert content.count(probe) == 1
            content = content.replace(probe, "")
        assert "/work/" not in content and "../" not in content and str(ROOT) not in content, rel
    manifest = json.loads(files[".claude-plugin/plugin.json"])
    market = json.loads(files[".claude-plugin/marketplace.json"])
    assert manifest["name"] == "skillgit" and market["plugins"][0] == {**market["plugins"][0], "source": "./"}
    hooks = json.loads(files["hooks/hooks.json"])["hooks"]
    assert hooks["SessionEnd"][0]["hooks"][0]["command"] == 'bash "${CLAUDE_PLUGIN_ROOT}/hooks/session-end.sh"'
    assert json.loads(files[".mcp.json"])["mcpServers"]["skillgit"] == {
        "command": "sh", "args": ["${CLAUDE_PLUGIN_ROOT}/bin/skillgit-mcp"]}
    for command in assets.COMMANDS:
        body = files[f"commands/{command.name}.md"]
        assert 'sh "${CLAUDE_PLUGIN_ROOT}/bin/skillgit-run"' in body and "Bash(sh ${CLAUDE_PLUGIN_ROOT}" in body
        assert "claude.cmd" not in body
        installed = command.text()  # `skillgit install claude`: no plugin root there, the prose fallback instead
        assert "CLAUDE_PLUGIN_ROOT" not in installed and "allowed-tools: Bash(skillgit:*)" in installed
        assert assets.INSTALL_HINT in installed and "never install or run skillgit yourself" in installed
    train = files["commands/train.md"]
    assert "Never train without a budget" in train and "skill.branch=<review branch>" in train
    assert "Never merge, revert or push yourself" in train
    skill = files["skills/skillgit/SKILL.md"]
    assert skill.startswith("---\nname: skillgit\ndescription: ") and "Adoption is a person's decision" in skill


# ------------------------------------------------------------------------------------------------ the launchers
def _fake(folder: Path, name: str, code: int = 0) -> None:
    """A stand-in for `name` on PATH that records its pid and argv (builtins only: PATH holds nothing else)."""
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f'#!/bin/sh\nprintf \'%s\\n\' "$$" {name} "$@" > "$LAUNCH_LOG"\nexit {code}\n')
    script.chmod(0o755)


def _launch(tool: str, path: list[Path], tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list]:
    log = tmp_path / "launched.txt"
    log.unlink(missing_ok=True)
    env = {"PATH": os.pathsep.join(str(p) for p in path), "LAUNCH_LOG": str(log)}
    sh = shutil.which("sh")
    assert sh is not None
    proc = subprocess.Popen([sh, str(PLUGIN / "bin" / tool), *args], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=30)
    lines = log.read_text().splitlines() if log.exists() else []
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return done, [int(lines[0]) == proc.pid, *lines[1:]] if lines else []


def _path_without_skillgit() -> list[Path]:
    """This machine's PATH minus every folder holding a `skillgit` command (uvx, pipx, pip stay if present)."""
    return [Path(d) for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "skillgit").exists()]


def test_the_launchers_without_skillgit_on_path_run_nothing_and_say_how_to_install_from_source(tmp_path):
    fakes = tmp_path / "fakes"
    for name in ("uvx", "pipx", "uv", "pip", "pip3", "python3"):  # a package index is never asked for the name
        _fake(fakes, name)
    for launcher in ("skillgit-mcp", "skillgit-run"):
        for path in ([fakes], [fakes, *_path_without_skillgit()]):
            proc, launched = _launch(launcher, path, tmp_path, "log")
            assert proc.returncode == 1 and proc.stdout == "" and launched == [], proc.stderr  # nothing ran
            assert "no 'skillgit' command found on PATH" in proc.stderr
            assert assets.INSTALL_HINT[1:] in proc.stderr and "git+https://" in proc.stderr
    # the checked-in plugin sits in this checkout: the launcher names it as the exact source
    proc, _ = _launch("skillgit-mcp", [fakes], tmp_path)
    assert f"install skillgit from it with: pip install '{ROOT}[mcp]'" in proc.stderr


def test_a_launcher_copied_out_of_a_checkout_does_not_name_one(tmp_path):
    copy = tmp_path / "cache" / "skillgit" / "0.1.0"
    shutil.copytree(PLUGIN, copy)
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run([shutil.which("sh") or "/bin/sh", str(copy / "bin" / "skillgit-mcp")],
                          env={"PATH": str(empty)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and "sits in a skillgit checkout" not in proc.stderr
    assert assets.INSTALL_HINT[1:] in proc.stderr


@pytest.mark.parametrize("tool", ["skillgit-mcp", "skillgit-run"])
def test_the_launchers_exec_the_installed_skillgit(tmp_path, tool):
    fakes = tmp_path / "fakes"
    for name in ("skillgit", "uvx", "pipx"):
        _fake(fakes, name, code=7)
    proc, launched = _launch(tool, [fakes], tmp_path, "--repo", "a b")
    assert proc.returncode == 7, proc.stderr  # the fake's own exit status: the launcher exec'd it
    sub = ["mcp"] if tool == "skillgit-mcp" else []
    assert launched == [True, "skillgit", *sub, "--repo", "a b"]  # same pid as the launcher: exec, no wrapper left


# ------------------------------------------------------------------------------------------------ the hook
def _hook(payload: str, cwd: Path, timeout: float = 10, env: dict | None = None
          ) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run(["bash", str(HOOK)], input=payload, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    return proc, time.monotonic() - started


def test_the_session_end_hook_appends_one_json_line_in_the_repositorys_common_git_dir(make_repo, tmp_path):
    repo = make_repo()
    (repo / "sub" / "deep").mkdir(parents=True)
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    odd = 'C:\\Users\\me\\"quoted" é\u00e9 \t.jsonl'
    raw = json.dumps(odd)[1:-1]  # as Claude Code sends it: escapes, which the hook copies verbatim
    transcript = tmp_path / "t" / "s-1.jsonl"
    transcript.parent.mkdir()
    transcript.write_text("{}\n")
    first = json.dumps({"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(repo / "sub" / "deep"),
                        "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
    second = ('{"session_id": "s-2", "transcript_path": "' + raw + '", "cwd": ' + json.dumps(str(tmp_path / "wt"))
              + ', "hook_event_name": "SessionEnd"}')
    proc, _ = _hook(first, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert _hook(second, cwd=tmp_path)[0].returncode == 0
    entries, bad = read_inbox(repo)
    assert bad == 0 and [e.session_id for e in entries] == ["s-1", "s-2"]
    assert entries[0].cwd == str(repo / "sub" / "deep") and entries[0].transcript_path == str(transcript)
    assert entries[1].transcript_path == odd and entries[1].ended.endswith("Z")
    assert inbox_path(repo) == repo / ".git" / "skillgit" / "sleep" / "inbox.jsonl"
    line = inbox_path(repo).read_text().splitlines()[0]
    assert set(json.loads(line)) == {"session_id", "transcript_path", "cwd", "ended"}
    # skillgit's own replays (the agent student sets SKILLGIT_REPLAY) are not a person's work: nothing recorded
    replay = first.replace("s-1", "s-3")
    assert _hook(replay, cwd=tmp_path, env={"SKILLGIT_REPLAY": "1"})[0].returncode == 0
    assert [e.session_id for e in read_inbox(repo)[0]] == ["s-1", "s-2"]



def test_the_session_end_hook_installed_twice_records_a_session_once(make_repo, tmp_path):
    """Issue 23 item 13: both copies of the hook (user and project settings) run at once for every session."""
    repo = make_repo()
    transcript = tmp_path / "s-1.jsonl"
    transcript.write_text("{}\n")
    payload = json.dumps({"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(repo)})
    for _round in range(2):  # at once, then again (a resumed session ended a second time)
        procs = [subprocess.Popen(["bash", str(HOOK)], stdin=subprocess.PIPE, cwd=repo) for _ in range(4)]
        for proc in procs:
            proc.communicate(payload.encode(), timeout=30)
            assert proc.returncode == 0
    lines = inbox_path(repo).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["session_id"] == "s-1"
    assert not (inbox_path(repo).parent / "inbox.jsonl.lock").exists()
    # another transcript of the same session is another entry; a lock a killed hook left is given up on
    other = tmp_path / "s-1b.jsonl"
    other.write_text("{}\n")
    (inbox_path(repo).parent / "inbox.jsonl.lock").mkdir()
    proc, _ = _hook(payload.replace(str(transcript), str(other)), cwd=repo)
    assert proc.returncode == 0
    assert [e.transcript_path for e in read_inbox(repo)[0]] == [str(transcript), str(other)]
    assert not (inbox_path(repo).parent / "inbox.jsonl.lock").exists()


def test_the_session_end_hook_skips_a_session_that_left_no_transcript(make_repo, tmp_path):
    """Issue 23 item 13: `claude mcp list` ends a "session" whose transcript is never written."""
    repo = make_repo()
    for path in (str(tmp_path / "never.jsonl"), "", "rel/never.jsonl", "~/never-skillgit-test.jsonl"):
        payload = json.dumps({"session_id": "s-x", "transcript_path": path, "cwd": str(repo)})
        assert _hook(payload, cwd=repo)[0].returncode == 0
    assert not inbox_path(repo).exists()
    (repo / "rel").mkdir()
    (repo / "rel" / "here.jsonl").write_text("{}\n")
    assert _hook(json.dumps({"session_id": "s-r", "transcript_path": "rel/here.jsonl", "cwd": str(repo)}),
                 cwd=repo)[0].returncode == 0
    assert [e.session_id for e in read_inbox(repo)[0]] == ["s-r"]


def test_the_session_end_hook_never_fails_blocks_or_writes_outside_a_repository(tmp_path):
    outside = tmp_path / "plain"
    outside.mkdir()
    for payload in ('{"session_id": "s", "transcript_path": "t", "cwd": "' + str(outside) + '"}', "not json", ""):
        proc, _ = _hook(payload, cwd=outside)
        assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert list(outside.iterdir()) == []
    # a caller that never closes stdin: the hook gives up reading after ~2 s and still exits 0
    proc = subprocess.Popen(["bash", str(HOOK)], stdin=subprocess.PIPE, cwd=outside)
    assert proc.wait(timeout=30) == 0  # it exits on its own with stdin still open
    proc.stdin.close()  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------------ real claude
@pytest.fixture
def claude() -> Path:
    exe = ac.find_cli("claude")
    if exe is None:
        pytest.skip("claude is not installed (.venv/bin/python -m tests.agent_clis install)")
    return exe


def _env(home: Path, base_url: str) -> dict[str, str]:
    """claude's hermetic environment, with this installation's `skillgit` first on PATH (for the plugin's MCP
    server) and MCP servers connected before the first request."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    extra = {"PATH": path, "MCP_CONNECTION_NONBLOCKING": "0", "ENABLE_TOOL_SEARCH": "false"}
    extra.update({k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ})
    return ac.claude_env(home, base_url, extra=extra)


@pytest.mark.agent_cli
def test_claude_plugin_validate_passes(claude, tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    for target in (PLUGIN, PLUGIN / ".claude-plugin" / "plugin.json"):
        proc = subprocess.run([str(claude), "plugin", "validate", "--strict", "--json", str(target)], env=env,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads(proc.stdout)
        assert report["success"] is True and report["manifest"]["errors"] == [], report


@pytest.fixture
def demo_repo(tmp_path, cli) -> Path:
    repo = tmp_path / "demo"
    proc = cli("demo", "--dir", str(repo), "--steps", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return repo


@pytest.mark.agent_cli
def test_a_session_with_the_plugin_lists_its_commands_uses_its_mcp_tools_and_records_the_session(
        claude, demo_repo, tmp_path):
    home = tmp_path / "agent-home"
    home.mkdir()
    tip = git(demo_repo, "rev-parse", "main")
    script = [tool(MCP_PREFIX + "log", limit=5), tool(MCP_PREFIX + "train", max_steps=1),
              text("The history is shown; training needs a budget from you.")]
    allowed = ["Read", MCP_PREFIX + "log", MCP_PREFIX + "train"]
    with AgentServer(script) as server:
        argv = ac.claude_print_argv(claude, "Show the skillgit history, then train.", allowed_tools=allowed,
                                    extra=["--plugin-dir", str(PLUGIN)])
        proc = ac.run_cli(argv, cwd=demo_repo, env=_env(home, server.base_url))
        requests = server.agent_requests()
    assert proc.returncode == 0, proc.stderr
    events = ac.parse_jsonl(proc.stdout)
    init = next(e for e in events if e.get("subtype") == "init")
    assert {"skillgit:status", "skillgit:train", "skillgit:sleep", "skillgit:review"} <= set(init["slash_commands"])
    assert "skillgit:skillgit" in init["skills"]
    assert {"name": "skillgit", "path": str(PLUGIN)}.items() <= next(
        p for p in init["plugins"] if p["name"] == "skillgit").items()
    assert {"name": "plugin:skillgit:skillgit", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    assert {MCP_PREFIX + t for t in ("log", "show", "diff", "status", "train", "review_summary")} <= set(
        requests[0].tool_names())
    assert "skillgit" in requests[0].context_text()  # the skill's description reached the model
    # the MCP tools answered through Claude Code: the history, then a refusal without a budget
    assert "demo-seed0/0002" in requests[1].messages_text() and "branch 'main'" in requests[1].messages_text()
    assert "explicit budget" in requests[2].messages_text()
    assert git(demo_repo, "rev-parse", "main") == tip and "skillgit/review" not in git(demo_repo, "branch")
    # the SessionEnd hook ran at the end of the session
    entries, bad = read_inbox(demo_repo)
    assert bad == 0 and [e.session_id for e in entries] == [init["session_id"]]
    assert entries[0].cwd == str(demo_repo) and entries[0].transcript_path.endswith(f"{init['session_id']}.jsonl")


class _GitHTTP(BaseHTTPRequestHandler):
    """Smart-HTTP git on 127.0.0.1 through `git http-backend` (claude clones marketplaces shallowly, which the
    dumb protocol cannot serve). One git process per request; nothing else is served."""

    root = ""

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _backend(self) -> None:
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {"PATH": os.environ.get("PATH", ""), "GIT_PROJECT_ROOT": self.root, "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "REMOTE_ADDR": "127.0.0.1"}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _backend


@pytest.fixture
def marketplace_url(tmp_path):
    """The skillgit repository's layout (root marketplace manifest + plugins/claude-code) as a git repository
    served over smart HTTP on 127.0.0.1; yields its URL."""
    work = tmp_path / "market-work"
    shutil.copytree(PLUGIN, work / "plugins" / "claude-code")
    (work / ".claude-plugin").mkdir()
    (work / ".claude-plugin" / "marketplace.json").write_text(assets.repository_marketplace())
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "skillgit marketplace")
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(served / "skillgit.git")], check=True)
    shutil.rmtree(work)
    handler = type("Handler", (_GitHTTP,), {"root": str(served)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/skillgit.git"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.agent_cli
def test_a_marketplace_install_is_self_contained(claude, make_repo, tmp_path, marketplace_url):
    home = tmp_path / "agent-home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "GIT_TERMINAL_PROMPT": "0",
           "GIT_CONFIG_NOSYSTEM": "1"}

    def plugin(*args: str) -> dict:
        proc = subprocess.run([str(claude), "plugin", *args, "--json"], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    assert plugin("marketplace", "add", marketplace_url)["outcome"] == "ok"
    assert plugin("install", "skillgit@skillgit")["outcome"] == "ok"
    repo = make_repo()
    with AgentServer([text("Hello.")]) as server:
        proc = ac.run_cli(ac.claude_print_argv(claude, "Say hello.", allowed_tools=["Read"]), cwd=repo,
                          env=ac.claude_env(home, server.base_url))
    assert proc.returncode == 0, proc.stderr
    init = next(e for e in ac.parse_jsonl(proc.stdout) if e.get("subtype") == "init")
    installed = next(p for p in init["plugins"] if p["name"] == "skillgit")
    assert installed["path"].startswith(str(home / ".claude" / "plugins" / "cache")), installed  # claude's copy
    assert {"skillgit:status", "skillgit:train"} <= set(init["slash_commands"])
    entries, _ = read_inbox(repo)
    assert [e.session_id for e in entries] == [init["session_id"]]


@pytest.mark.agent_cli
def test_a_slash_command_names_the_plugins_own_launcher(claude, make_repo, tmp_path):
    home = tmp_path / "agent-home"
    home.mkdir()
    with AgentServer([text("Nothing trained yet.")]) as server:
        argv = ac.claude_print_argv(claude, "/skillgit:status", allowed_tools=["Read"],
                                    extra=["--plugin-dir", str(PLUGIN)])
        proc = ac.run_cli(argv, cwd=make_repo(), env=_env(home, server.base_url))
        requests = server.agent_requests()
    assert proc.returncode == 0, proc.stderr
    prompt = requests[0].messages_text()
    # Claude Code put the plugin's folder in place of ${CLAUDE_PLUGIN_ROOT}: the launcher is found after any install
    assert f'sh "{PLUGIN}/bin/skillgit-run"' in prompt and "${CLAUDE_PLUGIN_ROOT}" not in prompt
    assert "Show where skill training stands in this repository" in prompt
