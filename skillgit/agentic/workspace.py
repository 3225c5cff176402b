"""Where a rollout's agent works: a pooled repository reset to the task's revision, never the user's checkout.

Contract:
- `Workspaces(repo, keep=False, skill_path="")` owns `<tmp>/skillgit-ws-<hash of the repository's git dir>/`
  (outside the repository: agents rightly refuse to work inside a `.git` folder; mode 0700, refused when another
  user or a symlink holds that name: `tmpdirs.claim`) and in it, from its first rollout on, one pool folder
  `<pid>-<random>/` holding
    `store/`     fixture snapshots: a fixture folder is copied once per content (`copy_fixture`, file by file a
                 copy-on-write clone where the file system offers one: `cow_copy`) and committed byte for byte;
    `<n>/ws`     workspace n; beside it the rollout's own files: `<n>/pgid` and `<n>/proc-scopes.jsonl` record
                 the commands run in it (below), `<n>/home` is the agent's hermetic home (`agents.profile`), and
                 the prompt file;
    `<n>.base/`  workspace n's pristine git metadata and index (out of reach of a command's `..`).
- A workspace is a repository of its own that borrows its source's objects (the task's `repo`, or `store/`)
  through git's alternates (`repository.init_workspace`): its refs, stash, tags, config, hooks, reflogs and objects
  are its own, so nothing a rollout does there reaches the user's repository. `open(spec)` takes an idle workspace
  of the same source and sparse paths, or makes one (the one full checkout a worker pays per source), and resets it
  to the task's commit (`GitRepo.reset_workspace`: the pristine metadata back, `checkout --force` rewriting only
  the files that differ from the index the last reset left, `clean -ffdx`). So the next rollout never sees what
  the last one left — files, ignored files, branches, tags, a stash, config, hooks, the installed skill — and a
  rollout costs what changed, not what exists. A reset that fails (something made unremovable) discards that
  workspace and makes a new one. `diff(ws, exclude)` is the change from the task's commit to the files as the
  agent left them (`GitRepo.changes_since`: in a scratch copy of the pristine metadata, whatever the agent did to
  `.git`; from the index's stat data, so only changed files are read).
- `workspace.paths` (`spec.AgenticSpec.paths`) makes a sparse checkout of exactly those files and folders; each
  must exist at the task's commit (a `ConfigError` naming it otherwise).
- A fixture's workspace holds its files byte for byte (no eol or filter attribute applies) and its empty folders;
  file modes are git's (executable or not). A fixture is copied by `copy_fixture`: a symlink stays a symlink when
  it resolves inside the fixture (rewritten relative when its text would leave the copy); one that resolves
  outside the fixture, a loop, or a special file (fifo, socket, device) is a `ConfigError` naming it and the fix —
  never a copy of the tree a link points to.
- The skill is installed where the agent loads skills (`install_dir`, e.g. `.claude/skills/<name>/`) and excluded
  from the diff; a workspace of the project repository itself has the committed skill at `skill.path` removed (the
  agent sees the skill under test only: `hidden` names what the diff leaves out).
- Threads: a workspace serves one rollout at a time; parallel rollouts get separate ones (a pool grows to the
  rollouts in flight per source; at most `MAX_IDLE` idle workspaces are kept). Ray workers each build their own
  student, so each worker process has its own pool (nothing is shared across processes); a worker killed with its
  pool is handled by the sweep below.
- Every command of a rollout (setup, agent, verifier) starts through `tracked(folder, …)`, which writes its process
  group id to `<folder>/pgid` before it executes (a shell `exec`: the group leader is the command itself), and runs
  with `process.run(…, record=folder)`, which appends its scope id and cgroup to `<folder>/proc-scopes.jsonl`
  before it starts (`process` module docstring: the nets that also find children that left the group by `setsid`).
  A reset removes everything in `<n>/` but `ws` (records, home, prompt: the next rollout's agent starts from a
  fresh home): `process.run` left nothing of the previous rollout running.
- The pool is removed by `close()`, when the object is collected, or when the interpreter exits; `keep`
  (`--keep-workspaces`, for debugging) gives every rollout a new workspace that is never reset nor removed. A
  process killed mid-rollout (kill -9) leaves its pool behind, and what its commands started running in it.
  `sweep()` (called when a student is built, and when a pool is closed) handles every folder whose process is gone:
  for each record folder in it, it kills what `process.kill_recorded` finds through the records (processes carrying
  the recorded scope ids, the recorded cgroups), and the recorded process group — only when the group is provably
  ours: its leader's cwd is inside the folder or it started when the pgid file was written (pid reuse), or the
  leader is gone and members remain (a group id is never reused while the group has members) — then removes the
  folder (and a worktree an older skillgit made), and removes the root when empty.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from skillgit import package, process, tmpdirs
from skillgit.agentic.spec import WORKSPACE_PREFIX, AgenticSpec
from skillgit.errors import ConfigError, GitStateError
from skillgit.llm import command
from skillgit.llm.base import LLMError
from skillgit.store.lock import alive
from skillgit.store.repository import Repository, init_snapshot_store, init_workspace, open_repository

_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", "*.pyc")
PGID_FILE = "pgid"
MAX_IDLE = 8  # idle workspaces a pool keeps (the least recently used beyond that are removed)
FICLONE = 0x40049409  # Linux ioctl: make the destination a copy-on-write clone of the source (btrfs, XFS, …)
_START_SLACK_S = 5.0  # a group leader started within this many seconds of its pgid file is the one that wrote it


def skill_name(skill: str) -> str:
    """The package's name from its SKILL.md's front matter (`name:`) as a folder-safe slug, else "skill"."""
    return command.skill_name(package.parse(skill).get(package.MAIN) or "")


def install(workspace: Path, skill: str, install_dir: str, tree: Sequence[package.TreeFile] = ()) -> Path:
    """Write the skill's files under `workspace/install_dir` (`{name}` filled in) with the package's committed
    `tree` (binary assets byte-exact, scripts executable: `package.write`). A single-file skill becomes the
    package's SKILL.md, with minimal front matter added when it has none (Claude Code and Codex ignore a skill
    without `name`/`description`). An install path ending in `.md` (AGENTS.md, copilot-instructions.md) gets the
    main file only."""
    name = skill_name(skill)
    target = (workspace / install_dir.replace("{name}", name)).resolve()
    if not target.is_relative_to(workspace.resolve()):
        raise ValueError(f"install path {install_dir!r} points outside the workspace")
    pkg = package.parse(skill)
    main = pkg.get(package.MAIN) or ""
    if target.suffix == ".md":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(main, encoding="utf-8")
        return target
    if not main.startswith("---"):
        pkg = pkg.with_file(package.MAIN, command.STUB_FRONT_MATTER.format(name=name) + main)
    package.write(target, pkg.bundle(), tree)
    return target


def tracked(folder: Path, argv: Sequence[str] | str) -> list[str] | str:
    """`argv` (a list, or a shell command line) made to write its process group id to `folder/pgid` first. The
    command runs in a new session (`process.run`), so the shell's pid is the group id, and `exec` keeps it."""
    pgid_file = shlex.quote(str(folder / PGID_FILE))
    if isinstance(argv, str):
        return f"echo $$ > {pgid_file}; {argv}"
    return ["/bin/sh", "-c", f'echo $$ > {pgid_file} && exec "$@"', "skillgit-agent", *argv]


