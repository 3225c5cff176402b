"""The README flow of `skillgit sleep` (mine → review → run) through the real CLI, and handoff inside the repository:
the night reports what every mine since the last night harvested, the handoff folder never shows up in `git
status`, the waiting count is every prompt that waits, and no report shows an absolute path (A SIMULATION OF THE
PIPELINE on the offline world, see tests/test_sleep_night.py)."""

from __future__ import annotations

import json

import pytest

from skillgit.sleep import state as S
from skillgit.sleep.handoff import HandoffPending, pending_prompts
from skillgit.sleep.night import NightOptions, run_night
from skillgit.sleep.settings import open_sleep_project
from skillgit.store.git import GitRepo
from skillgit.world import generate_tasks
from tests.conftest import git, run_cli_inproc
from tests.test_sleep_night import DATE, WORLD, make_project, write_sessions

LATER = "2026-01-03"


def test_a_night_after_sleep_mine_reports_what_the_mines_harvested_and_then_starts_from_zero(tmp_path):
    repo = make_project(tmp_path / "repo")
    home = tmp_path / "home"
    items = generate_tasks(WORLD, 36)
    write_sessions(home, repo, items[:20], day="2026-01-01")
    first = run_cli_inproc("sleep", "mine", "--home", str(home), "--json", cwd=repo)
    assert first.returncode == 0, first.stderr
    write_sessions(home, repo, items[20:], day="2026-01-02", first=100)
    second = run_cli_inproc("sleep", "mine", "--home", str(home), "--json", cwd=repo)
    assert second.returncode == 0, second.stderr
    mined = [json.loads(p.stdout) for p in (first, second)]
    sessions = sum(m["sessions"] for m in mined)
    new_tasks = sum(m["new_tasks"] for m in mined)
    assert sessions == 9 and new_tasks > 30
    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0

    done = run_cli_inproc("sleep", "run", "--home", str(home), "--date", DATE, "--json", cwd=repo)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["harvest"]["sessions"] == sessions and record["mined"]["new_tasks"] == new_tasks
    assert record["mined"]["tasks"] == sum(m["mined"]["tasks"] for m in mined)
    report = (repo / ".skillgit" / "sleep" / f"{DATE}.md").read_text()
    assert f"| sessions harvested (new or grown) | {sessions} |" in report
    assert str(tmp_path) not in report and str(home) not in report

    # the totals were the night's: the next night starts from zero
    later = run_cli_inproc("sleep", "run", "--home", str(home), "--date", LATER, "--json", cwd=repo)
    assert later.returncode == 0, later.stderr
    assert json.loads(later.stdout)["harvest"].get("sessions", 0) == 0


def test_handoff_inside_the_repository_is_ignored_counts_every_waiting_prompt_and_shows_relative_paths(tmp_path):
    repo = make_project(tmp_path / "repo", steps=1)
    home = tmp_path / "home"
    write_sessions(home, repo, generate_tasks(WORLD, 36))
    sp = open_sleep_project(repo, None, [])
    sp = sp.__class__(sp.project, sp.settings.with_options(home=str(home)), sp.data, sp.overrides)
    folder = repo / ".skillgit" / "handoff"
    with pytest.raises(HandoffPending) as stopped:
        run_night(sp, NightOptions(DATE, yes=True, handoff=folder))
    waiting = pending_prompts(folder)
    assert waiting and stopped.value.pending == waiting
    assert f"waiting for {len(waiting)} teacher answer(s)" in stopped.value.message
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""  # prompts quote mined tasks
    record = S.night(GitRepo.open(repo), DATE)
    assert record is not None and record.handoff == S.NightHandoff(".skillgit/handoff", len(waiting), 0)
    report = S.read(GitRepo.open(repo), S.night_md(DATE)) or ""
    assert "`.skillgit/handoff`" in report and str(tmp_path) not in report
    assert record.tasks.file == ".skillgit/sleep/tasks.jsonl"
