"""`skillgit sleep …` through the real CLI in subprocesses: harvest output, the review gate in front of real backends
(a fake OpenAI server on 127.0.0.1 that must receive nothing), dry runs that write nothing, config errors that name
the key, and run → status → adopt on the offline simulated world (a simulation of the pipeline, see
tests/test_sleep_night.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillgit.world import generate_tasks
from tests.conftest import approve_configuration, git, run_cli, run_cli_inproc
from tests.fake_servers import FakeLLMServer
from tests.test_sleep_harvest import ClaudeSession
from tests.test_sleep_night import DATE, WORLD, make_project, write_sessions


def _project(tmp_path: Path, n: int = 24, **kw) -> tuple[Path, Path]:
    repo = make_project(tmp_path / "repo", **kw)
    home = tmp_path / "home"
    write_sessions(home, repo, generate_tasks(WORLD, n))
    return repo, home


def _refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)").splitlines()


# ---------------------------------------------------------------------------------------------- harvest
def test_harvest_json_is_one_object_per_session_with_skip_reasons_and_saves_nothing(tmp_path):
    repo, home = _project(tmp_path, n=8)  # norm-0 (Claude Code), norm-1 (Codex)
    ClaudeSession("headless-1", repo, entrypoint="sdk-cli").user("Normalise this record: code ab-12").say("AB-12") \
        .write(home)
    ClaudeSession("elsewhere", tmp_path / "other").user("hello").say("hi").write(home)
    proc = run_cli_inproc("sleep", "harvest", "--json", "--home", str(home), "--sources", "claude,codex", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["session"]: (r["source"], r["skipped_reason"]) for r in rows} == {
        "norm-0": ("claude", None), "norm-1": ("codex", None), "headless-1": ("claude", "headless"),
        "elsewhere": ("claude", "other-project")}
    kept = next(r for r in rows if r["session"] == "norm-0")
    assert kept["source"] == "claude" and kept["user_turns"] == 10 and kept["started"].startswith("2026-01-01")
    assert kept["project"] == str(repo) or kept["project"].endswith("/repo")
    assert "2 session(s) kept" in proc.stderr
    only_codex = run_cli_inproc("sleep", "harvest", "--json", "--home", str(home), "--sources", "codex", cwd=repo)
    assert [json.loads(line)["session"] for line in only_codex.stdout.splitlines()] == ["norm-1"]
    # read-only: nothing on the sleep ref, so the same sessions are new again
    assert not any(r.startswith("refs/skillgit/sleep") for r in _refs(repo))
    again = run_cli_inproc("sleep", "harvest", "--json", "--home", str(home), cwd=repo)
    assert len(again.stdout.splitlines()) == 4
    unknown = run_cli_inproc("sleep", "harvest", "--home", str(home), "--sources", "clippy", cwd=repo)
    assert unknown.returncode == 2 and "--sources: 'clippy' is not allowed" in unknown.stderr


def test_a_second_harvest_reads_only_the_changed_files_and_lists_exactly_what_a_full_one_does(tmp_path):
    repo, home = _project(tmp_path, n=8)  # norm-0 (Claude Code), norm-1 (Codex)
    grown = ClaudeSession("grows", repo).user("Normalise this record: code ab-12").say("AB-12")
    grown.write(home)

    def listing(*extra: str) -> tuple[dict[str, dict], str]:
        proc = run_cli_inproc("sleep", "harvest", "--json", "--home", str(home), *extra, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        return {json.loads(line)["session"]: json.loads(line) for line in proc.stdout.splitlines()}, proc.stderr

    first, err = listing()
    assert set(first) == {"norm-0", "norm-1", "grows"} and "3 file(s) read, 0 unchanged" in err
    assert (cache := repo / ".git" / "skillgit" / "sleep" / "harvest-cache.json").is_file()
    grown.user("and the same for cd-34").say("CD-34").write(home)  # the session grew
    ClaudeSession("later", repo).user("Normalise ef-56").say("EF-56").write(home)  # a new one

    second, err = listing()
    assert "2 file(s) read, 2 unchanged" in err  # only what changed was read again
    full, full_err = listing("--all")  # another basis: no cache, every file read
    assert "4 file(s) read, 0 unchanged" in full_err
    assert second == full  # exactly the new sessions and turns, the grown one from its first new turn
    assert second["grows"]["user_turns"] == 2 and second["grows"]["new_from_turn"] == first["grows"]["new_from_turn"]
    # the cache is no harvest state: mining still sees every session as new, and nothing is on the sleep ref
    assert not any(r.startswith("refs/skillgit/sleep") for r in _refs(repo))
    cache.write_text("{not json")  # a broken cache is read as none
    third, err = listing()
    assert third == full and "4 file(s) read, 0 unchanged" in err


# ---------------------------------------------------------------------------------------------- the review gate
REAL = """\
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


