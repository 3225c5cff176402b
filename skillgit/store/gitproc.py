"""The running of git under `GitRepo` (store/git.py): errors, records, the argv operand guard, the crash-test fault
seam, the long-lived processes and `GitBase`, which runs one git command. One of the store's git modules (git.py,
gitproc.py, gitobjects.py, gitnotes.py, gitwork.py): the only modules that import GitPython or run git.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, NamedTuple, Sequence, TypeVar

from skillgit.errors import GitStateError
from skillgit.gitenv import LOCAL_ENV_VARS
from skillgit.recent import Recent
from skillgit.store.gitimport import GitCommandNotFound, gitpython

# who commits to skillgit's own refs when git knows no identity for the user (see `commit_tree(own=True)`)
SKILLGIT_IDENTITY = {"GIT_AUTHOR_NAME": "skillgit", "GIT_AUTHOR_EMAIL": "skillgit@localhost",
                     "GIT_COMMITTER_NAME": "skillgit", "GIT_COMMITTER_EMAIL": "skillgit@localhost"}
IDENTITY_HINT = 'tell git who you are: git config user.name "Your Name" && git config user.email you@example.com'


class GitError(GitStateError):
    """A git command failed; `stderr` keeps git's full complaint for callers that diagnose it."""

    def __init__(self, message: str, hint: str = "", stderr: str = "", status: int = 1):
        super().__init__(message, hint)
        self.stderr = stderr
        self.status = status


class RefConflict(GitError):
    """A ref transaction's compare-and-swap failed; no ref was changed."""


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    type: str
    sha: str
    name: str


@dataclass(frozen=True)
class RefUpdate:
    """One line of an update-ref transaction. `old=None` means "must not exist" (for update/verify)."""

    op: str  # update | delete | verify
    ref: str
    new: str | None = None
    old: str | None = None


class Location(NamedTuple):
    """Where `GitBase.locate` found a repository: its working tree's top folder, git dir, common dir (shared by
    its worktrees) and object format, as git printed them; `bare` is always False there (a bare repository has no
    working tree to find). `GitBase.open` takes one instead of a folder. (A NamedTuple: every `log` and `status`
    builds this class, and a frozen dataclass costs ~4 M instructions to build, more than the git process saved.)"""

    root: Path
    git_dir: Path
    common_dir: Path
    object_format: str
    bare: bool


@dataclass(frozen=True)
class Worktree:
    path: Path
    head: str | None
    branch: str | None  # full ref name, None when detached or bare
    bare: bool = False


def _stdin(data: bytes | None):
    # GitPython hands `istream` to Popen as stdin, which needs a real file descriptor (not BytesIO).
    if data is None:
        return None
    f = tempfile.TemporaryFile()
    f.write(data)
    f.seek(0)
    return f


def _subcommand(args: Sequence[str]) -> str:
    """The git subcommand in `args` (skipping global options such as `-c k=v` and `-C path`)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "git"


# ---------------------------------------------------------------------------------------------- operands
# Every revision, ref, remote or path that reaches an argv here may come from outside (the command line, the
# config, a collaborator's note, an agent transcript). Each goes behind `--` (remotes, paths) or
# `--end-of-options` (revisions, for the commands that take it) and, where git offers neither (rev-parse,
# commit-tree, checkout's revision), through `_operand`, which refuses what git could read as an option.
# tests/test_security_argv.py lists every call site.
EOO = "--end-of-options"
NO_EXT = ("-c", "protocol.ext.allow=never")  # remotes never run commands through git's ext:: transport


def _operand(value: str, what: str = "revision") -> str:
    """`value` unchanged when git cannot read it as an option or split it: not empty, no leading `-`, no NUL or
    line break. Otherwise GitError (nothing is run)."""
    if not isinstance(value, str) or not value or value.startswith("-") or any(c in value for c in "\0\n\r"):
        raise GitError(f"refusing to pass {what} {value!r} to git: it is empty, holds a line break or would be read "
                       "as an option", "name it without a leading '-' or control characters; nothing was run")
    return value


# ---------------------------------------------------------------------------------------------- fault seam
# For the crash tests (tests/test_crash.py): `SKILLGIT_FAULT_KILL_AT_GIT=<phase>:<n>` makes this process kill itself
# with SIGKILL just before the n-th git command it runs inside `phase(<phase>)` (1-based), so a test can stop a run
# at every git command of, say, an accept. Unset in normal use: then `phase` costs one attribute read.
_FAULT = os.environ.get("SKILLGIT_FAULT_KILL_AT_GIT", "")
_phase = threading.local()


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark the git commands run by this thread inside the block as belonging to `name` (for the fault seam)."""
    previous = getattr(_phase, "name", None)
    _phase.name, _phase.count = name, 0
    try:
        yield
    finally:
        _phase.name = previous


