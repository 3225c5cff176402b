"""Write confinement for rollouts: a command may write only inside its rollout's own folders (Linux Landlock).

Why: an agent (or a prompt-injected one, or a mined or teammate task's setup command) runs as the user. Without
confinement it can write anywhere the user can: the user's repository (`.git/hooks/*`, the approved sleep commands
in `.git/skillgit/sleep/`, the skill branch), `~/.bashrc`, `~/.ssh/`, other projects.

Contract:
- `grants(...) -> Grants` is pure: which paths a confined command may write. Reading and executing stay allowed
  everywhere; write, create, remove, rename, link and truncate are allowed only beneath `Grants.dirs`; writing
  and truncating (never creating, removing or renaming) only the files `Grants.files` and the existing files
  beneath `Grants.file_dirs`. `rollout_grants(folders, files, extra)` adds what every command needs besides its
  rollout's folders: `DEVICE_FILES` (`/dev/null`, `/dev/tty`, …), `/dev/shm` (POSIX semaphores and shared memory:
  Python's multiprocessing), and the existing files of `/dev/pts` (pseudo-terminals). Not `/proc`: a command run
  as root could otherwise write `/proc/sys` (e.g. `kernel/core_pattern`, a handler run outside the domain); the
  one CLI that wanted it (Codex's bubblewrap, for `/proc/<pid>/uid_map`) cannot run inside Landlock anyway
  (`leave_to`). `/tmp` is not among them: each rollout gets a TMPDIR of its own (`tmp_env`), which the callers
  put in its folder; a program that writes to a hard-coded `/tmp` path is refused.
- `resolve(mode, key) -> Confinement` decides once per student: `off` never confines; `landlock` confines or
  raises `ConfigError` naming `key` when the kernel offers no Landlock; `auto` (the default) confines when the
  kernel offers it, else says once per process on stderr that rollouts are not confined (and `Confinement.state`
  is "unavailable", which the agent's fingerprint records). `abi()` is the kernel's Landlock ABI version (0: none).
- `Confinement.wrap(argv, grants, env)` is `argv` (a list, or a shell command line for `shell=True`) made to run
  confined: `python -I -S <this file> --write DIR … --write-file FILE … -- argv…`. That wrapper sets
  `no_new_privs`, restricts itself with a Landlock ruleset that handles every write right the kernel knows (a
  path missing at start is skipped, never widened to its parent) and `execvp`s the command, so the pid, process
  group, session and environment `process.run` gave it are the command's own (its nets and records are intact).
  A ruleset that cannot be applied ends the wrapper with status 126 and a message on stderr: never an
  unconfined run. A program that cannot be found raises `FileNotFoundError` before anything starts (the contract
  of `process.run`). The restriction is inherited by everything the command starts and cannot be lifted.
- `leave_to(confinement, own_sandbox)`: an agent whose own sandbox confines its tools and cannot start inside
  Landlock (`Profile.own_sandbox`: Codex's bubblewrap needs mounts, which a Landlock domain may not make) runs
  without this wrapper; its task's setup and verify commands are still confined.
- From ABI 6 (Linux 6.12) the ruleset is also scoped (`SCOPES`): a confined command can neither signal a process
  outside its domain (the user's editor, skillgit itself: `kill`, `SIGSTOP`) nor connect to an abstract Unix
  socket made outside it (an X11 display, a D-Bus bus); skillgit still signals into the domain (its nets).
- What Landlock does not cover (this kernel's ABI decides): connecting to a Unix socket file that already exists
  (a D-Bus or systemd user session, an ssh-agent, a Docker daemon: a service that does the writing for the command
  is not confined by this), below ABI 6 signals to the user's other processes, below ABI 3 (Linux 6.2)
  `truncate(2)` by path. The network is not confined.

This module imports only the standard library at its top: the wrapper runs it as a script (`-I -S`: no site, no
skillgit import) in front of every confined command.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

MODES = ("auto", "landlock", "off")
STATES = ("landlock", "off", "unavailable")  # what a Confinement is: confined, switched off, or not offered
WRAPPER_FAILED = 126  # the wrapper's exit status when the ruleset could not be applied

# files every command may write (opened for writing by shells, node, git …); folders beneath which it may write
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx")
DEVICE_DIRS = ("/dev/shm",)
SYSTEM_FILE_DIRS = ("/dev/pts",)  # existing files only
TMP_VARS = ("TMPDIR", "TMP", "TEMP")

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on every architecture since 5.13
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << bit for bit in range(6, 13))  # MAKE_CHAR, _DIR, _REG, _SOCK, _FIFO, _BLOCK, _SYM
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2 (moves and links between folders), ABI 3 (truncate)
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE  # the write rights a rule on a file (not a folder) may carry
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6: what may not cross the domain's border
SCOPES = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL


@dataclass(frozen=True)
class Grants:
    """What a confined command may write (absolute paths): everything beneath `dirs`; the files `files` and the
    existing files beneath `file_dirs` (written or truncated, never created, removed or renamed)."""

    dirs: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    file_dirs: tuple[str, ...] = ()

    def args(self) -> list[str]:
        return [*(a for d in self.dirs for a in ("--write", d)), *(a for f in self.files for a in ("--write-file", f)),
                *(a for d in self.file_dirs for a in ("--write-files-in", d))]


def grants(dirs: Sequence[Path | str], files: Sequence[Path | str] = (),
           file_dirs: Sequence[Path | str] = ()) -> Grants:
    """The grants of exactly these paths (absolute, normalised, without repeats)."""
    def norm(paths: Sequence[Path | str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(os.path.normpath(os.path.abspath(str(p))) for p in paths if str(p)))
    return Grants(norm(dirs), norm(files), norm(file_dirs))


def rollout_grants(folders: Sequence[Path | str], files: Sequence[Path | str] = (),
                   extra: Sequence[Path | str] = ()) -> Grants:
    """A rollout command's grants: its own `folders` and `files`, `extra` folders (a shared agent cache, the
    agent's own state folders under profile user) and what every command needs (`DEVICE_FILES`, `DEVICE_DIRS`)."""
    return grants([*folders, *extra, *DEVICE_DIRS], [*files, *DEVICE_FILES], SYSTEM_FILE_DIRS)