def test_real_backends_get_nothing_before_review_and_exactly_what_yes_releases(tmp_path):
    repo, home = _project(tmp_path, n=12)
    env = {"OPENAI_API_KEY": "sk-test-not-a-real-key-000000"}
    with FakeLLMServer() as server:
        (repo / "skillgit.yaml").write_text(REAL.format(url=server.openai_base_url))
        assert approve_configuration(repo) == 2  # (the endpoints: tests/test_trust_config_commands.py)
        refused = run_cli("sleep", "run", "--home", str(home), "--date", DATE, cwd=repo, env=env)
        assert refused.returncode == 2, refused.stderr
        assert "not reviewed" in refused.stderr and "skillgit sleep review --approve" in refused.stderr
        assert "the teacher (openai:gpt-test)" in refused.stderr and "the student (openai:gpt-test)" in refused.stderr
        assert server.requests == []
        # the tasks were mined and the state saved, but no branch was made
        tasks = repo / ".skillgit" / "sleep" / "tasks.jsonl"
        assert json.loads(tasks.read_text().splitlines()[0])["reviewed"] is False
        assert f"refs/heads/sleep/{DATE}" not in _refs(repo)

        released = run_cli("sleep", "run", "--home", str(home), "--date", DATE, "--yes", "--max-calls", "5",
                           "--json", cwd=repo, env=env)
        assert released.returncode == 5, released.stderr  # stopped at the night's call budget
        record = json.loads(released.stdout)
        assert record["status"] == "stopped" and "budget.max_calls" in record["reason"]
        assert record["tasks"]["approval"] == "--yes" and record["tasks"]["simulated"] is False
        assert len(server.requests) > 0


def test_review_approve_flips_only_the_header_and_dry_run_writes_nothing(tmp_path):
    repo, home = _project(tmp_path, n=12)
    (repo / "skillgit.yaml").write_text(REAL.format(url="http://127.0.0.1:9/v1"))
    approve_configuration(repo)  # (the endpoints: tests/test_trust_config_commands.py)
    before = set(_refs(repo))
    plan = run_cli_inproc("sleep", "dry-run", "--home", str(home), "--date", DATE, "--json", cwd=repo)
    assert plan.returncode == 0, plan.stderr
    data = json.loads(plan.stdout)
    n = data["mined"]["tasks"]  # a request seen once, in one session, accepted at once, does not recur: not mined
    assert n >= 10 and data["tasks"]["in_file"] == n and data["release"].startswith("needs")
    assert data["branch"] == f"sleep/{DATE}" and data["estimate"]["calls"]["rollout"] > 0
    assert set(_refs(repo)) == before and not (repo / ".skillgit").exists()

    mined = run_cli_inproc("sleep", "mine", "--home", str(home), "--json", cwd=repo)
    assert mined.returncode == 0 and json.loads(mined.stdout)["new_tasks"] == n
    path = repo / ".skillgit" / "sleep" / "tasks.jsonl"
    rows = path.read_text().splitlines()[1:]
    approved = run_cli_inproc("sleep", "review", "--approve", cwd=repo)
    assert approved.returncode == 0 and f"{n} task(s)" in approved.stderr and "NOT" not in approved.stderr
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["reviewed"] is True and lines[1:] == rows
    plan = json.loads(run_cli_inproc("sleep", "dry-run", "--home", str(home), "--json", cwd=repo).stdout)
    assert plan["release"] == "reviewed" and plan["mined"]["new_tasks"] == 0


