"""The install manifest and the file primitives `skillgit install|uninstall` is built on.

Contract
- `Manifest` (JSON at `<git-common-dir>/skillgit/integrations.json` or `~/.skillgit/integrations.json`) lists one
  `Record` per artifact installed: the file, what was inserted at which offset, the folders created, and content
  hashes before and after — never a user's previous content (it may hold credentials). Saving a manifest with no
  records deletes it and the folders created to hold it. A record is `pending` from the moment install decided to
  write it until the write is done: install saves the manifest *before* it touches any file, so a crash or a kill
  in between leaves a record that uninstall can act on.
- The manifest is data, not authority: a tampered one names paths skillgit never wrote. Callers check every path
  it names with `contained` (inside a root skillgit owns, no symlink on the way out of it) before acting on it.
- `write_text` is atomic (a temporary file renamed over the target, through a symlink to its target) and keeps
  the file's mode; it refuses a dangling symlink (it never creates a file wherever one points). `read_text`
  returns None for a missing file and refuses a folder or anything that is not UTF-8.
- `path_problem(root, path)` says why skillgit must not write a path at all (a dangling symlink, a symlink — the
  file or any folder on the way to it — that leads out of `root`, a folder where a file goes, a file where a folder
  goes); install refuses such a path before writing anything, and uninstall leaves it in place.
- `remove_dirs` removes only empty folders: anything someone else put there stays.
- `Action` / `Report` are what install and uninstall say they did (`to_dict` for `--json`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skillgit.errors import SkillgitError

MANIFEST_VERSION = 1


def sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------------------------ records
@dataclass(frozen=True)
class Record:
    """One artifact as installed. `text` was inserted at `offset` (for a created file: the whole file, offset 0);
    `sha_before` is None when install created the file. For JSON, `key_path`/`value`/`append` name the inserted
    entry (to find it again if the file changes)."""

    agent: str
    kind: str  # "file" | "json" | "block"
    path: str  # relative to the scope's base folder (posix), or absolute when outside it
    sha_after: str
    sha_before: str | None = None
    offset: int = 0
    text: str = ""
    key_path: tuple[str, ...] = ()
    value: Any = None
    append: bool = False
    created_dirs: tuple[str, ...] = ()
    pending: bool = False  # recorded before the write; the file may still be as it was before install

    def to_dict(self) -> dict[str, Any]:
        out = {"agent": self.agent, "kind": self.kind, "path": self.path, "sha_after": self.sha_after,
               "sha_before": self.sha_before, "offset": self.offset, "text": self.text,
               "key_path": list(self.key_path), "value": self.value, "append": self.append,
               "created_dirs": list(self.created_dirs)}
        return {**out, "pending": True} if self.pending else out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Record:
        before = d.get("sha_before")
        return cls(str(d["agent"]), str(d["kind"]), str(d["path"]), str(d["sha_after"]),
                   None if before is None else str(before), int(d.get("offset", 0)), str(d.get("text", "")),
                   tuple(str(k) for k in d.get("key_path") or ()), d.get("value"), bool(d.get("append", False)),
                   tuple(str(x) for x in d.get("created_dirs") or ()), bool(d.get("pending", False)))

    def untouched(self, current: str | None) -> bool:
        """True when `current` (the file's text, None when missing) is what was there before install."""
        return current is None if self.sha_before is None else sha(current) == self.sha_before


@dataclass(frozen=True)
class Manifest:
    path: Path
    base: Path
    records: tuple[Record, ...] = ()
    created_dirs: tuple[str, ...] = ()  # folders created to hold the manifest itself

    @classmethod
    def load(cls, path: Path, base: Path) -> Manifest:
        if not path.is_file():
            return cls(path, base)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            dirs = tuple(str(d) for d in data.get("created_dirs") or ())
            # only folders above the manifest itself: a tampered list names nothing else to remove
            dirs = tuple(d for d in dirs if lexical(abs_path(base, d)) in lexical(path).parents)
            return cls(path, base, tuple(Record.from_dict(r) for r in data.get("records", [])), dirs)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SkillgitError(f"unreadable install manifest {path} ({exc})",
                                "fix or delete it; then remove skillgit's files by hand") from None

    def record_for(self, path: str) -> Record | None:
        return next((r for r in self.records if r.path == path), None)

    def save(self) -> Manifest:
        """Write the manifest (or delete it, with the folders made for it, when it has no records); returns it as
        saved (with the folders it created)."""
        if not self.records:
            if self.path.exists():
                self.path.unlink()
            remove_dirs(self.base, self.created_dirs)
            return replace(self, created_dirs=())
        created = self.created_dirs or tuple(make_dirs(self.base, self.path.parent))
        data = {"version": MANIFEST_VERSION, "base": str(self.base), "created_dirs": list(created),
                "records": [r.to_dict() for r in self.records]}
        try:
            write_text(self.path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        except BaseException:
            if not self.created_dirs:
                remove_dirs(self.base, created)
            raise
        return replace(self, created_dirs=created)


# ------------------------------------------------------------------------------------------------ reports
@dataclass(frozen=True)
class Action:
    what: str  # create | insert | update | unchanged | present | remove | restore | keep | gone | skip
    path: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"what": self.what, "path": self.path, "detail": self.detail}

    def describe(self) -> str:
        return f"{self.what:<9} {self.path}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Report:
    agent: str
    scope: str
    base: str
    manifest: str
    actions: tuple[Action, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what the person still has to do for the agent to load it (`artifacts.notes`)

    @property
    def changed(self) -> bool:
        return any(a.what in ("create", "insert", "update", "remove", "restore") for a in self.actions)

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "scope": self.scope, "base": self.base, "manifest": self.manifest,
                "changed": self.changed, "actions": [a.to_dict() for a in self.actions],
                "warnings": list(self.warnings), "notes": list(self.notes)}


# ------------------------------------------------------------------------------------------------ file helpers
def read_text(path: Path) -> str | None:
    if not path.exists():
        return None
    if path.is_dir():
        raise SkillgitError(f"{path} is a folder, where skillgit expects a file",
                            "move the folder away (skillgit never writes into it)")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SkillgitError(f"{path} is not UTF-8 text", "skillgit only edits UTF-8 text files") from None


def write_text(path: Path, text: str, executable: bool = False) -> None:
    if path.is_symlink() and not path.exists():
        raise SkillgitError(f"{path} is a dangling symlink (to {os.readlink(path)})",
                            "skillgit does not create files where a symlink points; remove or fix the link")
    target = path.resolve() if path.is_symlink() else path
    tmp = target.with_name(f".{target.name}.skillgit-tmp")
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else (0o755 if executable else 0o644)
    try:
        tmp.write_bytes(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no half-written temporary file is left behind
        raise


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def lexical(path: Path) -> Path:
    return Path(os.path.normpath(os.path.abspath(path)))


def contained(root: Path, path: Path) -> bool:
    """True when `path` is inside `root` both as written (no `..` out of it) and once every symlink on the way is
    followed (the file's own link included): skillgit reads, writes or deletes nothing else."""
    return _inside(lexical(path), lexical(root)) and \
        _inside(Path(os.path.realpath(path)), Path(os.path.realpath(root)))


def _escaping_link(root: Path, path: Path) -> tuple[Path, Path] | None:
    """The first symlink between `root` and `path` (the file itself included) that leads out of `root`, with
    where it leads; None when every link on the way stays inside."""
    real_root = Path(os.path.realpath(root))
    folder = lexical(root)
    for part in lexical(path).relative_to(folder).parts:
        folder = folder / part
        if folder.is_symlink():
            target = Path(os.path.realpath(folder))
            if not _inside(target, real_root):
                return folder, target
    return None


def path_problem(root: Path, path: Path) -> str | None:
    """Why skillgit must not write `path` (None when it may). `root` is the folder the artifact belongs to (the
    repository, the home folder, or an agent's own home such as `CODEX_HOME`); a symlink — the file or any folder
    on the way — may point anywhere inside it, never out of it."""
    if not _inside(lexical(path), lexical(root)):
        return f"outside {root}: skillgit does not write there"
    if path.is_symlink() and not path.exists():
        return f"a dangling symlink (to {os.readlink(path)}): skillgit would create a file wherever it points"
    escaping = _escaping_link(root, path)
    if escaping is not None:
        link, target = escaping
        if link == lexical(path):
            return f"a symlink to {target}, outside {root}: skillgit does not write through it"
        return f"{link} is a symlink to {target}, outside {root}: skillgit does not write through it"
    if path.is_dir():
        return "a folder, where skillgit's file goes"
    for folder in path.parents:
        if folder.is_symlink() and not folder.exists():
            return f"{folder} is a dangling symlink (to {os.readlink(folder)}), where a folder goes"
        if folder.exists():
            return None if folder.is_dir() else f"{folder} is a file, where a folder goes"
    return None


def rel_path(base: Path, path: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


def abs_path(base: Path, rel: str) -> Path:
    p = Path(rel)
    return p if p.is_absolute() else base / rel


def missing_dirs(base: Path, folder: Path) -> list[Path]:
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return list(reversed(missing))


def make_dirs(base: Path, folder: Path) -> list[str]:
    created = missing_dirs(base, folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [rel_path(base, d) for d in created]


def remove_dirs(base: Path, dirs: tuple[str, ...]) -> None:
    for rel in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
        folder = abs_path(base, rel)
        try:
            folder.rmdir()  # only when empty: anything someone put there stays
        except OSError:
            pass


def newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"
