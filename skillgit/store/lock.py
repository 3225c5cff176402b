"""Exclusive lock files for skillgit processes (one training run per skill branch at a time).

A lock is `<dir>/<name>.lock`, created with O_EXCL and holding JSON {pid, host, time, token}. A lock whose
process is gone (same host) is stale and taken over; a live one (or one on another host, which we cannot check)
raises SkillgitError(code=LOCKED) naming the holder. Unlike flock, this works on network file systems and
tells the user who holds the lock.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from skillgit.errors import ExitCode, SkillgitError


def _path(folder: Path, name: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "default"
    return folder / f"{safe}.lock"


def _host() -> str:
    import socket  # (only when a lock is taken or found: `log` and `status` import the store and take none)

    return socket.gethostname()


def held(folder: Path, name: str) -> bool | None:
    """Whether a live process holds the lock `name`: True, False (no lock, or a stale one on this host), or None
    when the holder is on another host (it cannot be checked from here)."""
    holder = _read_lock(_path(folder, name))
    if not holder:
        return _path(folder, name).exists() or False  # being written right now: live
    if holder.get("host") != _host():
        return None
    return alive(holder.get("pid"))


WAIT_POLL_S = 0.2  # how often a waiting process looks at a live lock again


@contextmanager
def hold(folder: Path, name: str, wait: float = 0.0, on_wait: Callable[[str], None] | None = None
         ) -> Iterator[Path]:
    """Hold the lock `name` (any text; unsafe characters are replaced) in `folder` for the block. A live holder
    raises SkillgitError(LOCKED) at once, or — with `wait` > 0 seconds (`math.inf`: no limit) — once it still holds
    the lock after that long; `on_wait(message)` is called once when the wait begins. Ctrl-C ends a wait."""
    path = _path(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    deadline = time.monotonic() + max(0.0, wait)
    waited = False
    while True:
        try:
            _acquire(path, {"pid": os.getpid(), "host": _host(),
                            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "token": token})
            break
        except SkillgitError as exc:
            left = deadline - time.monotonic()
            if exc.code != ExitCode.LOCKED or left <= 0:
                if waited:
                    raise SkillgitError(f"{exc.message}; still held after waiting {wait:g} s",
                                        "wait longer (--wait with more seconds, or --wait alone: no limit)",
                                        ExitCode.LOCKED) from None
                raise
            if not waited and on_wait is not None:
                on_wait(exc.message)
            waited = True
            time.sleep(min(WAIT_POLL_S, left))
    try:
        yield path
    finally:
        if _read_lock(path).get("token") == token:
            path.unlink(missing_ok=True)


def _read_lock(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _acquire(path: Path, info: dict[str, Any]) -> None:
    for _ in range(5):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _read_lock(path)
            if not holder:
                # Being written right now, or a crash left it empty: young → live, old → stale.
                try:
                    young = time.time() - path.stat().st_mtime < 10
                except FileNotFoundError:
                    continue
                if young:
                    time.sleep(0.05)
                    continue
            elif holder.get("host") != info["host"] or alive(holder.get("pid")):
                raise SkillgitError(
                    f"another skillgit process holds the lock '{path.stem}' (pid {holder.get('pid')} on "
                    f"{holder.get('host')} since {holder.get('time')})",
                    f"wait for it to finish or stop it (kill {holder.get('pid')}); if no such process runs, "
                    f"delete {path}", ExitCode.LOCKED) from None
            _take_over(path, holder)
            continue
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)
        return
    raise SkillgitError(f"could not take the lock {path}", f"delete {path} if no skillgit process runs",
                        ExitCode.LOCKED)


def _take_over(path: Path, stale: dict[str, Any]) -> None:
    """Remove a stale lock file, but only if it is still the one judged stale (a small mutex prevents two
    processes from both removing it after one of them has already replaced it with a live lock)."""
    mutex = path.with_name(path.name + ".takeover")
    try:
        fd = os.open(mutex, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        try:
            if time.time() - mutex.stat().st_mtime > 30:  # its holder died mid-takeover
                mutex.unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        return
    try:
        if _read_lock(path) == stale:
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)
        mutex.unlink(missing_ok=True)
