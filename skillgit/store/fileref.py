"""Refs of skillgit whose commits hold a few small files: a run's config and progress (`refs/skillgit/runs/<run>`)
and what `skillgit sleep` remembers (`refs/skillgit/sleep`).

Contract: a `FileRef` is a chain of commits (each the parent of the next). `files()` reads the newest commit's
files with a fixed number of git calls; `save(files, message, expected)` commits `files` — over the current tree's
files (`keep=True`) or as the whole tree — and moves the ref with compare-and-swap on `expected` (the head the
caller read, None for "must not exist yet"): when another process saved meanwhile nothing changes and `FileRefMoved`
(a GitStateError) says so. Nothing else writes these refs. A user without a git identity still saves
(the commit is by skillgit: `GitRepo.commit_tree(own=True)`).
"""

from __future__ import annotations

from typing import Mapping

from skillgit.errors import GitStateError
from skillgit.store import notes as N
from skillgit.store.git import GitRepo, RefConflict, RefUpdate

UNSET = object()  # `save(expected=UNSET)`: compare with the head as read just before writing


class FileRefMoved(GitStateError):
    """The ref changed between reading and saving; nothing was saved."""


class FileRef:
    def __init__(self, repo: GitRepo, ref: str):
        self.repo = repo
        self.ref = ref

    def head(self) -> str | None:
        return self.repo.ref(self.ref)

    def blobs(self, head: str | None = None) -> dict[str, str]:
        """path → blob id of every file at `head` (default: the ref now); {} when the ref does not exist."""
        head = self.head() if head is None else head
        if head is None:
            return {}
        return {e.name: e.sha for e in self.repo.ls_tree(head, recursive=True) if e.type == "blob"}

    def files(self) -> dict[str, str] | None:
        """The newest commit's files (path → text), or None when the ref does not exist."""
        head = self.head()
        if head is None:
            return None
        blobs = self.blobs(head)
        found = self.repo.cat_batch(blobs.values())
        return {path: obj[1].decode("utf-8", "replace") for path, sha in blobs.items() if (obj := found.get(sha))}

    def read(self, path: str) -> str | None:
        """One file of the newest commit, or None."""
        if self.head() is None:
            return None
        data = self.repo.blob_at(self.ref, path)
        return data.decode("utf-8", "replace") if data is not None else None

    def text(self, blob: str) -> str:
        return self.repo.cat(blob).decode("utf-8", "replace")

    def save(self, files: Mapping[str, str], message: str, *, expected: object = UNSET, keep: bool = True,
             trailers: Mapping[str, str] | None = None, reflog: str = "") -> str:
        """Commit `files` (see the module contract); returns the new commit."""
        old = self.head()
        if expected is not UNSET and old != expected:
            raise self._moved()
        entries = self.blobs(old) if keep and old else {}
        for path, text in files.items():
            entries[path] = self.repo.write_blob(text.encode("utf-8"))
        tree = self.repo.build_tree(entries)
        body = N.format_message(message, "", dict(trailers)) if trailers else message.rstrip("\n") + "\n"
        commit = self.repo.commit_tree(tree, [old] if old else [], body, own=True)
        try:
            self.repo.transaction([RefUpdate("update", self.ref, commit, old)],
                                  reflog or f"skillgit: {N.one_line(message.splitlines()[0] if message else '')}")
        except RefConflict:
            raise self._moved() from None
        return commit

    def _moved(self) -> FileRefMoved:
        return FileRefMoved(f"{self.ref} changed while this command ran (another skillgit process at work?)",
                            "nothing was saved by this command; run it again")
