"""The verifier's files belong to the task, not to the agent: they are put back before the verifier runs.

An agent (or a skill telling it "make the tests pass") could edit a test, add a `conftest.py` that passes
everything, change pytest's settings or rewrite the verify script, and its rollout would score as a success.
Graders of coding agents restore the tests before grading; so does this module:

- `capture(spec, ws, keep)` runs after the task's setup and before the agent: it copies the verifier's files (below)
  as they are then into `keep` (a folder of the rollout outside the workspace, beyond the agent's confined reach;
  the pool removes it with the rollout) and lists them.
- `Baseline.restore(ws)` runs after the agent and before the workspace diff and the verifier: every verifier file
  the agent changed or deleted is written back, every one it added is removed, and the `Tamper` record lists them
  (`path`, `how`: edited | deleted | added). Nothing is followed through a link: a folder the agent replaced by a
  link is removed, never written through.

The verifier's files, by default:
- what `verify.command` runs as its verifier (`named`: the test paths given to pytest, the script an interpreter
  runs, a command run by its path) that exists in the workspace when the agent starts: a file is kept as it was, a
  folder whole (files added to it are removed); beside a named `.py` file below the top, its helpers too (the
  other files of its folder, and anything added there, but for other test files: `_helper`). Paths given to other
  tools (`mypy src`) are the agent's work, not the verifier;
- wherever they are, what changes how pytest runs: `conftest.py`, `pytest.ini` and `.pytest.ini` (edited,
  deleted or added) and the pytest sections of `pyproject.toml` (`tool.pytest`), `tox.ini` (`[pytest]`) and
  `setup.cfg` (`[tool:pytest]`): a file whose pytest section changed is put back whole;
- a module added at the workspace's top (on `sys.path` under `python -m`) that shadows the test runner
  (`RUNNER_MODULES`, and the module a `python -m` command runs), and the runner's own file when the command runs
  one: `Makefile` (make), `tox.ini` (tox), `noxfile.py` (nox);
- the `junit:<path>` report of `verify.result` (a report the agent wrote is never read as the verifier's);
- and `verify.files` (`spec.Verify.files`): more files or folders, each of which must exist then (a `ConfigError`
  naming the key otherwise).
The verdict is then the honest one of the agent's real work (see README "Train a skill for Claude Code"): the
tampering neither helps nor costs, and the teacher reads which files were put back, never their content.
"""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from skillgit.agentic.spec import AgenticSpec
from skillgit.agentic.workspace import _rmtree, cow_copy
from skillgit.errors import ConfigError

PYTEST_FILES = ("conftest.py", "pytest.ini", ".pytest.ini")  # wherever they are: changed, deleted or added
SECTION_FILES = {"pyproject.toml": "tool.pytest", "tox.ini": "pytest", "setup.cfg": "tool:pytest"}
RUNNER_MODULES = ("pytest", "_pytest", "py", "pluggy", "iniconfig", "unittest", "sitecustomize", "usercustomize")
RUNNER_FILES = {"make": ("Makefile", "makefile", "GNUmakefile"), "tox": ("tox.ini",), "nox": ("noxfile.py",)}
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".pytest_cache"}
VERSION = 1  # in the call journal's key: rollouts journaled before the verifier was restored are not replayed
MAX_SHOWN = 20  # names listed in the teacher's note


@dataclass(frozen=True)
class Change:
    path: str  # relative to the workspace's top, '/'-separated (the agent chose an added file's name: shown quoted)
    how: str  # edited | deleted | added


@dataclass(frozen=True)
class Tamper:
    """What the agent did to the verifier's files (all put back before verifying); `failed`: why one could not
    be (the rollout then scores 0: a verifier that cannot be restored is never a success)."""

    changes: tuple[Change, ...] = ()
    failed: str = ""

    def __bool__(self) -> bool:
        return bool(self.changes or self.failed)

    def describe(self) -> str:
        """One line for the teacher's feedback and trace: which verifier files, never their content."""
        if not self:
            return ""
        shown = ", ".join(f"{_shown(c.path)} ({c.how})" for c in self.changes[:MAX_SHOWN])
        more = len(self.changes) - MAX_SHOWN
        text = ("the agent changed the verifier's files, which belong to the task; they were put back before "
                "verifying, so the verdict is on its other work: " + shown + (f" and {more} more" if more > 0 else ""))
        if self.failed:
            text += f"; they could not all be put back ({self.failed}): the rollout scores 0"
        return text


def _shown(path: str) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in path)
    return clean if len(clean) <= 120 else clean[:117] + "…"