def copy_fixture(fixture: Path, dest: Path, links: dict[str, str] | None = None) -> None:
    """Copy the fixture folder to `dest` without `.git` and caches, symlinks as symlinks (module docstring);
    `links`: what `check_fixture` found (it is asked otherwise)."""
    rewrite = check_fixture(fixture) if links is None else links
    shutil.copytree(fixture.resolve(), dest, symlinks=True, ignore=_IGNORE, copy_function=cow_copy)
    for rel, text in rewrite.items():
        (dest / rel).unlink()
        (dest / rel).symlink_to(text)


def check_fixture(fixture: Path) -> dict[str, str]:
    """ConfigError for what a fixture may not hold (module docstring), before anything is copied; the links to
    rewrite relative (path → new text)."""
    root = fixture.resolve()
    rewrite: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):  # does not descend into linked folders
        ignored = _IGNORE(dirpath, dirnames + filenames)
        dirnames[:] = [d for d in dirnames if d not in ignored]
        for name in [*dirnames, *(f for f in filenames if f not in ignored)]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode):
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise ConfigError(f"task fixture {root}: {rel} is not a regular file, folder or symlink",
                                      "remove it from the fixture (a setup command can create it in the workspace)")
                continue
            text = os.readlink(path)
            try:
                os.stat(path)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise ConfigError(f"task fixture {root}: symlink {rel} -> {text} is a loop",
                                      "remove the link or point it at a file inside the fixture") from None
            target = Path(os.path.realpath(path))  # a dangling link is judged by where it would point
            if not target.is_relative_to(root):
                raise ConfigError(f"task fixture {root}: symlink {rel} -> {text} points outside the fixture "
                                  f"({target})", "copy what it points to into the fixture, or point the link at a "
                                  "file inside it (a link that leaves the fixture is never copied into workspaces)")
            within = os.path.normpath(os.path.join(os.path.dirname(rel), text))  # by name, from the fixture's root
            if os.path.isabs(text) or within == ".." or within.startswith("../"):
                rewrite[rel] = os.path.relpath(target, dirpath)  # absolute, or ../ out of the fixture and back in
    return rewrite


