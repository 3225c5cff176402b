"""The secret corpus end to end (issue 19.6): every format of tests/secret_corpus.py (42: provider tokens, AWS ids and
keys, private key blocks, Authorization schemes, URL passwords, credential and high-entropy assignments, JSON-escaped
and flag forms), plus an environment secret, a `.env` secret, home paths and an e-mail address, planted in every
place a transcript carries text — what the person typed, the commands the agent ran, the tool inputs it wrote
(file contents and file paths) and the tool results that came back — of real-shaped Claude Code and Codex session
files. Then the real CLI harvests, plans and runs a night (harvest, mining, training) against a scripted OpenAI
server on 127.0.0.1 (which echoes what it is sent back into the answers, so a leaked prompt would travel on into
notes and the journal), shows the review and the status, and the real MCP server answers over stdio. Nothing
planted may be found anywhere: task files, prompts a model was sent, git objects (notes, commits, the sleep
state), night reports, the call journal, command output, MCP answers.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import approve_configuration, run_cli
from tests.fake_servers import FakeLLMServer, request_messages
from tests.secret_corpus import DOTENV_SECRET, EMAIL, ENV_SECRET, FORMATS, PLACES, all_leaks, path_safe
from tests.test_sleep_harvest import ClaudeSession
from tests.test_sleep_night import CodexSession

DATE = "2026-01-05"
_SEPARATORS = "\n/\\"
CONFIG = """\
skill: {{path: SKILL.md, branch: main}}
model:
  teacher_backend: openai
  teacher_model: gpt-test
  teacher: {{base_url: "{url}", max_retries: 0}}
  student_backend: openai
  student_model: gpt-test
  student: {{base_url: "{url}", max_retries: 0}}
