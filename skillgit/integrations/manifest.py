"""The install manifest and the file primitives `skillgit install|uninstall` is built on.

Contract
- `Manifest` (JSON at `<git-common-dir>/skillgit/integrations.json` or `~/.skillgit/integrations.json`) lists one
  `Record` per artifact installed: the file, what was inserted at which offset, the folders created, and content
  hashes before and after — never a user's previous content (it may hold credentials). Saving a manifest with no
  records deletes it and the folders created to hold it.
- `write_text` is atomic (a temporary file renamed over the target, through a symlink to its target) and keeps
  the file's mode; it refuses a dangling symlink (it never creates a file wherever one points). `read_text`
  returns None for a missing file and refuses a folder or anything that is not UTF-8.
- `path_problem` says why skillgit must not write a path at all (a dangling symlink, a symlink out of its tree, a
  folder where a file goes, a file where a folder goes); install refuses such a path before writing anything.
- `remove_dirs` removes only empty folders: anything someone else put there stays.
- `Action` / `Report` are what install and uninstall say they did (`to_dict` for `--json`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
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

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "kind": self.kind, "path": self.path, "sha_after": self.sha_after,
                "sha_before": self.sha_before, "offset": self.offset, "text": self.text,
                "key_path": list(self.key_path), "value": self.value, "append": self.append,
                "created_dirs": list(self.created_dirs)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Record:
        return cls(str(d["agent"]), str(d["kind"]), str(d["path"]), str(d["sha_after"]), d.get("sha_before"),
                   int(d.get("offset", 0)), str(d.get("text", "")), tuple(d.get("key_path") or ()), d.get("value"),
                   bool(d.get("append", False)), tuple(d.get("created_dirs") or ()))


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
            return cls(path, base, tuple(Record.from_dict(r) for r in data.get("records", [])),
                       tuple(data.get("created_dirs") or ()))
        except (ValueError, KeyError, TypeError) as exc:
            raise SkillgitError(f"unreadable install manifest {path} ({exc})",
                                "fix or delete it; then remove skillgit's files by hand") from None

    def record_for(self, path: str) -> Record | None:
        return next((r for r in self.records if r.path == path), None)

    def save(self) -> None:
        if not self.records:
            if self.path.exists():
                self.path.unlink()
            remove_dirs(self.base, self.created_dirs)
            return
        created = self.created_dirs or tuple(make_dirs(self.base, self.path.parent))
        data = {"version": MANIFEST_VERSION, "base": str(self.base), "created_dirs": list(created),
                "records": [r.to_dict() for r in self.records]}
        write_text(self.path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


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

    @property
    def changed(self) -> bool:
        return any(a.what in ("create", "insert", "update", "remove", "restore") for a in self.actions)

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "scope": self.scope, "base": self.base, "manifest": self.manifest,
                "changed": self.changed, "actions": [a.to_dict() for a in self.actions],
                "warnings": list(self.warnings)}


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
    tmp.write_bytes(text.encode("utf-8"))
    os.chmod(tmp, mode)
    os.replace(tmp, target)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def path_problem(base: Path, path: Path) -> str | None:
    """Why skillgit must not write `path` (None when it may). `base` is the scope's folder (the repository or the
    home folder); a symlink may point anywhere inside it, or beside itself in its own (resolved) folder."""
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not path.exists():
            return f"a dangling symlink (to {os.readlink(path)}): skillgit would create a file wherever it points"
        if not (_inside(target, base.resolve()) or _inside(target, path.parent.resolve())):
            return f"a symlink to {target}, outside {base}: skillgit does not write through it"
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
