"""The teacher protocol's tag codec: blocks of text between `<tag attr="…">` and `</tag>` lines, escaped so that no
content can close or open a block.

Contracts (see docs/ARCHITECTURE.md, "The teacher protocol"):
- Tags sit on their own lines (one-line blocks like `<budget>4</budget>` excepted). A block's text loses its
  trailing newlines; an empty container holds `(none)`.
- Text inside a block whose line starts (after optional indentation) with one of the protocol's tags (`TAGS`) is
  escaped (`<` → `&lt;`, and an already escaped `&lt;` gains one `&amp;`), once per nesting level; `parse_blocks`
  undoes one level per call, `unescape_all` every level. Attribute values are HTML-escaped.

A leaf (no skillgit import): the teacher prompts (`prompts.py`) and the skill-package bundle (`package.py`, which
the store reads and writes) share it without the store depending on the model layer.
"""

from __future__ import annotations

import html
import re
from typing import Any, Iterable

NONE = "(none)"

# Every tag the protocol uses; content lines starting with one of them are escaped.
TAGS: tuple[str, ...] = (
    "stage", "skill", "budget", "bounds", "stats", "trajectory", "input", "output", "expected", "feedback",
    "trace", "edit", "target", "content", "rationale", "rejected_edits", "rejected", "reason", "meta_skill",
    "comparison", "pair", "before_output", "after_output", "accepted_steps", "rejected_steps", "step",
    "candidate", "file",
    "recalled", "recalled_trajectory",  # loop/recall.py
    "probes", "probe", "question", "hint", "answer",  # deep reflect (loop/deep_reflect.py)
)
_TAG_ALT = "|".join(sorted(TAGS, key=len, reverse=True))
# Line-initial (after optional indentation: some readers accept indented tags) protocol tags, raw or escaped.
_ESCAPE_RE = re.compile(r"^([ \t]*)((?:&amp;)*&lt;|<)(?=/?(?:" + _TAG_ALT + r")(?:[\s>/]|$))", re.M)
_UNESCAPE_RE = re.compile(r"^([ \t]*)((?:&amp;)*&lt;)(?=/?(?:" + _TAG_ALT + r")(?:[\s>/]|$))", re.M)
_ANY_LEVEL_RE = re.compile(r"^([ \t]*)(?:&amp;)*&lt;(?=/?(?:" + _TAG_ALT + r")(?:[\s>/]|$))", re.M)
_OPEN_LINE_RE = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)((?:\s+[A-Za-z_][\w-]*=\"[^\"]*\")*)\s*>(.*)\Z")
_ATTR_RE = re.compile(r"([A-Za-z_][\w-]*)=\"([^\"]*)\"")


# ---------------------------------------------------------------------------------------------- escaping
def _escape(text: str, depth: int = 1) -> str:
    for _ in range(depth):
        text = _ESCAPE_RE.sub(lambda m: m.group(1) + ("&lt;" if m.group(2) == "<" else "&amp;" + m.group(2)), text)
    return text


def _unescape(text: str) -> str:
    return _UNESCAPE_RE.sub(lambda m: m.group(1) + ("<" if m.group(2) == "&lt;" else m.group(2)[len("&amp;"):]),
                            text)


def unescape_all(text: str) -> str:
    """Undo every level of block escaping: for text a teacher copied out of a prompt (an edit's target or
    content quoting a skill line that starts with a protocol tag)."""
    return _ANY_LEVEL_RE.sub(lambda m: m.group(1) + "<", text)


# ---------------------------------------------------------------------------------------------- writing
def attrs(pairs: Iterable[tuple[str, Any]]) -> str:
    """` k="v"` for each pair whose value is not None, values HTML-escaped."""
    return "".join(f' {k}="{html.escape(str(v), quote=True)}"' for k, v in pairs if v is not None)


def leaf(tag: str, text: str, depth: int, pairs: Iterable[tuple[str, Any]] = ()) -> str:
    """A block holding `text`, escaped for nesting level `depth` (1: a top-level block's content)."""
    body = _escape(text, depth).rstrip("\n")
    head = f"<{tag}{attrs(pairs)}>"
    return f"{head}\n{body}\n</{tag}>" if body else f"{head}\n</{tag}>"


def container(tag: str, children: list[str], pairs: Iterable[tuple[str, Any]] = ()) -> str:
    """A block holding other blocks (`(none)` when there are none)."""
    inner = "\n".join(children) if children else NONE
    return f"<{tag}{attrs(pairs)}>\n{inner}\n</{tag}>"


# ---------------------------------------------------------------------------------------------- reading
def parse_blocks(text: str, tag: str) -> list[tuple[dict[str, str], str]]:
    """The top-level `<tag …>` blocks of `text` as (attributes, inner text), inner text unescaped one level.

    Only blocks at the top level of `text` are returned (other blocks are skipped whole), so call it again on an
    inner text to go one level down (`child` does). A block's closing tag is the first line that is exactly
    `</tag>`; same-name blocks do not nest in this protocol. Lines that look like tags but are not ours, and
    unclosed blocks, are treated as text.
    """
    known = set(TAGS) | {tag}
    lines = text.split("\n")
    found: list[tuple[dict[str, str], str]] = []
    i = 0
    while i < len(lines):
        m = _OPEN_LINE_RE.match(lines[i].rstrip("\r"))
        if not m or m.group(1) not in known:
            i += 1
            continue
        name, attr_text, rest = m.group(1), m.group(2), m.group(3)
        close = f"</{name}>"
        if rest:
            if not rest.endswith(close):
                i += 1
                continue
            inner, i = rest[: -len(close)], i + 1
        else:
            j = next((k for k in range(i + 1, len(lines)) if lines[k].rstrip("\r") == close), None)
            if j is None:
                i += 1
                continue
            inner, i = "\n".join(lines[i + 1:j]), j + 1
        if name == tag:
            found.append(({k: html.unescape(v) for k, v in _ATTR_RE.findall(attr_text)}, _unescape(inner)))
    return found


def child(inner: str, tag: str) -> str | None:
    """The inner text of the first top-level `<tag>` block inside `inner`, or None."""
    blocks = parse_blocks(inner, tag)
    return blocks[0][1] if blocks else None
