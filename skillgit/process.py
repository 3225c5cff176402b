"""Running one command so that nothing it started outlives it: agents, task setup, verifiers and command scorers
all start here.

The invariant: nothing a command started outlives `run`. Everything it left is killed after a normal exit (a
leftover that holds the command's output pipes open gets `LEFTOVER_GRACE_S` after the command exited, not the rest
of the timeout: then it is killed and what was printed until then is returned), at the
timeout (TERM, then KILL after a grace period), when the caller is interrupted (Ctrl-C while waiting, or a stop the
CLI recorded while another thread waits here: `errors.stop_requested`, checked every `POLL_S`), and — for a command
run with `record=folder` — after skillgit itself was killed (kill -9): `kill_recorded(folder)`, which the next
run's workspace sweep calls. `Finished.cleanup` says what each kill found and by which net.

The nets that find "everything it started" (`nets()` lists those in force on this system):
1. Process group (every POSIX system). The command leads a new session, so its process group id is its pid, which
   stays reserved until it is reaped here; killing that group never hits an unrelated process. A child that calls
   `setsid` (a daemon: double fork + setsid) leaves the group. On macOS and every system without /proc this is the
   only net: such a child is not found, and `Cleanup.describe` says so.
2. A scope id in the environment (Linux, /proc). Each `run` draws a random id (128 bits) and adds it to the
   command's `SKILLGIT_PROC_SCOPES` (comma-separated ids: the ids this process inherited stay, so a skillgit run
   inside another run's command is still found by the outer run). Every descendant inherits it through fork and
   exec, `setsid` or not. A kill reads /proc/<pid>/environ (the environment a process was started with) of every
   process whose pid was allocated since the command's (pids are handed out in cyclic order; all of them when
   /proc/sys does not say), and signals each carrier through a pidfd opened *before* its environment is checked,
   so a pid reused in between is never signalled; a SIGKILL scan repeats until it finds no carrier (children
   forked meanwhile).
   Not covered: a descendant started with another environment (`env -i`, an exec with a clean environment, a
   process a service starts for it: a container runtime, an already running tmux server), one that overwrote its
   environment block (setproctitle-style daemons), and other users' processes (their environ is unreadable).
3. A cgroup v2 (Linux, where this process may create a child of its own cgroup: root, a delegated systemd user
   service, a container with a writable cgroupfs; `SKILLGIT_PROC_CGROUP=0` turns it off). Each `run` creates
   `<own cgroup>/skillgit-<id>` and moves the command there right after spawning it: what the command starts from
   then on cannot leave it, whatever it does to its session or environment. It is killed with `cgroup.kill` (Linux
   ≥ 5.14; before, each pid of `cgroup.procs`) and removed. What the command forks before the move (the move
   itself takes ~10 ms: the kernel waits for an RCU grace period) is covered by net 2 only. When a cgroup cannot be
   created or joined, `run` goes on without it and `nets()` says why.
   `systemd-run --user --scope` is not used: it needs a D-Bus user session and costs a process and a bus round
   trip per command, and where it works the user's own cgroup is normally delegated, so net 3 applies directly.
Nothing here ever signals a process that none of the three nets tied to the command. A command running as root
can leave every net (move itself to another cgroup, scrub its environment, setsid); none is a sandbox.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from skillgit.errors import Interrupted, raise_if_stop_requested, stop_requested
from skillgit.gitenv import without_repository_vars

KILL_GRACE_S = 1.0
LEFTOVER_GRACE_S = 2.0  # how long the output pipes may stay open after the command itself exited
POLL_S = 0.1  # how often a waiting `run` checks for a stop requested by a signal
SCOPES_ENV = "SKILLGIT_PROC_SCOPES"
CGROUP_ENV = "SKILLGIT_PROC_CGROUP"  # "0": never use a cgroup
STALE_CGROUP_S = 600.0  # an empty skillgit cgroup this old was left by a killed skillgit (_sweep_stale_cgroups)
RECORD_FILE = "proc-scopes.jsonl"  # in a `record` folder: one JSON line per command ({"id", "cgroup", "owner"})
NET_GROUP = "process group"
NET_ENV = f"{SCOPES_ENV} in /proc"
NET_CGROUP = "cgroup v2"
_ID = re.compile(r"[0-9a-f]{32}")
_KILL_ROUNDS = 20  # scans of a SIGKILL sweep (each finds what forked while the previous one killed)


@dataclass(frozen=True)
class Cleanup:
    """What killing a command's leftovers found: `killed` processes besides the command itself (alive when they
    were signalled), `escaped` of them outside its process group (found by the scope id or the cgroup), under the
    nets in force for that command."""

    nets: tuple[str, ...] = (NET_GROUP,)
    killed: int = 0
    escaped: int = 0

    def describe(self, what: str) -> str:
        """E.g. "killed the agent and 2 processes it left running (1 of them had left its process group; searched:
        process group, SKILLGIT_PROC_SCOPES in /proc)"."""
        text = f"killed {what}"
        if self.killed:
            text += f" and {self.killed} process{'es' if self.killed != 1 else ''} it left running"
        if self.nets == (NET_GROUP,):
            return text + (f" (its process group only: a child that left it with setsid is not tracked on "
                           f"{sys.platform})")
        left = f"{self.escaped} of them had left its process group; " if self.escaped else ""
        return text + f" ({left}searched: {', '.join(self.nets)})"


