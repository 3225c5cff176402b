"""skillgit.sleep.mine: task units and their outcome signals, grouping without a model, the recurring / failed
filter, the task rows and the reviewable JSONL file — on sessions harvested from real files in a real repo."""

from __future__ import annotations

import importlib
import json

import pytest

from skillgit.errors import SkillgitError
from skillgit.sleep import (
    HarvestState,
    MinedTask,
    Session,
    ToolCall,
    ToolResult,
    Turn,
    harvest,
    mine,
    parse_test_output,
    read_tasks,
    rev_before,
    split_units,
    write_tasks,
)
from tests.sleep_reference import checking
from tests.test_sleep_harvest import FIXTURES, ClaudeSession, git, make_repo


@pytest.fixture(autouse=True)
def _grouping_is_the_pairwise_one(monkeypatch):
    """Every grouping these tests make is also checked against the pairwise algorithm mining used before it
    scaled (tests/sleep_reference.py): same clusters, same mean similarities."""
    mined = importlib.import_module("skillgit.sleep.mine")  # the package exports a function of that name

    monkeypatch.setattr(mined, "cluster", checking(mined.cluster))

DATE_TEST = "pytest tests/test_dates.py"
FAIL = "F.\n=================================== FAILURES ===================================\n" \
       "E   ValueError: unconverted data remains: +02:00\n=========== 1 failed, 1 passed in 0.05s ==========="
PASS = "..\n2 passed in 0.04s"


def fix_dates(session: ClaudeSession, command: str = DATE_TEST) -> ClaudeSession:
    """The agent's usual way through the date bug: red test, edit, green test."""
    return (session.bash(command, FAIL, is_error=True)
            .edit("src/dateparse/core.py")
            .bash(command, PASS)
            .say("parse_date now accepts UTC offsets; the date tests pass."))


def harvested(tmp_path, *sessions: ClaudeSession) -> tuple[list[Session], object]:
    home, repo = tmp_path / "home", tmp_path / "repo"
    if not repo.exists():
        make_repo(repo)
    for s in sessions:
        s.write(home)
    result = harvest(["claude"], home, repo, [], HarvestState())
    return list(result.sessions), result


def test_one_recurring_task_from_three_sessions_asked_three_ways(tmp_path):
    repo = make_repo(tmp_path / "repo")
    s1 = fix_dates(ClaudeSession("d1", repo, start_minute=0).user("Fix the failing date parsing test"))
    s2 = fix_dates(ClaudeSession("d2", repo, start_minute=30, day="2025-10-04").user(
        "test_dates.py is red again: parse_date chokes on '2024-05-01T10:00:00+02:00'. Can you make it handle "
        "timezone offsets?"), command="pytest -q tests/test_dates.py")
    s3 = (ClaudeSession("d3", repo, start_minute=0, day="2025-10-05")
          .user("Update the README badges for the new CI workflow").edit("README.md").say("Badges updated.")
          .user("thanks! now the date parser test broke again after my refactor, please sort it out"))
    s3 = fix_dates(s3, command="python -m pytest tests/test_dates.py -x")
    unrelated = [
        ClaudeSession("u1", repo, day="2025-10-03", start_minute=50).user("Add a --utc flag to the dateparse CLI")
        .edit("src/dateparse/cli.py").bash("pytest tests/test_cli.py", "3 passed in 0.1s").say("Added."),
        ClaudeSession("u2", repo, day="2025-10-04", start_minute=50).user("Write a CHANGELOG entry for 1.2.0")
        .edit("CHANGELOG.md").say("Done."),
        ClaudeSession("u3", repo, day="2025-10-05", start_minute=50).user("Bump the version to 1.2.0 in pyproject")
        .edit("pyproject.toml").say("Bumped."),
    ]
    sessions, _ = harvested(tmp_path, s1, s2, s3, *unrelated)
    result = mine(sessions)

    assert len(result.units) == 7  # d3 holds two requests; "thanks!" closed the first one and opened the second
    assert len(result.tasks) == 1
    task = result.tasks[0]
    assert sorted(s["session_id"] for s in task.sessions) == ["d1", "d2", "d3"]
    assert {s["unit"] for s in task.sessions if s["session_id"] == "d3"} == {1}  # the second request of d3
    assert task.kind == "agentic" and task.rev == "HEAD"
    assert task.verify == {"command": "pytest -q tests/test_dates.py", "timeout_s": 600, "result": "pytest"}
    assert "date" in task.prompt.lower()
    signals = task.signals
    assert (signals["units"], signals["sessions"], signals["passed_units"], signals["failed_units"]) == (3, 3, 3, 0)
    assert signals["paths"] == ["src/dateparse/core.py"]
    row = task.to_row()
    assert row["workspace"] == {"repo": ".", "rev": "HEAD"} and row["setup"] == []
    assert row["metadata"]["source"] == "sleep" and row["id"].startswith("sleep-")

    again = mine(list(reversed(sessions)))
    assert again.tasks == result.tasks  # same group, same id and prompt, whatever the order