def _fault_point(args: Sequence[str]) -> None:
    if not _FAULT or getattr(_phase, "name", None) is None:
        return
    want, _, number = _FAULT.partition(":")
    if _phase.name == want:
        _phase.count += 1
        if str(_phase.count) == number:
            os.kill(os.getpid(), signal.SIGKILL)


# ---------------------------------------------------------------------------------------------- environment
# No git command of skillgit's inherits the repository variables of a hook or alias (skillgit/gitenv.py); a command
# that needs one sets it itself (`env=`: pinned workspaces, the snapshot index). GitPython's `Git.execute` always
# starts from the whole environment (an `env=` argument only adds to it), hence `env -u` in front of git when one of
# them is set (in normal use none is, and git runs directly).
def git_argv(args: Sequence[str], env: dict[str, str] | None = None) -> list[str]:
    """The argv that runs `git ARGS` without the repository variables this process inherited (those `env` does not
    set again)."""
    inherited = [name for name in LOCAL_ENV_VARS if name in os.environ and not (env and name in env)]
    if not inherited:
        return ["git", *args]
    return ["env", *(part for name in inherited for part in ("-u", name)), "--", "git", *args]


_TYPES = (b"blob", b"tree", b"commit", b"tag")


class _Persistent:
    """One long-lived git process of a repository, spoken to over its stdin/stdout, one request at a time.

    Invariants: requests are serialised by a lock (one request/answer pair at a time on the pipe, so threads never
    read each other's answers); a process found dead is replaced before the next request; nobody reads its stderr
    while it runs, so it must be a command that writes nothing there unless it dies."""

    def __init__(self, git: gitpython.Git, args: Sequence[str]) -> None:
        self._git = git
        self.args = list(args)
        self._handle: object | None = None  # GitPython's AutoInterrupt: it kills the process when collected
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> str:
        """Stop the process; its stderr (what it said before dying)."""
        proc, self._proc, self._handle = self._proc, None, None
        err = b""
        if proc is not None:
            try:
                proc.kill()
                proc.wait(timeout=5)
                err = proc.stderr.read() if proc.stderr is not None else b""
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        return err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """(stdin, stdout) of the running process, started (again) when there is none or it died."""
        if self._proc is None or self._proc.poll() is not None:
            self._drop()
            try:
                handle = self._git.execute(git_argv(self.args), istream=subprocess.PIPE, as_process=True)
            except GitCommandNotFound:
                raise GitStateError("git is not installed or not on PATH", "install git 2.39 or newer") from None
            self._handle, self._proc = handle, handle.proc
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin, self._proc.stdout


class _LineServer(_Persistent):
    """A git command that answers each request with one line (`mktree --batch -z`, `hash-object --stdin-paths`)."""

    def ask(self, request: bytes) -> str:
        """Send `request` (with its terminator); git's one-line answer. Both commands are idempotent, so a refusal
        is retried once on a fresh process: a long-lived one may not see objects another process repacked since
        it started (mktree checks objects without re-scanning packs). GitError with git's message when the fresh
        process refuses too."""
        _fault_point(self.args)
        with self._lock:
            err = ""
            for _ in (1, 2):
                stdin, stdout = self._pipes()
                try:
                    stdin.write(request)
                    stdin.flush()
                    line = stdout.readline()
                except OSError:
                    line = b""
                if line.endswith(b"\n"):
                    return line.decode().strip()
                err = self._drop()
            raise GitBase._error(self.args, 128, err or "fatal: git stopped answering")


