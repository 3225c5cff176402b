"""Objects under `GitRepo`: blobs, trees, commits and tags written and read without touching any index or working
tree, and searching blobs. Reads go through the repository's long-lived `cat-file --batch-command`, writes through
its long-lived `mktree --batch` and `hash-object --stdin-paths` (store/gitproc.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

from skillgit.store import refs as R
from skillgit.store.gitproc import EOO, IDENTITY_HINT, SKILLGIT_IDENTITY, GitBase, GitError, TreeEntry, _operand

BATCH_VIA_READER = 32  # cat_batch reads up to this many objects through the long-lived reader, more in bulk


class GitObjects(GitBase):
    """Blobs, trees, commits and tags; commit messages and first-parent searches; `git grep` over a tree."""

    # ------------------------------------------------------------------------------------------ objects
    def blob_id(self, data: bytes) -> str:
        """The id git would give `data` as a blob, computed without writing anything."""
        return R.blob_id(data, self.object_format)

    def write_blob(self, data: bytes) -> str:
        # A run saves the same config and meta skill with every step: skip the subprocess for a blob this
        # process already wrote (its id is computed here; mktree/commit-tree would refuse a missing object).
        known = self.blob_id(data)
        if known in self._written:
            return known
        return self.write_blobs([data])[0]

    def write_blobs(self, datas: Sequence[bytes]) -> list[str]:
        """Write blobs through the long-lived `git hash-object -w --no-filters --stdin-paths` (each via a file in a
        scratch folder; --no-filters: the bytes are already what the blob must hold, no eol/clean conversion)."""
        if not datas:
            return []
        shas = []
        # plain strings, not Path objects: pathlib interns every part of a path it parses (Python < 3.12), and each
        # call's scratch folder has a new name
        with tempfile.TemporaryDirectory(prefix="skillgit-blobs-") as tmp:
            for i, data in enumerate(datas):
                path = os.path.join(tmp, str(i))
                with open(path, "wb") as f:
                    f.write(data)
                if "\n" in path:  # (a path the line protocol cannot carry)
                    shas.append(self._run("hash-object", "-w", "--no-filters", "--stdin", input=data))
                else:
                    shas.append(self._hasher.ask(f"{path}\n".encode()))
        self._written.update(shas)
        return shas

    def cat(self, rev: str) -> bytes:
        found = self._object(rev)
        if found is not None and found[1] != "tree":  # `cat-file -p` pretty-prints trees only
            return found[2]
        return self._run_bytes("cat-file", "-p", EOO, _operand(rev))

    def cat_batch(self, names: Iterable[str]) -> dict[str, tuple[str, bytes] | None]:
        """Read many objects with one `git cat-file --batch`: name → (type, content), None when missing."""
        names = list(dict.fromkeys(names))
        if not names:
            return {}
        if any("\n" in name for name in names):  # (one name per line: a line break would shift every answer)
            return {**self.cat_batch(n for n in names if "\n" not in n), **{n: None for n in names if "\n" in n}}
        result: dict[str, tuple[str, bytes] | None] = {}
        if len(names) <= BATCH_VIA_READER:  # a few: round trips to the long-lived reader, no process
            for name in names:
                found = self._object(name)
                result[name] = (found[1], found[2]) if found else None
            return result
        # Many (all notes, for `skillgit log`): one bulk `cat-file --batch` of its own, which streams them faster than
        # round trips and runs in parallel with the reads other threads make through the reader meanwhile.
        out = self._run_bytes("cat-file", "--batch", input="".join(f"{n}\n" for n in names))
        pos = 0
        for name in names:
            end = out.index(b"\n", pos)
            header = out[pos:end].decode().split()
            pos = end + 1
            if len(header) != 3:  # "<name> missing" / "ambiguous"
                result[name] = None
                continue
            size = int(header[2])
            result[name] = (header[1], out[pos:pos + size])
            pos += size + 1
        return result

    def ls_tree(self, treeish: str, recursive: bool = False) -> list[TreeEntry]:
        if not recursive:
            entries = self._tree(treeish)
            if entries is not None:
                return entries  # (a missing tree falls through to git, which raises its own error)
        out = self._run_bytes("ls-tree", "-z", *(["-r"] if recursive else []), EOO,
                              _operand(treeish)).decode("utf-8", "replace")
        entries = []
        for record in out.split("\0"):
            if record:
                meta, _, name = record.partition("\t")
                mode, kind, sha = meta.split()
                entries.append(TreeEntry(mode, kind, sha, name))
        return entries

    def mktree(self, entries: Iterable[TreeEntry]) -> str:
        data = "".join(f"{e.mode} {e.type} {e.sha}\t{e.name}\0" for e in entries)
        return self._mktree.ask(data.encode("utf-8", "surrogateescape") + b"\0")  # (an empty record ends a tree)

    def tree_entry(self, treeish: str, path: str) -> TreeEntry | None:
        """The entry at `path` (slash-separated, relative to the tree's root), or None."""
        *folders, leaf = path.split("/")
        entries = self._tree(treeish)
        for folder in folders:
            sub = next((e for e in entries or () if e.name == folder and e.type == "tree"), None)
            entries = self._tree(sub.sha) if sub else None
        found = next((e for e in entries or () if e.name == leaf), None) if leaf else None
        return TreeEntry(found.mode, found.type, found.sha, path) if found else None

    def replace_in_tree(self, tree: str | None, path: str, blob: str, mode: str = "100644") -> str:
        """A tree equal to `tree` (a tree or a commit: its root tree) with `path` set to `blob`, built level by
        level with mktree (no index). Only the trees along `path` are rewritten, so the cost does not grow with
        the repository."""
        head, _, rest = path.partition("/")
        entries = {e.name: e for e in self.ls_tree(tree)} if tree else {}
        if rest:
            sub = entries.get(head)
            new_sub = self.replace_in_tree(sub.sha if sub and sub.type == "tree" else None, rest, blob, mode)
            entries[head] = TreeEntry("040000", "tree", new_sub, head)
        else:
            entries[head] = TreeEntry(mode, "blob", blob, head)
        return self.mktree(entries.values())

    def build_tree(self, files: dict[str, str]) -> str:
        """A tree holding `files` (slash path → blob id, mode 100644): one mktree per folder, nothing read."""
        here: list[TreeEntry] = []
        folders: dict[str, dict[str, str]] = {}
        for path, blob in files.items():
            head, _, rest = path.partition("/")
            if rest:
                folders.setdefault(head, {})[rest] = blob
            else:
                here.append(TreeEntry("100644", "blob", blob, head))
        here += [TreeEntry("040000", "tree", self.build_tree(sub), name) for name, sub in folders.items()]
        return self.mktree(here)

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, *, own: bool = False) -> str:
        """A commit of `tree` on `parents`, by the user's git identity. `own=True` is for skillgit's own refs
        (run and sleep state): when git has no identity for the user, the commit is by `SKILLGIT_IDENTITY`."""
        args = ["commit-tree", _operand(tree, "tree")]  # (commit-tree takes no --end-of-options)
        for parent in parents:
            args += ["-p", _operand(parent)]
        try:
            return self._run(*args, "-F", "-", input=message)
        except GitError as exc:
            if not own or exc.hint != IDENTITY_HINT:
                raise
        return self._run(*args, "-F", "-", input=message, env=dict(SKILLGIT_IDENTITY))

    def make_tag(self, obj: str, name: str, message: str) -> str:
        """An annotated tag object on commit `obj` (no ref is created)."""
        ident = self._run("var", "GIT_COMMITTER_IDENT")
        _operand(obj), _operand(name, "tag name")  # (a line break would add a header line to the tag)
        return self._run("mktag", input=f"object {obj}\ntype commit\ntag {name}\ntagger {ident}\n\n{message}")

    def merge_file(self, ours: str, base: str, theirs: str) -> tuple[str, int]:
        """3-way merge of texts (git merge-file): (merged text, number of conflicts)."""
        with tempfile.TemporaryDirectory(prefix="skillgit-merge-") as tmp:
            paths = []
            for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
                p = Path(tmp) / name
                p.write_bytes(text.encode("utf-8"))
                paths.append(str(p))
            status, out, err = self._call("merge-file", "-p", *paths)
        if status < 0 or status > 127:
            raise self._error(["merge-file"], status, err)
        return out.decode("utf-8"), status

    def blob_at(self, rev: str, path: str) -> bytes | None:
        """The bytes of `path` in `rev` (a commit or tree-ish), or None when it has no such blob."""
        found = self._object(f"{rev}:{path}")
        return found[2] if found and found[1] == "blob" else None

    def diff(self, a: str, b: str, paths: Sequence[str]) -> str:
        """git's unified diff of `paths` (literal) from `a` to `b`, no colour, no external diff driver."""
        return self._run_bytes("--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", EOO, _operand(a),
                               _operand(b), "--", *paths).decode("utf-8", "replace")

    def empty_tree(self) -> str:
        return self.mktree([])

    # ------------------------------------------------------------------------------------------ commits
    def _commit_parts(self, commit: str) -> tuple[list[bytes], bytes] | None:
        """(header lines, raw message) of a commit object, None when missing or re-encoded by `git log`."""
        found = self._object(f"{commit}^{{commit}}")
        if found is None:
            return None
        header, _, message = found[2].partition(b"\n\n")
        lines = header.split(b"\n")
        if any(line.startswith(b"encoding ") for line in lines):
            return None  # git log would re-encode the message: let it
        return lines, message

    def parents(self, commit: str) -> list[str]:
        parts = self._commit_parts(commit)
        if parts is not None:  # (cat-file honours replace refs, as rev-parse does)
            return [line[7:].decode() for line in parts[0] if line.startswith(b"parent ")]
        return self._run("rev-parse", f"{_operand(commit)}^@").split()

    def commit_message(self, commit: str) -> str:
        parts = self._commit_parts(commit)
        if parts is not None:
            return parts[1].decode("utf-8", "replace").rstrip("\n")
        return self._run("log", "-1", "--format=%B", EOO, _operand(commit))

    def commit_summary(self, commit: str) -> tuple[str, str]:
        """(subject, "author name <email>, date") of a commit."""
        out = self._run("log", "-1", "--format=%s%x1f%an <%ae>, %ad", "--date=short", EOO, _operand(commit))
        subject, _, author = out.partition("\x1f")
        return subject, author

    def first_parent_chain(self, tip: str, since: str | None = None) -> list[tuple[str, int]]:
        """(commit, committer time) along the first-parent chain of `tip`, newest first; with `since`, only the
        commits not reachable from it."""
        out = self._run("log", "--first-parent", "--format=%H %ct", EOO, _operand(tip),
                        *([f"^{_operand(since)}"] if since else []))
        return [(sha, int(date)) for sha, date in (line.split() for line in out.splitlines())]

    def grep_first_parent(self, tip: str, pattern: str, since: str | None = None) -> list[tuple[str, str, int, str]]:
        """(commit, parents, committer time, message) of first-parent commits of `tip` whose message matches the
        basic regex `pattern`, newest first; with `since`, only those not reachable from it."""
        out = self._run("log", "--first-parent", "-z", f"--grep={pattern}", "--format=%H%x1f%P%x1f%ct%x1f%B", EOO,
                        _operand(tip), *([f"^{_operand(since)}"] if since else []))
        rows = []
        for record in out.split("\0"):
            if record.strip():
                sha, parents, date, message = record.lstrip("\n").split("\x1f", 3)
                rows.append((sha, parents, int(date or 0), message))
        return rows

    def find_by_trailers(self, tip: str, trailers: dict[str, str]) -> str | None:
        """The newest first-parent commit of `tip` carrying every `Key: value` trailer line, or None."""
        esc = lambda text: str(text).replace(".", "\\.").replace("*", "\\*").replace("[", "\\[")  # noqa: E731
        greps = [f"--grep=^{key}: {esc(value)}$" for key, value in trailers.items()]
        out = self._run("log", "--first-parent", "-1", "--all-match", "--format=%H", *greps, EOO, _operand(tip))
        return out.strip() or None

    def messages(self, commits: Sequence[str]) -> dict[str, str]:
        """commit → full message, for many commits with one git call."""
        if not commits:
            return {}
        out = self._run("log", "--no-walk=unsorted", "-z", "--format=%H%x1f%B", "--stdin",
                        input="\n".join(_operand(c) for c in commits))
        pairs = (record.lstrip("\n").split("\x1f", 1) for record in out.split("\0") if "\x1f" in record)
        return {sha: message for sha, message in pairs}

    def subjects(self, commits: Sequence[str]) -> dict[str, str]:
        if not commits:
            return {}
        out = self._run("log", "--no-walk=unsorted", "--format=%H%x1f%s", "--stdin",
                        input="\n".join(_operand(c) for c in commits))
        return dict(line.split("\x1f", 1) for line in out.splitlines() if "\x1f" in line)

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of `a` and `b`, or None when they share no history."""
        status, out, _ = self._call("merge-base", EOO, _operand(a), _operand(b))
        return out.decode().strip() or None if status == 0 else None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self._call("merge-base", "--is-ancestor", EOO, _operand(ancestor), _operand(descendant))[0] == 0

    def rev_parse(self, rev: str) -> str:
        return self._run("rev-parse", _operand(rev))  # (git 2.39's rev-parse prints --end-of-options as a rev)

    def current_branch(self) -> str | None:
        """The short name of the branch HEAD points to (also when unborn), None when detached."""
        status, out, _ = self._call("symbolic-ref", "--short", "-q", "HEAD")
        return out.decode().strip() or None if status == 0 else None

    def valid_branch_name(self, branch: str) -> bool:
        """A name `git branch`/`git switch` accept (not only a valid ref: `-x` is a valid ref but an option)."""
        if R.branch_problem(branch) is not None:
            return False
        short = branch.removeprefix("refs/heads/")
        return self._call("check-ref-format", "--branch", short)[0] == 0 and \
            self._call("check-ref-format", R.branch_ref(branch))[0] == 0


    # ------------------------------------------------------------------------------------------ searching blobs
    def grep_tree(self, tree: str, expression: Sequence[str]) -> dict[str, bytes]:
        """path → the lines (each ending in a newline, in file order) of the blobs in `tree` (a tree-ish, e.g. a
        notes commit) that match `expression`: `git grep` pattern arguments (`-e P`, `--or`, `--not`, …), basic
        regular expressions matched on bytes. One `git grep` (threaded, in git) instead of reading every blob:
        only the matching lines travel. Blobs are searched as text; the user's grep/color settings do not apply."""
        args = ["-c", "grep.fullName=false", "grep", "-a", "-z", "-G", "--no-color", "--no-line-number",
                "--no-column", "--no-textconv", *expression, _operand(tree, "tree"), "--"]
        status, out, err = self._call(*args)
        if status == 1 and not err:
            return {}  # nothing matched
        if status != 0:
            raise self._error(args, status, err)
        found: dict[str, list[bytes]] = {}
        prefix = f"{tree}:".encode("utf-8", "surrogateescape")
        for record in out.split(b"\n"):
            name, sep, line = record.partition(b"\0")
            if sep and name.startswith(prefix):
                found.setdefault(name[len(prefix):].decode("utf-8", "surrogateescape"), []).append(line + b"\n")
        return {path: b"".join(lines) for path, lines in found.items()}