def test_sleep_mine_without_a_git_identity_saves_its_state_as_skillgit(tmp_path, monkeypatch):
    repo, home = _project(tmp_path, n=12)
    (empty := tmp_path / "empty.gitconfig").write_text("")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    # no identity anywhere, and git must not guess one from the host name
    env = {"GIT_CONFIG_GLOBAL": str(empty), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_COUNT": "1",
           "GIT_CONFIG_KEY_0": "user.useConfigOnly", "GIT_CONFIG_VALUE_0": "true"}
    assert run_cli_inproc("sleep", "status", cwd=repo, env=env).returncode == 0
    mined = run_cli_inproc("sleep", "mine", "--home", str(home), "--json", cwd=repo, env=env)
    assert mined.returncode == 0, mined.stderr  # was: the task file written, then exit 3 before saving state
    n = json.loads(mined.stdout)["new_tasks"]
    assert n > 0 and len((repo / ".skillgit" / "sleep" / "tasks.jsonl").read_text().splitlines()) == n + 1
    assert git(repo, "log", "-1", "--format=%an <%ae>", "refs/skillgit/sleep") == "skillgit <skillgit@localhost>"
    again = run_cli_inproc("sleep", "mine", "--home", str(home), "--json", cwd=repo, env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["new_tasks"] == 0  # the harvest state was saved


def test_sleep_section_errors_name_the_key(tmp_path):
    import pytest

    from skillgit.errors import ConfigError
    from skillgit.sleep.settings import open_sleep_project

    repo, home = _project(tmp_path, n=2)
    config = repo / "skillgit.yaml"
    base = config.read_text()
    for extra, message in (("  max_step: 3\n", "sleep.max_step: unknown key"),
                           ("  max_tasks: many\n", "sleep.max_tasks: expected a whole number"),
                           ("  val_share: 1.5\n", "sleep.val_share: 1.5 is not allowed"),
                           ("  sources: claude\n  scrub_patterns: ['(']\n", "sleep.scrub_patterns")):
        config.write_text(base + extra)
        with pytest.raises(ConfigError, match=message):
            open_sleep_project(repo)
    config.write_text(base + "  max_step: 3\n")
    proc = run_cli_inproc("sleep", "status", cwd=repo)
    assert proc.returncode == 2 and "did you mean 'sleep.max_steps'?" in proc.stderr
    config.write_text(base)
    bad = run_cli_inproc("sleep", "run", "--home", str(home), "--branch", "main", cwd=repo)
    assert bad.returncode == 2 and "names the skill branch" in bad.stderr


def _broken_files(repo: Path, home: Path) -> Path:
    locked = ClaudeSession("locked", repo).user("hello").say("hi").write(home)
    (locked.parent / "garbled.jsonl").write_text("this is not json\n{nor this\n[1, 2]\n")
    (locked.parent / "blob.jsonl").write_bytes(bytes(range(256)) * 8)
    return locked


def _harvested(repo: Path, home: Path) -> tuple[dict[str, str | None], dict[str, str]]:
    proc = run_cli_inproc("sleep", "harvest", "--json", "--all", "--home", str(home), "--sources", "claude", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    rows = {(r := json.loads(line))["session"]: r["skipped_reason"] for line in proc.stdout.splitlines()}
    warned = {line.split(".jsonl: ", 1)[0].rsplit("/", 1)[-1]: line.split(".jsonl: ", 1)[1]
              for line in proc.stderr.splitlines() if line.startswith("warning: ") and ".jsonl: " in line}
    return rows, warned


def test_malformed_and_binary_session_files_are_skipped_saying_what_happened(tmp_path):
    repo, home = _project(tmp_path, n=2)
    _broken_files(repo, home)
    rows, warned = _harvested(repo, home)
    assert rows["garbled"] == "malformed" and rows["blob"] == "binary"  # were both other-project
    assert rows["locked"] is None and rows["norm-0"] is None
    assert warned["blob"] == "not a text file (binary data): not a claude transcript"
    assert warned["garbled"].startswith("no record in the claude format (3 unparsable or unknown)")
    assert "locked" not in warned


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_an_unreadable_session_file_says_permission_denied_and_is_read_once_it_can_be(tmp_path):
    repo, home = _project(tmp_path, n=2)
    locked = _broken_files(repo, home)
    locked.chmod(0)
    try:
        rows, warned = _harvested(repo, home)
    finally:
        locked.chmod(0o644)
    assert rows["locked"] == "unreadable"
    assert warned["locked"] == "cannot read the file (PermissionError: Permission denied)"


def test_an_unreadable_session_file_is_skipped_as_unreadable_and_not_recorded(tmp_path, monkeypatch):
    from skillgit.sleep import HarvestState, harvest

    repo, home = _project(tmp_path, n=2)
    locked = _broken_files(repo, home)
    real_open = Path.open

    def denied(self, *args, **kwargs):  # what a chmod 000 file does to a reader that is not root
        if self.name == locked.name:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    first = harvest(["claude"], home, repo, [], HarvestState(), remote_lookup=None)
    assert {s.session_id: s.skipped_reason for s in first.skipped} == {
        "locked": "unreadable", "garbled": "malformed", "blob": "binary"}
    assert {Path(w.path).name: w.message for w in first.warnings}["locked.jsonl"] == (
        "cannot read the file (PermissionError: Permission denied)")
    assert not any(key.endswith("locked.jsonl") for key in first.state.files)  # not recorded as seen
    monkeypatch.setattr(Path, "open", real_open)
    second = harvest(["claude"], home, repo, [], first.state, remote_lookup=None)
    assert [s.session_id for s in second.sessions] == ["locked"] and second.skipped == ()


# ---------------------------------------------------------------------------------------------- run → adopt
def test_run_status_adopt_fast_forwards_only_and_refuses_when_the_skill_branch_moved(tmp_path):
    repo, home = _project(tmp_path, n=24, steps=2)
    main = git(repo, "rev-parse", "main")
    run = run_cli_inproc("sleep", "run", "--home", str(home), "--date", DATE, cwd=repo)
    assert run.returncode == 0, run.stderr
    assert f"night {DATE}: finished" in run.stdout and f"sleep adopt {DATE}" in run.stderr
    night_tip = git(repo, "rev-parse", f"sleep/{DATE}")
    assert git(repo, "rev-parse", "main") == main and night_tip != main

    no_cron = {"SKILLGIT_CRONTAB": str(tmp_path / "no-such-crontab")}  # never the machine's real crontab
    status = json.loads(run_cli_inproc("sleep", "status", "--json", cwd=repo, env=no_cron).stdout)
    (night,) = status["nights"]
    assert night["status"] == "finished" and night["accepted"] >= 1 and night["branch_exists"] and not night["adopted"]
    assert status["tasks"]["count"] >= 20 and status["schedule"] == {
        "cron": None, "cron_error": f"`{tmp_path / 'no-such-crontab'}` is not installed or not on PATH",
        "systemd": False}

    printed = run_cli_inproc("sleep", "adopt", "--print", cwd=repo)
    assert printed.returncode == 0
    assert f"git switch main && git merge --ff-only sleep/{DATE}" in printed.stdout
    assert f"# skillgit sleep: night of {DATE}" in printed.stdout  # the pull-request body
    assert git(repo, "rev-parse", "main") == main

    (repo / "NOTES.md").write_text("a teammate's commit\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "teammate")
    moved = run_cli_inproc("sleep", "adopt", DATE, cwd=repo)
    assert moved.returncode == 3 and "moved since the night" in moved.stderr and "--merge" in moved.stderr
    assert git(repo, "rev-parse", "sleep/" + DATE) == night_tip
    git(repo, "reset", "-q", "--hard", main)

    adopted = run_cli_inproc("sleep", "adopt", cwd=repo)
    assert adopted.returncode == 0, adopted.stderr
    assert git(repo, "rev-parse", "main") == night_tip
    assert (repo / "SKILL.md").read_text() == git(repo, "show", f"{night_tip}:SKILL.md") + "\n"
    assert git(repo, "status", "--porcelain") == ""
    again = run_cli_inproc("sleep", "status", "--json", cwd=repo, env=no_cron)
    assert json.loads(again.stdout)["nights"][0]["adopted"] == night_tip
    assert "no night with accepted steps" in run_cli_inproc("sleep", "adopt", cwd=repo).stderr
