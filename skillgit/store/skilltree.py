"""The skill inside a commit's tree: one UTF-8 file, or a package folder read and written as one bundle text.

`Store` (core.py) holds which of the two a skill is and calls these; nothing here moves a ref or touches an index or
a working tree (only `export` writes files, where it is told to). Contracts:
- `normalize_path`: `skill.path` as a path inside the repository (POSIX, relative); GitStateError with the fix when
  it leaves the repository or names nothing.
- `is_package`: what the skill branch's tip holds at the path: a file (False) or a package folder with
  `package.MAIN` at its top (True); GitStateError with a hint when it holds neither.
- `read`: the text at a revision: a file's text, or a package's text files as one bundle (`package.bundle`; binary
  assets are left out, never shown to a model). One `cat-file` for a file in the common case (the loop reads the
  skill at every step); GitStateError naming the revision when the skill is missing or not UTF-8.
- `with_text`: the root tree of a commit with the skill replaced by a text (a package: only the files whose
  content changed are replaced, their modes kept), and the id of the skill's blob or folder tree; objects are
  written, no commit is made.
- `export`: the skill written to a file or folder (a package byte-exact, git modes kept).

`skillgit.package` is imported for a package skill only: `log` of a single-file skill never loads it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Callable

from skillgit.errors import GitStateError
from skillgit.store.git import GitRepo, TreeEntry


def normalize_path(root: Path, skill_path: str | Path) -> str:
    """`skill_path` relative to the repository root `root`, in POSIX form (an absolute path inside `root` is
    made relative); GitStateError when it is outside `root`, empty or climbs out with `..`."""
    path = Path(skill_path)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root.resolve())
        except ValueError:
            raise GitStateError(f"skill file {path} is outside the repository {root}",
                                "give skill.path relative to the repository root") from None
    posix = PurePosixPath(path.as_posix())
    if not posix.parts or ".." in posix.parts or posix.as_posix() in (".", ""):
        raise GitStateError(f"invalid skill path {str(skill_path)!r}",
                            "give skill.path relative to the repository root, e.g. SKILL.md")
    return posix.as_posix()


def is_package(repo: GitRepo, tip: str, skill_path: str, branch: str) -> bool:
    """True when commit `tip` (the tip of skill branch `branch`) holds a package folder at `skill_path`, False
    when it holds a file; GitStateError with a hint when it holds neither, or a folder without `package.MAIN`."""
    entry = repo.tree_entry(tip, skill_path)
    if entry is not None and entry.type == "tree":
        from skillgit import package  # (imported for a package skill only: `log` of a file skill never needs it)
        if repo.tree_entry(tip, f"{skill_path}/{package.MAIN}") is None:
            raise GitStateError(f"skill package '{skill_path}' has no {package.MAIN} in branch '{branch}'",
                                f"a skill package is a folder with {package.MAIN} at its top")
        return True
    if entry is None or entry.type != "blob":
        hint = (f"commit it: git add {skill_path} && git commit -m 'Add skill'"
                if (repo.root / skill_path).is_file()
                else "set skill.path in skillgit.yaml, or run `skillgit init` to create a starter skill")
        raise GitStateError(f"skill file '{skill_path}' is not in branch '{branch}'", hint)
    return False


def read(repo: GitRepo, spec: str, skill_path: str, *, package: bool, shown: str, commit: Callable[[], str]) -> str:
    """The skill text at `spec` (a commit, or the skill branch's ref); `shown` names that revision in an error.
    `commit()` gives the commit `spec` stands for: called only when the one-`cat-file` read fails, to say what
    is wrong (the store's `tip`, whose own error says when the branch is gone)."""
    if package:
        return _read_package(repo, spec, skill_path, shown)
    data = repo.blob_at(spec, skill_path)
    if data is not None:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    sha = commit()
    entry = repo.tree_entry(sha, skill_path)
    if entry is None:
        raise GitStateError(f"'{skill_path}' does not exist at {shown} ({sha[:12]})",
                            "pick a revision that has the skill file (see `skillgit log`)")
    try:
        return repo.cat(entry.sha).decode("utf-8")
    except UnicodeDecodeError:
        raise GitStateError(f"'{skill_path}' at {sha[:12]} is not UTF-8 text",
                            "skills must be UTF-8 text files") from None


def _read_package(repo: GitRepo, commit: str, skill_path: str, shown: str) -> str:
    entries = [e for e in repo.ls_tree(f"{commit}:{skill_path}", recursive=True) if e.type == "blob"] \
        if repo.tree_entry(commit, skill_path) else []
    if not entries:
        raise GitStateError(f"skill package '{skill_path}' does not exist at {shown}",
                            "pick a revision that has the skill (see `skillgit log`)")
    blobs = repo.cat_batch(e.sha for e in entries)
    files = {}
    for e in entries:
        found = blobs.get(e.sha)
        try:
            files[e.name] = found[1].decode("utf-8") if found else ""
        except UnicodeDecodeError:
            continue  # binary assets are carried over by the tree, never shown to a model
    from skillgit import package
    return package.bundle(files)


def with_text(repo: GitRepo, base: str, skill_path: str, text: str, *, package: bool) -> tuple[str, str]:
    """(root tree of `base` with the skill replaced by `text`, id of the skill's blob or folder tree)."""
    if not package:
        entry = _entry(repo, base, skill_path)
        blob = repo.write_blob(text.encode("utf-8"))
        return repo.replace_in_tree(base, skill_path, blob, entry.mode), blob
    from skillgit import package as pkg_format
    pkg = pkg_format.parse(text)
    current = {e.name: e for e in repo.ls_tree(f"{base}:{skill_path}", recursive=True)}
    tree = repo.rev_parse(f"{base}^{{tree}}")
    for path, body in pkg.files:
        blob = repo.write_blob(body.encode("utf-8"))
        old = current.get(path)
        if old is None or old.sha != blob:
            tree = repo.replace_in_tree(tree, f"{skill_path}/{path}", blob, old.mode if old else "100644")
    sub = repo.tree_entry(tree, skill_path)
    return tree, sub.sha if sub else ""


def _entry(repo: GitRepo, commit: str, skill_path: str) -> TreeEntry:
    entry = repo.tree_entry(commit, skill_path)
    if entry is None:
        raise GitStateError(f"'{skill_path}' is missing in {commit[:12]}", "see `skillgit log`")
    return entry


def export(repo: GitRepo, skill_path: str, text: str, path: Path | str, *, package_at: str | None) -> Path:
    """Write the skill `text` to `path` (a file, or a folder that gets the skill's file name); `package_at`: the
    commit of a package skill, whose binary assets are written byte-exact and git modes kept (a folder an earlier
    export wrote is pruned). Returns what was written."""
    dest = Path(path)
    if package_at is not None:
        from skillgit import package
        tree = package.tree_files(repo, package_at, skill_path)
        package.write(dest, text, tree, prune=(dest / package.MAIN).is_file())
        return dest
    if dest.is_dir():
        dest = dest / PurePosixPath(skill_path).name
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(text.encode("utf-8"))
    return dest