def tmp_env(env: Mapping[str, str], tmp: Path) -> dict[str, str]:
    """`env` with TMPDIR, TMP and TEMP pointing at `tmp` (made, mode 0700): the rollout's own temporary folder."""
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {**env, **{var: str(tmp) for var in TMP_VARS}}


# ---------------------------------------------------------------------------------------------- the decision
@functools.lru_cache(maxsize=1)
def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it offers none (not Linux, an old kernel, Landlock disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        version = libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


_noticed: set[str] = set()


@dataclass(frozen=True)
class Confinement:
    """How a student's rollouts run: `mode` as configured, `abi` the Landlock ABI used (0: not confined), `why`
    they are not confined ("" when they are)."""

    mode: str = "off"
    abi: int = 0
    why: str = "model.student.command.confine is off"

    @property
    def active(self) -> bool:
        return self.abi > 0

    @property
    def state(self) -> str:
        """"landlock" (confined), "off" (switched off) or "unavailable" (auto, and the kernel offers none)."""
        return "landlock" if self.active else "off" if self.mode == "off" else "unavailable"

    def wrap(self, argv: Sequence[str] | str, grants: Grants, env: Mapping[str, str]) -> list[str] | str:
        """`argv` (a list, or a shell command line) made to run under `grants` (module docstring); unchanged when
        not confined. FileNotFoundError when a list's program is not found on `env`'s PATH."""
        if not self.active:
            return argv if isinstance(argv, str) else list(argv)
        head = [sys.executable, "-I", "-S", os.path.abspath(__file__), *grants.args(), "--"]
        if isinstance(argv, str):
            return "exec " + shlex.join([*head, "/bin/sh", "-c", argv])
        argv = list(argv)
        if not argv:
            raise ValueError("nothing to run")
        found = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH", os.defpath))
        if not found or not os.path.exists(found):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
        return [*head, *argv]


def leave_to(confinement: Confinement, own_sandbox: str) -> Confinement:
    """`confinement` for an agent process, or none when the agent's own sandbox (`own_sandbox`, e.g. Codex's
    bubblewrap, which needs mounts that Landlock denies) confines its tools instead."""
    if not own_sandbox or not confinement.active:
        return confinement
    return Confinement(confinement.mode, 0, f"left to {own_sandbox}")


def resolve(mode: str, key: str = "model.student.command.confine") -> Confinement:
    """The confinement of `mode` on this kernel (module docstring); ConfigError for an unknown mode or `landlock`
    without Landlock, naming `key`."""
    from skillgit.errors import ConfigError

    if mode not in MODES:
        raise ConfigError(f"{key}: unknown value {mode!r}", f"use one of: {', '.join(MODES)}")
    if mode == "off":
        return Confinement("off", 0, f"{key} is off")
    version = abi()
    if version > 0:
        return Confinement(mode, version, "")
    why = "this kernel offers no Landlock (Linux ≥ 5.13 with landlock among its security modules)"
    if mode == "landlock":
        raise ConfigError(f"{key} is landlock, but {why}: rollouts would run unconfined",
                          f"run on a kernel with Landlock, or set {key}: auto to run unconfined with a notice")
    if why not in _noticed:
        _noticed.add(why)
        print(f"skillgit: rollouts are not confined ({key}: auto): {why}; an agent can write wherever you can",
              file=sys.stderr)
    return Confinement(mode, 0, why)


# ---------------------------------------------------------------------------------------------- the wrapper
class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def handled(version: int) -> int:
    """The write rights a ruleset of ABI `version` handles (denied unless a rule grants them)."""
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if version >= 2:
        rights |= _REFER
    if version >= 3:
        rights |= _TRUNCATE
    return rights


def restrict(grants: Grants) -> None:
    """Restrict this process (and what it starts) to writing under `grants`; OSError when the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int

    def check(result: int, what: str) -> int:
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"{what}: {os.strerror(code)}")
        return result

    version = abi()
    if version <= 0:
        raise OSError(errno.ENOSYS, "this kernel offers no Landlock")
    rights = handled(version)
    # struct landlock_ruleset_attr: handled_access_fs, handled_access_net (none: the network is not confined) and,
    # from ABI 6, scoped; an older kernel takes the first field alone
    attr = (ctypes.c_uint64 * 3)(rights, 0, SCOPES if version >= 6 else 0)
    size = ctypes.sizeof(attr) if version >= 6 else 8
    ruleset = check(libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                                 ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for path, allowed in [*((d, rights) for d in grants.dirs),
                              *((f, rights & _FILE_RIGHTS) for f in (*grants.files, *grants.file_dirs))]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # (a device this system lacks, a folder not made): never widened to its parent
            try:
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    allowed &= _FILE_RIGHTS
                rule = _PathBeneath(allowed, fd)
                check(libc.syscall(ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(ruleset),
                                   ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)),
                      f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        check(libc.syscall(ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
              "landlock_restrict_self")
    finally:
        os.close(ruleset)


def parse_args(args: Sequence[str]) -> tuple[Grants, list[str]]:
    """(grants, argv) of `--write DIR … --write-file FILE … --write-files-in DIR … -- argv…`; ValueError when
    malformed."""
    found: dict[str, list[str]] = {"--write": [], "--write-file": [], "--write-files-in": []}
    rest = list(args)
    while rest and rest[0] != "--":
        flag = rest.pop(0)
        if flag not in found or not rest:
            raise ValueError(f"unexpected argument {flag!r}")
        found[flag].append(rest.pop(0))
    if len(rest) < 2:
        raise ValueError("usage: sandbox.py [--write DIR]… [--write-file FILE]… [--write-files-in DIR]… -- PROGRAM "
                         "[ARG]…")
    return grants(found["--write"], found["--write-file"], found["--write-files-in"]), rest[1:]


def main(args: Sequence[str]) -> int:
    """The wrapper (module docstring): restrict, then exec; returns only on failure."""
    try:
        rules, argv = parse_args(args)
    except ValueError as exc:
        print(f"skillgit sandbox: {exc}", file=sys.stderr)
        return 2
    try:
        restrict(rules)
    except OSError as exc:
        print(f"skillgit sandbox: could not confine {argv[0]!r}, so it was not run: {exc.strerror or exc}",
              file=sys.stderr)
        return WRAPPER_FAILED
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"skillgit sandbox: cannot run {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 127  # (not reached)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
