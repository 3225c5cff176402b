"""Text that reaches git objects or a terminal: control characters stripped (stored) or escaped (shown).

Model output is untrusted text. A NUL byte makes `git commit-tree` refuse a message; terminal escapes (ESC, BEL),
C1 controls and bidirectional overrides (U+202E …) in a subject or note would reach `skillgit log` / `show` raw and
could rewrite what a reviewer sees. So: `clean` removes them from anything we store (keeping newlines and tabs
where a field is multi-line), `shown` makes them visible as `\\x1b`, `\\u202e` … in anything we print.
"""

from __future__ import annotations

import functools
import re


@functools.cache
def _rx(pattern: str) -> re.Pattern[str]:
    """The patterns below, compiled on first use and kept (never evicted, unlike `re`'s own cache): a character
    class of non-ASCII ranges costs ~2 M instructions to compile, at every start of a command that needs few."""
    return re.compile(pattern)


# C0 controls except \t \n \r, DEL, C1 controls, and the bidi/zero-width formatting characters that can disguise text.
_FORMATTING = "\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff"
_UNSAFE = f"[\x00-\x08\x0b\x0c\x0e-\x1f{_FORMATTING}]"
_UNSAFE_LINE = f"[\x00-\x1f{_FORMATTING}]"


def clean(text: str, *, multiline: bool = True) -> str:
    """`text` without unsafe characters (with `multiline=False` also without tabs and line breaks, which become
    spaces). CRLF becomes LF."""
    if multiline:
        return _rx(_UNSAFE).sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _rx(_UNSAFE_LINE).sub(lambda m: " " if m.group() in "\t\n\r" else "", text)


def has_unsafe(text: str) -> bool:
    return bool(_rx(_UNSAFE).search(text.replace("\r\n", "\n")))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# What `shown` escapes in multi-line text: the unsafe characters and a carriage return that does not end a line
# (`\r` alone moves the cursor back over what the line showed: "rejected\raccepted" reads "accepted").
_SHOWN = f"[\x00-\x08\x0b\x0c\x0e-\x1f{_FORMATTING}]|\r(?!\n)"


def shown(text: str, *, multiline: bool = True) -> str:
    """`text` safe to print on a terminal: unsafe characters (in multi-line text also a `\\r` that is not part of
    a CRLF) appear as escapes, never act."""
    pattern = _SHOWN if multiline else _UNSAFE_LINE
    return _rx(pattern).sub(_escape, text)


