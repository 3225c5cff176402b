"""`skillgit demo --sleep` (A SIMULATION OF THE PIPELINE on shipped Claude Code sessions) and `sleep review` right
after a `sleep mine` that mined nothing."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from skillgit.config import SimulatedCfg
from skillgit.sleep import demo as D
from skillgit.world import generate_tasks
from tests.conftest import git, run_cli, run_cli_inproc
from tests.test_sleep_harvest import ClaudeSession
from tests.test_sleep_night import make_project

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "examples" / "sleep-demo" / "sessions"


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under `folder` with its size and modification time (what a write would change)."""
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


def test_the_demo_lands_a_gated_commit_on_the_nights_branch_and_never_writes_home(tmp_path):
    home = tmp_path / "home"
    (home / ".claude" / "projects" / "-work-real").mkdir(parents=True)  # a user's own sessions: never read
    (home / ".claude" / "projects" / "-work-real" / "mine.jsonl").write_text("{}\n")
    before = snapshot(home)
    folder = tmp_path / "demo"
    # a user whose Claude Code config points at their real sessions, with no git identity at all
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "XDG_CONFIG_HOME": str(home / ".config"),
           "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = run_cli("demo", "--sleep", "--dir", str(folder), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]

    assert snapshot(home) == before  # nothing written (not even a .gitconfig), nothing touched
    status = run_cli("sleep", "status", "--json", cwd=folder, env=env | {"SKILLGIT_CRONTAB": "false"})
    assert status.returncode == 0, status.stderr
    night = json.loads(status.stdout)["nights"][-1]
    date, branch = night["date"], night["branch"]
    assert branch == f"sleep/{date}" and night["status"] == "finished" and night["accepted"] >= 1
    assert night["val"][1] > night["val"][0]
    # gated commits on sleep/<date>, each with its gate note; main is untouched
    commits = git(folder, "rev-list", f"main..{branch}").split()
    assert commits
    notes = [git(folder, "notes", "--ref=refs/notes/skillgit", "show", sha) for sha in commits]
    assert all("accepted" in n and "gate" in n for n in notes)
    shown = git(folder, "log", f"main..{branch}")  # plain `git log` shows the short notes
    assert "skillgit: accepted" in shown and "gate:" in shown
    assert git(folder, "rev-list", "--count", "main") == "2"
    assert git(folder, "status", "--porcelain") == ""  # the fixture home and .skillgit/sleep ignore themselves
    # the output says what happened and how to look at it
    assert f"harvested {len(list(SESSIONS.glob('*.jsonl')))} Claude Code session(s)" in proc.stdout
    assert f"git log main..{branch}" in proc.stdout and "skillgit sleep review" in proc.stdout
    assert "SIMULATION" in proc.stderr
    # the sessions came from the fixture home inside the project, relocated to it
    review = run_cli("sleep", "review", "--json", cwd=folder, env=env)
    assert review.returncode == 0, review.stderr
    tasks = json.loads(review.stdout)["tasks"]
    assert len(tasks) >= 30 and all(t["expected"] for t in tasks)


def test_the_shipped_sessions_are_the_simulated_worlds_records_and_accepted_answers(tmp_path):
    spec = importlib.util.spec_from_file_location("make_sessions", ROOT / "examples" / "sleep-demo" /
                                                  "make_sessions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build() == {p.name: p.read_text(encoding="utf-8") for p in SESSIONS.glob("*.jsonl")}, \
        "the shipped sessions differ from the world: run python examples/sleep-demo/make_sessions.py"
    assert module.SEED == D.WORLD_SEED and module.PROJECT == D.RECORDED_IN
    world = {t.input: t.expected for t in generate_tasks(SimulatedCfg(seed=D.WORLD_SEED), 36)}
    asked = [json.loads(line)["message"]["content"] for p in SESSIONS.glob("*.jsonl")
             for line in p.read_text().splitlines() if '"type":"user"' in line]
    assert set(world) <= set(asked)
    # relocated into a fixture home, every record names the project (and only the cwd changed)
    count = D.write_home(tmp_path / "home", tmp_path / "proj")
    written = sorted((tmp_path / "home" / ".claude" / "projects").rglob("*.jsonl"))
    assert count == len(written) == len(list(SESSIONS.glob("*.jsonl")))
    records = [json.loads(line) for p in written for line in p.read_text().splitlines()]
    assert {r["cwd"] for r in records if "cwd" in r} == {str(tmp_path / "proj")}


def test_the_reader_roots_point_into_the_fixture_home_and_are_restored(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/somewhere/real")
    monkeypatch.delenv("CODEX_HOME", raising=False)
    with D.readers_in(tmp_path):
        assert os.environ["CLAUDE_CONFIG_DIR"] == str(tmp_path / ".claude")
        assert os.environ["CODEX_HOME"] == str(tmp_path / ".codex")
    assert os.environ["CLAUDE_CONFIG_DIR"] == "/somewhere/real" and "CODEX_HOME" not in os.environ


def test_a_second_demo_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    proc = run_cli_inproc("demo", "--sleep", "--dir", str(tmp_path / "busy"), cwd=tmp_path)
    assert proc.returncode == 2 and "not empty" in proc.stderr
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("as_json", [False, True])
def test_review_right_after_a_mine_that_found_nothing_shows_what_was_mined(tmp_path, as_json):
    repo = make_project(tmp_path / "repo")
    home = tmp_path / "home"
    ClaudeSession("once", repo).user("Record to normalise: price 71.9 GBP").say("£71.90").user("thanks").write(home)
    mined = run_cli_inproc("sleep", "mine", "--home", str(home), cwd=repo)
    assert mined.returncode == 0, mined.stderr
    assert "0 new task(s)" in mined.stdout

    review = run_cli_inproc("sleep", "review", *(["--json"] if as_json else []), cwd=repo)

    assert review.returncode == 0, review.stderr
    assert "run `skillgit sleep mine` first" not in review.stderr
    if as_json:
        info = json.loads(review.stdout)
        assert info["tasks"] == [] and info["exists"] is False
        assert info["since_last_night"]["harvest"]["sessions"] == 1
        assert info["since_last_night"]["mined"]["units"] == 1
    else:
        assert "1 session(s)" in review.stderr and "1 request(s)" in review.stderr
        assert "0 task(s)" in review.stderr


def test_review_before_any_mine_still_says_to_mine_first(tmp_path):
    repo = make_project(tmp_path / "repo")
    review = run_cli_inproc("sleep", "review", cwd=repo)
    assert review.returncode == 2 and "run `skillgit sleep mine` first" in review.stderr
