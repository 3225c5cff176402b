"""The prompt's own frame, as weak teachers copy it back: the protocol tags a skill is shown in (`<skill>`,
`<file path="…">`, every tag of `tagcodec.TAGS`), a Markdown heading imitated as a tag (`<# Skill>`…`</#Skill>`) and
a Markdown fence around a whole answer. Pure functions over untrusted model text; each says what it removed, so
the caller can record it (see docs/ARCHITECTURE.md, "Edits and protected regions").

- `strip_wrapper(text)`: an edit's target or content without the frame, and the pieces removed.
- `unframe_rewrite(text)`: a whole rewritten skill without a `<skill>` frame or a `markdown` fence around it (a
  package's `<file path>` blocks are its format and stay), and a note.
"""

from __future__ import annotations

import re

from skillgit.tagcodec import TAGS

__all__ = ["strip_wrapper", "unframe_rewrite", "shown", "FILE_FRAME_RE", "CONTENT_FRAME_RE"]

# What `prompts.block_skill` wraps a skill in, and what weak teachers copy back into their edits with it.
_TAG_RE = re.compile(r"</?(?:" + "|".join(sorted(TAGS, key=len, reverse=True)) + r")(?:\s+[\w-]+=\"[^\"]*\")*\s*/?>")
_FRAME_TAG_RE = re.compile(r"</?(?:skill|file)(?:\s+[\w-]+=\"[^\"]*\")*\s*/?>")
FILE_FRAME_RE = re.compile(r"<file\s+path=\"([^\"]*)\"[^>]*>")
# a Markdown heading imitated as a tag: `<# Skill>` … `</#Skill>`
_HEADING_OPEN_RE = re.compile(r"<(#{1,6})[ \t]*([^<>\n]*?)[ \t]*>")
_HEADING_CLOSE_RE = re.compile(r"</[ \t]*#{1,6}[^<>\n]*>")
_FENCE_RE = re.compile(r"\A(`{3,}|~{3,})[ \t]*([\w+-]*)[ \t]*\n(.*?)\n?[ \t]*\1[ \t]*\Z", re.S)
CONTENT_FRAME_RE = re.compile(r"\A\s*(?:<(?:skill|file)[\s>]|<#|(?:`{3,}|~{3,})[ \t]*(?:markdown|md)[ \t]*\n)",
                               re.IGNORECASE)


def _wrapper_re(tags: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<{name}>{r.pattern})" for name, r in
                               (("tag", tags), ("close", _HEADING_CLOSE_RE), ("open", _HEADING_OPEN_RE))))


_WRAPPER_RE, _FRAME_RE = _wrapper_re(_TAG_RE), _wrapper_re(_FRAME_TAG_RE)


def strip_wrapper(text: str, *, frame_only: bool = False) -> tuple[str, list[str]]:
    """`text` without the prompt's own wrapper, and the pieces removed (in order; [] when there were none).

    Removed: protocol tags (every tag of `tagcodec.TAGS`, with or without attributes, open or close; only `<skill>`
    and `<file …>` when `frame_only`), headings imitated as tags (`<# Skill>` becomes `# Skill`, `</#Skill>` goes),
    then a Markdown fence around the whole rest (only a `markdown`/`md` one when `frame_only`: a content that is
    one unlabelled code block is meant as one). Each removed tag leaves a line break, so words it separated stay
    apart; the result is stripped."""
    removed: list[str] = []
    pattern = _FRAME_RE if frame_only else _WRAPPER_RE

    def cut(match: re.Match[str]) -> str:
        removed.append(match.group(0))
        if match.lastgroup != "open":
            return "\n"
        heading = _HEADING_OPEN_RE.fullmatch(match.group(0))
        assert heading is not None  # the "open" alternative is that very pattern
        return f"\n{heading.group(1)} {heading.group(2)}\n"

    out = pattern.sub(cut, text).strip()
    fence = _FENCE_RE.match(out)
    if fence and (not frame_only or fence.group(2).lower() in ("markdown", "md")):
        removed.append(f"{fence.group(1)}{fence.group(2)} fence")
        out = fence.group(3).strip("\n")
    return (out.strip() if removed else text), removed


def shown(pieces: list[str]) -> str:
    """The removed pieces for a reason: distinct, in order, at most five."""
    distinct = list(dict.fromkeys(pieces))
    more = f", +{len(distinct) - 5} more" if len(distinct) > 5 else ""
    return ", ".join(distinct[:5]) + more


_REWRITE_FRAME = re.compile(r"\A\s*<skill>[ \t]*\n(.*?)\n?[ \t]*</skill>\s*\Z", re.S)
_REWRITE_FENCE = re.compile(r"\A\s*(`{3,}|~{3,})[ \t]*(?:markdown|md)[ \t]*\n(.*?)\n?[ \t]*\1\s*\Z", re.S | re.I)


def unframe_rewrite(text: str) -> tuple[str, str]:
    """A rewritten skill without the frame the prompt showed the skill in (`<skill>`…`</skill>`) or a Markdown fence
    around all of it, and a note of what was stripped ("" when nothing was). A package's `<file path>` blocks are
    its format and stay."""
    removed: list[str] = []
    for _ in range(2):  # a fence inside the frame, or the frame inside a fence
        frame, fence = _REWRITE_FRAME.match(text), _REWRITE_FENCE.match(text)
        if frame:
            text = frame.group(1)
            removed.append("<skill> frame")
        elif fence:
            text = fence.group(2)
            removed.append(f"{fence.group(1)}markdown fence")
    return text, ("prompt's " + " and ".join(removed) + " stripped") if removed else ""