def shown_data(value: object) -> object:
    """JSON data (dicts, lists, strings, numbers) for a reader that displays the strings it parses (the dashboard's
    page): every string, dict keys too, passed through `shown` (multi-line), so that after `JSON.parse` no unsafe
    character is left to act, only its escape. The shape stays: numbers, booleans and None as they are, tuples as
    lists; any other object becomes its `str`, escaped (what `json.dumps(default=str)` would have written)."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, dict):
        return {shown(k) if isinstance(k, str) else k: shown_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown_data(v) for v in value]
    return shown(str(value))


# What `json.dumps` (ensure_ascii, its default) writes for a character `shown` escapes: `\b`, `\f`, `\r` (every
# one: `shown` keeps a CRLF's, but a false alarm only costs the walk) and `\uXXXX` for the other C0 controls, DEL,
# C1 and `_FORMATTING`. A string holds one of those characters exactly when its JSON holds one of these escapes
# (an escaped backslash before `u200e` text is a false alarm, never a miss).
_JSON_ESCAPED_UNSAFE = r"\\(?:[bfr]|u00[01][0-9a-f]|u007f|u00[89][0-9a-f]|u200[b-f]|u202[a-e]|u206[6-9]|ufeff)"


def shown_json(value: object) -> str:
    """`json.dumps(shown_data(value))`, byte for byte, without the walk when nothing needs escaping: the value is
    serialized first, and only if one compiled search finds the escape of an unsafe character there (or the value
    holds something JSON cannot write: `shown_data` turns it into a string) is it walked and serialized again."""
    import json

    try:
        document = json.dumps(value)
    except (TypeError, ValueError):
        return json.dumps(shown_data(value))
    if _rx(_JSON_ESCAPED_UNSAFE).search(document) is None:
        return document
    return json.dumps(shown_data(value))


_JSON_UNSAFE = f"[{_FORMATTING}]"


def json_shown(document: str) -> str:
    """A JSON document (as `json.dumps(..., ensure_ascii=False)` writes it, which escapes C0 controls only) safe to
    print on a terminal: DEL, C1 controls and the bidi/zero-width characters become `\\uXXXX` escapes too. They
    can stand only inside strings, so the document still parses to the same data."""
    return _rx(_JSON_UNSAFE).sub(lambda m: f"\\u{ord(m.group()):04x}", document)


# ---------------------------------------------------------------------------------------------- Markdown
# Text a model, a transcript or a collaborator's note wrote reaches Markdown that GitHub renders: pull-request
# bodies (`skillgit pr`), night reports (`skillgit sleep`) and `skillgit check` comments. There it must stay text:
# an image (`![x](https://tracker/pixel)`) would load when a reviewer opens the page, a link or raw HTML could
# dress up as something else, an @mention would ping people. `inert_markdown` and `code_span` are the only ways
# such text enters Markdown.
_URL = r"(?i)(?:\b[a-z][a-z0-9+.-]{0,31}:/{1,3}|\bwww\.|\b(?:mailto|data|javascript|vbscript):)[^\s`<>]*"
_MD_SPECIAL = r"[\\`\[\]|]"
# Only what could start markup is escaped, so that `p < 0.05`, `a -> b` and `R&D` read as written in a terminal
# too: `<` before a letter, `/`, `!` or `?` (a tag, comment, declaration or autolink) and `&` that would form an
# entity (`&lt;`, `&#64;`). A `>` is markup only at the start of a line (a quote): escaped there with `\`.
_TAG_START = r"<(?=[A-Za-z/!?])"
_ENTITY = r"&(?=#?[A-Za-z0-9]+;)"


def _inert_words(text: str) -> str:
    text = _rx(_MD_SPECIAL).sub(lambda m: "\\" + m.group(), text)  # no link, image or code syntax, no table cell break
    return _rx(_TAG_START).sub("&lt;", _rx(_ENTITY).sub("&amp;", text)).replace("@", "&#64;")


def inert_markdown(text: str) -> str:
    """One line of untrusted text, safe inside Markdown (also inside a table cell): whitespace runs (line breaks
    too) become one space; `\\`, `` ` ``, `[`, `]` and `|` are backslash-escaped, so no link, image, reference or
    code span can form (`![x](http://…)` shows as written); a `<` that could open a tag and a `&` that could form
    an entity are HTML-escaped (no raw HTML, no `<http://…>` autolink; `p < 0.05` and `a -> b` stay as written),
    a leading `>` is escaped (no quote); `@` becomes `&#64;` (no mention, no e-mail link); an address
    (`scheme://…`, `www.…`, `mailto:` / `data:` / `javascript:`) is shown as inline code, which GitHub never turns
    into a link."""
    flat = " ".join(clean(str(text), multiline=False).split())
    out, pos = [], 0
    for m in _rx(_URL).finditer(flat):
        out.append(_inert_words(flat[pos:m.start()]))
        out.append(code_span(m.group()).replace("|", "\\|"))
        pos = m.end()
    out.append(_inert_words(flat[pos:]))
    text = "".join(out)
    return "\\" + text if text.startswith(">") else text


def code_span(text: str) -> str:
    """Inline code holding `text` on one line, which the text itself cannot close early (the fence is longer than
    any backtick run in it). Markdown shows code literally: no link, image, HTML or mention inside."""
    flat = " ".join(clean(str(text), multiline=False).split())
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"
