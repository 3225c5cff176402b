"""Running one command in its own process group: agents, task setup, verifiers and command scorers all start here.

The invariant: nothing a command started outlives `run`. The command leads a new session, so its process group id
is its pid, which stays reserved until it is reaped here; killing that group therefore never hits an unrelated
process. The group is killed after a normal exit (leftover children), at the timeout (TERM, then KILL after a
grace period), and when the caller is interrupted (Ctrl-C while waiting).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

KILL_GRACE_S = 1.0


@dataclass(frozen=True)
class Finished:
    returncode: int  # negative: killed by that signal (-9 when it never exited on its own)
    stdout: str
    stderr: str
    timed_out: bool  # it was still running at the timeout (not: a child held the pipes after it exited)
    seconds: float


def kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: Sequence[str] | str, *, cwd: Path, env: Mapping[str, str], timeout_s: float, shell: bool = False,
        stdin: str | None = None, kill_grace_s: float = KILL_GRACE_S) -> Finished:
    """Run `argv` (a shell command line when `shell`) in `cwd`, text in and out (UTF-8, undecodable bytes
    replaced). OSError (a missing program) propagates to the caller, which knows how to name it."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), shell=shell, text=True, encoding="utf-8",
                            errors="replace", stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = proc.poll() is None  # else: it exited but a child still holds its output open
        out, err = _stop(proc, kill_grace_s)
    except BaseException:
        kill_group(proc.pid, signal.SIGKILL)  # e.g. Ctrl-C while waiting: leave nothing behind
        proc.wait()
        raise
    else:
        kill_group(proc.pid, signal.SIGKILL)
    return Finished(proc.returncode if proc.returncode is not None else -9, out or "", err or "", timed_out,
                    time.monotonic() - started)


def _stop(proc: subprocess.Popen, grace_s: float) -> tuple[str, str]:
    """TERM the group, KILL it after the grace period (also the children that ignored TERM), and collect what it
    printed."""
    kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    kill_group(proc.pid, signal.SIGKILL)
    try:
        return proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a grandchild escaped into its own session and holds the pipes
        proc.kill()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()
        return "", ""


def tail(text: str, chars: int = 3000) -> str:
    """The useful end of an output: its last `chars` characters, cut at a line start."""
    if len(text) <= chars:
        return text
    cut = text[-chars:]
    return "[…]\n" + cut[cut.find("\n") + 1:] if "\n" in cut else cut
