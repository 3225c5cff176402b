"""Editing someone else's JSON config by inserting text, never by re-serialising it.

`skillgit install` adds one entry to files people own (`.mcp.json`, `.claude/settings.json`, `~/.claude.json`,
`.vscode/mcp.json`, `~/.copilot/mcp-config.json`). Loading and dumping such a file would reformat it and drop its
comments; so this module parses the text with positions (JSON, plus the `//` and `/* */` comments and trailing
commas of JSONC) and returns an *insertion*: an offset and the text to insert there. Everything else in the file
stays byte for byte, and removing the inserted text gives the exact previous file back.

Contracts
- `parse(text) -> Node` raises `JsonEditError` (with line and column) on anything that is not JSON/JSONC.
- `plan_insert(text, path, value, append=False) -> Insertion | None`: where and what to insert so that the value
  at `path` (keys of nested objects) is `value`, or — with `append` — so that the array at `path` gains `value`.
  Missing objects/arrays on the way are created. None when an equal value is already there; `JsonEditError` when
  something else is (the key is taken, or a container on the path is not an object/array).
- `find_owned(text, path, value, append=False) -> (start, end) | None`: the span to delete to remove that entry
  again (with its comma), when the file still holds it unchanged; used when the file changed since install.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_DECODER = json.JSONDecoder()


class JsonEditError(ValueError):
    """The text is not JSON/JSONC, or the requested entry conflicts with what is there."""


@dataclass
class Node:
    kind: str  # "object" | "array" | "value"
    start: int
    end: int  # one past the closing bracket / the value's last character
    value: Any = None  # for "value" nodes
    keys: list[tuple[str, int]] = field(default_factory=list)  # object: (key, offset of its opening quote)
    children: list[Node] = field(default_factory=list)  # object values (aligned with keys) or array items

    def get(self, key: str) -> Node | None:
        for (name, _), child in zip(self.keys, self.children):
            if name == key:
                return child
        return None

    def to_python(self) -> Any:
        if self.kind == "object":
            return {name: child.to_python() for (name, _), child in zip(self.keys, self.children)}
        if self.kind == "array":
            return [child.to_python() for child in self.children]
        return self.value


@dataclass(frozen=True)
class Insertion:
    """Insert `text` at `offset`. `path`/`value`/`append` name the entry that text adds (for a missing parent this
    is the outermost created key and its whole value), so `find_owned` can find it again."""

    offset: int
    text: str
    path: tuple[str, ...] = ()
    value: Any = None
    append: bool = False


class _Parser:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def fail(self, what: str) -> JsonEditError:
        line = self.s.count("\n", 0, self.i) + 1
        col = self.i - (self.s.rfind("\n", 0, self.i) + 1) + 1
        return JsonEditError(f"{what} at line {line}, column {col}")

    def ws(self) -> None:
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif s.startswith("//", self.i):
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end + 1
            elif s.startswith("/*", self.i):
                end = s.find("*/", self.i + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.i = end + 2
            else:
                return

    def value(self) -> Node:
        self.ws()
        if self.i >= len(self.s):
            raise self.fail("unexpected end of text")
        c = self.s[self.i]
        if c == "{":
            return self.container("object", "}")
        if c == "[":
            return self.container("array", "]")
        try:
            obj, end = _DECODER.raw_decode(self.s, self.i)
        except ValueError:
            raise self.fail("expected a JSON value") from None
        node = Node("value", self.i, end, obj)
        self.i = end
        return node

    def container(self, kind: str, close: str) -> Node:
        node = Node(kind, self.i, -1)
        self.i += 1
        while True:
            self.ws()
            if self.i >= len(self.s):
                raise self.fail(f"missing '{close}'")
            if self.s[self.i] == close:
                self.i += 1
                node.end = self.i
                return node
            if node.children:
                if self.s[self.i] != ",":
                    raise self.fail("expected ','")
                self.i += 1
                self.ws()
                if self.i < len(self.s) and self.s[self.i] == close:  # JSONC trailing comma
                    continue
            if kind == "object":
                key_at = self.i
                if self.i >= len(self.s) or self.s[self.i] != '"':
                    raise self.fail("expected a quoted key")
                key, self.i = _DECODER.raw_decode(self.s, self.i)
                self.ws()
                if self.i >= len(self.s) or self.s[self.i] != ":":
                    raise self.fail("expected ':'")
                self.i += 1
                node.keys.append((key, key_at))
            node.children.append(self.value())


def parse(text: str) -> Node:
    """The JSON/JSONC document `text` with positions; an empty (or whitespace/comment only) text is an error."""
    p = _Parser(text)
    node = p.value()
    p.ws()
    if p.i != len(text):
        raise p.fail("unexpected text after the JSON document")
    return node


# ------------------------------------------------------------------------------------------------ layout
def _line_indent(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    return re.match(r"[ \t]*", text[start:]).group()  # type: ignore[union-attr]


def _first_on_line(text: str, offset: int) -> bool:
    start = text.rfind("\n", 0, offset) + 1
    return not text[start:offset].strip()


def _indent_unit(text: str) -> str:
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _dump(value: Any, indent: str, unit: str, nl: str, multiline: bool) -> str:
    if not multiline:
        return json.dumps(value, ensure_ascii=False)
    lines = json.dumps(value, indent=unit, ensure_ascii=False).split("\n")
    return nl.join([lines[0], *(indent + line for line in lines[1:])])


def _entry(key: str | None, value: Any, indent: str, unit: str, nl: str, multiline: bool) -> str:
    dumped = _dump(value, indent, unit, nl, multiline)
    return dumped if key is None else f"{json.dumps(key, ensure_ascii=False)}: {dumped}"


def _insert_into(text: str, container: Node, key: str | None, value: Any) -> tuple[int, str]:
    """Offset and text that add `key: value` (object) or `value` (array, key None) as the container's last entry."""
    nl, unit = _newline(text), _indent_unit(text)
    multiline = "\n" in text[container.start:container.end] or not container.children
    if container.children:
        last = container.children[-1]
        first_at = container.keys[0][1] if container.kind == "object" else container.children[0].start
        if not multiline or not _first_on_line(text, first_at):
            return last.end, ", " + _entry(key, value, "", unit, nl, False)
        indent = _line_indent(text, first_at)
        return last.end, "," + nl + indent + _entry(key, value, indent, unit, nl, True)
    # empty container `{}` / `[ ]`: open it up on new lines, indented one level deeper than the line it is on
    outer = _line_indent(text, container.start)
    indent = outer + unit
    return container.start + 1, nl + indent + _entry(key, value, indent, unit, nl, True) + nl + outer


