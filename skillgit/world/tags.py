"""A tiny reader (and writer) for the tagged data blocks of the teacher protocol (docs/ARCHITECTURE.md).

The simulated teacher reads its prompt exactly as a real teacher would: as text. This module is how it finds the
blocks in that text. It depends on nothing in skillgit so that the world works (and is tested) on its own;
`skillgit/prompts.py` is the project's real renderer, and the writer here (`block`, `prompt`, ...) exists only so
that the world's own tests and its stand-alone hill climber (`climb.py`) can build prompts in the same format.

Contract:
- `find(text, tag)` returns every `<tag attr="v" ...>body</tag>` block in document order (tags sit on their own
  lines; see `find`). Blocks of *different* tags may nest; a block never contains another block of its own tag.
- `first(text, tag)` is the first block's body or None; it never raises on odd input.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from functools import lru_cache

_ATTR = re.compile(r'([A-Za-z_][\w-]*)\s*=\s*"([^"]*)"')


@dataclass(frozen=True)
class Block:
    tag: str
    body: str
    attrs: dict[str, str] = field(default_factory=dict)

    def first(self, tag: str) -> str | None:
        return first(self.body, tag)

    def find(self, tag: str) -> list["Block"]:
        return find(self.body, tag)


# prompts.py escapes a content line that starts with a protocol tag (`<` -> `&lt;`, `&lt;` -> `&amp;lt;`), once per
# nesting level, so that no student output can open or close a block. Reading a block undoes one level.
_ESCAPED_LINE = re.compile(r"^((?:&amp;)*&lt;)(?=/?[A-Za-z_]\w*(?:[\s>/]|$))", re.M)


def _unescape(text: str) -> str:
    return _ESCAPED_LINE.sub(lambda m: "<" if m.group(1) == "&lt;" else m.group(1)[len("&amp;"):], text)


@lru_cache(maxsize=128)
def _line_patterns(tag: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    t = re.escape(tag)
    opening = re.compile(rf'^[ \t]*<{t}((?:\s+[A-Za-z_][\w-]*\s*=\s*"[^"]*")*)\s*>(.*?)\r?$', re.M)
    closing = re.compile(rf"^[ \t]*</{t}>[ \t]*\r?$", re.M)
    return opening, closing


def find(text: str, tag: str) -> list[Block]:
    """Every `<tag ...>…</tag>` block of `text`, in order (at any depth; same-name blocks do not nest).

    As in prompts.py, a block opens on a line starting with `<tag ...>` and closes at the first later line that is
    exactly `</tag>`; a one-line `<tag ...>inner</tag>` is also a block. The body is unescaped one level.
    """
    if not text or f"<{tag}" not in text:
        return []
    opening, closing = _line_patterns(tag)
    close = f"</{tag}>"
    out: list[Block] = []
    pos = 0
    while (m := opening.search(text, pos)) is not None:
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(1) or "")}
        rest = m.group(2).rstrip()
        if rest:
            pos = m.end()
            if rest.endswith(close):
                out.append(Block(tag, _unescape(rest[: -len(close)]), attrs))
            continue
        c = closing.search(text, m.end())
        if c is None:
            pos = m.end()
            continue
        start = min(m.end() + 1, c.start())
        body = text[start:max(start, c.start() - 1)]
        out.append(Block(tag, _unescape(body.rstrip("\r")), attrs))
        pos = c.end()
    return out


def first(text: str, tag: str) -> str | None:
    found = find(text, tag)
    return found[0].body if found else None


def stage_of(text: str) -> str | None:
    """The stage named on the first non-empty line, `<stage>NAME</stage>`; None if the line is not that."""
    for line in (text or "").splitlines():
        if line.strip():
            m = re.fullmatch(r"\s*<stage>\s*([A-Za-z_]+)\s*</stage>\s*", line)
            return m.group(1).lower() if m else None
    return None


def ints(text: str | None) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text or "")]


# ---------------------------------------------------------------------------------------------- writer (tests)
def block(tag: str, body: str = "", **attrs: object) -> str:
    attr_text = "".join(f' {k}="{html.escape(str(v), quote=True)}"' for k, v in attrs.items())
    return f"<{tag}{attr_text}>\n{body}\n</{tag}>"


def trajectory(item_id: str, outcome: str, hard: float, soft: float, input: str, output: str,
               expected: str | None = None, feedback: str | None = None) -> str:
    parts = [block("input", input), block("output", output)]
    if expected is not None:
        parts.append(block("expected", expected))
    if feedback is not None:
        parts.append(block("feedback", feedback))
    return block("trajectory", "\n".join(parts), id=item_id, outcome=outcome, hard=f"{hard:.2f}", soft=f"{soft:.2f}")


def edit(edit_id: str, op: str, content: str = "", target: str = "", rationale: str = "", support: int = 1,
         source: str = "failure") -> str:
    body = "\n".join([block("target", target), block("content", content), block("rationale", rationale)])
    return block("edit", body, id=edit_id, op=op, support=support, source=source)


def rejected_edits(entries: list[tuple[str, str, str, float, str]]) -> str:
    """`entries` = (op, target, content, delta, reason)."""
    body = "\n".join(block("rejected", "\n".join([block("target", t), block("content", c), block("reason", r)]),
                           op=op, delta=f"{d:.3f}") for op, t, c, d, r in entries)
    return block("rejected_edits", body)


def prompt(stage: str, *blocks: str) -> str:
    """A user message as prompts.py lays it out: the stage line first, then the data blocks."""
    return "\n".join([f"<stage>{stage}</stage>", *[b for b in blocks if b]])
