"""Text that reaches git objects or a terminal: control characters stripped (stored) or escaped (shown).

Model output is untrusted text. A NUL byte makes `git commit-tree` refuse a message; terminal escapes (ESC, BEL),
C1 controls and bidirectional overrides (U+202E …) in a subject or note would reach `skillgit log` / `show` raw and
could rewrite what a reviewer sees. So: `clean` removes them from anything we store (keeping newlines and tabs
where a field is multi-line), `shown` makes them visible as `\\x1b`, `\\u202e` … in anything we print.
"""

from __future__ import annotations

import re

# C0 controls except \t \n \r, DEL, C1 controls, and the bidi/zero-width formatting characters that can disguise text.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def clean(text: str, *, multiline: bool = True) -> str:
    """`text` without unsafe characters (with `multiline=False` also without tabs and line breaks, which become
    spaces). CRLF becomes LF."""
    if multiline:
        return _UNSAFE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _UNSAFE_LINE.sub(lambda m: " " if m.group() in "\t\n\r" else "", text)


def has_unsafe(text: str) -> bool:
    return bool(_UNSAFE.search(text.replace("\r\n", "\n")))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, *, multiline: bool = True) -> str:
    """`text` safe to print on a terminal: unsafe characters appear as escapes, never act."""
    pattern = _UNSAFE if multiline else _UNSAFE_LINE
    return pattern.sub(_escape, text)
