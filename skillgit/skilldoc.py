"""The structure of a skill document: YAML front matter, protected regions, and the editable body.

Contract:
- Front matter is `---` on the very first line, YAML lines, and a closing `---` line; it is kept byte-for-byte
  (`Doc.front_matter` is its exact text including the closing line's newline).
- A protected region is `<!-- skillgit:NAME -->` … `<!-- /skillgit:NAME -->` for any NAME made of letters,
  digits, `_`, `.` and `-` (e.g. `slow-update`). Its span runs from the `<` of the opening marker to the `>` of
  the closing one. Regions do not nest: a region ends at the first closing marker with its own name, and markers
  inside it are part of its content. An opening marker without a closing one protects everything up to the end of
  the document (and is reported in `Doc.problems`); a stray closing marker protects just itself.
- Everything else is the editable body. `split_document` never raises: it describes whatever it is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillgit.errors import SkillgitError

FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\r?\n(?:.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)
REGION_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
MARKER_RE = re.compile(r"<!--[ \t]*(/?)skillgit:(" + _NAME + r")[ \t]*-->")
SLOW_UPDATE_REGION = "slow-update"


def open_marker(name: str) -> str:
    return f"<!-- skillgit:{name} -->"


def close_marker(name: str) -> str:
    return f"<!-- /skillgit:{name} -->"


@dataclass(frozen=True)
class Region:
    """A protected region: `start`/`end` cover both markers, `inner_start`/`inner_end` the text between them."""

    name: str
    start: int
    end: int
    inner_start: int
    inner_end: int
    closed: bool = True


@dataclass(frozen=True)
class Doc:
    text: str
    front_matter: str  # exact bytes, "" when the document has none
    regions: tuple[Region, ...]
    stray_markers: tuple[tuple[int, int], ...] = ()  # closing markers without an opening one
    problems: tuple[str, ...] = ()

    @property
    def body_start(self) -> int:
        return len(self.front_matter)

    def region(self, name: str) -> Region | None:
        """The first region called `name`, or None."""
        return next((r for r in self.regions if r.name == name), None)

    def inner(self, region: Region) -> str:
        return self.text[region.inner_start:region.inner_end]

    def protected_spans(self, *, allow_front_matter: bool = False) -> list[tuple[int, int, str]]:
        """(start, end, label) of every span an edit must not touch, in document order."""
        spans: list[tuple[int, int, str]] = []
        if self.front_matter and not allow_front_matter:
            spans.append((0, len(self.front_matter), "the front matter"))
        spans += [(r.start, r.end, f"protected region '{r.name}'") for r in self.regions]
        spans += [(s, e, "a stray skillgit marker") for s, e in self.stray_markers]
        return sorted(spans)

    def editable_end(self) -> int:
        """Where `append` inserts: the end of the document, or the start of the run of protected regions that
        ends it (only whitespace after them), so that appended rules stay above e.g. the slow-update section."""
        end = len(self.text)
        for region in reversed(self.regions):
            if region.start >= self.body_start and not self.text[region.end:end].strip():
                end = region.start
            else:
                break
        return max(end, self.body_start)


def split_document(text: str) -> Doc:
    """Describe `text`: its front matter, protected regions, stray markers and structural problems."""
    match = FRONT_MATTER_RE.match(text)
    front = match.group(0) if match else ""
    regions: list[Region] = []
    stray: list[tuple[int, int]] = []
    problems: list[str] = []
    pos = len(front)
    while True:
        marker = MARKER_RE.search(text, pos)
        if marker is None:
            break
        closing, name = marker.group(1) == "/", marker.group(2)
        if closing:
            stray.append((marker.start(), marker.end()))
            problems.append(f"closing marker for region '{name}' without an opening marker")
            pos = marker.end()
            continue
        end_re = re.compile(r"<!--[ \t]*/skillgit:" + re.escape(name) + r"[ \t]*-->")
        end = end_re.search(text, marker.end())
        if end is None:
            regions.append(Region(name, marker.start(), len(text), marker.end(), len(text), closed=False))
            problems.append(f"region '{name}' is not closed; it protects the rest of the document")
            break
        regions.append(Region(name, marker.start(), end.end(), marker.end(), end.start()))
        pos = end.end()
    return Doc(text, front, tuple(regions), tuple(stray), tuple(problems))


def check_region_name(name: str) -> str:
    if not REGION_NAME_RE.match(name or ""):
        raise SkillgitError(f"invalid protected region name {name!r}",
                            "use letters, digits, '_', '.' and '-', starting with a letter or digit")
    return name


def strip_trailing_blank_lines(text: str) -> str:
    """Remove trailing empty or whitespace-only lines (and the newline before them), keeping trailing spaces of
    the last real line (a Markdown hard break)."""
    return re.sub(r"(?:\r?\n[ \t]*)+\Z", "", text)
