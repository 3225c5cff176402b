"""The repository files a command runs, and the content of them that an approval covers (`sleep/approval.py`).

An approved text approves that text; `python check.py` approved on Monday must not run Tuesday's `check.py` that a
teammate's pull brought. So the key of a command also covers the content of the files inside the repository that
the command runs.

Contracts:
- `paths_of(commands)`: the paths the shell commands run, in order, each once (`named`): in every simple command
  (split at `&&`, `||`, `;`, `|`, parentheses; leading `VAR=value`, `env`, `exec`, `command`, `time`, `nohup` and
  `timeout N` skipped) the script an interpreter is given (`python x.py`, `bash x.sh`, `sh x.sh`, `node x.js`,
  `ruby`, `perl`, `deno run`, `bun`), the module a `python -m pkg.mod` runs (`pkg/mod.py`, else
  `pkg/mod/__main__.py`, else `pkg/mod/__init__.py`; a module outside the repository, `pytest` or `json.tool`, is
  simply not found there), the test paths given to pytest (`pytest tests/x.py`, `python -m pytest tests/`; a node
  id `tests/x.py::t` as its file), a program run by its path (`./x`, `scripts/x`), the runner's file (`make` → its
  makefile, or `-f FILE`; `tox` → tox.ini; `nox` → noxfile.py), and inside `sh -c 'TEXT'` / `bash -c` the
  commands of TEXT (one level). `argv_paths(argv)` does the same for an argv list (an agent's
  `model.<role>.command.argv`). Paths are relative to the folder the command starts in; a `cd` is not followed.
  What a command runs besides what it names — the code under test that pytest imports, a conftest.py, what the
  script itself imports — is not covered: the key is about the named files, cheap and sure.
- `at_rev(repo, rev, paths)`: each path's content at commit `rev` (a commit id, `HEAD`, a branch or tag name; a
  text that is none of them reads nothing: `NO_COMMIT`), as git's object id (a folder: its tree id, so any change
  below it counts), through `Repository.tree_entry` — no file of the working tree is read. `in_folder(top,
  paths)`: the same in a folder of the working tree (sha256 of a file's bytes; a folder: of its files' paths and
  digests).
- A path that leaves its top — absolute, `..` beyond the top, a symlink (committed, or in the working tree)
  pointing outside — is never read: its digest is `OUTSIDE` (not covered; `sleep review` says so). A named file
  that does not exist is `MISSING` (part of the key: creating it makes a new key).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from skillgit.store.repository import Repository

MISSING = "missing"
OUTSIDE = "outside the repository (not covered)"
NO_COMMIT = "no commit"
_REV = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/^~-]{0,199}")  # a commit id, HEAD, a branch or tag name
_SHELLS = ("bash", "sh", "zsh", "dash", "ksh")
_INTERPRETERS = (*_SHELLS, "node", "ruby", "perl", "bun", "deno", "php", "Rscript")
_WRAPPERS = ("env", "exec", "command", "time", "nohup", "sudo", "uv", "poetry", "pipenv")  # `uv run x.py` too
_RUNNERS = {"tox": ("tox.ini",), "nox": ("noxfile.py",)}
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_PY_VALUE_OPTS = ("-W", "-X", "-Q")
_PYTEST_VALUE_OPTS = ("-k", "-m", "-p", "-o", "-W", "-c", "-n", "-r", "--rootdir", "--deselect", "--ignore",
                      "--junitxml", "--basetemp", "--maxfail", "--tb", "--confcutdir")
_MAX_LINKS = 8  # symlink hops followed inside the tree
_MAX_FOLDER_FILES = 5000  # a working-tree folder with more files is keyed by its listing only


@dataclass(frozen=True)
class RunFile:
    """A file (or folder) a command runs, and its content digest where it is read (or MISSING / OUTSIDE)."""

    path: str
    digest: str

    @property
    def covered(self) -> bool:
        return self.digest not in (OUTSIDE, NO_COMMIT)

    @property
    def short(self) -> str:
        """The digest as `sleep review` shows it: 12 characters of an id, or the word."""
        return self.digest[:12] if self.digest not in (MISSING, OUTSIDE, NO_COMMIT) else self.digest


def _words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: the words as the text splits
        return command.split()


def named(command: str, depth: int = 0) -> list[str]:
    """The paths one shell command line runs (see the module contract)."""
    found: list[str] = []
    segment: list[str] = []
    for word in [*_words(command), ";"]:
        if word and set(word) <= set("&|;()<>"):
            if segment:
                found += _segment(segment, depth)
            segment = []
        else:
            segment.append(word)
    return found


def argv_paths(argv: Sequence[str]) -> list[str]:
    """The paths an argv list runs (see the module contract)."""
    return _unique(_segment([str(a) for a in argv], 0)) if argv else []


def paths_of(commands: Iterable[str]) -> list[str]:
    return _unique(p for c in commands for p in named(c))


def _unique(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(p for p in paths if p))


def _args(rest: list[str], value_opts: Sequence[str] = ()) -> list[str]:
    """The non-option words of `rest` (an option of `value_opts` takes the next word with it)."""
    out, skip = [], False
    for word in rest:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in value_opts
        else:
            out.append(word)
    return out


def _segment(words: list[str], depth: int) -> list[str]:
    while words and ("=" in words[0] and not words[0].startswith("=") and "/" not in words[0].split("=")[0]):
        words = words[1:]  # VAR=value before the command
    while words and posixpath.basename(words[0]) in _WRAPPERS:
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0] or words[0] == "run"):
            words = words[1:]
    if words and posixpath.basename(words[0]) == "timeout":  # timeout [OPTION]… DURATION COMMAND…
        i = 1
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in ("-s", "-k", "--signal", "--kill-after") else 1
        words = words[i + 1:]
    if not words:
        return []
    head, rest = posixpath.basename(words[0]), words[1:]
    if head.startswith("python"):
        if "-c" in rest:
            return []
        if "-m" in rest:
            i = rest.index("-m")
            module = rest[i + 1] if i + 1 < len(rest) else ""
            if module in ("pytest", "py.test"):
                return _tests(rest[i + 2:])
            return [_module(module)] if re.fullmatch(r"[A-Za-z_][\w.]*", module) else []
        args = _args(rest, _PY_VALUE_OPTS)
        return args[:1]
    if head in ("pytest", "py.test"):
        return _tests(rest)
    if head in _INTERPRETERS:
        if "-c" in rest or "-e" in rest or "--eval" in rest:  # inline code: a shell's is read as commands
            inline = _args(rest)
            return named(inline[0], depth + 1) if inline and depth == 0 and head in _SHELLS else []
        args = _args(rest)
        if head == "deno" and args[:1] == ["run"]:
            args = args[1:]
        return args[:1]
    if head == "make":
        folder = ""
        for i, word in enumerate(rest[:-1]):
            if word == "-f":
                return [rest[i + 1]]
            if word == "-C":
                folder = rest[i + 1]
        return [posixpath.join(folder, m) if folder else m for m in _MAKEFILES]
    if head in _RUNNERS:
        return list(_RUNNERS[head])
    if "/" in words[0]:
        return [words[0]]
    return []


def _tests(rest: list[str]) -> list[str]:
    return [w.split("::")[0] for w in _args(rest, _PYTEST_VALUE_OPTS)]


def _module(module: str) -> str:
    """`pkg.mod` as the marker `module:pkg.mod`, read as its file (`_module_files`)."""
    return f"module:{module}"


def _module_files(module: str) -> tuple[str, ...]:
    base = module.replace(".", "/")
    return (f"{base}.py", f"{base}/__main__.py", f"{base}/__init__.py")


def _relative(path: str) -> str | None:
    """`path` normalised relative to its top, or None when it leaves the top (absolute, or `..` beyond it)."""
    if not path or path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", path) or "\0" in path:
        return None
    norm = posixpath.normpath(path.replace("\\", "/"))
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


# ------------------------------------------------------------------------------------------------ at a commit
def at_rev(repo: Repository, rev: str, paths: Sequence[str]) -> tuple[RunFile, ...]:
    """See the module contract."""
    if not paths:
        return ()
    commit = repo.commit_of(rev) if _REV.fullmatch(rev or "") else None
    out = []
    for path in paths:
        if commit is None:
            out.append(RunFile(path, NO_COMMIT))
        elif path.startswith("module:"):
            out.append(_module_entry(path, [_in_commit(repo, commit, p) for p in _module_files(path[7:])]))
        else:
            out.append(RunFile(path, _in_commit(repo, commit, path)))
    return tuple(out)


def _module_entry(label: str, digests: list[str]) -> RunFile:
    """A module's entry: its first file that exists (MISSING when none does: e.g. a module installed elsewhere)."""
    return RunFile(label, next((d for d in digests if d != MISSING), MISSING))