@dataclass
class Baseline:
    """The verifier's files as the agent found them (see the module docstring)."""

    keep: Path
    files: dict[str, str] = field(default_factory=dict)  # rel → "file" | "exec" | "link:<target>"
    folders: set[str] = field(default_factory=set)  # kept whole: added files removed
    sealed: set[str] = field(default_factory=set)  # the folders of named .py files: their helpers (`_helper`)
    shadows: set[str] = field(default_factory=set)  # top-level module names that may not be added
    sections: set[str] = field(default_factory=set)  # files put back only when their pytest section changed
    present: set[str] = field(default_factory=set)  # every file of the workspace then (`_walk`)
    reports: set[str] = field(default_factory=set)  # the junit report: one the agent wrote is removed

    def restore(self, ws: Path) -> Tamper:
        """Put the verifier's files of workspace `ws` back (module docstring); the changes it undid."""
        changes: list[Change] = []
        try:
            now = _walk(ws)
            for rel, kind in sorted(self.files.items()):
                how = self._differs(ws, rel, kind)
                if how:
                    _put(ws, rel, kind, self.keep / "files" / rel)
                    changes.append(Change(rel, how))
            for rel in sorted(now - self.present):
                if self._added_counts(ws, rel):
                    _remove(ws / rel)
                    changes.append(Change(rel, "added"))
        except OSError as exc:
            return Tamper(tuple(changes), f"{type(exc).__name__}: {exc.strerror or exc}")
        return Tamper(tuple(changes))

    def _differs(self, ws: Path, rel: str, kind: str) -> str:
        path, saved = ws / rel, self.keep / "files" / rel
        if _unsafe_parent(ws, rel):
            return "edited"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return "deleted"
        if kind.startswith("link:"):
            return "" if stat.S_ISLNK(st.st_mode) and os.readlink(path) == kind[5:] else "edited"
        if not stat.S_ISREG(st.st_mode) or bool(st.st_mode & 0o100) != (kind == "exec"):
            return "edited"
        try:
            if st.st_size == saved.stat().st_size and _same_bytes(path, saved):
                return ""
        except PermissionError:  # made unreadable: put back all the same
            return "edited"
        if rel in self.sections and _section(rel, path) == _section(rel, saved):
            return ""  # the file changed, its pytest section did not: the agent's own work
        return "edited"

    def _added_counts(self, ws: Path, rel: str) -> bool:
        """Whether a file the agent added (not in the baseline) is the verifier's business."""
        parts = rel.split("/")
        name = parts[-1]
        if name in PYTEST_FILES or rel in self.reports:
            return True
        if any(rel.startswith(f + "/") for f in self.folders) or any(_helper(f, rel) for f in self.sealed):
            return True
        if (name.removesuffix(".py") if len(parts) == 1 else parts[0]) in self.shadows:
            return True  # shadows the test runner: the top is on sys.path under `python -m`
        if name in SECTION_FILES:
            try:
                return _section(name, ws / rel) is not None
            except OSError:
                return True
        return False


def capture(spec: AgenticSpec, ws: Path, keep: Path) -> Baseline:
    """The verifier's files of `ws` kept aside in `keep` (module docstring); ConfigError for a `verify.files` entry
    that does not exist."""
    _rmtree(keep)
    base = Baseline(keep, present=_walk(ws))
    listed = spec.verify.files
    scripts, module = named(spec.verify.command)
    wanted = [*listed, *scripts]
    if spec.verify.kind == "junit":
        base.reports.add(os.path.normpath(spec.verify.result.partition(":")[2]))
        wanted.extend(base.reports)
    base.shadows = {*RUNNER_MODULES, *([module] if module else [])}
    for rel in dict.fromkeys(wanted):
        path = ws / rel
        if rel.startswith(("..", "/")) or rel in (".", "") or rel.split("/")[0] == ".git" or \
                _unsafe_parent(ws, rel) or not (path.exists() or path.is_symlink()):
            if rel in listed:
                raise ConfigError(f"task '{spec.item_id}': verify.files entry {rel!r} does not exist in the "
                                  "workspace when the agent starts (after setup)",
                                  "name files or folders of the task's workspace, relative to its top")
            continue
        if path.is_dir() and not path.is_symlink():
            base.folders.add(rel)
            for sub in _walk(path):
                _keep(ws, f"{rel}/{sub}", base)
        else:
            _keep(ws, rel, base)
            if "/" in rel and rel.endswith(".py") and rel not in listed:
                folder = rel.rsplit("/", 1)[0]
                base.sealed.add(folder)
                for sub in base.present:
                    if _helper(folder, sub) and "/" not in sub[len(folder) + 1:]:
                        _keep(ws, sub, base)
    for rel in base.present:
        name = rel.rsplit("/", 1)[-1]
        if rel not in base.files and (name in PYTEST_FILES or name in SECTION_FILES):
            _keep(ws, rel, base)
            if name in SECTION_FILES:
                base.sections.add(rel)
    return base


def _helper(folder: str, rel: str) -> bool:
    """Whether `rel` is in `folder` (a named .py file's) and not another test file (`test_*.py`, `*_test.py`: not
    run when a file is named, and the agent's own tests may sit there): the verifier's helpers, data, and any
    module that would shadow what the test imports (pytest puts the folder first on `sys.path`)."""
    if not rel.startswith(folder + "/"):
        return False
    first = rel[len(folder) + 1:].split("/")[0]
    return not (first.endswith(".py") and (first.startswith("test_") or first.endswith("_test.py")))


