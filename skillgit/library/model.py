"""A skill library and its trigger cases: the records the activation track works on.

Contract:
- A library is a set of skill folders, each holding a `SKILL.md` whose YAML front matter has `name` and
  `description` (`Library.load(root, pattern)`, pattern default `*/SKILL.md`). A skill without a description, a
  name that is not the host's shape, or two skills with one name are errors that name the file and the fix.
- `Listing` is what a host shows its router about each skill: name and description, nothing of the body. The
  listing's size (`Library.listing_chars`) is what a host's listing budget bounds (Claude Code: about 15,000
  characters; each description at most `DESCRIPTION_LIMIT`).
- `with_listing(text, name=…, description=…)` rewrites only those two front matter keys of a skill text; every
  other byte (other keys, the body) is kept. `listing_of(text)` reads them back.
- A trigger case (`TriggerCase`) is a realistic prompt and whether one named skill should fire for it
  (`should_trigger`); near-miss decoys are cases with `should_trigger: false`. `load_cases` reads a JSONL file
  tolerantly: a bad line is an error naming the line, never skipped silently; so is a generated draft nobody has
  reviewed (`skillgit tasks suggest` writes them; `skillgit tasks approve` marks them read).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from skillgit.errors import ConfigError, SkillgitError
from skillgit.skilldoc import FRONT_MATTER_RE

DESCRIPTION_LIMIT = 1024  # Claude Code: a skill's description, in characters
NAME_LIMIT = 64  # … and its name
LISTING_BUDGET = 15_000  # the reported size of Claude Code's listing of skill descriptions
NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
DRAFT_KEY = "skillgit_draft"  # a generated row (`skillgit tasks suggest`): who wrote it; trained on once reviewed


def is_unreviewed_draft(row: Mapping[str, Any]) -> bool:
    """A generated row no person has approved yet (`"reviewed": true` approves it)."""
    return bool(row.get(DRAFT_KEY)) and row.get("reviewed") is not True


@dataclass(frozen=True)
class Listing:
    """What the router sees of one skill."""

    name: str
    description: str

    @property
    def chars(self) -> int:
        return len(self.name) + len(self.description)


@dataclass(frozen=True)
class LibrarySkill:
    """One skill of the library: its `SKILL.md` path relative to the library root, and its text."""

    path: str
    text: str

    @property
    def listing(self) -> Listing:
        return listing_of(self.text, self.path)

    @property
    def name(self) -> str:
        return self.listing.name


@dataclass(frozen=True)
class Library:
    skills: tuple[LibrarySkill, ...]

    @classmethod
    def load(cls, root: Path, pattern: str = "*/SKILL.md") -> Library:
        paths = sorted(p for p in Path(root).glob(pattern) if p.is_file())
        if not paths:
            raise ConfigError(f"no skill matches {pattern!r} under {root}",
                              "a library is folders each holding a SKILL.md with `name` and `description`")
        return cls.of([LibrarySkill(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")) for p in paths])

    @classmethod
    def of(cls, skills: Iterable[LibrarySkill]) -> Library:
        lib = cls(tuple(skills))
        seen: dict[str, str] = {}
        for s in lib.skills:
            name = s.name  # validates the front matter
            if name in seen:
                raise ConfigError(f"two skills are named {name!r}: {seen[name]} and {s.path}",
                                  "give each skill a unique `name` in its front matter")
            seen[name] = s.path
        return lib

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)

    def listings(self) -> tuple[Listing, ...]:
        return tuple(s.listing for s in self.skills)

    def listing_chars(self) -> int:
        return sum(x.chars for x in self.listings())

    def skill(self, name: str) -> LibrarySkill:
        for s in self.skills:
            if s.name == name:
                return s
        raise ConfigError(f"no skill named {name!r} in the library", f"choose one of {', '.join(self.names)}")

    def replaced(self, name: str, text: str) -> Library:
        """The library with skill `name`'s text replaced (the candidate's world)."""
        old = self.skill(name)
        return Library.of(LibrarySkill(s.path, text) if s is old else s for s in self.skills)


def front_matter(text: str, where: str = "SKILL.md") -> tuple[dict[str, Any], str]:
    """(the front matter's YAML mapping, its exact text): SkillgitError naming `where` when there is none."""
    match = FRONT_MATTER_RE.match(text)
    if not match:
        raise SkillgitError(f"{where}: no front matter", "start SKILL.md with ---, `name:` and `description:`, ---")
    block = match.group(0)
    inner = block.split("\n", 1)[1].rsplit("---", 1)[0] if "\n" in block else ""
    try:
        data = yaml.safe_load(inner) or {}
    except yaml.YAMLError as exc:
        raise SkillgitError(f"{where}: front matter is not YAML ({str(exc).splitlines()[0]})",
                            "fix the lines between the --- markers") from None
    if not isinstance(data, dict):
        raise SkillgitError(f"{where}: front matter is not a mapping", "write `name: …` and `description: …`")
    return data, block


def listing_of(text: str, where: str = "SKILL.md") -> Listing:
    data, _ = front_matter(text, where)
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not isinstance(description, str) or not description.strip():
        raise SkillgitError(f"{where}: front matter needs a `name` and a non-empty `description`",
                            "the description is what makes an agent pick the skill")
    check_listing(name, description, where)
    return Listing(name, " ".join(description.split()))


def check_listing(name: str, description: str, where: str = "SKILL.md", limit: int = DESCRIPTION_LIMIT) -> None:
    """The host's limits on a listing (Claude Code's; `limit`: skill.max_description_chars): SkillgitError naming
    the limit otherwise."""
    if not NAME_RE.match(name) or len(name) > NAME_LIMIT:
        raise SkillgitError(f"{where}: skill name {name!r} is not valid",
                            f"use lowercase letters, digits and hyphens, at most {NAME_LIMIT} characters")
    if len(description) > limit:
        raise SkillgitError(f"{where}: description is {len(description)} characters, over the host's limit of "
                            f"{limit}", "shorten it")


def with_listing(text: str, *, name: str | None = None, description: str | None = None) -> str:
    """`text` with its front matter's `name` / `description` replaced; everything else kept byte for byte."""
    data, block = front_matter(text, "SKILL.md")
    lines = block.splitlines(keepends=True)
    head, body_lines, tail = lines[0], lines[1:-1], lines[-1]
    new = {"name": name, "description": description}
    out: list[str] = []
    skipping = False
    for line in body_lines:
        key = re.match(r"([A-Za-z_][\w-]*):", line)
        if key:
            skipping = False
            if key.group(1) in new and new[key.group(1)] is not None:
                out.append(f"{key.group(1)}: {json.dumps(new[key.group(1)], ensure_ascii=False)}\n")
                skipping = True  # drop the old value's continuation lines
                continue
        elif skipping and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        else:
            skipping = False
        out.append(line)
    for k in ("name", "description"):
        if new[k] is not None and k not in data:
            out.append(f"{k}: {json.dumps(new[k], ensure_ascii=False)}\n")
    return head + "".join(out) + tail + text[len(block):]


@dataclass(frozen=True)
class TriggerCase:
    """A prompt and whether skill `skill` should fire for it; `split` is train | val | test ("" = unassigned)."""

    id: str
    skill: str
    prompt: str
    should_trigger: bool
    split: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "") -> TriggerCase:
        missing = [k for k in ("id", "skill", "prompt", "should_trigger") if k not in d]
        if missing or not isinstance(d.get("should_trigger"), bool):
            raise ConfigError(f"{where}: a trigger case needs id, skill, prompt and should_trigger (true|false)"
                              + (f"; missing {', '.join(missing)}" if missing else ""),
                              'e.g. {"id": "deploy-1", "skill": "deploy", "prompt": "…", "should_trigger": true}')
        return cls(str(d["id"]), str(d["skill"]), str(d["prompt"]), bool(d["should_trigger"]),
                   str(d.get("split") or ""))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "skill": self.skill, "prompt": self.prompt,
                               "should_trigger": self.should_trigger}
        if self.split:
            out["split"] = self.split
        return out


def load_cases(path: Path) -> list[TriggerCase]:
    cases: list[TriggerCase] = []
    seen: set[str] = set()
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{path}:{n}: not JSON ({exc})", "one JSON object per line") from None
        if isinstance(data, dict) and is_unreviewed_draft(data):
            raise ConfigError(f"{path}:{n}: trigger case {str(data.get('id'))[:60]!r} is a generated draft nobody has "
                              "reviewed yet", f"read and fix the drafts, then `skillgit tasks approve {path}` (or "
                              'set "reviewed": true on each)')
        case = TriggerCase.from_dict(data if isinstance(data, dict) else {}, f"{path}:{n}")
        if case.id in seen:
            raise ConfigError(f"{path}:{n}: duplicate trigger case id {case.id!r}", "give each case a unique id")
        seen.add(case.id)
        cases.append(case)
    return cases


def cases_of(cases: Sequence[TriggerCase], skill: str | None = None, split: str | None = None) -> list[TriggerCase]:
    return [c for c in cases if (skill is None or c.skill == skill) and (split is None or c.split == split)]