def _in_commit(repo: Repository, commit: str, path: str) -> str:
    rel = _relative(path)
    for _ in range(_MAX_LINKS):
        if rel is None:
            return OUTSIDE
        if rel == ".":
            entry_sha = repo.rev_parse(f"{commit}^{{tree}}")
            return entry_sha
        entry = repo.tree_entry(commit, rel)
        if entry is None:
            return MISSING
        if entry.mode != "120000":  # a blob, a tree (a folder), a commit (a submodule): its object id
            return entry.sha
        target = (repo.blob_at(commit, rel) or b"").decode("utf-8", "replace")
        rel = _relative(posixpath.join(posixpath.dirname(rel), target)) if not target.startswith("/") else None
    return OUTSIDE  # a chain of links too long to follow: not read


# ------------------------------------------------------------------------------------------------ a working tree
def in_folder(top: Path, paths: Sequence[str]) -> tuple[RunFile, ...]:
    """See the module contract."""
    real_top = Path(os.path.realpath(top))
    out = []
    for path in paths:
        if path.startswith("module:"):
            out.append(_module_entry(path, [_in_tree(real_top, p) for p in _module_files(path[7:])]))
        else:
            out.append(RunFile(path, _in_tree(real_top, path)))
    return tuple(out)


def _inside(real: Path, top: Path) -> bool:
    return real == top or top in real.parents


def _in_tree(top: Path, path: str) -> str:
    rel = _relative(path)
    if rel is None:
        return OUTSIDE
    target = top / rel
    if not os.path.lexists(target):
        return MISSING
    real = Path(os.path.realpath(target))
    if not _inside(real, top):
        return OUTSIDE  # a link out of the repository: never read
    if real.is_dir():
        return _folder_digest(real, top)
    if not real.is_file():
        return MISSING
    return _file_digest(real)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return MISSING
    return digest.hexdigest()


def _folder_digest(folder: Path, top: Path) -> str:
    digest = hashlib.sha256(b"folder\0")
    count = 0
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__", "node_modules"))
        for name in sorted(files):
            path = Path(base) / name
            real = Path(os.path.realpath(path))
            rel = path.relative_to(folder).as_posix()
            count += 1
            if count > _MAX_FOLDER_FILES:
                digest.update(f"{rel}\0listed\0".encode("utf-8", "surrogateescape"))
                continue
            shown = _file_digest(real) if _inside(real, top) and real.is_file() else OUTSIDE
            digest.update(f"{rel}\0{shown}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
