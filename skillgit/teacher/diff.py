"""From a package the agent teacher changed to `Edit` records per file, so its work goes through the same budget,
negative buffer, guards and gate as a chat teacher's edits.

Contract of `package_edits(before, after, *, source_type)`:
- `before` and `after` are skills as the loop passes them (a bundle, or one file's text); the result lists one or
  more edits per changed file, in path order (main file first), and one `Refused` per change no edit can express.
- A new file is one `append` naming it (it creates the file when `skill.new_files` allows it; otherwise `update`
  records `skipped_file_not_found`, as for any teacher). A removed file is refused (edits never delete files).
- A changed file gives one edit per hunk of a line diff (`difflib`), each anchored on lines of the old file that
  occur there exactly once: an insertion is an `insert_after` its preceding lines (an `append` when no line before
  it is unique and only blank lines follow), a removal a `delete`, a change a `replace`; a hunk whose own lines are
  not unique takes as many lines of context as it needs. The hunks are checked by applying them to the old file:
  when they do not give back the new file's lines (blank lines aside: an edit spaces what it adds), say an anchor
  fell inside an earlier hunk or the front matter changed, the whole file is one `replace` of its body, which the
  guards then judge as they would any edit.
- Pure and deterministic: the same two packages give the same edits (the call journal and resume rely on it).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from skillgit import package
from skillgit.patch import apply_edits
from skillgit.skilldoc import split_document
from skillgit.types import Edit

WHOLE = "(whole file)"


@dataclass(frozen=True)
class Refused:
    """A change of the agent's that no edit can express (a removed file), with why."""

    file: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "reason": self.reason}


def package_edits(before: str, after: str, *, source_type: str = "agent") -> tuple[list[Edit], list[Refused]]:
    """The edits that turn `before` into `after` (see the module docstring)."""
    old, new = package.parse(before), package.parse(after)
    main = old.main
    edits: list[Edit] = []
    refused: list[Refused] = []
    paths = sorted(set(old.paths()) | set(new.paths()), key=lambda p: (p != main, p))
    for path in paths:
        was, now = old.get(path), new.get(path)
        file = "" if path == main else path
        if was == now:
            continue
        if now is None:
            refused.append(Refused(path, "the agent removed the file; edits never delete package files"))
            continue
        if was is None:
            edits.append(Edit("append", now.rstrip("\n"), rationale=f"the agent created {path}",
                              source_type=source_type, file=file))
            continue
        edits.extend(e.with_(file=file) for e in file_edits(was, now, source_type=source_type))
    return [e.with_(id=f"a{i}") for i, e in enumerate(edits, 1)], refused


def file_edits(was: str, now: str, *, source_type: str = "agent") -> list[Edit]:
    """The hunks of one file as edits, or one whole-body `replace` when they would not reproduce `now`."""
    a, b = was.split("\n"), now.split("\n")
    edits: list[Edit] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        edit = _hunk(a, b, tag, i1, i2, j1, j2, source_type)
        if edit is None:
            return [_whole(was, now, source_type)]
        edits.append(edit)
    if not edits:
        return []
    got, results = apply_edits(was, edits, allow_front_matter=True)
    if all(r.applied for r in results) and _lines(got) == _lines(now):
        return edits
    return [_whole(was, now, source_type)]


def _lines(text: str) -> list[str]:
    """The text's non-blank lines, trailing spaces dropped: what the hunks must reproduce (edits may space the
    lines they add with blank lines of their own)."""
    return [line.rstrip() for line in text.split("\n") if line.strip()]


def _unique(a: list[str], start: int, end: int) -> bool:
    text = "\n".join(a[start:end])
    return bool(text.strip()) and "\n".join(a).count(text) == 1


def _hunk(a: list[str], b: list[str], tag: str, i1: int, i2: int, j1: int, j2: int,
          source_type: str) -> Edit | None:
    added = "\n".join(b[j1:j2])
    if tag == "insert":
        for start in range(i1 - 1, -1, -1):  # the fewest preceding lines that occur once
            if _unique(a, start, i1):
                return Edit("insert_after", added, "\n".join(a[start:i1]), "added by the agent",
                            source_type=source_type)
        if not "".join(a[i1:]).strip():
            return Edit("append", added.strip("\n"), rationale="added by the agent", source_type=source_type)
    if tag == "delete" and _unique(a, i1, i2):
        return Edit("delete", "", "\n".join(a[i1:i2]), "removed by the agent", source_type=source_type)
    if tag == "replace" and _unique(a, i1, i2) and added.strip():
        return Edit("replace", added, "\n".join(a[i1:i2]), "changed by the agent", source_type=source_type)
    # context: widen the old span backwards, then forwards, until it occurs once; keep the context in the content
    for before in range(0, i1 + 1):
        for after in range(0, len(a) - i2 + 1):
            start, end = i1 - before, i2 + after
            if end > start and _unique(a, start, end):
                content = "\n".join([*a[start:i1], *b[j1:j2], *a[i2:end]])
                if not content.strip():
                    return None
                return Edit("replace", content, "\n".join(a[start:end]), "changed by the agent",
                            source_type=source_type)
    return None


def _whole(was: str, now: str, source_type: str) -> Edit:
    """One `replace` of the file's body (front matter left out: the guard judges a change to it apart)."""
    old_doc, new_doc = split_document(was), split_document(now)
    old_body, new_body = old_doc.text[old_doc.body_start:], new_doc.text[new_doc.body_start:]
    return Edit("replace", new_body.strip("\n"), old_body.strip("\n") or WHOLE, "the agent rewrote the file",
                source_type=source_type)