class _BatchReader(_Persistent):
    """`git cat-file --batch-command`: object and ref reads without a process each. A process that died or
    answered something unparsable is dropped and the request retried once on a fresh one. git reads loose refs
    from disk on every lookup and re-scans packs on a miss, so answers are as fresh as a new `git` process's."""

    def __init__(self, git: gitpython.Git) -> None:
        # (no ambiguity warnings: nobody reads this process's stderr, so it must never fill up)
        super().__init__(git, ["-c", "core.warnAmbiguousRefs=false", "cat-file", "--batch-command"])

    def request(self, verb: str, name: str) -> tuple[str, str, bytes] | None:
        """`info`/`contents` of object `name`: (id, type, content — empty for info), None when it is missing."""
        if "\n" in name or not name:
            return None
        _fault_point(["cat-file", verb, name])
        with self._lock:
            for attempt in (1, 2):
                stdin, stdout = self._pipes()
                try:
                    stdin.write(f"{verb} {name}\n".encode("utf-8", "surrogateescape"))
                    stdin.flush()
                    header = stdout.readline()
                    parts = header.split()
                    if len(parts) == 3 and parts[1] in _TYPES and parts[2].isdigit():
                        data = b""
                        if verb == "contents":
                            size = int(parts[2])
                            data = stdout.read(size + 1)
                            if len(data) != size + 1:
                                raise EOFError("short read")
                            data = data[:size]
                        return parts[0].decode(), parts[1].decode(), data
                    if header.endswith((b" missing\n", b" ambiguous\n")):
                        return None
                    raise EOFError(f"unexpected answer {header[:80]!r}")
                except (OSError, EOFError, ValueError) as exc:
                    self._drop()
                    if attempt == 2:
                        raise GitError(f"git cat-file failed: {exc}", "see the message above; nothing was changed "
                                       "by skillgit") from None
        return None  # pragma: no cover - the loop returns or raises


WRITTEN_MEMO = 256  # blob ids `write_blob` remembers writing (the ones a run writes again each step are few)


def _is_hex(name: str) -> bool:
    return all(c in "0123456789abcdef" for c in name)


def _stripspace(text: bytes) -> bytes:
    """git's `stripspace` as `git notes -F` applies it: trailing whitespace off every line, runs of blank lines
    collapsed to one, none at the start or end, every line ending in a newline."""
    lines: list[bytes] = []
    blank = False
    for line in text.split(b"\n"):
        line = line.rstrip(b" \t\r\v\f")
        if not line:
            blank = bool(lines)
            continue
        if blank:
            lines.append(b"")
            blank = False
        lines.append(line)
    return b"".join(line + b"\n" for line in lines)


def _parse_tree(data: bytes, hash_bytes: int) -> list[TreeEntry]:
    """The entries of a raw tree object, as `git ls-tree` prints them (mode zero-padded to 6 digits)."""
    entries, pos = [], 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode = data[pos:space].decode().zfill(6)
        name = data[space + 1:nul].decode("utf-8", "replace")
        pos = nul + 1 + hash_bytes
        kind = "tree" if mode == "040000" else "commit" if mode == "160000" else "blob"
        entries.append(TreeEntry(mode, kind, data[nul + 1:pos].hex(), name))
    return entries


_G = TypeVar("_G", bound="GitBase")


