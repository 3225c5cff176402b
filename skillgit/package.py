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
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterable, Mapping

from skillgit import prompts
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
    return "\n".join(prompts.leaf("file", text, 1, [("path", check_path(path))]) for path, text in ordered) + "\n"


def parse(skill: str, main: str = MAIN) -> Package:
    """The package a bundle holds; a plain skill text is a one-file package of `main`."""
    if not is_bundle(skill):
        return Package(((main, skill),), main)
    files = {}
    for attrs, inner in prompts.parse_blocks(skill, "file"):
        text = inner if inner.endswith("\n") or not inner else inner + "\n"
        files[check_path(attrs.get("path", ""))] = text
    return Package.of(files, main)


def may_create(path: str, patterns: Iterable[str]) -> bool:
    """True when a new file at `path` matches one of the `skill.new_files` glob patterns."""
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)