def test_failed_work_is_kept_even_once_and_a_single_success_is_not(tmp_path):
    repo = make_repo(tmp_path / "repo")
    failed = (ClaudeSession("f1", repo).user("Make the timezone test pass")
              .bash(DATE_TEST, FAIL, is_error=True).edit("src/dateparse/tz.py").bash(DATE_TEST, FAIL, is_error=True)
              .say("I changed tz.py.").user("no, it still fails. revert that")
              .bash("git checkout -- src/dateparse/tz.py", "").say("Reverted."))
    fine = ClaudeSession("f2", repo).user("Add type hints to cli.py").edit("src/dateparse/cli.py").say("Done.")
    sessions, _ = harvested(tmp_path, failed, fine)
    result = mine(sessions)
    assert [t.sessions[0]["session_id"] for t in result.tasks] == ["f1"]
    task = result.tasks[0]
    assert (task.signals["failed_units"], task.signals["corrections"], task.signals["reverts"]) == (1, 1, 1)
    assert task.sessions[0]["outcome"] == "failed"
    assert mine(sessions, min_sessions=1).summary()["tasks"] == 2


def test_split_units_reads_outcome_signals():
    def turn_user(text: str) -> Turn:
        return Turn("user", text)

    def agent(*pairs: tuple[ToolCall, ToolResult]) -> Turn:
        return Turn("assistant", "", tuple(c for c, _ in pairs), tuple(r for _, r in pairs))

    run = ToolCall("Bash", command="npm test", call_id="1")
    red = ToolResult("Tests:       1 failed, 4 passed, 5 total", call_id="1")
    green = ToolResult("Tests:       5 passed, 5 total", call_id="2")
    session = Session("claude", "s", cwd="/r", turns=(
        turn_user("The login form test fails"),
        agent((run, red)),
        turn_user("that's wrong, you broke the header"),
        agent((ToolCall("Bash", command="npm test", call_id="2"), green),
              (ToolCall("Bash", command="git restore src/header.tsx", call_id="3"), ToolResult("", call_id="3"))),
        turn_user("looks good"),
        turn_user("Explain what a JWT is"),
        Turn("assistant", "A signed token."),
    ))
    first, second = split_units(session)
    assert first.request == "The login form test fails" and first.followups == ("that's wrong, you broke the header",)
    assert [t.passed for t in first.test_runs] == [False, True]
    assert (first.corrections, first.reverts, first.accepted, first.outcome) == (1, 1, True, "failed")
    assert second.request == "Explain what a JWT is" and not second.did_work and second.outcome == "unknown"
    assert [u.index for u in split_units(session, from_turn=5)] == [1]


@pytest.mark.parametrize("output, code, expected", [
    ("===== 2 failed, 10 passed, 1 skipped in 1.20s =====", None, (False, "2 failed, 10 passed, 1 skipped")),
    ("....\n4 passed in 0.02s", None, (True, "4 passed")),
    ("1 passed, 1 error in 0.3s", None, (False, "1 passed, 1 error")),
    ("collected 0 items\n\n=== no tests ran in 0.01s ===", None, (None, "no tests ran")),
    ("Tests:       3 passed, 3 total\nTime: 1s", None, (True, "3 passed, 3 total")),
    (" Test Files  1 failed (1)\n      Tests  1 failed | 2 passed (3)", None, (False, "1 failed | 2 passed (3)")),
    ("--- FAIL: TestParse (0.00s)\nFAIL\tgithub.com/x/y\t0.01s", None, (False, "FAIL")),
    ("ok  \tgithub.com/x/y\t0.01s", None, (True, "ok")),
    ("test result: FAILED. 1 passed; 1 failed", None, (False, "FAIL")),
    ("test result: ok. 3 passed; 0 failed", None, (True, "ok")),
    ("make: *** [test] Error 2", 2, (False, "exit code 2")),
    ("all good", 0, (True, "exit code 0")),
])
def test_parse_test_output(output, code, expected):
    assert parse_test_output(output, code) == expected


