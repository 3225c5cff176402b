"""All of skillgit's git access: the only module that imports GitPython.

`GitRepo` runs git commands through GitPython's `Git.execute` and offers the plumbing the store needs:
objects (blobs, trees, commits, tags) built without touching any index or working tree, compare-and-swap ref
transactions (`git update-ref --stdin`), notes commits whose trees are computed here (byte for byte what
`git notes append` writes, fanned out like git's), and the few porcelain calls that keep a checked-out worktree
consistent. Every failure of git becomes a `GitError` (a `GitStateError`) with git's own first error line and a
hint; nothing here prints.

Cost: a step's reads (refs, blobs, trees, commits) go through one long-lived `git cat-file --batch-command` per
repository, and its trees and blobs are written through long-lived `git mktree --batch` and
`git hash-object --stdin-paths` processes, so they cost a pipe round trip, not a process. Each such request still
passes the crash-test fault seam (`phase`) like a git command.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

import git as gitpython
from git.exc import GitCommandNotFound

from skillgit.errors import GitStateError
from skillgit.recent import Recent
from skillgit.store import refs as R

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
                handle = self._git.execute(["git", *self.args], istream=subprocess.PIPE, as_process=True)
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
            raise GitRepo._error(self.args, 128, err or "fatal: git stopped answering")


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


BATCH_VIA_READER = 32  # cat_batch reads up to this many objects through the long-lived reader, more in bulk
WRITTEN_MEMO = 256  # blob ids `write_blob` remembers writing (the ones a run writes again each step are few)
NOTES_FANOUT = 256  # notes on one level of a notes tree before it is split into 2-hex-digit folders


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


class GitRepo:
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
    @classmethod
    def open(cls, path: Path | str) -> "GitRepo":
        """Open the repository containing `path`; GitStateError when there is none."""
        path = Path(path).expanduser()
        if not path.is_dir():
            raise GitStateError(f"no such folder: {path}", "pass --repo PATH to an existing repository")
        probe = gitpython.Git(str(path))
        status, out, _ = cls._exec(probe, ["rev-parse", "--path-format=absolute", "--git-common-dir",
                                           "--absolute-git-dir", "--is-bare-repository", "--show-object-format"])
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
    def toplevel(cls, path: Path, env: dict[str, str] | None = None) -> tuple[str | None, str]:
        """(the working tree's top folder git finds at `path`, or None; git's stderr). `env` replaces the
        environment (callers drop GIT_DIR and friends so that the folder alone decides)."""
        status, out, err = cls._exec(gitpython.Git(str(path)), ["rev-parse", "--show-toplevel"], env=env)
        top = out.decode("utf-8", "replace").strip()
        return (top if status == 0 and top else None), err

    @classmethod
    def init(cls, path: Path, branch: str) -> "GitRepo":
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
            status, out, err = g.execute(["git", *args], istream=f, env=env, with_extended_output=True,
                                         with_exceptions=False, stdout_as_string=False,
                                         strip_newline_in_stdout=False)
        except GitCommandNotFound:
            raise GitStateError("git is not installed or not on PATH", "install git 2.39 or newer") from None
        finally:
            if f is not None:
                f.close()
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

    # ------------------------------------------------------------------------------------------ objects
    def blob_id(self, data: bytes) -> str:
        """The id git would give `data` as a blob, computed without writing anything."""
        return R.blob_id(data, self.object_format)

    def write_blob(self, data: bytes) -> str:
        # A run saves the same config and meta skill with every step: skip the subprocess for a blob this
        # process already wrote (its id is computed here; mktree/commit-tree would refuse a missing object).
        known = self.blob_id(data)
        if known in self._written:
            return known
        return self.write_blobs([data])[0]

    def write_blobs(self, datas: Sequence[bytes]) -> list[str]:
        """Write blobs through the long-lived `git hash-object -w --no-filters --stdin-paths` (each via a file in a
        scratch folder; --no-filters: the bytes are already what the blob must hold, no eol/clean conversion)."""
        if not datas:
            return []
        shas = []
        # plain strings, not Path objects: pathlib interns every part of a path it parses (Python < 3.12), and each
        # call's scratch folder has a new name
        with tempfile.TemporaryDirectory(prefix="skillgit-blobs-") as tmp:
            for i, data in enumerate(datas):
                path = os.path.join(tmp, str(i))
                with open(path, "wb") as f:
                    f.write(data)
                if "\n" in path:  # (a path the line protocol cannot carry)
                    shas.append(self._run("hash-object", "-w", "--no-filters", "--stdin", input=data))
                else:
                    shas.append(self._hasher.ask(f"{path}\n".encode()))
        self._written.update(shas)
        return shas

    def cat(self, rev: str) -> bytes:
        found = self._object(rev)
        if found is not None and found[1] != "tree":  # `cat-file -p` pretty-prints trees only
            return found[2]
        return self._run_bytes("cat-file", "-p", EOO, _operand(rev))

    def cat_batch(self, names: Iterable[str]) -> dict[str, tuple[str, bytes] | None]:
        """Read many objects with one `git cat-file --batch`: name → (type, content), None when missing."""
        names = list(dict.fromkeys(names))
        if not names:
            return {}
        if any("\n" in name for name in names):  # (one name per line: a line break would shift every answer)
            return {**self.cat_batch(n for n in names if "\n" not in n), **{n: None for n in names if "\n" in n}}
        result: dict[str, tuple[str, bytes] | None] = {}
        if len(names) <= BATCH_VIA_READER:  # a few: round trips to the long-lived reader, no process
            for name in names:
                found = self._object(name)
                result[name] = (found[1], found[2]) if found else None
            return result
        # Many (all notes, for `skillgit log`): one bulk `cat-file --batch` of its own, which streams them faster than
        # round trips and runs in parallel with the reads other threads make through the reader meanwhile.
        out = self._run_bytes("cat-file", "--batch", input="".join(f"{n}\n" for n in names))
        pos = 0
        for name in names:
            end = out.index(b"\n", pos)
            header = out[pos:end].decode().split()
            pos = end + 1
            if len(header) != 3:  # "<name> missing" / "ambiguous"
                result[name] = None
                continue
            size = int(header[2])
            result[name] = (header[1], out[pos:pos + size])
            pos += size + 1
        return result

    def ls_tree(self, treeish: str, recursive: bool = False) -> list[TreeEntry]:
        if not recursive:
            entries = self._tree(treeish)
            if entries is not None:
                return entries  # (a missing tree falls through to git, which raises its own error)
        out = self._run_bytes("ls-tree", "-z", *(["-r"] if recursive else []), EOO,
                              _operand(treeish)).decode("utf-8", "replace")
        entries = []
        for record in out.split("\0"):
            if record:
                meta, _, name = record.partition("\t")
                mode, kind, sha = meta.split()
                entries.append(TreeEntry(mode, kind, sha, name))
        return entries

    def mktree(self, entries: Iterable[TreeEntry]) -> str:
        data = "".join(f"{e.mode} {e.type} {e.sha}\t{e.name}\0" for e in entries)
        return self._mktree.ask(data.encode("utf-8", "surrogateescape") + b"\0")  # (an empty record ends a tree)

    def tree_entry(self, treeish: str, path: str) -> TreeEntry | None:
        """The entry at `path` (slash-separated, relative to the tree's root), or None."""
        *folders, leaf = path.split("/")
        entries = self._tree(treeish)
        for folder in folders:
            sub = next((e for e in entries or () if e.name == folder and e.type == "tree"), None)
            entries = self._tree(sub.sha) if sub else None
        found = next((e for e in entries or () if e.name == leaf), None) if leaf else None
        return TreeEntry(found.mode, found.type, found.sha, path) if found else None

    def replace_in_tree(self, tree: str | None, path: str, blob: str, mode: str = "100644") -> str:
        """A tree equal to `tree` (a tree or a commit: its root tree) with `path` set to `blob`, built level by
        level with mktree (no index). Only the trees along `path` are rewritten, so the cost does not grow with
        the repository."""
        head, _, rest = path.partition("/")
        entries = {e.name: e for e in self.ls_tree(tree)} if tree else {}
        if rest:
            sub = entries.get(head)
            new_sub = self.replace_in_tree(sub.sha if sub and sub.type == "tree" else None, rest, blob, mode)
            entries[head] = TreeEntry("040000", "tree", new_sub, head)
        else:
            entries[head] = TreeEntry(mode, "blob", blob, head)
        return self.mktree(entries.values())

    def build_tree(self, files: dict[str, str]) -> str:
        """A tree holding `files` (slash path → blob id, mode 100644): one mktree per folder, nothing read."""
        here: list[TreeEntry] = []
        folders: dict[str, dict[str, str]] = {}
        for path, blob in files.items():
            head, _, rest = path.partition("/")
            if rest:
                folders.setdefault(head, {})[rest] = blob
            else:
                here.append(TreeEntry("100644", "blob", blob, head))
        here += [TreeEntry("040000", "tree", self.build_tree(sub), name) for name, sub in folders.items()]
        return self.mktree(here)

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, *, own: bool = False) -> str:
        """A commit of `tree` on `parents`, by the user's git identity. `own=True` is for skillgit's own refs
        (run and sleep state): when git has no identity for the user, the commit is by `SKILLGIT_IDENTITY`."""
        args = ["commit-tree", _operand(tree, "tree")]  # (commit-tree takes no --end-of-options)
        for parent in parents:
            args += ["-p", _operand(parent)]
        try:
            return self._run(*args, "-F", "-", input=message)
        except GitError as exc:
            if not own or exc.hint != IDENTITY_HINT:
                raise
        return self._run(*args, "-F", "-", input=message, env=dict(SKILLGIT_IDENTITY))

    def make_tag(self, obj: str, name: str, message: str) -> str:
        """An annotated tag object on commit `obj` (no ref is created)."""
        ident = self._run("var", "GIT_COMMITTER_IDENT")
        _operand(obj), _operand(name, "tag name")  # (a line break would add a header line to the tag)
        return self._run("mktag", input=f"object {obj}\ntype commit\ntag {name}\ntagger {ident}\n\n{message}")

    def merge_file(self, ours: str, base: str, theirs: str) -> tuple[str, int]:
        """3-way merge of texts (git merge-file): (merged text, number of conflicts)."""
        with tempfile.TemporaryDirectory(prefix="skillgit-merge-") as tmp:
            paths = []
            for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
                p = Path(tmp) / name
                p.write_bytes(text.encode("utf-8"))
                paths.append(str(p))
            status, out, err = self._call("merge-file", "-p", *paths)
        if status < 0 or status > 127:
            raise self._error(["merge-file"], status, err)
        return out.decode("utf-8"), status

    def blob_at(self, rev: str, path: str) -> bytes | None:
        """The bytes of `path` in `rev` (a commit or tree-ish), or None when it has no such blob."""
        found = self._object(f"{rev}:{path}")
        return found[2] if found and found[1] == "blob" else None

    def diff(self, a: str, b: str, paths: Sequence[str]) -> str:
        """git's unified diff of `paths` (literal) from `a` to `b`, no colour, no external diff driver."""
        return self._run_bytes("--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", EOO, _operand(a),
                               _operand(b), "--", *paths).decode("utf-8", "replace")

    def empty_tree(self) -> str:
        return self.mktree([])

    # ------------------------------------------------------------------------------------------ commits
    def _commit_parts(self, commit: str) -> tuple[list[bytes], bytes] | None:
        """(header lines, raw message) of a commit object, None when missing or re-encoded by `git log`."""
        found = self._object(f"{commit}^{{commit}}")
        if found is None:
            return None
        header, _, message = found[2].partition(b"\n\n")
        lines = header.split(b"\n")
        if any(line.startswith(b"encoding ") for line in lines):
            return None  # git log would re-encode the message: let it
        return lines, message

    def parents(self, commit: str) -> list[str]:
        parts = self._commit_parts(commit)
        if parts is not None:  # (cat-file honours replace refs, as rev-parse does)
            return [line[7:].decode() for line in parts[0] if line.startswith(b"parent ")]
        return self._run("rev-parse", f"{_operand(commit)}^@").split()

    def commit_message(self, commit: str) -> str:
        parts = self._commit_parts(commit)
        if parts is not None:
            return parts[1].decode("utf-8", "replace").rstrip("\n")
        return self._run("log", "-1", "--format=%B", EOO, _operand(commit))

    def commit_summary(self, commit: str) -> tuple[str, str]:
        """(subject, "author name <email>, date") of a commit."""
        out = self._run("log", "-1", "--format=%s%x1f%an <%ae>, %ad", "--date=short", EOO, _operand(commit))
        subject, _, author = out.partition("\x1f")
        return subject, author

    def first_parent_chain(self, tip: str) -> list[tuple[str, int]]:
        """(commit, committer time) along the first-parent chain of `tip`, newest first."""
        return [(sha, int(date)) for sha, date in (line.split() for line in
                self._run("log", "--first-parent", "--format=%H %ct", EOO, _operand(tip)).splitlines())]

    def grep_first_parent(self, tip: str, pattern: str) -> list[tuple[str, str, int, str]]:
        """(commit, parents, committer time, message) of first-parent commits of `tip` whose message matches the
        basic regex `pattern`, newest first."""
        out = self._run("log", "--first-parent", "-z", f"--grep={pattern}", "--format=%H%x1f%P%x1f%ct%x1f%B", EOO,
                        _operand(tip))
        rows = []
        for record in out.split("\0"):
            if record.strip():
                sha, parents, date, message = record.lstrip("\n").split("\x1f", 3)
                rows.append((sha, parents, int(date or 0), message))
        return rows

    def find_by_trailers(self, tip: str, trailers: dict[str, str]) -> str | None:
        """The newest first-parent commit of `tip` carrying every `Key: value` trailer line, or None."""
        esc = lambda text: str(text).replace(".", "\\.").replace("*", "\\*").replace("[", "\\[")  # noqa: E731
        greps = [f"--grep=^{key}: {esc(value)}$" for key, value in trailers.items()]
        out = self._run("log", "--first-parent", "-1", "--all-match", "--format=%H", *greps, EOO, _operand(tip))
        return out.strip() or None

    def messages(self, commits: Sequence[str]) -> dict[str, str]:
        """commit → full message, for many commits with one git call."""
        if not commits:
            return {}
        out = self._run("log", "--no-walk=unsorted", "-z", "--format=%H%x1f%B", "--stdin",
                        input="\n".join(_operand(c) for c in commits))
        pairs = (record.lstrip("\n").split("\x1f", 1) for record in out.split("\0") if "\x1f" in record)
        return {sha: message for sha, message in pairs}

    def subjects(self, commits: Sequence[str]) -> dict[str, str]:
        if not commits:
            return {}
        out = self._run("log", "--no-walk=unsorted", "--format=%H%x1f%s", "--stdin",
                        input="\n".join(_operand(c) for c in commits))
        return dict(line.split("\x1f", 1) for line in out.splitlines() if "\x1f" in line)

    def rev_parse(self, rev: str) -> str:
        return self._run("rev-parse", _operand(rev))  # (git 2.39's rev-parse prints --end-of-options as a rev)

    def current_branch(self) -> str | None:
        """The short name of the branch HEAD points to (also when unborn), None when detached."""
        status, out, _ = self._call("symbolic-ref", "--short", "-q", "HEAD")
        return out.decode().strip() or None if status == 0 else None

    def valid_branch_name(self, branch: str) -> bool:
        """A name `git branch`/`git switch` accept (not only a valid ref: `-x` is a valid ref but an option)."""
        if R.branch_problem(branch) is not None:
            return False
        short = branch.removeprefix("refs/heads/")
        return self._call("check-ref-format", "--branch", short)[0] == 0 and \
            self._call("check-ref-format", R.branch_ref(branch))[0] == 0

    # ------------------------------------------------------------------------------------------ working tree
    def status_paths(self, paths: Sequence[str]) -> list[str]:
        """`git status --porcelain` lines for `paths` (untracked files included)."""
        return self._run("status", "--porcelain", "--untracked-files=all", "--", *paths).splitlines()

    def commit_paths(self, paths: Sequence[str], message: str) -> str:
        """Add and commit exactly `paths` (nothing else that is staged); returns the new HEAD."""
        self._run("add", "--", *paths)
        self._run("commit", "-q", "-m", message, "--only", "--", *paths)
        return self._run("rev-parse", "HEAD")

    def is_ignored(self, path: str) -> bool:
        """True when git ignores `path` (relative to the root) by any .gitignore, info/exclude or global rule."""
        return self._call("check-ignore", "-q", "--no-index", "--", path)[0] == 0

    # ------------------------------------------------------------------------------------------ workspaces
    # Per-rollout worktrees of the project repository: what skillgit did before pooled workspaces (below). Kept for
    # `bench/workspaces.py` (its baseline) and for `Workspaces.sweep`, which still removes such a worktree left
    # by an older skillgit that was killed.
    def worktree_add(self, path: Path, rev: str) -> None:
        """A detached worktree of this repository at `rev` in `path` (the user's branches are not touched)."""
        self._run("worktree", "add", "--detach", "--quiet", EOO, _operand(str(path), "path"), _operand(rev))

    def worktree_remove(self, path: Path) -> None:
        self._call("worktree", "remove", "--force", "--force", EOO, _operand(str(path), "path"))

    def worktree_prune(self) -> None:
        self._call("worktree", "prune")

    def workspace_diff(self, exclude: Sequence[str] = ()) -> str:
        """The unified diff of everything changed in this working tree since HEAD, new files included, without
        `exclude`d paths (the installed skill). Stages the changes: only for throwaway workspaces."""
        specs = [".", *(f":(exclude){p}" for p in exclude)]
        self._run("add", "-A", "--", *specs)
        return self._run_bytes("diff", "--cached", "--no-color", "--no-ext-diff", "HEAD", "--",
                               *specs).decode("utf-8", "replace")

    # ------------------------------------------------------------------------------------------ pooled workspaces
    # For agentic/workspace.py (issue 22: a rollout costs what changed, not what exists). A pooled workspace is a
    # repository of its own whose objects come from its source (the project repository, or a store of fixture
    # snapshots) through `objects/info/alternates`: its refs, stash, tags, config, hooks and reflogs are its own,
    # so nothing a rollout does there reaches the user's repository. Its metadata as first made is kept aside in a
    # `pristine` folder (outside the workspace) and put back before every rollout (`reset_workspace`), with the
    # index the previous reset left: `checkout --force` then rewrites only the files whose content or stat data
    # differ from that index (what the last rollout touched, and what differs between the two commits), and
    # `clean -ffdx` removes every file git does not track, ignored ones included.
    # skillgit's own commands there run with the git dir pinned (GIT_DIR, GIT_WORK_TREE: never a repository above
    # the workspace), no hooks, no fsmonitor, and pristine metadata (never a config the agent wrote: filters or
    # hooks it set never run in skillgit).
    _QUIET_GIT = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "advice.detachedHead=false")
    # In a fixture's store and workspaces: no attribute changes bytes between object and file (info/attributes
    # wins over the tree's .gitattributes), so the workspace holds the fixture byte for byte.
    VERBATIM_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"

    @classmethod
    def init_workspace(cls, path: Path, pristine: Path, *, objects: Path, object_format: str,
                       sparse: Sequence[str] = (), verbatim: bool = False) -> "GitRepo":
        """An empty repository at `path` (`git init --template=`: no hooks, no sample files) that borrows the
        objects of `objects` (another repository's object folder) and checks out only the non-cone `sparse`
        patterns when there are any; `verbatim`: VERBATIM_ATTRIBUTES. Its metadata is copied to `pristine/git`."""
        path.mkdir(parents=True, exist_ok=True)
        status, _, err = cls._exec(gitpython.Git(str(path)), ["init", "-q", "--template=",
                                                              f"--object-format={object_format}"])
        if status != 0:
            raise cls._error(["init"], status, err)
        git_dir = path / ".git"
        (git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (git_dir / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n", encoding="utf-8")
        (git_dir / "info").mkdir(exist_ok=True)
        repo = cls(path, git_dir, git_dir, object_format, False)
        if sparse:
            for key, value in (("core.sparseCheckout", "true"), ("core.sparseCheckoutCone", "false")):
                repo._run("config", "--", key, value)
            (git_dir / "info" / "sparse-checkout").write_text("".join(f"{p}\n" for p in sparse), encoding="utf-8")
        if verbatim:
            (git_dir / "info" / "attributes").write_text(cls.VERBATIM_ATTRIBUTES, encoding="utf-8")
        shutil.rmtree(pristine / "git", ignore_errors=True)
        shutil.copytree(git_dir, pristine / "git", symlinks=True)
        return repo

    def _pinned(self, *args: str, git_dir: Path | None = None) -> bytes:
        env = {"GIT_DIR": str(git_dir or self.git_dir), "GIT_WORK_TREE": str(self.root)}
        return self._run_bytes(*self._QUIET_GIT, *args, env=env)

    def reset_workspace(self, pristine: Path, commit: str) -> None:
        """Put the pristine metadata back and move the files to `commit` (see the section's comment): afterwards
        the workspace holds exactly `commit`'s tree (its sparse part), nothing else, and HEAD is detached there.
        GitError or OSError when something the last rollout left cannot be undone (e.g. a folder it made
        unwritable): the caller then makes a new workspace."""
        _operand(commit)
        if self.root.is_symlink() or not self.root.is_dir():
            raise GitError(f"workspace {self.root} is no longer a folder", "it is made again")
        git_dir = self.root / ".git"
        if git_dir.is_symlink() or git_dir.is_file():
            git_dir.unlink()
        elif git_dir.exists():
            shutil.rmtree(git_dir)
        shutil.copytree(pristine / "git", git_dir, symlinks=True)
        if (pristine / "index").is_file():
            shutil.copyfile(pristine / "index", git_dir / "index")
        self._pinned("checkout", "--force", "--detach", "--quiet", commit, "--")
        self._pinned("clean", "-ffdxq")
        shutil.copyfile(git_dir / "index", pristine / "index")

    def changes_since(self, pristine: Path, base: str, exclude: Sequence[str] = ()) -> str:
        """The unified diff from commit `base` (the last reset's) to this workspace's files, new files included,
        without `exclude`d paths. Computed in a scratch copy of the pristine metadata and index, so whatever the
        agent did to the workspace's `.git` (commits, config, a removed or replaced `.git`) neither changes it nor
        is changed by it; the index's stat data makes git read only the files that changed."""
        scratch = pristine / "diff"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(pristine / "git", scratch, symlinks=True)
        try:
            if (pristine / "index").is_file():
                shutil.copyfile(pristine / "index", scratch / "index")
            specs = [".", *(f":(exclude){p}" for p in exclude)]
            self._pinned("add", "-A", "--sparse", "--", *specs, git_dir=scratch)
            return self._pinned("diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", EOO,
                                _operand(base), "--", *specs, git_dir=scratch).decode("utf-8", "replace")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @classmethod
    def init_store(cls, path: Path) -> "GitRepo":
        """A repository whose objects hold fixture snapshots (`snapshot_folder`), byte for byte."""
        repo = cls.init(path, "main")
        (repo.git_dir / "info").mkdir(exist_ok=True)
        (repo.git_dir / "info" / "attributes").write_text(cls.VERBATIM_ATTRIBUTES, encoding="utf-8")
        return repo

    def snapshot_folder(self, folder: Path) -> str:
        """A commit of every file of `folder` (ignored ones included) in this store's objects, without touching
        its index, HEAD or refs: the same content always gives the same commit (a fixed identity and date)."""
        fd, index = tempfile.mkstemp(prefix="skillgit-index-")
        os.close(fd)
        os.unlink(index)  # (git refuses an empty index file)
        stamp = "946684800 +0000"
        env = {"GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(folder), "GIT_INDEX_FILE": index,
               "GIT_AUTHOR_NAME": "skillgit", "GIT_AUTHOR_EMAIL": "skillgit@localhost", "GIT_AUTHOR_DATE": stamp,
               "GIT_COMMITTER_NAME": "skillgit", "GIT_COMMITTER_EMAIL": "skillgit@localhost",
               "GIT_COMMITTER_DATE": stamp}
        runner = gitpython.Git(str(folder))
        try:
            for args in ([*self._QUIET_GIT, "add", "-A", "--force", "--", "."], ["write-tree"]):
                status, out, err = self._exec(runner, args, env=env)
                if status != 0:
                    raise self._error(args, status, err)
            tree = out.decode().strip()
            status, out, err = self._exec(runner, ["commit-tree", _operand(tree, "tree"), "-m", "fixture"], env=env)
            if status != 0:
                raise self._error(["commit-tree"], status, err)
            return out.decode().strip()
        finally:
            Path(index).unlink(missing_ok=True)

    def create_branch(self, name: str, at: str) -> bool:
        """Create branch `name` at commit `at` unless it exists (CAS: never moves an existing branch); True when
        it was created."""
        problem = R.branch_problem(name)
        if problem is not None:
            raise GitError(f"invalid branch name {name!r}: {problem}", R.NAME_HINT)
        ref = R.branch_ref(name)
        if self.ref(ref) is not None:
            return False
        self.transaction([RefUpdate("update", ref, self.rev_parse(f"{at}^{{commit}}"), None)],
                         f"skillgit: create {name}")
        return True

    def remote_urls(self) -> list[str]:
        """The URLs of this repository's remotes (fetch and push), sorted, without duplicates."""
        status, out, _ = self._call("config", "--get-regexp", r"^remote\..*\.(url|pushurl)$")
        if status != 0:
            return []
        return sorted({line.split(maxsplit=1)[1] for line in out.decode("utf-8", "replace").splitlines()
                       if len(line.split(maxsplit=1)) == 2})

    def rev_before(self, timestamp: str, ref: str = "HEAD") -> str | None:
        """The commit `ref` reached just before `timestamp` (any date git understands), or None."""
        if R.branch_problem(ref) is not None and ref != "HEAD":
            return None  # (a transcript's branch: `--output=FILE` would make rev-list write a file)
        status, out, _ = self._call("rev-list", "-1", f"--before={timestamp}", EOO, _operand(ref), "--")
        sha = out.decode().strip()
        return sha if status == 0 and sha else None

    # ------------------------------------------------------------------------------------------ remotes
    # A remote is a name, a path or a URL typed by a user: `R.check_remote` refused option-like ones before, and
    # here it always follows `--` (git then also refuses a path that begins with '-': "strange pathname").
    def ls_remote(self, remote: str) -> str:
        return self._run(*NO_EXT, "ls-remote", "--", R.check_remote(remote))

    def fetch(self, remote: str, refspecs: Sequence[str]) -> None:
        self._run(*NO_EXT, "fetch", "--quiet", "--no-tags", "--prune", "--no-write-fetch-head", "--",
                  R.check_remote(remote), *(_operand(s, "refspec") for s in refspecs))

    def push(self, remote: str, refspecs: Sequence[str], *, atomic: bool) -> tuple[int, str]:
        """(status, stderr) of `git push` (atomic when asked); the caller decides what a failure means."""
        status, _, err = self._call(*NO_EXT, "push", "--quiet", *(["--atomic"] if atomic else []), "--",
                                    R.check_remote(remote), *(_operand(s, "refspec") for s in refspecs))
        return status, err

    # ------------------------------------------------------------------------------------------ housekeeping
    def pack_refs(self) -> None:
        self._run("pack-refs", "--all")

    def repack(self) -> None:
        self._call("repack", "-d", "-q")

    def gc_auto(self, default_threshold: int) -> None:
        """`git gc --auto` in the foreground, with `gc.auto` = `default_threshold` unless the repo sets it."""
        opts = ["-c", "gc.autoDetach=false"]
        if not self.config_get_all("gc.auto"):
            opts += ["-c", f"gc.auto={default_threshold}"]
        self._call(*opts, "gc", "--auto", "--quiet")

    # ------------------------------------------------------------------------------------------ refs
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

    def for_each_ref(self, fields: Sequence[str], *patterns: str, sort: str | None = None) -> list[list[str]]:
        """One row of `fields` (for-each-ref atoms without %( )) per ref under `patterns`."""
        fmt = "%1f".join(f"%({f})" for f in fields) + "%1e"
        args = ["for-each-ref", f"--format={fmt}", *([f"--sort={sort}"] if sort else []), EOO, *patterns]
        out = self._run_bytes(*args).decode("utf-8", "replace")
        return [rec.lstrip("\n").split("\x1f") for rec in out.split("\x1e") if rec.strip("\n")]

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of `a` and `b`, or None when they share no history."""
        status, out, _ = self._call("merge-base", EOO, _operand(a), _operand(b))
        return out.decode().strip() or None if status == 0 else None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self._call("merge-base", "--is-ancestor", EOO, _operand(ancestor), _operand(descendant))[0] == 0

    def transaction(self, updates: Sequence[RefUpdate], reason: str) -> None:
        """Apply `updates` atomically with compare-and-swap on their old values (all or nothing).
        Raises RefConflict when any old value does not match; then no ref has changed."""
        lines = ["start"]
        for u in updates:  # (one line per update: a space or line break in a value would add a command)
            for value in (u.ref, u.new, u.old):
                if value is not None and (not value or any(c.isspace() for c in value)):
                    raise GitError(f"refusing the ref update {u.ref!r}: a ref or object name holds a space or line "
                                   "break", "nothing was changed by skillgit")
            if u.op == "update":
                lines.append(f"update {u.ref} {u.new} {u.old or self.zero}")
            elif u.op == "delete":
                lines.append(f"delete {u.ref} {u.old}")
            elif u.op == "verify":
                lines.append(f"verify {u.ref} {u.old or self.zero}")
            else:
                raise ValueError(f"unknown ref op {u.op!r}")
        lines += ["prepare", "commit"]
        self._run("update-ref", "-m", reason, "--stdin", input="\n".join(lines) + "\n")

    def delete_ref(self, ref: str) -> None:
        self._call("update-ref", "-d", EOO, _operand(ref, "ref"))

    # ------------------------------------------------------------------------------------------ notes
    def notes_map(self, ref: str = R.NOTES_REF) -> dict[str, str]:
        """annotated commit → note blob, for every note under `ref` (one `git notes list`)."""
        if self.ref(ref) is None:
            return {}
        out = self._run("notes", "--ref", ref, "list")
        pairs = (line.split() for line in out.splitlines() if line.strip())
        return {obj: blob for blob, obj in pairs}

    def note_text(self, commit: str, ref: str = R.NOTES_REF) -> str | None:
        """The note on `commit` under `ref`, or None when it has none."""
        status, out, _ = self._call("notes", "--ref", ref, "show", EOO, _operand(commit))
        return out.decode("utf-8", "replace") if status == 0 else None

    def _scratch_notes(self, start: str | None, action) -> str | None:
        """Run `action(tmp_ref)` on a scratch notes ref starting at `start`; return its final value.
        The scratch ref has no reflog and is always deleted: only the returned commit is kept (as an object)."""
        tmp = f"{R.NOTES_TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        quiet = ("-c", "core.logAllRefUpdates=false")
        try:
            if start:
                self._run(*quiet, "update-ref", tmp, start, self.zero)
            action(tmp, quiet)
            return self.ref(tmp)
        finally:
            self._call(*quiet, "update-ref", "-d", tmp)

    def build_notes(self, additions: dict[str, str], ref: str = R.NOTES_REF) -> tuple[str | None, str | None]:
        """Build (without moving `ref`) the notes commit that appends `additions` (commit → text) to `ref`'s notes.
        Returns (old value of ref, new notes commit) for a CAS update in the caller's transaction."""
        old = self.ref(ref)
        if not additions:
            return old, old

        tree = self._tree(old) if old else []
        if tree is None:
            raise GitError(f"git notes failed: {ref} does not point to a notes commit", "run `git notes --ref "
                           f"{ref} list` to inspect it; nothing was changed by skillgit")
        notes: dict[str, bytes] = {}  # annotated object → the note's new bytes
        for name, text in additions.items():
            obj = self.ref(name) if len(name) != 2 * self._hash_bytes else name
            if obj is None:
                raise GitError(f"git notes failed: failed to resolve '{name}' as a valid ref.",
                               "see the message above; nothing was changed by skillgit")
            new = _stripspace(text.encode("utf-8"))
            prev = notes[obj] if obj in notes else self._note_blob(tree, obj)
            # `git notes append`: the old note, a blank line, the new text (either side may be empty).
            notes[obj] = prev + (b"\n" if prev and new else b"") + new
        kept = [obj for obj in notes if notes[obj]]
        blobs = dict(zip(kept, self.write_blobs([notes[obj] for obj in kept])))
        root = self._notes_tree(tree, "", {obj: blobs.get(obj) for obj in notes})
        return old, self.commit_tree(root, [old] if old else [], "Notes added by 'git notes append'\n")

    def _note_blob(self, tree: list[TreeEntry], obj: str) -> bytes:
        """The current note on `obj` in a notes tree (flat or fanned out into 2-hex-digit folders), b"" if none."""
        prefix = ""
        while True:
            entry = next((e for e in tree if e.name == obj[len(prefix):]), None)
            if entry is not None:
                found = self._object(entry.sha)
                return found[2] if found else b""
            sub = next((e for e in tree if e.type == "tree" and e.name == obj[len(prefix):len(prefix) + 2]), None)
            if sub is None:
                return b""
            prefix += sub.name
            tree = self._tree(sub.sha) or []

    def _notes_tree(self, tree: list[TreeEntry], prefix: str, notes: dict[str, str | None]) -> str:
        """A notes tree equal to `tree` (at fan-out `prefix`) with `notes` set (None removes one). A note goes into
        an existing fan-out folder of its prefix, else at this level; a level holding more than `NOTES_FANOUT`
        notes is fanned out into 2-hex-digit folders, as `git notes` does, so that a step rewrites a few small
        trees rather than one that grows with the history. `git notes` reads any mix of fan-outs."""
        entries = {e.name: e for e in tree}
        below: dict[str, dict[str, str | None]] = {}
        for obj, blob in notes.items():
            rest = obj[len(prefix):]
            folder = entries.get(rest[:2])
            if folder is not None and folder.type == "tree" and rest not in entries:
                below.setdefault(rest[:2], {})[obj] = blob
            elif blob is None:
                entries.pop(rest, None)
            else:
                entries[rest] = TreeEntry("100644", "blob", blob, rest)
        width = 2 * self._hash_bytes - len(prefix)
        here = [e for e in entries.values() if e.type == "blob" and len(e.name) == width and _is_hex(e.name)]
        if len(here) > NOTES_FANOUT and width > 2:
            for e in here:
                del entries[e.name]
                below.setdefault(e.name[:2], {})[prefix + e.name] = e.sha
        for name, sub_notes in below.items():
            folder = entries.get(name)
            sub_tree = (self._tree(folder.sha) or []) if folder is not None and folder.type == "tree" else []
            entries[name] = TreeEntry("040000", "tree", self._notes_tree(sub_tree, prefix + name, sub_notes), name)
        return self.mktree(entries.values())

    def merged_notes(self, other: str, ref: str = R.NOTES_REF) -> tuple[str | None, str | None]:
        """(old, new) where new merges notes commit `other` into `ref` with cat_sort_uniq (line union)."""
        old = self.ref(ref)
        if old is None or old == other or self.is_ancestor(other, old):
            return old, other if old is None else old

        def merge(tmp: str, quiet) -> None:
            self._run(*quiet, "notes", "--ref", tmp, "merge", "-q", "-s", "cat_sort_uniq", EOO, _operand(other))

        return old, self._scratch_notes(old, merge)

    # ------------------------------------------------------------------------------------------ worktrees
    def worktrees(self) -> list[Worktree]:
        out = self._run_bytes("worktree", "list", "--porcelain", "-z").decode("utf-8", "replace")
        result: list[Worktree] = []
        for block in out.split("\0\0"):
            fields = dict((line.partition(" ")[0], line.partition(" ")[2]) for line in block.split("\0") if line)
            if "worktree" in fields:
                result.append(Worktree(Path(fields["worktree"]), fields.get("HEAD"), fields.get("branch"),
                                       "bare" in fields))
        return result

    def _in_worktree(self, wt: Path, *args: str, input: str | bytes | None = None) -> str:
        """Run git inside worktree `wt` (its own index and HEAD); pathspecs are taken literally."""
        return self._run("--literal-pathspecs", "-C", str(wt), *args, input=input)

    def index_entries(self, wt: Path, path: str) -> list[tuple[str, str, int]]:
        """(mode, blob, stage) of `path` in worktree `wt`'s index."""
        out = self._in_worktree(wt, "ls-files", "-s", "-z", "--", path)
        rows = []
        for record in out.split("\0"):
            if record:
                meta, _, name = record.partition("\t")
                mode, sha, stage = meta.split()
                if name == path:
                    rows.append((mode, sha, int(stage)))
        return rows

    def worktree_blob(self, wt: Path, path: str) -> str | None:
        """The blob id the working file would get if added (clean/eol filters applied); None when missing."""
        if not (wt / path).is_file():
            return None
        return self._in_worktree(wt, "hash-object", "--", path)

    def checkout_path(self, wt: Path, commit: str, path: str) -> None:
        """Set `path`'s index entry and file in worktree `wt` to their state in `commit`, in ONE git command (git
        writes the file, then the index): a kill can leave the file new and the index old, never the reverse."""
        self._in_worktree(wt, "checkout", "--no-overlay", _operand(commit), "--", path)  # (no --end-of-options)

    def index_is(self, wt: Path, commit: str, path: str) -> bool:
        """True when worktree `wt`'s index holds exactly `commit`'s version of `path` (a file or a folder)."""
        return self._call("--literal-pathspecs", "-C", str(wt), "diff", "--cached", "--quiet", "--no-ext-diff",
                          EOO, _operand(commit), "--", path)[0] == 0

    def worktree_is(self, wt: Path, commit: str, path: str) -> bool:
        """True when the files of `path` in worktree `wt` are exactly `commit`'s (no change, no untracked file)."""
        if self._call("--literal-pathspecs", "-C", str(wt), "diff", "--quiet", "--no-ext-diff", EOO,
                      _operand(commit), "--", path)[0] != 0:
            return False
        return not self._in_worktree(wt, "ls-files", "--others", "--exclude-standard", "--", path).strip()

    def same_path(self, a: str, b: str, path: str) -> bool:
        """True when `path` is identical in commits `a` and `b`."""
        return self._call("--literal-pathspecs", "diff", "--quiet", "--no-ext-diff", EOO, _operand(a), _operand(b),
                          "--", path)[0] == 0

    def ff_merge(self, wt: Path, commit: str) -> None:
        """`git merge --ff-only` in worktree `wt` (its checked-out branch, index and files move to `commit`)."""
        self._in_worktree(wt, "merge", "--ff-only", "--quiet", EOO, _operand(commit))

    # ------------------------------------------------------------------------------------------ config
    def config_get_all(self, key: str) -> list[str]:
        status, out, _ = self._call("config", "--get-all", "--", key)
        return out.decode().splitlines() if status == 0 else []

    def config_add(self, key: str, value: str) -> None:
        self._run("config", "--add", "--", key, value)  # (git config reads what follows the key as values)

    def config_unset_value(self, key: str, value: str) -> None:
        """Remove every `key` entry whose value is exactly `value` (no error when there is none)."""
        self._call("config", "--unset-all", "--fixed-value", "--", key, value)

    def config_set(self, key: str, value: str) -> None:
        self._run("config", "--", key, value)

    def git_path(self, name: str) -> Path:
        """`git rev-parse --git-path` (honours core.hooksPath for "hooks")."""
        path = Path(self._run("rev-parse", "--git-path", name))
        return path if path.is_absolute() else (self.root / path)

    # ------------------------------------------------------------------------------------------ searching blobs
    def grep_tree(self, tree: str, expression: Sequence[str]) -> dict[str, bytes]:
        """path → the lines (each ending in a newline, in file order) of the blobs in `tree` (a tree-ish, e.g. a
        notes commit) that match `expression`: `git grep` pattern arguments (`-e P`, `--or`, `--not`, …), basic
        regular expressions matched on bytes. One `git grep` (threaded, in git) instead of reading every blob:
        only the matching lines travel. Blobs are searched as text; the user's grep/color settings do not apply."""
        args = ["-c", "grep.fullName=false", "grep", "-a", "-z", "-G", "--no-color", "--no-line-number",
                "--no-column", "--no-textconv", *expression, _operand(tree, "tree"), "--"]
        status, out, err = self._call(*args)
        if status == 1 and not err:
            return {}  # nothing matched
        if status != 0:
            raise self._error(args, status, err)
        found: dict[str, list[bytes]] = {}
        prefix = f"{tree}:".encode("utf-8", "surrogateescape")
        for record in out.split(b"\n"):
            name, sep, line = record.partition(b"\0")
            if sep and name.startswith(prefix):
                found.setdefault(name[len(prefix):].decode("utf-8", "surrogateescape"), []).append(line + b"\n")
        return {path: b"".join(lines) for path, lines in found.items()}
