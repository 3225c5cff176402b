"""Skill packages: a folder (`SKILL.md` plus `references/**`, `scripts/**`, assets) trained as one skill.

Everything in the loop passes a skill around as one string (the student's `run(skill, item)`, the call journal's
keys, the teacher's `<skill>` block, the score cache's blob id). A single-file skill is its text, unchanged. A
package is a *bundle*: its text files as protocol blocks, in path order with the main file first,
```
<file path="SKILL.md">
…escaped content…
</file>
<file path="references/changelog.md">
…
</file>
```
escaped exactly as the teacher protocol escapes block content (docs/ARCHITECTURE.md), so the teacher reads the
same blocks inside `<skill>` and `parse` gives back the exact files. Binary or non-UTF-8 files of a package are
never in the bundle: the store carries them over untouched.

Invariants: `parse(bundle(files)) == files`; a bundle is deterministic for the same files; a single-file skill is
never mistaken for a bundle unless its text starts with `<file path="`.

On disk (`write`): the bundle's text files plus the package's committed tree (`tree_files`: every blob with its git
mode, bytes as stored). A tree file the bundle does not hold (a binary asset) is written byte-exact; a bundle file
whose text equals the committed one (up to the trailing newline `parse` adds) is written as the committed bytes;
every file keeps its committed mode (scripts stay executable); a new file is 0644, 0755 when it starts with `#!`.
Nothing is written outside `dest`: a file that is a symbolic link is replaced, a folder that is a link leaving
`dest` (a repository's committed `references -> /elsewhere`) is refused.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping, Protocol, Sequence

from skillgit import tagcodec
from skillgit.errors import SkillgitError

MAIN = "SKILL.md"
_HEAD = '<file path="'
DEFAULT_NEW_FILES = ("references/**", "scripts/**")  # where a teacher may create files (skill.new_files)


def is_bundle(skill: str) -> bool:
    return skill.startswith(_HEAD)


def check_path(path: str) -> str:
    """A safe relative POSIX path inside a package (no `..`, no absolute path, no `.git`), normalised."""
    posix = PurePosixPath(path.replace("\\", "/").strip())
    if not path.strip() or posix.is_absolute() or ".." in posix.parts or ".git" in posix.parts:
        raise SkillgitError(f"invalid file path in a skill package: {path!r}",
                            "use a relative path inside the package, e.g. references/style.md")
    return posix.as_posix()


@dataclass(frozen=True)
class Package:
    """The text files of a skill package (path → text), the main file first."""

    files: tuple[tuple[str, str], ...]
    main: str = MAIN

    @classmethod
    def of(cls, files: Mapping[str, str], main: str = MAIN) -> "Package":
        ordered = sorted(files.items(), key=lambda kv: (kv[0] != main, kv[0]))
        return cls(tuple((check_path(p), t) for p, t in ordered), main)

    def get(self, path: str) -> str | None:
        return dict(self.files).get(path)

    def paths(self) -> list[str]:
        return [p for p, _ in self.files]

    def with_file(self, path: str, text: str) -> "Package":
        return Package.of({**dict(self.files), check_path(path): text}, self.main)

    def bundle(self) -> str:
        return bundle(dict(self.files), self.main)


def bundle(files: Mapping[str, str], main: str = MAIN) -> str:
    """The bundle text of `files` (see the module docstring)."""
    ordered = sorted(files.items(), key=lambda kv: (kv[0] != main, kv[0]))
    return "\n".join(tagcodec.leaf("file", text, 1, [("path", check_path(path))]) for path, text in ordered) + "\n"


def parse(skill: str, main: str = MAIN) -> Package:
    """The package a bundle holds; a plain skill text is a one-file package of `main`."""
    if not is_bundle(skill):
        return Package(((main, skill),), main)
    files = {}
    for attrs, inner in tagcodec.parse_blocks(skill, "file"):
        text = inner if inner.endswith("\n") or not inner else inner + "\n"
        files[check_path(attrs.get("path", ""))] = text
    return Package.of(files, main)


def may_create(path: str, patterns: Iterable[str]) -> bool:
    """True when a new file at `path` matches one of the `skill.new_files` glob patterns."""
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


# ---------------------------------------------------------------------------------------------- on disk
@dataclass(frozen=True)
class TreeFile:
    """One committed file of a package: its path inside the package, git mode (100644 | 100755) and bytes."""

    path: str
    mode: str
    data: bytes


class _Entry(Protocol):
    @property
    def mode(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def sha(self) -> str: ...
    @property
    def name(self) -> str: ...


class TreeReader(Protocol):
    """What `tree_files` reads of a repository: the store hands its `GitRepo` in (this module imports no git layer,
    so the store can depend on it)."""

    def rev_parse(self, rev: str) -> str: ...
    def tree_entry(self, treeish: str, path: str) -> _Entry | None: ...
    def ls_tree(self, treeish: str, recursive: bool = False) -> Sequence[_Entry]: ...
    def cat_batch(self, names: Iterable[str]) -> Mapping[str, tuple[str, bytes] | None]: ...


def tree_files(repo: TreeReader, rev: str, folder: str) -> list[TreeFile]:
    """The package's committed files at `rev` (a commit or branch; `folder` = skill.path), [] when it has none.
    Symbolic links and submodules are left out (a package is regular files)."""
    try:
        entry = repo.tree_entry(repo.rev_parse(f"{rev}^{{commit}}"), folder.strip("/"))
        if entry is None or entry.type != "tree":  # no package there (or a single-file skill)
            return []
        entries = [e for e in repo.ls_tree(f"{rev}:{folder.strip('/')}", recursive=True)
                   if e.type == "blob" and e.mode in ("100644", "100755")]
    except Exception:  # an unborn branch, a missing revision: nothing committed to carry over
        return []
    blobs = repo.cat_batch(e.sha for e in entries)
    return [TreeFile(e.name, e.mode, found[1]) for e in entries if (found := blobs.get(e.sha)) is not None]


def write(dest: Path, skill: str, tree: Sequence[TreeFile] = (), *, main: str = MAIN, prune: bool = False
          ) -> list[Path]:
    """Write the package `skill` (a bundle or a single-file skill) into the folder `dest` with its committed
    `tree` (see the module docstring); `prune` first removes the files under `dest` the package does not have (an
    export into a folder a previous export wrote). Returns the files written."""
    out = _contents(parse(skill, main), tree)
    dest.mkdir(parents=True, exist_ok=True)
    if prune:
        _prune(dest, set(out))
    root = dest.resolve()
    written = []
    for path, (data, mode) in sorted(out.items()):
        target = dest / check_path(path)
        if not target.parent.resolve().is_relative_to(root):  # a folder of `dest` that is a link leaving it
            raise SkillgitError(f"cannot write {path!r} of the skill package: a folder on its way in {dest} is a "
                                "symbolic link that leaves it", f"remove or replace the link under {dest}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_dir():
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
        target.write_bytes(data)
        os.chmod(target, mode)
        written.append(target)
    return written


def _contents(pkg: Package, tree: Sequence[TreeFile]) -> dict[str, tuple[bytes, int]]:
    """path → (bytes, mode) of the package over its committed `tree`: a file the package leaves unchanged keeps
    its committed bytes and mode; a new file is executable when it starts with `#!`."""
    committed = {t.path: t for t in tree}
    out: dict[str, tuple[bytes, int]] = {}
    for path, committed_file in committed.items():  # binary assets and every file the bundle does not list
        out[path] = (committed_file.data, 0o755 if committed_file.mode == "100755" else 0o644)
    for path, text in pkg.files:
        old = committed.get(path)
        data = text.encode("utf-8")
        if old is not None and old.data in (data, data[:-1]):  # unchanged: the committed bytes, exactly
            data = old.data
        mode = (0o755 if old.mode == "100755" else 0o644) if old is not None else \
            (0o755 if text.startswith("#!") else 0o644)
        out[path] = (data, mode)
    return out


def _prune(dest: Path, keep: set[str]) -> None:
    """Remove the files under `dest` not in `keep` (relative paths), then the folders left empty."""
    for existing in sorted(dest.rglob("*"), reverse=True):
        rel = existing.relative_to(dest).as_posix()
        if existing.is_symlink() or existing.is_file():
            if rel not in keep:
                existing.unlink()
        elif existing.is_dir() and not any(existing.iterdir()):
            existing.rmdir()
