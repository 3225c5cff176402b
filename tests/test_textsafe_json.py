"""`textsafe.shown_json`, the dashboard's one way out (`ui/server.py: _dumps`): byte for byte
`json.dumps(shown_data(value))`, with the walk skipped when the serialized value holds no escape of an unsafe
character. These tests compare the two on every character `shown` escapes, on plain data, and on what JSON cannot
write; a fast path that let one unsafe character through unescaped fails the first."""

from __future__ import annotations

import json
import sys

import pytest

from skillgit import textsafe
from skillgit.textsafe import shown, shown_data, shown_json


def _walked(value: object) -> str:
    return json.dumps(shown_data(value))


def _strings(value: object) -> list[str]:
    """Every string in parsed JSON, keys too."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _unsafe_characters() -> list[str]:
    """Every character `shown` escapes, asked of `shown` itself over all of Unicode (so a range added to it later
    is checked here too); `\r` stands alone (in a CRLF `shown` keeps it)."""
    return [ch for ch in map(chr, range(sys.maxunicode + 1)) if shown(ch) != ch]


def test_every_unsafe_character_is_escaped_wherever_it_stands():
    unsafe = _unsafe_characters()
    assert {"\x00", "\x1b", "\x7f", "\x9b", "\u202e", "\u2066", "\ufeff", "\r"} <= set(unsafe)
    for ch in unsafe:
        for value in (f"a{ch}b", {"reason": ["ok", ("deep", f"x{ch}")]}, {f"k{ch}": 1}, [1.5, None, {"n": f"{ch}"}]):
            fast = shown_json(value)
            assert fast == _walked(value), (hex(ord(ch)), value)
            assert not any(ch in text for text in _strings(json.loads(fast)))  # what the page parses: no `ch`


def test_plain_data_is_serialized_once_and_not_walked(monkeypatch):
    """No unsafe character: the walk is never run (it is made to fail here), and the document is what the walk
    would have written: non-ASCII text, tabs, line breaks, CRLF-free text, numbers, booleans, None, tuples, keys
    that are not strings."""
    plain = {"reason": "plain — naïve 日本語 ✓ 🎉", "lines": "a\tb\nc", "n": 3, "x": 2.5, "ok": True, "none": None,
             "pair": ("a", "b"), 7: ["seven"], "nested": [{"k": ["v", 1, -2e-9, float("inf")]}]}
    walked = _walked(plain)

    def no_walk(value: object) -> object:
        raise AssertionError("the walk ran on plain data")

    monkeypatch.setattr(textsafe, "shown_data", no_walk)
    assert shown_json(plain) == walked
    monkeypatch.undo()
    # text that only looks like an escape (a backslash, then `u200e`): walked, to the same document
    assert shown_json({"slash": "a\\u200e"}) == _walked({"slash": "a\\u200e"}) == '{"slash": "a\\\\u200e"}'


def test_every_safe_character_comes_out_as_the_walk_writes_it():
    safe = "".join(ch for ch in map(chr, range(sys.maxunicode + 1)) if shown(ch) == ch and ch != "\r")
    assert shown_json({"all": safe}) == _walked({"all": safe})


def test_what_json_cannot_write_is_walked_as_before():
    class Odd:
        def __str__(self) -> str:
            return "odd\u202e"

    value = {"obj": Odd(), "items": [Odd(), "fine"]}
    assert shown_json(value) == _walked(value) == '{"obj": "odd\\\\u202e", "items": ["odd\\\\u202e", "fine"]}'
    with pytest.raises(TypeError):  # a key JSON cannot write fails as it did
        shown_json({("a", "b"): 1})
