"""The MCP `train` tool runs only what a person approved on this machine (`skillgit/sleep/approval_train.py`).

The hole: an agent (maybe steered by what it read) could call `train`, which ran the pulled configuration's commands
(`env.scorer.command`, an agent's argv) and the task set's agentic commands (`setup`, `verify.command`) — nobody
typed them. Now `train` refuses, before anything runs, while one of them (or a repository file it runs) is not
approved, naming them and what the person runs: `skillgit approve` (reads), `skillgit approve --yes` (approves).
`train_dry_run` stays free and says what `train` would refuse. Driven through the real `python -m skillgit mcp`
server and the official client, as tests/test_mcp_server.py does; the person's side through the real CLI.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git, run_cli

pytest.importorskip("mcp")
from tests.test_mcp_server import _is_error, _text, run_session, trained  # noqa: E402,F401 (the fixture)

SCORE = """\
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as out:
    out.write("{tag}\\n")
print(1 if data["output"].strip() == str(data["item"]["expected"]).strip() else 0)
"""


def _copy(source: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "copy"
    shutil.copytree(source, repo, symlinks=True)
    tasks = repo / "tasks.jsonl"
    tasks.write_text("".join(tasks.read_text().splitlines(keepends=True)[:24]))  # a small, quick run
    path = repo / "skillgit.yaml"
    path.write_text(path.read_text().replace("batch_size: 20", "batch_size: 4").replace("workers: 8", "workers: 2"))
    return repo


def _train(repo: Path, env: dict[str, str], branch: str) -> tuple[Any, Any]:
    async def body(s: Any) -> tuple[Any, Any]:
        dry = await s.call_tool("train_dry_run", {"max_steps": 1})
        done = await s.call_tool("train", {"max_calls": 2000, "max_steps": 1, "review_branch": branch})
        return dry, done

    return run_session(repo, env, body, ("--repo", str(repo)))


def test_mcp_train_runs_the_scorer_only_as_approved_with_the_script_it_runs(trained, tmp_path):  # noqa: F811
    source, env = trained
    repo = _copy(source, tmp_path)
    canary = tmp_path / "canary"
    (repo / "score.py").write_text(SCORE.format(tag="v1"))
    command = f"{shlex.quote(sys.executable)} score.py {shlex.quote(str(canary))}"
    path = repo / "skillgit.yaml"
    scorer = f"    type: command\n    command: {json.dumps(command)}"
    path.write_text(path.read_text().replace("    type: exact", scorer))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a command scorer")

    dry, refused = _train(repo, env, "skillgit/review/g1")
    assert not _is_error(dry) and "train would be refused" in _text(dry), _text(dry)
    assert _is_error(refused), _text(refused)
    text = _text(refused)
    assert "not approved on this machine" in text and "skillgit.yaml env.scorer.command" in text, text
    assert "skillgit approve --yes" in text
    assert not canary.exists()  # (before the gate: the scorer ran for the agent)
    assert git(repo, "branch", "--list", "skillgit/review/g1") == ""

    shown = run_cli("approve", cwd=repo, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "skillgit.yaml env.scorer.command (not approved):" in shown.stdout and command in shown.stdout
    assert "files it runs: score.py " in shown.stdout and "1 not approved" in shown.stderr
    assert run_cli("approve", "--yes", cwd=repo, env=env).returncode == 0  # the person read it, and approves
    dry, done = _train(repo, env, "skillgit/review/g2")
    assert "train may run" in _text(dry), _text(dry)
    assert not _is_error(done), _text(done)
    assert set(canary.read_text().split()) == {"v1"}

    (repo / "score.py").write_text(SCORE.format(tag="v2"))  # a teammate's commit: the same text, new code
    git(repo, "commit", "-qam", "teammate: the scorer")
    canary.unlink()
    _, refused = _train(repo, env, "skillgit/review/g3")
    assert _is_error(refused) and "skillgit.yaml env.scorer.command" in _text(refused), _text(refused)
    assert not canary.exists()
    shown = run_cli("approve", cwd=repo, env=env)
    assert "changed since approved: score.py " in shown.stdout and "v2" not in shown.stdout, shown.stdout
    assert run_cli("approve", "--yes", cwd=repo, env=env).returncode == 0
    _, done = _train(repo, env, "skillgit/review/g4")
    assert not _is_error(done) and set(canary.read_text().split()) == {"v2"}, _text(done)


def test_mcp_train_refuses_an_agentic_task_whose_commands_nobody_approved(trained, tmp_path):  # noqa: F811
    source, env = trained
    repo = _copy(source, tmp_path)
    (repo / "check.py").write_text("print('ok')\n")
    row = {"id": "fix-dates", "prompt": "fix the dates", "workspace": {"repo": ".", "rev": "HEAD"},
           "setup": ["bash tools/prep.sh"], "verify": {"command": "python check.py", "result": "exit_code"}}
    with (repo / "tasks.jsonl").open("a") as out:
        out.write(json.dumps(row) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "an agentic task")

    async def body(s: Any) -> tuple[Any, Any]:
        return await s.call_tool("train_dry_run", {"max_steps": 1}), await s.call_tool("train", {"max_calls": 10})

    _, refused = run_session(repo, env, body, ("--repo", str(repo)))
    assert _is_error(refused) and "task fix-dates" in _text(refused), _text(refused)
    listed = json.loads(run_cli("approve", "--json", cwd=repo, env=env).stdout)
    task = next(r for r in listed["commands"] if r["what"] == "task fix-dates")
    assert task["commands"] == ["bash tools/prep.sh", "python check.py"] and task["approved"] is False
    assert {f["path"]: f["digest"] for f in task["files"]} == {
        "tools/prep.sh": "missing", "check.py": git(repo, "rev-parse", "HEAD:check.py")}
    assert run_cli("approve", "--yes", cwd=repo, env=env).returncode == 0

    async def again(s: Any) -> Any:
        return await s.call_tool("train", {"max_calls": 10})

    # approved: the gate lets it through (this simulated-world project then cannot run an agentic task: the run's
    # own error, after the gate)
    text = _text(run_session(repo, env, again, ("--repo", str(repo))))
    assert "not approved" not in text and "student_backend is 'simulated'" in text, text
    assert json.loads(run_cli("approve", "--json", cwd=repo, env=env).stdout)["approved"] is True
