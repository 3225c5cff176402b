"""Notes commits under `GitRepo`: trees computed here, byte for byte what `git notes append` writes, fanned out
like git's, so a step's notes cost no `git notes` process; merging a collaborator's notes (`cat_sort_uniq`)."""

from __future__ import annotations

import os
import uuid

from skillgit.store import refs as R
from skillgit.store.gitobjects import GitObjects
from skillgit.store.gitproc import EOO, GitError, TreeEntry, _is_hex, _operand, _stripspace

NOTES_FANOUT = 256  # notes on one level of a notes tree before it is split into 2-hex-digit folders


class GitNotes(GitObjects):
    """Notes read, built (without moving the ref: the caller's transaction does) and merged."""

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