class GitBase:
    """A repository opened at `root` (its working tree; the git dir for a bare repository): how git is run.
    `GitRepo` (store/git.py) adds the plumbing; the mixins beside it add objects, notes and worktrees."""
    """A repository opened at `root` (its working tree; the git dir for a bare repository)."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path, object_format: str, bare: bool):
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir  # shared by all worktrees: locks and hooks live here
        self.object_format = object_format
        self.bare = bare
        self.zero = "0" * (64 if object_format == "sha256" else 40)
        self._git = gitpython.Git(str(root))
        # blobs this process wrote lately: writing one again would change nothing (bounded: a long run writes new
        # blobs every step, and rewriting a forgotten one is harmless)
        self._written = Recent(WRITTEN_MEMO)
        # Long-lived processes (started on first use): object/ref reads, trees and blobs written without a process
        # each. Every request still passes the fault seam like a git command.
        self._reader = _BatchReader(self._git)
        self._mktree = _LineServer(self._git, ["mktree", "--batch", "-z"])
        self._hasher = _LineServer(self._git, ["hash-object", "-w", "--no-filters", "--stdin-paths"])
        self._hash_bytes = 32 if object_format == "sha256" else 20

    def close(self) -> None:
        """Stop this repository's long-lived processes (they are also stopped when the object is collected)."""
        for server in (self._reader, self._mktree, self._hasher):
            server.close()

    def _object(self, name: str) -> tuple[str, str, bytes] | None:
        """(id, type, content) of object `name` (any revision syntax), None when it does not exist."""
        return self._reader.request("contents", name)

    def _tree(self, treeish: str) -> list[TreeEntry] | None:
        found = self._object(f"{treeish}^{{tree}}")
        return _parse_tree(found[2], self._hash_bytes) if found else None

    # ------------------------------------------------------------------------------------------ running git
    # what git tells of the repository at a folder, in one `rev-parse` (`--show-toplevel` last: it fails outside a
    # working tree, and then the four before it are asked again without it)
    _WHERE = ("rev-parse", "--path-format=absolute", "--git-common-dir", "--absolute-git-dir", "--is-bare-repository",
              "--show-object-format")

    @classmethod
    def locate(cls, path: Path) -> tuple[Location | None, str]:
        """(the working tree git finds at folder `path` and its repository — one git process —, or None when git
        finds none there: no repository, a bare one, inside a git dir; git's stderr). The folder alone decides
        (no GIT_DIR and friends: skillgit/gitenv.py)."""
        status, out, err = cls._exec(gitpython.Git(str(path)), [*cls._WHERE, "--show-toplevel"])
        lines = out.decode("utf-8", "surrogateescape").splitlines() if status == 0 else []
        if len(lines) == 5 and lines[2] == "false" and lines[4].strip():
            return Location(Path(lines[4].strip()), Path(lines[1]), Path(lines[0]), lines[3].strip() or "sha1",
                            False), err
        return None, err

    @classmethod
    def open(cls: type[_G], path: Path | str | Location) -> _G:
        """Open the repository containing `path`, or the one a `Location` from `locate` names (then no git runs:
        it was found a moment ago in this process); GitStateError when there is none."""
        if isinstance(path, Location):
            return cls(path.root, path.git_dir, path.common_dir, path.object_format, path.bare)
        path = Path(path).expanduser()
        if not path.is_dir():
            raise GitStateError(f"no such folder: {path}", "pass --repo PATH to an existing repository")
        found, _ = cls.locate(path)  # in a working tree: one git process
        if found is not None:
            return cls.open(found)
        probe = gitpython.Git(str(path))
        status, out, _ = cls._exec(probe, cls._WHERE)  # a bare repository or a git dir: git refuses --show-toplevel
        if status != 0:
            raise GitStateError(f"not a git repository: {path.resolve()}",
                                "run `skillgit init` there, or pass --repo PATH to a repository")
        common, gdir, bare, fmt = out.decode().splitlines()[:4]
        root = Path(gdir)
        if bare != "true":
            status, top, _ = cls._exec(probe, ["rev-parse", "--show-toplevel"])
            if status != 0 or not top.strip():
                raise GitStateError(f"{path.resolve()} is inside a git dir, not a working tree",
                                    "pass --repo PATH to the repository's top folder")
            root = Path(top.decode().strip())
        return cls(root, Path(gdir), Path(common), fmt.strip() or "sha1", bare == "true")

    @classmethod
    def init(cls: type[_G], path: Path, branch: str) -> _G:
        """Create a repository at `path` whose unborn HEAD is `branch`."""
        path.mkdir(parents=True, exist_ok=True)
        status, _, err = cls._exec(gitpython.Git(str(path)), ["init", "-q", "-b", branch])
        if status != 0:
            raise cls._error(["init"], status, err)
        return cls.open(path)

    @staticmethod
    def _exec(g, args: Sequence[str], stdin: bytes | None = None, env: dict[str, str] | None = None
              ) -> tuple[int, bytes, str]:
        """Run `git ARGS` with `stdin` (or none); (status, stdout, stderr without its final newline). GitPython
        runs git with LANGUAGE=C/LC_ALL=C, so errors can be recognised by their text whatever the locale."""
        _fault_point(args)
        f = _stdin(stdin)
        try:
            status, out, err = g.execute(git_argv(args, env), istream=f, env=env, with_extended_output=True,
                                         with_exceptions=False, stdout_as_string=False,
                                         strip_newline_in_stdout=False)
        except GitCommandNotFound:
            raise GitStateError("git is not installed or not on PATH", "install git 2.39 or newer") from None
        finally:
            if f is not None:
                f.close()
        if status == 127 and out == b"" and b"env: " in (err if isinstance(err, bytes) else str(err).encode()):
            raise GitStateError("git is not installed or not on PATH", "install git 2.39 or newer")  # (`git_argv`)
        return status, out or b"", err if isinstance(err, str) else (err or b"").decode("utf-8", "replace")

    def _call(self, *args: str, input: bytes | str | None = None, env: dict[str, str] | None = None
             ) -> tuple[int, bytes, str]:
        """Run git; return (status, stdout bytes, stderr) without raising on a non-zero status."""
        data = input.encode("utf-8") if isinstance(input, str) else input
        return self._exec(self._git, args, data, env)

    def _run_bytes(self, *args: str, input: bytes | str | None = None, env: dict[str, str] | None = None) -> bytes:
        status, out, err = self._call(*args, input=input, env=env)
        if status != 0:
            raise self._error(args, status, err)
        return out

    def _run(self, *args: str, input: bytes | str | None = None, env: dict[str, str] | None = None) -> str:
        """Run git and return its stdout as text without the final newline; GitError on failure."""
        return self._run_bytes(*args, input=input, env=env).decode("utf-8", "replace").rstrip("\n")

    @staticmethod
    def _error(args: Sequence[str], status: int, stderr: str) -> GitError:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        main = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[0] if lines else "")
        for prefix in ("fatal: ", "error: "):
            main = main.removeprefix(prefix)
        cmd = _subcommand(args)
        hint = "see the message above; nothing was changed by skillgit"
        if "tell me who you are" in stderr or "auto-detect email" in stderr or "empty ident" in stderr:
            hint = IDENTITY_HINT
        elif "index.lock" in stderr:
            hint = "another git process is running in this repository; wait for it (or remove a stale index.lock)"
        cls = RefConflict if cmd == "update-ref" else GitError
        return cls(f"git {cmd} failed: {main or f'exit status {status}'}", hint, stderr, status)

    # ------------------------------------------------------------------------------------------ reading refs
    def ref(self, name: str) -> str | None:
        """The object a full ref name points to (not peeled), or None when it does not exist."""
        found = self._reader.request("info", name)
        return found[0] if found else None

    def refs(self, names: Sequence[str]) -> dict[str, str | None]:
        """Several full ref names at once (one `for-each-ref`): name → object (not peeled), None when missing."""
        return {name: self.ref(name) for name in names}

    def commit_of(self, rev: str) -> str | None:
        """The commit `rev` names (any git revision, peeled), or None."""
        if not rev or rev.startswith("-"):
            return None
        found = self._reader.request("info", f"{rev}^{{commit}}")
        return found[0] if found else None