@dataclass(frozen=True)
class Finished:
    returncode: int  # negative: killed by that signal (-9 when it never exited on its own)
    stdout: str
    stderr: str
    timed_out: bool  # it was still running at the timeout (not: a child held the pipes after it exited)
    seconds: float
    cleanup: Cleanup = Cleanup()


def kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: Sequence[str] | str, *, cwd: Path, env: Mapping[str, str], timeout_s: float, shell: bool = False,
        stdin: str | None = None, kill_grace_s: float = KILL_GRACE_S, record: Path | None = None) -> Finished:
    """Run `argv` (a shell command line when `shell`) in `cwd`, text in and out (UTF-8, undecodable bytes
    replaced), with the environment `env` less git's repository variables (skillgit/gitenv.py: a hook's GIT_DIR
    never points a rollout's git at the user's repository). With `record` (an existing folder), the command's scope
    id and cgroup are appended to `record/RECORD_FILE` before it starts. OSError (a missing program) propagates to
    the caller, which knows how to name it; a stop requested while waiting raises `Interrupted` after the kill."""
    started = time.monotonic()
    scope = _Scope()
    try:
        if record is not None:
            scope.write(record)
        environ = scope.environ(without_repository_vars(env))  # (no hook's GIT_DIR: skillgit/gitenv.py)
        proc = subprocess.Popen(argv, cwd=cwd, env=environ, shell=shell, text=True, encoding="utf-8",
                                errors="replace", stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except BaseException:
        scope.close()
        raise
    timed_out = False
    try:
        scope.adopt(proc.pid)
        out, err = _wait(proc, stdin, timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = proc.poll() is None  # else: it exited but a child still holds its output open
        out, err = _stop(proc, scope, kill_grace_s)
    except BaseException:
        scope.kill(signal.SIGKILL)  # e.g. Ctrl-C while waiting: leave nothing behind
        proc.wait()
        raise
    else:
        scope.kill(signal.SIGKILL)
    finally:
        scope.close()
    return Finished(proc.returncode if proc.returncode is not None else -9, out or "", err or "", timed_out,
                    time.monotonic() - started, scope.cleanup())


def _wait(proc: subprocess.Popen, stdin: str | None, timeout_s: float) -> tuple[str, str]:
    """`proc.communicate` until `timeout_s` — or until `LEFTOVER_GRACE_S` after the command exited while something
    it left still holds its pipes — then TimeoutExpired; checking every POLL_S for a recorded stop."""
    deadline = time.monotonic() + timeout_s
    first = True
    exited_at: float | None = None
    while True:
        try:
            return proc.communicate(stdin if first else None,
                                    timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            first = False
            if stop_requested():
                raise_if_stop_requested()  # the main thread: the signal's own Interrupted
                raise Interrupted("interrupted", "run the same command again to resume where it stopped") from None
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if now >= deadline or (exited_at is not None and now - exited_at >= LEFTOVER_GRACE_S):
                raise


def _stop(proc: subprocess.Popen, scope: _Scope, grace_s: float) -> tuple[str, str]:
    """TERM everything the nets find, KILL it after the grace period (also what ignored TERM), and collect what the
    command printed."""
    scope.kill(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    scope.kill(signal.SIGKILL)
    try:
        return proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # something no net found holds the pipes
        proc.kill()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()
        return "", ""


def kill_recorded(folder: Path) -> Cleanup:
    """Kill what the commands recorded in `folder` (`run(record=folder)`) left running — for commands whose
    skillgit died: every process carrying one of their scope ids, and their cgroups (each checked to be a
    `skillgit-<id>` folder with a `cgroup.procs` under a cgroup v2 mount), which are then removed. A finished
    command's id matches nothing, so this is safe to call for any folder."""
    try:
        lines = (folder / RECORD_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return Cleanup(nets())
    killed = escaped = 0
    used: set[str] = set()
    for line in lines:
        try:
            entry = json.loads(line)
            scope_id = str(entry["id"])
        except (ValueError, KeyError, TypeError):
            continue
        if not _ID.fullmatch(scope_id):
            continue
        scope = _Scope(scope_id, _checked_cgroup(entry.get("cgroup"), scope_id))
        scope.kill(signal.SIGKILL)
        scope.close()
        done = scope.cleanup()
        killed, escaped, used = killed + done.killed, escaped + done.escaped, used | set(done.nets)
    return Cleanup(tuple(n for n in (NET_GROUP, NET_ENV, NET_CGROUP) if n in used) or nets(), killed, escaped)


def nets() -> tuple[str, ...]:
    """The nets `run` uses on this system (module docstring), with why a cgroup is not among them."""
    out = [NET_GROUP]
    if _proc_readable():
        out.append(NET_ENV)
    base, why = _cgroup_base()
    out.append(NET_CGROUP if base is not None else f"no cgroup: {why}")
    return tuple(out)


def tail(text: str, chars: int = 3000) -> str:
    """The useful end of an output: its last `chars` characters, cut at a line start."""
    if len(text) <= chars:
        return text
    cut = text[-chars:]
    return "[…]\n" + cut[cut.find("\n") + 1:] if "\n" in cut else cut


# ---------------------------------------------------------------------------------------------- one command's nets
class _Scope:
    """The nets of one command: its process group (once adopted), its scope id, its cgroup (when one could be
    made), and the processes they found so far."""

    def __init__(self, scope_id: str | None = None, cgroup: Path | None = None):
        self.id = scope_id or os.urandom(16).hex()
        self.pgid = 0
        self.proc = _proc_readable()
        self.cgroup = cgroup if scope_id else _make_cgroup(self.id)
        self.had_cgroup = self.cgroup is not None  # (close() forgets the cgroup; the Cleanup still names it)
        self.seen: set[int] = set()
        self.outside: set[int] = set()

    def environ(self, env: Mapping[str, str]) -> dict[str, str]:
        ids = [i for source in (os.environ.get(SCOPES_ENV, ""), env.get(SCOPES_ENV, ""), self.id)
               for i in source.split(",") if _ID.fullmatch(i)]
        return {**env, SCOPES_ENV: ",".join(dict.fromkeys(ids))}

    def write(self, folder: Path) -> None:
        entry = {"id": self.id, "cgroup": str(self.cgroup) if self.cgroup else None, "owner": os.getpid()}
        with open(folder / RECORD_FILE, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    def adopt(self, pid: int) -> None:
        """The command was spawned as `pid` (its process group id): move it into the cgroup."""
        self.pgid = pid
        if self.cgroup is None:
            return
        try:
            (self.cgroup / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            if exc.errno != errno.ESRCH:  # (ESRCH: it is already gone) this system refuses: net 2 still holds
                _cgroup_refused(f"moving a process into {self.cgroup} failed: {exc.strerror}")
                self.close()
                self.had_cgroup = False

    def nets(self) -> tuple[str, ...]:
        return tuple(n for n, on in ((NET_GROUP, self.pgid > 0), (NET_ENV, self.proc),
                                     (NET_CGROUP, self.cgroup is not None or self.had_cgroup)) if on)

    def cleanup(self) -> Cleanup:
        return Cleanup(self.nets(), len(self.seen), len(self.outside))

    def kill(self, sig: int) -> None:
        """Signal everything the nets find; for SIGKILL, scan again until nothing is found."""
        for _ in range(_KILL_ROUNDS if sig == signal.SIGKILL else 1):
            if not self._signal(sig) or sig != signal.SIGKILL:
                return
            time.sleep(0.01)

    def _signal(self, sig: int) -> bool:
        """One pass: True when a process outside the process group was found (the group is killed as a whole)."""
        members, carriers = _scan(self.id, self.pgid) if self.proc else (set(), set())
        jailed = _cgroup_pids(self.cgroup) if self.cgroup is not None else set()
        if self.pgid > 0:
            kill_group(self.pgid, sig)
        if self.cgroup is not None:
            if sig == signal.SIGKILL and (self.cgroup / "cgroup.kill").exists():
                _write(self.cgroup / "cgroup.kill", "1")
            else:
                cgroup = self.cgroup
                for pid in jailed - members:
                    _send(pid, sig, lambda p: _in_cgroup(p, cgroup))
        needle = self.id.encode()
        for pid in carriers:
            _send(pid, sig, lambda p: _carries(p, needle))
        found = (members | carriers | jailed) - {self.pgid, os.getpid()}
        self.seen |= found
        self.outside |= found - members
        return bool((carriers | jailed) - members - {self.pgid})

    def close(self) -> None:
        """Remove the cgroup once it is empty (it empties as soon as its killed processes exit)."""
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is None:
            return
        for _ in range(100):
            try:
                cgroup.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:  # still populated: killed processes still exiting
                time.sleep(0.01)


def _send(pid: int, sig: int, still_ours: Callable[[int], bool]) -> None:
    """Signal `pid` if `still_ours(pid)` holds, through a pidfd opened before the check (a pid reused after the
    check is never signalled); without pidfds (Linux < 5.3), a plain kill right after the check."""
    fd = None
    try:
        fd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    except ProcessLookupError:
        return
    except OSError:  # ENOSYS: no pidfds on this kernel
        fd = None
    try:
        if still_ours(pid):
            if fd is not None:
                signal.pidfd_send_signal(fd, sig)
            else:
                os.kill(pid, sig)
    except OSError:  # gone meanwhile, or not ours to signal
        pass
    finally:
        if fd is not None:
            os.close(fd)


# ---------------------------------------------------------------------------------------------- /proc
def _proc_readable() -> bool:
    return sys.platform.startswith("linux") and os.path.exists("/proc/self/environ")


def _scan(scope_id: str, pgid: int) -> tuple[set[int], set[int]]:
    """(live processes of group `pgid`, live processes outside it whose environment carries `scope_id`). With a
    group (a command started here), only pids allocated since its leader are read: Linux hands out pids in cyclic
    order, so everything the command started has a pid between the leader's and the last one allocated (read
    after listing /proc, so nothing listed is newer)."""
    needle = scope_id.encode()
    members: set[int] = set()
    carriers: set[int] = set()
    me = os.getpid()
    pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    newer = _allocated_since(pgid) if pgid > 0 else None
    for pid in pids:
        if pid == me or newer is not None and not newer(pid):
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] in (b"Z", b"X"):  # exited: nothing to kill
            continue
        if pgid > 0 and int(fields[2]) == pgid:
            members.add(pid)
        elif _carries(pid, needle):
            carriers.add(pid)
    return members, carriers


def _allocated_since(first: int) -> Callable[[int], bool] | None:
    """A test for "pid was allocated at or after `first`" (cyclic pid order); None when /proc/sys does not say."""
    try:
        last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return None
    span = (last - first) % pid_max
    return lambda pid: (pid - first) % pid_max <= span


def _carries(pid: int, needle: bytes) -> bool:
    """True when process `pid` was started with `needle` among its SKILLGIT_PROC_SCOPES ids."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return False
    if needle not in data:
        return False
    prefix = SCOPES_ENV.encode() + b"="
    return any(needle in entry[len(prefix):].split(b",") for entry in data.split(b"\0") if entry.startswith(prefix))


# ---------------------------------------------------------------------------------------------- cgroup v2
_cgroup_lock = threading.Lock()
_cgroup_state: dict[str, str] = {}  # "refused": why this process gave up on cgroups; "swept": stale ones removed


@functools.lru_cache(maxsize=1)
def _cgroup_mounts() -> tuple[tuple[str, Path], ...]:
    """(root inside the hierarchy, mount point) of every cgroup v2 mount this process sees."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return ()
    for line in lines:
        fields = line.split()
        if " - " in line and line.split(" - ", 1)[1].split()[0] == "cgroup2" and len(fields) > 4:
            found.append((fields[3], Path(fields[4].replace("\\040", " "))))
    return tuple(found)


def _cgroup_base() -> tuple[Path | None, str]:
    """(this process's own cgroup v2 folder when it may create children there, else None; why not)."""
    if os.environ.get(CGROUP_ENV, "").strip() in ("0", "false", "no", "off"):
        return None, f"{CGROUP_ENV}=0"
    if not sys.platform.startswith("linux"):
        return None, f"not Linux ({sys.platform})"
    with _cgroup_lock:
        if "refused" in _cgroup_state:
            return None, _cgroup_state["refused"]
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
                   if line.startswith("0::"))
    except (OSError, StopIteration):
        return None, "no cgroup v2 hierarchy"
    for root, mount in _cgroup_mounts():
        if own == root or own.startswith(root.rstrip("/") + "/"):
            base = mount / own[len(root):].lstrip("/")
            if os.access(base, os.W_OK):
                return base, ""
            return None, f"{base} is not writable (not delegated to this user)"
    return None, "no cgroup v2 mount holds this process's cgroup"


def _cgroup_refused(why: str) -> None:
    with _cgroup_lock:
        _cgroup_state["refused"] = why


def _make_cgroup(scope_id: str) -> Path | None:
    base, _ = _cgroup_base()
    if base is None:
        return None
    with _cgroup_lock:
        sweep = "swept" not in _cgroup_state
        _cgroup_state["swept"] = "yes"
    if sweep:  # once a process: what earlier killed runs left
        _sweep_stale_cgroups(base)
    cgroup = base / f"skillgit-{scope_id}"
    try:
        cgroup.mkdir()
    except OSError as exc:
        _cgroup_refused(f"creating {cgroup} failed: {exc.strerror}")
        return None
    return cgroup


def _sweep_stale_cgroups(base: Path, now: float | None = None) -> int:
    """Remove the empty `skillgit-<id>` cgroups under `base` older than STALE_CGROUP_S: what a skillgit killed with
    kill -9 left behind and no record names any more. A live command's cgroup is never empty after its first
    milliseconds, and rmdir refuses a populated cgroup, so a sweep cannot take one from a running command.
    Returns how many were removed."""
    now = time.time() if now is None else now
    removed = 0
    try:
        candidates = [c for c in base.iterdir() if c.name.startswith("skillgit-") and _ID.fullmatch(c.name[9:])]
    except OSError:
        return 0
    for cgroup in candidates:
        try:
            if now - cgroup.stat().st_mtime < STALE_CGROUP_S or (cgroup / "cgroup.procs").read_text().strip():
                continue
            cgroup.rmdir()
            removed += 1
        except OSError:  # gone meanwhile, populated meanwhile, or not ours to remove
            continue
    return removed


def _checked_cgroup(path: object, scope_id: str) -> Path | None:
    """A recorded cgroup path, when it is what `_make_cgroup` made for `scope_id`: a `skillgit-<id>` folder with a
    `cgroup.procs`, under a cgroup v2 mount (a record in a temporary folder is not trusted further)."""
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    cgroup = Path(os.path.normpath(path))
    if cgroup.name != f"skillgit-{scope_id}" or not (cgroup / "cgroup.procs").is_file():
        return None
    return cgroup if any(cgroup.is_relative_to(mount) for _, mount in _cgroup_mounts()) else None


def _cgroup_pids(cgroup: Path) -> set[int]:
    try:
        return {int(p) for p in (cgroup / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def _in_cgroup(pid: int, cgroup: Path) -> bool:
    try:
        own = next(line[3:] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::"))
    except (OSError, StopIteration):
        return False
    return own.rstrip("/").endswith("/" + cgroup.name)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:
        pass
