"""Probe 11, sleep: a transcript that carries terminal escapes, bidi overrides and carriage returns in its user text,
answers, commands and session id. Every `skillgit sleep` command's output stays inert, and the task file a person
reviews (`cat`, `less`, `git diff`) holds them as JSON escapes (it held U+202E and C1 controls raw before), with
the same data when read back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from skillgit.sleep.mine import read_tasks
from skillgit.world import generate_tasks
from tests.conftest import git, run_cli_inproc
from tests.test_sleep_harvest import ClaudeSession
from tests.test_sleep_night import WORLD, make_project, write_sessions

ACTING = re.compile("[\x00\x07\x1b\x9b\u202e]|\r(?!\n)")
HOSTILE = "\x1b]8;;http://evil.example/\x07LINK\x1b]8;;\x07\x1b[2J\rOVER\u202eRTL\x00NUL\x9b2J"


def _hostile_project(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_project(tmp_path / "repo")
    git(repo, "config", "user.name", "probe")
    git(repo, "config", "user.email", "probe@example.invalid")
    home = tmp_path / "home"
    items = generate_tasks(WORLD, 16)
    write_sessions(home, repo, items)
    session = ClaudeSession("evil" + HOSTILE, repo)
    for item in items[:6]:
        session.user(item.input + HOSTILE).say(item.expected + HOSTILE).user("thanks" + HOSTILE)
    session.bash("echo hi" + HOSTILE, "out" + HOSTILE)
    target = session.path(home).with_name("evil.jsonl")  # (a file name cannot hold NUL; the session id can)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in session.records), encoding="utf-8")
    return repo, home


def test_sleep_output_and_the_task_file_hold_no_acting_character_from_a_transcript(tmp_path):
    repo, home = _hostile_project(tmp_path)
    for args in (["harvest"], ["harvest", "--json"], ["dry-run"], ["mine"], ["review"], ["status"],
                 ["status", "--json"]):
        extra = ["--home", str(home)] if args[0] in ("harvest", "dry-run", "mine") else []
        proc = run_cli_inproc("sleep", *args, *extra, cwd=repo)
        assert proc.returncode == 0, (args, proc.stderr)
        for stream in (proc.stdout, proc.stderr):
            assert not ACTING.search(stream), (args, stream[:2000])
    path = repo / ".skillgit" / "sleep" / "tasks.jsonl"
    text = path.read_text(encoding="utf-8")
    assert "LINK" in text and not ACTING.search(text), ACTING.findall(text)[:5]
    assert any("\u202e" in t.prompt for t in read_tasks(path).tasks)  # the data is unchanged: escaped, not dropped