def named(command: str) -> tuple[list[str], str]:
    """(the paths `command` runs as its verifier, the module a `python -m` runs or ""): in each of its commands
    (split at `&&`, `||`, `;`, `|`), the test paths given to pytest (`pytest …`, `python -m pytest …`; a node id
    `tests/x.py::t` read as its file), the script an interpreter runs (`python check.py`, `bash ci/check.sh`), a
    command run by its path (`./check.sh`), and the runner's file (`make` → Makefile, `tox` → tox.ini, `nox` →
    noxfile.py). Paths given to other tools (`mypy src`) are what they check, not the verifier."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        words = command.split()
    found: list[str] = []
    module = ""
    segment: list[str] = []
    for word in [*words, ";"]:
        if word and set(word) <= set("&|;()<>"):
            if segment:
                module = _segment(segment, found) or module
            segment = []
        elif segment or "=" not in word:  # (leading VAR=value assignments are not the command)
            segment.append(word)
    return [os.path.normpath(p.split("::")[0]) for p in found], module


def _segment(words: list[str], found: list[str]) -> str:
    head, rest = os.path.basename(words[0]), words[1:]
    args = [w for w in rest if not w.startswith("-")]
    if head.startswith("python"):
        if rest[:1] == ["-m"] and len(rest) > 1:
            if rest[1] in ("pytest", "py.test", "unittest"):
                found.extend(w for w in rest[2:] if not w.startswith("-"))
            return rest[1].split(".")[0]
        if "-c" not in rest and args:
            found.append(args[0])
    elif head in ("pytest", "py.test"):
        found.extend(args)
    elif head in ("bash", "sh", "zsh", "dash", "node", "ruby", "perl") and args and "-c" not in rest:
        found.append(args[0])
    elif head in RUNNER_FILES:
        found.extend(RUNNER_FILES[head])
    elif "/" in words[0]:
        found.append(words[0])
    return ""


def _keep(ws: Path, rel: str, base: Baseline) -> None:
    path, saved = ws / rel, base.keep / "files" / rel
    if path.is_symlink():
        base.files[rel] = "link:" + os.readlink(path)
    elif path.is_file():
        saved.parent.mkdir(parents=True, exist_ok=True)
        cow_copy(str(path), str(saved))
        base.files[rel] = "exec" if os.stat(path).st_mode & 0o100 else "file"


def _walk(top: Path) -> set[str]:
    """Every file and link under `top` (relative), without git's metadata, caches, node_modules or virtual
    environments (pytest collects nothing there); links are not followed."""
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(top):
        if "pyvenv.cfg" in filenames and dirpath != str(top):
            dirnames[:] = []
            continue
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and d not in links]
        rel = os.path.relpath(dirpath, top)
        for name in (*filenames, *links):
            found.add(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
    return found


def _unsafe_parent(ws: Path, rel: str) -> bool:
    """Whether a folder on the way to `rel` is a link or not a folder (nothing is read or written through it)."""
    path = ws
    for part in rel.split("/")[:-1]:
        path = path / part
        if path.is_symlink() or path.exists() and not path.is_dir():
            return True
    return False


def _put(ws: Path, rel: str, kind: str, saved: Path) -> None:
    """Write the kept `rel` back under `ws`, making every folder on the way a real one (never through a link)."""
    path = ws
    for part in rel.split("/")[:-1]:
        path = path / part
        if path.is_symlink() or path.exists() and not path.is_dir():
            _remove(path)
        if not path.exists():
            path.mkdir()
        os.chmod(path, os.stat(path).st_mode | 0o700)
    target = ws / rel
    _remove(target)
    if kind.startswith("link:"):
        os.symlink(kind[5:], target)
        return
    shutil.copyfile(saved, target, follow_symlinks=False)
    os.chmod(target, 0o755 if kind == "exec" else 0o644)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.exists() and not path.is_dir():
        try:
            path.unlink()
        except PermissionError:
            os.chmod(path.parent, 0o700)
            path.unlink()
    elif path.exists():
        _rmtree(path)
        if path.exists():
            raise PermissionError(13, "cannot remove", str(path))


def _same_bytes(a: Path, b: Path) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 16), fb.read(1 << 16)
            if x != y:
                return False
            if not x:
                return True


def _section(rel: str, path: Path) -> object:
    """The pytest section of a `pyproject.toml`, `tox.ini` or `setup.cfg` (None when it has none; the whole text
    when it cannot be parsed: pytest would not run it as it was)."""
    name = rel.rsplit("/", 1)[-1]
    text = path.read_text(encoding="utf-8", errors="replace")
    if name == "pyproject.toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # pragma: no cover - Python 3.10: the lines of the pytest tables
            lines = text.splitlines()
            heads = [i for i, line in enumerate(lines) if line.lstrip().startswith("[")]
            return tuple(lines[i:next((h for h in heads if h > i), len(lines))] for i in heads
                         if "pytest" in lines[i]) or None
        try:
            return tomllib.loads(text).get("tool", {}).get("pytest")
        except tomllib.TOMLDecodeError:
            return ("unparsed", text)
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ("unparsed", text)
    section = SECTION_FILES[name]
    return dict(parser.items(section)) if parser.has_section(section) else None