train: {{num_epochs: 1, batch_size: 8}}
env: {{workers: 2}}
"""


class CodexTools(CodexSession):
    """A Codex rollout with the tool records of tests/fixtures/transcripts/codex (exec_command, apply_patch)."""

    calls = 0

    def _item(self, payload: dict[str, Any]) -> CodexTools:
        self.records.append({"timestamp": self._ts(), "type": "response_item", "payload": payload})
        return self

    def shell(self, command: str, output: str) -> CodexTools:
        self.calls += 1
        call = f"call_{self.session_id}_{self.calls}"
        self._item({"type": "function_call", "name": "exec_command", "call_id": call,
                    "arguments": json.dumps({"cmd": command, "login": False})})
        return self._item({"type": "function_call_output", "call_id": call,
                           "output": f"Process exited with code 1\nOutput:\n{output}"})

    def patch(self, path: str, content: str) -> CodexTools:
        self.calls += 1
        call = f"call_{self.session_id}_{self.calls}"
        body = "".join(f"+{line}\n" for line in content.splitlines())
        self._item({"type": "custom_tool_call", "name": "apply_patch", "call_id": call,
                    "input": f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"})
        return self._item({"type": "custom_tool_call_output", "call_id": call,
                           "output": f"Exit code: 0\nOutput:\nSuccess. Updated the following files:\nA {path}\n"})


def plant(home: Path, repo: Path, user_home: Path) -> int:
    """Two sessions per format, a Claude Code one and a Codex one (a request seen in two sessions recurs: the
    night mines it), each carrying the format in every place."""
    extras = (f"{ENV_SECRET[1]} {DOTENV_SECRET[1]} {user_home}/.aws/credentials /root/.ssh/config "
              f"C:\\Users\\Dana Fischer\\proj\\app.py /home/dana/proj /Users/dana/proj {EMAIL}")
    for n, planted in enumerate(FORMATS):
        text, flat = planted.text, planted.text.replace("\n", "\\n")
        # a file name holds a secret that has no separator in it (a token, an assignment); others go into the file
        name = path_safe(text) if not set(text) & set(_SEPARATORS) else planted.name
        path = f"{repo}/config/{name}.env"
        ask = (f"Which service issued this credential, and is it still live? Check the rotation policy, the owner "
               f"team, the expiry date and whether the deploy pipeline or the nightly jobs still use it: {text}\n"
               f"Also: {extras}")
        fix = f"The date parsing test fails again since I added {flat} ({extras})"
        command = f"pytest tests/test_dates.py -q  # with {flat}"
        result = f"E   ValueError: bad config line {text}\nE   at {user_home}/proj/app.py\n1 failed in 0.12s"
        session = ClaudeSession(f"corpus-{n}", repo, start_minute=n, day="2026-01-04")
        (session.user(ask).say(f"That is a {planted.name} credential: {text}. Rotate it.").user("thanks")
         .user(fix).bash(command, result, is_error=True)
         .tool("Write", {"file_path": path, "content": f"{text}\n{extras}\n"}, f"File created at {path}")
         .tool("Edit", {"file_path": path, "old_string": "x", "new_string": text}, "updated")
         .bash("pytest tests/test_dates.py -q", "1 passed in 0.10s").say("Fixed.").write(home))
        codex = CodexTools(f"corpus-codex-{n}", repo, day="2026-01-04", start_minute=n)
        (codex.user(ask).say(f"That is a {planted.name} credential: {text}. Rotate it.").user("thanks")
         .user(fix).shell(command, result).patch(path, f"{text}\n{extras}")
         .shell("pytest tests/test_dates.py -q", "1 passed in 0.10s").say("Fixed.").write(home))
    return len(FORMATS)


def echo(body: dict[str, Any]) -> str:
    """The scripted model: answers with what it was sent, so anything leaked into a prompt travels on."""
    return "You said: " + " ".join(text for _, text in request_messages(body))[-4000:]


def dump_sqlite(path: Path) -> str:
    out = []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in con.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, bytes):
                        try:
                            cell = zlib.decompress(cell)
                        except zlib.error:
                            pass
                        cell = cell.decode("utf-8", "replace")
                    out.append(str(cell))
    finally:
        con.close()
    return "\n".join(out)


def repository_text(repo: Path) -> dict[str, str]:
    """Every file of the working tree and the git dir (SQLite files cell by cell, decompressed) and every git
    object (notes, commits, trees, the sleep state), as text."""
    found: dict[str, str] = {}
    for path in repo.rglob("*"):
        if not path.is_file() or "objects" in path.relative_to(repo).parts or path == repo / ".env":
            continue  # git objects are read below; .env is the person's own file, an input
        data = path.read_bytes()
        found[str(path.relative_to(repo))] = (dump_sqlite(path) if data.startswith(b"SQLite format 3")
                                              else data.decode("utf-8", "replace"))
    objects = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    found["git objects"] = objects.decode("utf-8", "replace")
    return found


def leaks_in(texts: dict[str, str], user_home: Path) -> list[str]:
    planted = [*all_leaks(), ("environment value", ENV_SECRET[1]), (".env value", DOTENV_SECRET[1]),
               ("e-mail", EMAIL), ("$HOME", str(user_home)), ("/root home", "/root/.ssh"),
               ("Windows home", "Dana Fischer"), ("/home home", "/home/dana"), ("/Users home", "/Users/dana")]
    return [f"{name} ({secret[:12]}…) in {where}" for where, text in texts.items() for name, secret in planted
            if secret in text]


@pytest.mark.slow
def test_no_planted_secret_leaves_harvest_mining_review_a_night_or_the_mcp_server(tmp_path):
    mcp = pytest.importorskip("mcp")
    from tests.test_mcp_server import _is_error, _text, run_session

    repo, home, user_home = tmp_path / "repo", tmp_path / "sessions", tmp_path / "ci-runner-home"
    user_home.mkdir()
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "SKILL.md").write_text("# Skill\n\nAnswer briefly.\n")
    (repo / ".env").write_text(f"{DOTENV_SECRET[0]}={DOTENV_SECRET[1]}\n")
    (repo / ".gitignore").write_text(".env\n")
    assert plant(home, repo, user_home) >= 30 and len(PLACES) == 5
    env = {"HOME": str(user_home), ENV_SECRET[0]: ENV_SECRET[1], "OPENAI_API_KEY": "sk-test-not-a-real-key-000000"}
    outputs: dict[str, str] = {}
    with FakeLLMServer(handler=echo) as server:
        (repo / "skillgit.yaml").write_text(CONFIG.format(url=server.openai_base_url))
        subprocess.run(["git", "-C", str(repo), "add", "SKILL.md", "skillgit.yaml", ".gitignore"], check=True)
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s"],
                       check=True)
        approve_configuration(repo)  # (its endpoints: tests/test_trust_config_commands.py)
        # `sleep run` mines with the accepted answers (a task per request); `sleep mine` would keep one per group
        steps = {"harvest": ("sleep", "harvest", "--json"), "dry-run": ("sleep", "dry-run", "--date", DATE),
                 "run": ("sleep", "run", "--yes", "--date", DATE, "--max-calls", "120", "--json"),
                 "review": ("sleep", "review"), "status": ("sleep", "status")}
        for name, args in steps.items():
            extra = ("--home", str(home)) if name in ("harvest", "dry-run", "run") else ()
            done = run_cli(*args, *extra, cwd=repo, env=env)
            assert done.returncode in (0, 5), (name, done.stderr[-3000:])
            outputs[f"`skillgit {' '.join(args)}` stdout"] = done.stdout
            outputs[f"`skillgit {' '.join(args)}` stderr"] = done.stderr
        outputs["prompts sent to the models"] = json.dumps([r.body for r in server.requests])
    tasks = (repo / ".skillgit" / "sleep" / "tasks.jsonl").read_text()
    rows = [json.loads(line) for line in tasks.splitlines()[1:]]
    # the text reached the task file — masked (not dropped): the masks are there, and so is the house text
    assert len(rows) >= 20 and tasks.count("***") >= 60
    assert "~/.aws/credentials" in tasks and "<email>" in tasks
    assert len(server.requests) > 10 and (repo / ".skillgit" / "sleep" / f"{DATE}.md").is_file()

    async def ask(s: Any) -> dict[str, str]:
        answers = {}
        calls = {"report": {}, "status": {}, "log": {}, "rejected": {}, "sleep_dry_run": {},
                 "review_summary": {"branch": f"sleep/{DATE}"}, "show": {"rev": f"sleep/{DATE}", "full": True},
                 "diff": {"a": "main", "b": f"sleep/{DATE}"}}
        for tool, arguments in calls.items():
            result = await s.call_tool(tool, arguments)
            answers[f"MCP {tool}"] = _text(result)
            assert tool in ("review_summary", "show", "diff") or not _is_error(result), (tool, _text(result))
        answers["MCP skillgit://status"] = (await s.read_resource("skillgit://status")).contents[0].text
        return answers

    assert mcp is not None
    outputs.update(run_session(repo, {**os.environ, **env}, ask))
    outputs.update(repository_text(repo))
    assert any("the newest sleep night report" in v for v in outputs.values())
    # every format travelled (masked) into what skillgit stored or sent: the test checks places text reached
    told = {p.name for p in FORMATS if any(f"That is a {p.name} credential" in v for v in outputs.values())}
    assert told == {p.name for p in FORMATS}, sorted({p.name for p in FORMATS} - told)
    assert leaks_in(outputs, user_home) == []