_NO_CLONE: set[int] = set()  # devices where FICLONE was refused: not asked again


def cow_copy(src: str, dst: str) -> str:
    """`shutil.copy2` that first asks the file system for a copy-on-write clone (FICLONE: instant, no data copied,
    on btrfs, XFS with reflink, bcachefs, …); elsewhere the data is copied (in the kernel on Linux)."""
    dev = os.stat(src).st_dev
    if dev not in _NO_CLONE and hasattr(fcntl, "ioctl"):
        try:
            with open(src, "rb") as fin, open(dst, "wb") as fout:
                fcntl.ioctl(fout.fileno(), FICLONE, fin.fileno())
            shutil.copystat(src, dst)
            return dst
        except OSError:
            _NO_CLONE.add(dev)
    return shutil.copy2(src, dst)


def fixture_stamp(folder: Path) -> str:
    """A digest of what `copy_fixture` would copy, from names, types, sizes, times and modes (no file is read):
    a changed fixture gets a new snapshot."""
    h = hashlib.sha1(str(folder.resolve()).encode("utf-8", "surrogateescape"))
    for dirpath, dirnames, filenames in os.walk(folder):
        ignored = _IGNORE(dirpath, dirnames + filenames)
        dirnames[:] = sorted(d for d in dirnames if d not in ignored)
        h.update(f"d {dirpath}\0".encode("utf-8", "surrogateescape"))
        for name in sorted(f for f in filenames if f not in ignored):
            st = os.lstat(os.path.join(dirpath, name))
            h.update(f"{name}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0".encode(
                "utf-8", "surrogateescape"))
    return h.hexdigest()


def _empty_folders(folder: Path) -> tuple[str, ...]:
    """The folders under `folder` that hold nothing (git does not keep them: they are made again at each reset)."""
    return tuple(sorted(Path(dirpath).relative_to(folder).as_posix() for dirpath, dirnames, filenames
                        in os.walk(folder) if not dirnames and not filenames and Path(dirpath) != folder))


def _rmtree(path: Path) -> None:
    """Remove `path` whatever a rollout did to its permissions (a folder made read-only is made writable)."""
    def retry(func, name, _exc) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, 0o700)
            func(name)
        except OSError:
            pass
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=retry)
        else:
            shutil.rmtree(path, onerror=retry)


def _proc_start(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), from /proc; None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                    members.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return members


def kill_leftover_group(folder: Path) -> bool:
    """Kill the process group recorded in `folder/pgid` when it is provably the one a rollout started there (see
    the module docstring); True when a group was killed."""
    try:
        record = folder / PGID_FILE
        pgid, written = int(record.read_text().strip()), record.stat().st_mtime
    except (OSError, ValueError):
        return False
    if pgid <= 1 or pgid == os.getpgrp():
        return False
    if Path(f"/proc/{pgid}").exists():  # the leader lives: is it ours, or a new process that got its pid?
        try:
            cwd = Path(os.readlink(f"/proc/{pgid}/cwd"))
            inside = cwd.is_relative_to(folder.resolve())
        except OSError:
            inside = False
        started = _proc_start(pgid)
        if not inside and (started is None or abs(started - written) > _START_SLACK_S):
            return False
    elif not _group_members(pgid):
        return False
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    for _ in range(50):  # let the kernel reap it before its files are removed
        if not _group_members(pgid):
            break
        time.sleep(0.02)
    return True


