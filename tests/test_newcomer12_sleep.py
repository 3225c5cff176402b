"""What a newcomer met in wave 12's command approval for `skillgit sleep` (fresh clone, venv and HOME), through the
real CLI on a real git repository:

- `sleep mine` sent the person to `sleep review --approve` straight away, past `sleep review`, which shows the
  commands they approve.
- `sleep review --approve` approves the shell commands of the agentic tasks it shows, yet said only "N task(s) …:
  reviewed": nothing told the person that commands were approved, where, or what to run next; `--revoke` said
  nothing of the approval it withdrew. Their `--help` lines said only "Mark the file as (not) reviewed."
- `sleep run` left out agentic tasks whose commands nobody approved and said so only in the night's report.
- `sleep schedule --yes` said "mined tasks reach the configured models unreviewed" and its help the same, without
  the other half: it approves no command (docs/SLEEP.md says so; the command did not).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from skillgit.sleep.mine import MinedTask
from tests.conftest import run_cli_inproc
from tests.test_sleep_harvest import git, make_repo

CONFIG = """\
skill: {path: SKILL.md, branch: main}
model: {teacher_backend: simulated, student_backend: simulated}
"""


def _project(tmp_path: Path) -> Path:
    """A skillgit project whose mined task file holds one text task and one agentic task (with a test command)."""
    repo = make_repo(tmp_path / "repo")
    (repo / "SKILL.md").write_text("# Skill\n")
    (repo / "skillgit.yaml").write_text(CONFIG)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "skill")
    head = git(repo, "rev-parse", "HEAD")
    rows = [MinedTask(id="sleep-text0001", kind="text", prompt="Normalise: 3 lb", expected="1.36 kg").to_row(),
            MinedTask(id="sleep-agent0001", kind="agentic", prompt="Fix the red test", rev=head,
                      verify={"command": "pytest -q tests/test_dates.py"}).to_row()]
    path = repo / ".skillgit" / "sleep" / "tasks.jsonl"
    path.parent.mkdir(parents=True)
    header = {"skillgit_mined_tasks": 1, "reviewed": False, "count": 2}
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *rows]), encoding="utf-8")
    return repo


def _flat(text: str) -> str:
    """--help text without its box drawing and line wrapping."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_approve_says_what_it_approved_and_what_comes_next(tmp_path):
    repo = _project(tmp_path)
    shown = run_cli_inproc("sleep", "review", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert "runs (not approved): $ pytest -q tests/test_dates.py" in shown.stdout
    approved = run_cli_inproc("sleep", "review", "--approve", cwd=repo)
    assert approved.returncode == 0, approved.stderr
    assert "runs: $ pytest -q tests/test_dates.py" in approved.stdout
    said = " ".join(approved.stderr.split())
    assert "approved the commands of its 1 agentic task(s) on this machine; next: `skillgit sleep run` " \
           "(`--revoke` undoes it)" in said, said
    revoked = run_cli_inproc("sleep", "review", "--revoke", cwd=repo)
    assert revoked.returncode == 0, revoked.stderr
    said = " ".join(revoked.stderr.split())
    assert "withdrew the approval of the commands of its 1 agentic task(s): a night leaves them out" in said, said
    assert "runs (not approved): $ pytest" in revoked.stdout


def test_review_help_says_approve_approves_commands(tmp_path):
    help_text = _flat(run_cli_inproc("sleep", "review", "--help", cwd=tmp_path).stdout)
    assert "--approve Mark the file as reviewed and approve, on this machine, the shell commands it shows." \
        in help_text, help_text
    assert "--revoke Mark the file as not reviewed and withdraw the approval of its commands." in help_text


def test_schedule_yes_says_it_approves_no_command(tmp_path):
    repo = _project(tmp_path)
    help_text = _flat(run_cli_inproc("sleep", "schedule", "--help", cwd=repo).stdout)
    assert "it approves no shell command (`sleep review --approve` does)" in help_text, help_text
    crontab = tmp_path / "crontab.txt"
    done = run_cli_inproc("sleep", "schedule", "--yes", "--crontab-file", str(crontab), cwd=repo)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "mined tasks reach the configured models unreviewed (their shell commands still run only once approved: " \
           "`skillgit sleep review --approve`)" in said, said
    assert "sleep run" in crontab.read_text() and "--yes" in crontab.read_text()


def test_run_says_when_tasks_were_left_out_for_commands_nobody_approved(tmp_path):
    from tests.test_probe12_commands import _project as agentic_project

    repo, home, canary = agentic_project(tmp_path)
    done = run_cli_inproc("sleep", "run", "--home", str(home), "--sources", "claude", "--date", "2025-10-10",
                          "--yes", cwd=repo)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "2 agentic task(s) left out: nobody approved their commands on this machine" in said, said
    assert "`skillgit sleep review --approve`" in said
    assert list(canary.iterdir()) == []  # (and nothing ran)


def test_mine_points_at_sleep_review_before_approving(tmp_path):
    from tests.test_probe12_commands import _project as agentic_project

    repo, home, _ = agentic_project(tmp_path)
    mined = run_cli_inproc("sleep", "mine", "--home", str(home), "--sources", "claude", cwd=repo)
    assert mined.returncode == 0, mined.stderr
    said = " ".join(mined.stderr.split())
    assert "read it with `skillgit sleep review` (every task, and the commands agentic ones would run), then " \
           "`skillgit sleep review --approve`" in said, said
