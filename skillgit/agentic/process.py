"""Running one command in its own process group, with a timeout that kills it and everything it started."""

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
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: Sequence[str] | str, *, cwd: Path, env: Mapping[str, str], timeout_s: float, shell: bool = False,
        stdin: str | None = None) -> Finished:
    """Run `argv` (a shell command line when `shell`) in `cwd`. At `timeout_s` the whole process group gets TERM,
    then KILL; after a normal exit leftover group members are killed too. OSError (a missing program) propagates."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), shell=shell, text=True, encoding="utf-8",
                            errors="replace", stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = proc.poll() is None
        _kill_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        _kill_group(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = "", ""
    else:
        _kill_group(proc.pid, signal.SIGKILL)
    return Finished(proc.returncode if proc.returncode is not None else -9, out or "", err or "", timed_out,
                    time.monotonic() - started)


def tail(text: str, chars: int = 3000) -> str:
    """The useful end of an output: its last `chars` characters, cut at a line start."""
    if len(text) <= chars:
        return text
    cut = text[-chars:]
    return "[…]\n" + cut[cut.find("\n") + 1:] if "\n" in cut else cut