@dataclass(frozen=True)
class _Source:
    """What a workspace is reset to: `commit` among the objects of `repo` (the task's repository, or the store of
    fixture snapshots), with `empty` folders made again (a fixture's)."""

    repo: Repository
    commit: str
    fixture: bool
    empty: tuple[str, ...] = ()


@dataclass
class _Slot:
    key: tuple[str, tuple[str, ...]]  # (the source's object folder, sparse patterns)
    folder: Path  # <pool>/<n>: the workspace `ws` and its commands' records
    repo: Repository | None = None  # the workspace's own repository
    base: str = ""  # the commit the last reset checked out

    @property
    def ws(self) -> Path:
        return self.folder / "ws"

    @property
    def pristine(self) -> Path:
        return self.folder.with_name(self.folder.name + ".base")


class _Pool:
    """One process's workspaces (module docstring); every field under `lock`. Holds no reference to its
    `Workspaces`, so it can be shut down when that is collected."""

    def __init__(self, root: Path, keep: bool, repo: Repository):
        self.root, self.keep, self.repo = root, keep, repo
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.folder: Path | None = None
        self.idle: list[_Slot] = []  # least recently used first
        self.busy = 0
        self.made = 0
        self.closed = False
        self.store: Repository | None = None  # the fixture snapshots (made by the first fixture rollout)

    def home(self) -> Path:
        with self.lock:
            if self.closed:
                raise RuntimeError("the workspaces were closed")
            if self.folder is None:
                folder = self.root / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
                for attempt in range(6):  # another process may remove the empty root between our mkdirs
                    try:
                        tmpdirs.claim(self.root).joinpath(folder.name).mkdir()
                        break
                    except FileNotFoundError:
                        if attempt == 5:
                            raise
                self.folder = folder
            return self.folder

    def take(self, key: tuple[str, tuple[str, ...]]) -> _Slot | None:
        with self.lock:
            if self.closed:
                raise RuntimeError("the workspaces were closed")
            found = next((s for s in reversed(self.idle) if s.key == key), None) if not self.keep else None
            if found is not None:
                self.idle.remove(found)
            self.busy += 1
            return found

    def new_slot(self, key: tuple[str, tuple[str, ...]]) -> _Slot:
        home = self.home()
        with self.lock:
            self.made += 1
            slot = _Slot(key, home / str(self.made))
        slot.folder.mkdir()
        slot.pristine.mkdir()
        return slot

    def discard(self, slot: _Slot) -> None:
        """Remove a workspace that is not in the pool (its rollout's commands have ended)."""
        _rmtree(slot.folder)
        _rmtree(slot.pristine)

    def put(self, slot: _Slot | None) -> None:
        """A rollout is over: its workspace (None: it was discarded) goes back to the pool."""
        drop: list[_Slot] = []
        with self.lock:
            self.busy -= 1
            if slot is not None and not self.keep:
                if self.closed:
                    drop.append(slot)
                else:
                    self.idle.append(slot)
                    while len(self.idle) > MAX_IDLE:
                        drop.append(self.idle.pop(0))
            last = self.closed and not self.busy
        for old in drop:
            self.discard(old)
        if last:
            self._remove_home()

    def shutdown(self) -> None:
        """Remove the pool (kept workspaces stay); workspaces in use go when their rollout ends. Then sweep."""
        if os.getpid() != self.owner:  # a forked child exiting must not remove its parent's pool
            return
        with self.lock:
            self.closed = True
            drop, self.idle = self.idle, []
            last = not self.busy
        if self.store is not None:
            self.store.close()
        if not self.keep:
            for slot in drop:
                self.discard(slot)
            if last:
                self._remove_home()
        sweep(self.root, self.repo)

    def _remove_home(self) -> None:
        if self.folder is not None and not self.keep:
            _rmtree(self.folder)
        _drop_root(self.root)


def _drop_root(root: Path) -> None:
    try:
        if tmpdirs.is_ours(root):
            root.rmdir()  # only when empty: another run's workspaces keep it
    except OSError:
        pass