def _nest(path: list[str], value: Any, append: bool) -> Any:
    inner: Any = [value] if append else value
    for key in reversed(path):
        inner = {key: inner}
    return inner


def plan_insert(text: str, path: tuple[str, ...] | list[str], value: Any, append: bool = False) -> Insertion | None:
    """See the module contract. `text` must be a JSON/JSONC document whose top level is an object."""
    root = parse(text)
    if root.kind != "object":
        raise JsonEditError("the top level is not a JSON object")
    node, where = root, []
    keys = list(path)
    for depth, key in enumerate(keys):
        child = node.get(key)
        last = depth == len(keys) - 1
        if child is None:
            created = _nest(keys[depth + 1:], value, append)
            return Insertion(*_insert_into(text, node, key, created), tuple(keys[:depth + 1]), created, False)
        where.append(key)
        if last:
            if append:
                if child.kind != "array":
                    raise JsonEditError(f"'{'.'.join(where)}' is not a list")
                if any(item.to_python() == value for item in child.children):
                    return None
                return Insertion(*_insert_into(text, child, None, value), tuple(keys), value, True)
            if child.to_python() == value:
                return None
            raise JsonEditError(f"'{'.'.join(where)}' is already set to something else")
        if child.kind != "object":
            raise JsonEditError(f"'{'.'.join(where)}' is not an object")
        node = child
    raise JsonEditError("empty key path")


def _span(text: str, container: Node, index: int) -> tuple[int, int]:
    """The text span of entry `index` (key through value) with one adjacent comma."""
    start = container.keys[index][1] if container.kind == "object" else container.children[index].start
    end = container.children[index].end
    if index + 1 < len(container.children):  # up to the next entry's start: takes our comma and the whitespace
        nxt = container.keys[index + 1][1] if container.kind == "object" else container.children[index + 1].start
        return start, nxt
    if index > 0:  # the last one: from the end of the previous entry, taking the comma before us
        return container.children[index - 1].end, end
    return container.start + 1, container.end - 1  # the only one: leave an empty `{}` / `[]`


def find_owned(text: str, path: tuple[str, ...] | list[str], value: Any,
               append: bool = False) -> tuple[int, int] | None:
    """The span to delete to remove the entry `plan_insert(…, path, value, append)` added, if it is still there
    and unchanged; None otherwise (never raises on a document that parses)."""
    try:
        node = parse(text)
    except JsonEditError:
        return None
    keys = list(path)
    for depth, key in enumerate(keys):
        if node.kind != "object":
            return None
        names = [name for name, _ in node.keys]
        if key not in names:
            return None
        index = len(names) - 1 - names[::-1].index(key)
        child = node.children[index]
        if depth == len(keys) - 1:
            if not append:
                return _span(text, node, index) if child.to_python() == value else None
            if child.kind != "array":
                return None
            for j, item in enumerate(child.children):
                if item.to_python() == value:
                    return _span(text, child, j)
            return None
        node = child
    return None