def test_a_question_becomes_a_text_task_with_a_rubric(tmp_path):
    repo = make_repo(tmp_path / "repo")
    a = ClaudeSession("q1", repo).user("How does parse_date deal with daylight saving time?").say("It doesn't.")
    b = ClaudeSession("q2", repo, day="2025-10-04").user("Explain how parse_date handles daylight saving time")
    b.say("It ignores DST.")
    sessions, _ = harvested(tmp_path, a, b)
    (task,) = mine(sessions).tasks
    row = task.to_row()
    assert task.kind == "text" and "workspace" not in row
    assert row["input"] == task.prompt and "daylight saving" in row["verify"]["rubric"]
    assert MinedTask.from_row(row) == task


def test_label_hook_and_rev_resolution(tmp_path):
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    a = fix_dates(ClaudeSession("l1", repo, day="2099-01-01").user("fix the date test"))
    b = fix_dates(ClaudeSession("l2", repo, day="2099-01-02").user("the date test fails again, fix it"))
    sessions, _ = harvested(tmp_path, a, b)
    seen = []

    def label(group):
        seen.append(len(group.units))
        return "Make tests/test_dates.py pass: parse_date must accept ISO 8601 strings with UTC offsets."

    (task,) = mine(sessions, label=label, rev_for=lambda unit: rev_before(repo, unit.timestamp, unit.git_branch)).tasks
    assert seen == [2] and task.prompt.startswith("Make tests/test_dates.py pass")
    assert task.rev == head
    assert rev_before(repo, "1999-01-01T00:00:00Z") is None


def test_a_codex_session_with_a_recorded_commit_pins_the_task_to_it(tmp_path):
    from skillgit.sleep.readers import readers

    (codex,) = readers()["codex"].read(next((FIXTURES / "codex").glob("rollout-*.jsonl")))
    twin = codex.with_(session_id="twin", started="2025-10-02T09:00:00Z",
                       turns=tuple(t if t.role == "assistant" else Turn("user", "date test broken again, fix it",
                                                                         timestamp="2025-10-02T09:00:01Z")
                                   for t in codex.turns))
    (task,) = mine([codex, twin]).tasks
    assert task.rev == "1" * 40 and task.verify["command"] == "pytest -q tests/test_dates.py"


def test_mined_task_file_round_trips_and_rejects_what_it_cannot_read(tmp_path):
    repo = make_repo(tmp_path / "repo")
    a = fix_dates(ClaudeSession("r1", repo).user("fix the date parsing test"))
    b = fix_dates(ClaudeSession("r2", repo, day="2025-10-09").user("date parsing test is failing again"))
    sessions, _ = harvested(tmp_path, a, b)
    tasks = mine(sessions).tasks
    path = write_tasks(tmp_path / "out" / "mined.jsonl", tasks, meta={"harvested": 2})
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header == {"skillgit_mined_tasks": 1, "reviewed": False, "count": 1, "harvested": 2}
    loaded = read_tasks(path)
    assert loaded.reviewed is False and loaded.tasks == tasks

    header["reviewed"] = True  # what a person does after reviewing
    path.write_text(json.dumps(header) + "\n" + "\n".join(lines[1:]) + "\n")
    assert read_tasks(path).reviewed is True
    assert read_tasks(write_tasks(path, tasks, reviewed=True)).reviewed is True

    (tmp_path / "bad.jsonl").write_text(lines[1] + "\n")
    with pytest.raises(SkillgitError, match="no 'skillgit_mined_tasks' header"):
        read_tasks(tmp_path / "bad.jsonl")
    (tmp_path / "broken.jsonl").write_text(lines[0] + "\n{not json\n")
    with pytest.raises(SkillgitError, match=r"broken\.jsonl:2"):
        read_tasks(tmp_path / "broken.jsonl")
    (tmp_path / "future.jsonl").write_text(json.dumps({"skillgit_mined_tasks": 99, "reviewed": False}) + "\n")
    with pytest.raises(SkillgitError, match="newer"):
        read_tasks(tmp_path / "future.jsonl")


