"""The version of an agent CLI, asked once per binary and remembered.

Contract: `probe(executable, args, env)` runs `<executable> <args>` (e.g. `claude --version`) in a throwaway folder
(its cwd and `PWD`: OpenCode follows an inherited `PWD`) with a throwaway HOME (the probe never writes into the
user's profile), in its own process group with a timeout, and returns the first non-empty line it printed (stdout,
else stderr), e.g. `2.1.330 (Claude Code)`. The answer is
cached per (resolved path, size, modification time, args): a CLI updated in place during a run is probed again
and its new version reads as drift. A probe that fails says so (`unknown (exit 2)`, `unknown (timed out)`), never
raises. `file_identity(executable)` is the fallback for a program without a version flag: its name and a hash of
its bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from skillgit import process

TIMEOUT_S = 30.0
_cache: dict[tuple[str, int, int, tuple[str, ...]], str] = {}
_lock = threading.Lock()


def resolve(executable: str, env: Mapping[str, str]) -> str | None:
    """The full path of `executable` (looked up on the env's PATH unless it has a folder), or None."""
    if os.sep in executable:
        return executable if os.path.isfile(executable) and os.access(executable, os.X_OK) else None
    return shutil.which(executable, path=env.get("PATH", os.defpath))


def _stat_key(path: str, args: Sequence[str]) -> tuple[str, int, int, tuple[str, ...]] | None:
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    return real, st.st_size, st.st_mtime_ns, tuple(args)


def probe(executable: str, args: Sequence[str], env: Mapping[str, str], timeout_s: float = TIMEOUT_S) -> str:
    """The agent's version line (see the module docstring)."""
    path = resolve(executable, env)
    if path is None:
        return "not installed"
    key = _stat_key(path, args)
    if key is not None:
        with _lock:
            if key in _cache:
                return _cache[key]
    with tempfile.TemporaryDirectory(prefix="skillgit-version-") as tmp:
        home = Path(tmp)
        run_env = {**env, "HOME": tmp, "PWD": tmp, "XDG_CONFIG_HOME": str(home / ".config"),
                   "XDG_DATA_HOME": str(home / ".local/share"), "XDG_STATE_HOME": str(home / ".local/state")}
        try:
            done = process.run([path, *args], cwd=home, env=run_env, timeout_s=timeout_s)
        except OSError as exc:
            return f"unknown ({exc.strerror or exc})"
    if done.timed_out:
        answer = "unknown (timed out)"
    else:
        line = next((ln.strip() for ln in (done.stdout + "\n" + done.stderr).splitlines() if ln.strip()), "")
        answer = line[:200] if done.returncode == 0 and line else f"unknown (exit {done.returncode})"
    if key is not None and not answer.startswith("unknown"):
        with _lock:
            _cache[key] = answer
    return answer


def file_identity(executable: str, env: Mapping[str, str]) -> str:
    """`<name> sha256:<12 hex>` of the program's bytes (a program without a version flag), or "not installed"."""
    path = resolve(executable, env)
    if path is None:
        return "not installed"
    key = _stat_key(path, ("#file",))
    if key is not None:
        with _lock:
            if key in _cache:
                return _cache[key]
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return "unknown (unreadable)"
    answer = f"{os.path.basename(path)} sha256:{h.hexdigest()[:12]}"
    if key is not None:
        with _lock:
            _cache[key] = answer
    return answer