def sweep(root: Path, repo: Repository) -> int:
    """`Workspaces.sweep` (module docstring) of `root`; `repo` prunes the worktrees an older skillgit made."""
    if not root.is_dir() or not tmpdirs.is_ours(root):  # another user's folder of that name: not ours to clean
        return 0
    removed, worktrees = 0, False
    for folder in root.iterdir():
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and (int(pid) == os.getpid() or alive(int(pid))):
            continue
        records = [folder] + ([d for d in folder.iterdir() if d.is_dir() and not d.is_symlink()]
                              if folder.is_dir() and not folder.is_symlink() else [])
        for where in records:
            if (where / PGID_FILE).exists() or (where / process.RECORD_FILE).exists():
                process.kill_recorded(where)
                kill_leftover_group(where)
            if (where / "ws" / ".git").is_file():  # a worktree of the project repository (an older skillgit's)
                repo.worktree_remove(where / "ws")
                worktrees = True
        _rmtree(folder)
        removed += 1
    if worktrees:
        repo.worktree_prune()
    _drop_root(root)
    return removed


class Workspaces:
    def __init__(self, repo: Repository, *, keep: bool = False, skill_path: str = ""):
        self.repo = repo
        digest = hashlib.sha1(str(repo.common_dir.resolve()).encode()).hexdigest()[:12]
        self.root = Path(tempfile.gettempdir()) / f"{WORKSPACE_PREFIX}{digest}"
        self.keep = keep
        self.skill_path = skill_path.strip("/")
        self._pool = _Pool(self.root, keep, repo)
        self._finalizer = weakref.finalize(self, self._pool.shutdown)
        self._lock = threading.Lock()  # the memos below
        self._repos: dict[str, Repository] = {}  # a task's repository folder → opened
        self._snapshot_lock = threading.Lock()  # one fixture snapshot at a time
        self._snapshots: dict[str, tuple[str, tuple[str, ...]]] = {}  # fixture stamp → (commit, empty folders)
        self._checked: set[tuple[str, str, tuple[str, ...]]] = set()  # (objects, commit, paths) found in the tree
        self._open: dict[Path, _Slot] = {}  # the workspaces of rollouts in flight

    def sweep(self) -> int:
        """Kill the agents and remove the workspaces of processes that are gone (a killed run's leftovers); returns
        how many folders were removed."""
        return sweep(self.root, self.repo)

    def close(self) -> None:
        """Remove this pool (module docstring); the workspaces are closed for good."""
        self._finalizer()

    @property
    def pool_folder(self) -> Path | None:
        """This pool's folder (`<root>/<pid>-<random>`), None before its first rollout."""
        return self._pool.folder

    def _source_repo(self, folder: Path) -> Repository:
        key = str(folder.resolve())
        with self._lock:
            if key not in self._repos:
                self._repos[key] = self.repo if key == str(self.repo.root.resolve()) else open_repository(folder)
            return self._repos[key]

    def hidden(self, spec: AgenticSpec) -> list[str]:
        """Paths of a workspace of `spec` that belong to skillgit, not to the task: the committed skill's path in
        a workspace of the project repository (removed when the workspace is made)."""
        if spec.fixture is not None or not self.skill_path:
            return []
        try:
            own = self._source_repo(spec.repo or self.repo.root).common_dir.resolve() == \
                self.repo.common_dir.resolve()
        except Exception:
            return []
        return [self.skill_path] if own else []

    def _repo_source(self, spec: AgenticSpec) -> _Source:
        repo = self._source_repo(spec.repo or self.repo.root)
        commit = repo.commit_of(spec.rev)
        if commit is None:
            raise ConfigError(f"task '{spec.item_id}': workspace.rev {spec.rev!r} is not a commit of {repo.root}",
                              "give a branch, tag or commit id that exists in that repository")
        return _Source(repo, commit, fixture=False)

    def _fixture_source(self, fixture: Path) -> _Source:
        stamp = fixture_stamp(fixture)
        with self._snapshot_lock:
            if stamp not in self._snapshots:
                links = check_fixture(fixture)  # (a refused fixture makes no pool folder)
                home = self._pool.home()
                if self._pool.store is None:
                    self._pool.store = init_snapshot_store(home / "store")
                staging = home / f"staging-{uuid.uuid4().hex[:12]}"
                try:
                    copy_fixture(fixture, staging, links)
                    self._snapshots[stamp] = (self._pool.store.snapshot_folder(staging), _empty_folders(staging))
                finally:
                    _rmtree(staging)
            commit, empty = self._snapshots[stamp]
            assert self._pool.store is not None
            return _Source(self._pool.store, commit, fixture=True, empty=empty)

    def _check_paths(self, spec: AgenticSpec, source: _Source) -> None:
        key = (str(source.repo.common_dir), source.commit, spec.paths)
        with self._lock:
            if key in self._checked:
                return
        missing = [p for p in spec.paths if source.repo.tree_entry(source.commit, p) is None]
        if missing:
            where = f"the fixture {spec.fixture}" if spec.fixture is not None else \
                f"{spec.rev} ({source.commit[:12]}) of {source.repo.root}"
            raise ConfigError(f"task '{spec.item_id}': workspace.paths {', '.join(map(repr, missing))} "
                              f"not found in {where}", "name files or folders that exist there (relative to its "
                              "root), or drop workspace.paths to check out everything")
        with self._lock:
            self._checked.add(key)

    def _reset(self, slot: _Slot, source: _Source, spec: AgenticSpec) -> None:
        assert slot.repo is not None
        for entry in slot.folder.iterdir():  # records, the agent's home, the prompt: all the last rollout's
            if entry.name != "ws":  # (its commands were all ended by process.run)
                _rmtree(entry)
        slot.repo.reset_workspace(slot.pristine, source.commit)
        slot.base = source.commit
        for rel in source.empty:
            if not spec.paths or any(rel == p or rel.startswith(p + "/") for p in spec.paths):
                (slot.ws / rel).mkdir(parents=True, exist_ok=True)
        for rel in self.hidden(spec):
            committed = slot.ws / rel
            if committed.is_dir() and not committed.is_symlink():
                shutil.rmtree(committed)
            elif committed.exists() or committed.is_symlink():
                committed.unlink()

    def _acquire(self, spec: AgenticSpec, source: _Source) -> _Slot:
        sparse = tuple(f"/{p}" for p in spec.paths)
        key = (str(source.repo.common_dir / "objects"), sparse)
        slot = self._pool.take(key)
        try:
            if slot is not None:
                try:
                    self._reset(slot, source, spec)
                    return slot
                except (GitStateError, OSError):  # something the last rollout left that git cannot undo: a new one
                    self._pool.discard(slot)
            slot = self._pool.new_slot(key)
            slot.repo = init_workspace(slot.ws, slot.pristine, objects=Path(key[0]), sparse=sparse,
                                               object_format=source.repo.object_format, verbatim=source.fixture)
            self._reset(slot, source, spec)
            return slot
        except BaseException:
            if slot is not None:
                self._pool.discard(slot)
            self._pool.put(None)
            raise

    @contextmanager
    def open(self, spec: AgenticSpec) -> Iterator[Path]:
        """The workspace for one rollout of `spec`, reset to the task's commit (module docstring); it goes back
        to the pool afterwards unless `keep`."""
        source = self._fixture_source(spec.fixture) if spec.fixture is not None else self._repo_source(spec)
        if spec.paths:
            self._check_paths(spec, source)
        slot = self._acquire(spec, source)
        with self._lock:
            self._open[slot.ws] = slot
        try:
            yield slot.ws
        finally:
            with self._lock:
                self._open.pop(slot.ws, None)
            self._pool.put(slot)

    def diff(self, ws: Path, exclude: Sequence[str] = ()) -> str:
        """The unified diff from the task's commit to the files of the open workspace `ws` (new files included),
        without `exclude`d paths (the installed skill, `hidden`)."""
        with self._lock:
            slot = self._open.get(ws)
        if slot is None or slot.repo is None:
            raise ValueError(f"{ws} is not a workspace open in this pool")
        if ws.is_symlink() or not ws.is_dir():  # nothing of skillgit's may run where such a link points
            raise LLMError(f"the agent removed or replaced its workspace folder {ws}", "the rollout is not "
                           "verified; see what the skill tells the agent to delete", kind="agent")
        return slot.repo.changes_since(slot.pristine, slot.base, exclude)
