"""skillgit/process.py: nothing a command started outlives `run` (after a normal exit, at the timeout even when
TERM is ignored, and when the caller is interrupted while waiting)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from skillgit import process


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of init still answers kill(0); read its state where /proc exists
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _pid(path: Path) -> int:
    deadline = time.monotonic() + 5
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return int(path.read_text())


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


def test_a_background_child_is_killed_when_the_command_exits(tmp_path):
    done = process.run("sleep 60 >/dev/null 2>&1 & echo $! > child; echo hi", shell=True, cwd=tmp_path, env=os.environ,
                       timeout_s=10)
    assert (done.returncode, done.stdout.strip(), done.timed_out) == (0, "hi", False)
    assert _gone(_pid(tmp_path / "child"))


def test_a_timeout_kills_the_group_even_when_it_ignores_term(tmp_path):
    script = "trap '' TERM; sleep 60 & echo $! > child; wait"
    done = process.run(["sh", "-c", script], cwd=tmp_path, env=os.environ, timeout_s=0.5, kill_grace_s=0.1)
    assert done.timed_out and done.returncode < 0
    assert _gone(_pid(tmp_path / "child"))


def test_an_interrupt_while_waiting_leaves_nothing_behind(tmp_path):
    def interrupt(*_):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            process.run("sleep 60 & echo $! > child; wait", shell=True, cwd=tmp_path, env=os.environ,
                        timeout_s=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert _gone(_pid(tmp_path / "child"))


def test_stdin_is_passed_and_undecodable_output_is_replaced(tmp_path):
    echo = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read() + b'\\xff')"
    done = process.run([sys.executable, "-c", echo], cwd=tmp_path, env=os.environ, timeout_s=10, stdin="é")
    assert done.stdout == "é\ufffd"
    assert process.tail("a\nb\nc" * 2000, 10).startswith("[…]\n")
