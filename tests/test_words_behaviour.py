"""Words that disagreed with behaviour (issue 19, item 11): `status` after a run that failed (exit 4) said "its
process is gone (killed?)"; SIGTERM exited 130 (128 + 15 is 143); the README said `revert` and `pull` wait for
the run's lock while they refused with exit 6 — they now take `--wait [SECONDS]`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillgit.cli import optional_values
from skillgit.store import Store
from tests.conftest import git, run_cli_inproc
from tests.test_cli_history import SEED, step
from tests.test_pr import demo_project

README = Path(__file__).parents[1] / "README.md"


# ---------------------------------------------------------------------------------------------- status after exit 4
def test_status_after_a_backend_failure_says_what_happened_not_killed(tmp_path):
    root = demo_project(tmp_path / "p")
    proc = run_cli_inproc("train", "--set", "model.teacher_backend=openai", "--set", "model.teacher_model=gpt-x",
                          "--set", "model.teacher.base_url=http://127.0.0.1:9/v1",
                          "--set", "model.teacher.max_retries=0", "--set", "train.max_steps=2", cwd=root,
                          env={"OPENAI_API_KEY": "sk-test-0123456789abcdefghij"})
    assert proc.returncode == 4, proc.stderr  # ExitCode.BACKEND: the teacher cannot be reached
    status = json.loads(run_cli_inproc("status", "--json", cwd=root).stdout)
    assert status["status"] == "failed"
    assert "killed" not in status["reason"]
    assert "every teacher call failed" in status["reason"] and "(exit 4)" in status["reason"]
    assert status["errors"].get("reflect", 0) >= 1  # the failed calls are counted, not lost
    shown = run_cli_inproc("status", cwd=root).stdout
    assert "status: failed" in shown and "(exit 4)" in shown


# ---------------------------------------------------------------------------------------------- signals
@pytest.fixture
def locked(make_repo):
    """A repository with two accepted steps whose skill branch's run lock this test process holds."""
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    step(store, SEED + "Check units.\n", 1, True, 0.5, 0.6)
    step(store, SEED + "Check units.\nCite.\n", 2, True, 0.6, 0.7)
    with store.lock(store.branch):
        yield root, store


def _waiting(root: Path, *args: str) -> subprocess.Popen:
    """`skillgit ARGS` in a subprocess, returned once it says it waits for the lock."""
    proc = subprocess.Popen([sys.executable, "-m", "skillgit", *args], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "waiting for the lock" in line, line + proc.stderr.read()
    return proc


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_exits_143_and_ctrl_c_130(locked, sig, code):
    root, _ = locked
    proc = _waiting(root, "revert", "--steps", "1", "--wait")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code == 128 + sig, err
    said = "interrupted" if sig == signal.SIGINT else "stopped by SIGTERM"
    assert f"error: {said}" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------- --wait
def test_revert_refuses_while_a_run_holds_the_lock_and_waits_with_wait(locked):
    root, store = locked
    tip = git(root, "rev-parse", "main")
    refused = run_cli_inproc("revert", "--steps", "1", cwd=root)
    assert refused.returncode == 6 and "holds the lock" in refused.stderr
    assert "hint:" in refused.stderr and "skillgit revert --wait" in refused.stderr
    started = time.monotonic()
    waited = run_cli_inproc("revert", "--steps", "1", "--wait", "0.4", cwd=root)
    assert waited.returncode == 6 and "still held after waiting 0.4 s" in waited.stderr
    assert time.monotonic() - started >= 0.4
    assert git(root, "rev-parse", "main") == tip  # nothing happened while the run held the lock


def test_revert_wait_proceeds_once_the_run_ends(make_repo):
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    step(store, SEED + "Check units.\n", 1, True, 0.5, 0.6)
    tip = git(root, "rev-parse", "main")
    with store.lock(store.branch):
        proc = _waiting(root, "revert", "--wait", "--steps", "1")  # --wait alone: no limit; before other options
        time.sleep(0.3)
        assert proc.poll() is None  # still waiting while the run holds the lock
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert git(root, "rev-parse", "main^") == tip and (root / "SKILL.md").read_text() == SEED


def test_pull_wait_proceeds_once_the_run_ends(make_repo, tmp_path):
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    remote = tmp_path / "shared.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert run_cli_inproc("push", str(remote), cwd=root).returncode == 0
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    theirs = Store.open(other, "SKILL.md")
    step(theirs, SEED + "From the other clone.\n", 1, True, 0.5, 0.6)
    assert run_cli_inproc("push", "origin", cwd=other).returncode == 0
    with store.lock(store.branch):
        refused = run_cli_inproc("pull", str(remote), cwd=root)
        assert refused.returncode == 6, refused.stderr
        proc = _waiting(root, "pull", "--wait", str(remote))  # `--wait REMOTE`: REMOTE is not seconds
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert git(root, "rev-parse", "main") == git(other, "rev-parse", "main")


def test_a_bare_wait_is_written_with_its_value_before_parsing(tmp_path):
    assert optional_values(["pull", "--wait"]) == ["pull", "--wait=forever"]
    assert optional_values(["pull", "--wait", "origin"]) == ["pull", "--wait=forever", "origin"]
    assert optional_values(["revert", "--wait", "30", "--steps", "1"]) == ["revert", "--wait", "30", "--steps", "1"]
    assert optional_values(["pull", "--", "--wait"]) == ["pull", "--", "--wait"]
    bad = run_cli_inproc("revert", "--wait=soon", cwd=tmp_path)
    assert bad.returncode == 2 and "--wait takes a number of seconds" in bad.stderr
    ambiguous = run_cli_inproc("revert", "--wait", "3", cwd=tmp_path)  # 3 seconds, or step 3?
    assert ambiguous.returncode == 2 and "skillgit revert 3 --wait" in ambiguous.stderr


def test_readme_says_what_revert_and_pull_do_while_a_run_holds_the_lock():
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "which wait for the run's lock" not in text
    assert "`skillgit revert` / `pull` refuse (exit 6)" in text and "`--wait [SECONDS]`" in text
    assert "`143` stopped by SIGTERM" in text
