"""Plain-text edits on a skill, for the simulated teacher's whole-skill stages (rewrite, full_rewrite) and the
stand-alone hill climber. The project's real applier is skillgit/patch.py; this one is deliberately small and
keeps the same promises: YAML front matter and `<!-- skillgit:NAME -->` … `<!-- /skillgit:NAME -->` regions are
never touched, appends go before a trailing protected region, and a target that is not found is skipped (never
silently turned into an append).
"""

from __future__ import annotations

import re

_OPEN_REGION = re.compile(r"^\s*<!--\s*skillgit:[\w.-]+\s*-->\s*$")
_CLOSE_REGION = re.compile(r"^\s*<!--\s*/skillgit:[\w.-]+\s*-->\s*$")


def _front_matter_end(lines: list[str]) -> int:
    """Index of the first line after the YAML front matter (0 when there is none)."""
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            return end + 1
    return 0


def _region_mask(lines: list[str], start: int) -> list[bool]:
    mask = [False] * len(lines)
    inside = False
    for i in range(start, len(lines)):
        if _OPEN_REGION.match(lines[i]):
            inside = True
        mask[i] = inside
        if _CLOSE_REGION.match(lines[i]):
            inside = False
    return mask


def _protected_mask(lines: list[str]) -> list[bool]:
    fm = _front_matter_end(lines)
    return [i < fm or r for i, r in enumerate(_region_mask(lines, fm))]


def editable_lines(skill: str) -> list[str]:
    """Non-empty lines outside front matter and protected regions, each occurring exactly once in the skill
    (so that it can serve as an edit target)."""
    lines = skill.split("\n")
    mask = _protected_mask(lines)
    out = []
    for line, protected in zip(lines, mask):
        text = line.strip()
        if text and not protected and skill.count(text) == 1:
            out.append(text)
    return out


def apply_edit(skill: str, op: str, target: str = "", content: str = "") -> tuple[str, bool]:
    """(new skill, applied?) for one edit; protected lines are never changed."""
    lines = skill.split("\n")
    mask = _protected_mask(lines)
    content = content.strip("\n")
    if op == "append":
        if not content.strip():
            return skill, False
        # After the last body line: skip trailing blank lines and a trailing protected region.
        fm = _front_matter_end(lines)
        regions = _region_mask(lines, fm)
        end = len(lines)
        while end > fm and (not lines[end - 1].strip() or regions[end - 1]):
            end -= 1
        new = lines[:end] + content.split("\n") + lines[end:]
        if new[-1] != "":
            new.append("")
        return "\n".join(new), True
    hits = [i for i, line in enumerate(lines) if target.strip() and target.strip() in line and not mask[i]]
    if len(hits) != 1:
        return skill, False
    i = hits[0]
    if op == "insert_after":
        if not content.strip():
            return skill, False
        return "\n".join(lines[:i + 1] + content.split("\n") + lines[i + 1:]), True
    if op == "replace":
        replaced = lines[i].replace(target.strip(), content, 1)
        return "\n".join(lines[:i] + replaced.split("\n") + lines[i + 1:]), True
    if op == "delete":
        rest = lines[i].replace(target.strip(), "", 1)
        return "\n".join(lines[:i] + ([rest] if rest.strip() else []) + lines[i + 1:]), True
    return skill, False
