"""A command that exits while something it started still holds its output pipes is done `LEFTOVER_GRACE_S` later:
the leftover is killed then, and what the command printed is returned — before, `run` waited for the pipes until
the timeout (a sandboxed spreadsheet case with a background process took its whole 30 s)."""

from __future__ import annotations

from skillgit import process


def test_a_leftover_holding_the_pipes_does_not_hold_the_command_until_its_timeout(tmp_path):
    done = process.run(["sh", "-c", "sleep 300 & echo printed; echo to-stderr >&2; exit 3"], cwd=tmp_path,
                       env={"PATH": "/usr/bin:/bin"}, timeout_s=240)
    assert done.returncode == 3 and not done.timed_out
    assert done.stdout == "printed\n" and done.stderr == "to-stderr\n"
    assert done.seconds < 120  # the grace (2 s), not the timeout (240 s)
    assert done.cleanup.killed >= 1  # the leftover `sleep` was killed


def test_a_command_still_running_at_its_timeout_is_timed_out(tmp_path):
    done = process.run(["sh", "-c", "echo started; sleep 300"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                       timeout_s=1)
    assert done.timed_out and done.stdout == "started\n"