def test_a_resumed_conversation_is_mined_once(tmp_path):
    repo = make_repo(tmp_path / "repo")
    original = fix_dates(ClaudeSession("o1", repo).user("fix the date parsing test"))
    copy = ClaudeSession("o2", repo)
    copy.records = [dict(r, sessionId="o2") for r in original.records]  # a resume copies the earlier turns
    sessions, _ = harvested(tmp_path, original, copy)
    assert len(sessions) == 2 and len(mine(sessions).units) == 1


def _commit_at(repo, name: str, date: str) -> str:
    import os
    import subprocess

    (repo / name).write_text(f"{name}\n")
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "add", name], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", name], cwd=repo, check=True, env=env)
    return git(repo, "rev-parse", "HEAD")


def test_sleep_mine_pins_agentic_tasks_to_the_commit_before_the_session_not_to_head(tmp_path):
    """History moved after the sessions: the task replays the repository as the person had it, by SHA."""
    from tests.conftest import run_cli

    repo = make_repo(tmp_path / "repo")
    (repo / "skillgit.yaml").write_text("skill: {path: SKILL.md, branch: main}\n")
    (repo / "SKILL.md").write_text("# skill\n")
    then = _commit_at(repo, "SKILL.md", "2025-09-01T00:00:00Z")
    home = tmp_path / "home"
    fix_dates(ClaudeSession("p1", repo, day="2025-10-03").user("fix the date parsing test")).write(home)
    fix_dates(ClaudeSession("p2", repo, day="2025-10-04").user("date parsing test is failing again")).write(home)
    later = _commit_at(repo, "later.txt", "2025-12-01T00:00:00Z")  # history moved after the sessions
    done = run_cli("sleep", "mine", "--home", str(home), "--sources", "claude", "--json", cwd=repo)
    assert done.returncode == 0, done.stderr
    (task,) = read_tasks(repo / ".skillgit" / "sleep" / "tasks.jsonl").tasks
    assert task.kind == "agentic" and task.rev == then != later
    assert task.signals["rev_from"] == "before the session"


def test_a_task_no_commit_of_its_time_explains_is_pinned_to_head_resolved_when_mined(tmp_path):
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    a = fix_dates(ClaudeSession("o1", repo, day="1999-01-01").user("fix the date test"))
    b = fix_dates(ClaudeSession("o2", repo, day="1999-01-02").user("the date test fails again, fix it"))
    sessions, _ = harvested(tmp_path, a, b)
    (task,) = mine(sessions, rev_for=lambda u: rev_before(repo, u.timestamp, u.git_branch), fallback_rev=head).tasks
    assert task.rev == head and task.rev != "HEAD"
    assert task.signals["rev_from"].startswith("HEAD when mined")


def test_the_miner_holds_what_mining_reads_of_a_unit_not_its_answer_nor_every_command(tmp_path):
    # a long history's units are held until grouping: the agent's last answer and the commands past the first are
    # not part of any task, so they are not held; the task is the one the whole units give
    repo = make_repo(tmp_path / "repo")
    sessions, _ = harvested(tmp_path, *(fix_dates(ClaudeSession(f"k{n}", repo, day=f"2025-10-0{n + 3}")
                                                  .user("Fix the failing date parsing test")) for n in range(2)))
    whole = [u for s in sessions for u in split_units(s)]
    assert all(u.answer and len(u.commands) == 2 for u in whole)
    result = mine(sessions)
    assert [(u.answer, u.commands) for u in result.units] == [("", whole[0].commands[:1])] * 2
    assert all(u.did_work for u in result.units)
    assert [(u.request, u.test_runs, u.paths, u.outcome) for u in result.units] == \
        [(u.request, u.test_runs, u.paths, u.outcome) for u in whole]
    (task,) = result.tasks
    assert task.kind == "agentic" and task.verify["command"] == DATE_TEST and task.signals["passed_units"] == 2
