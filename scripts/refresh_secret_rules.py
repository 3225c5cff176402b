"""Regenerate skillgit/secret_rules.py from gitleaks' maintained rule set (MIT licence).

    git clone --depth 1 https://github.com/gitleaks/gitleaks /tmp/gitleaks
    python scripts/refresh_secret_rules.py /tmp/gitleaks/config/gitleaks.toml \\
        --commit "$(git -C /tmp/gitleaks rev-parse HEAD)" --date "$(git -C /tmp/gitleaks log -1 --format=%cs)"
    python -m pytest -q -n 0 tests/test_redact.py tests/test_secret_corpus.py

What it does (each step is the reason a rule may look different from gitleaks.toml):
- RE2 → Python `re`: a flag group in the middle of a pattern (`p8e-(?i)[a-z0-9]{32}`) becomes a scoped group
  (`p8e-(?i:[a-z0-9]{32})`), `\\z` becomes `\\Z`, POSIX classes (`[[:alnum:]]`) are spelled out, and a `[` inside a
  character class is escaped; every pattern must compile without a warning or the script fails.
- The context prefix `[\\w.-]{0,50}?` that opens the keyword rules is dropped: it only widens the match to the
  left, never changes the secret, and costs a 50-step retry at every position in Python's backtracking engine.
- Rules that apply to a file name (`path`) are left out: a transcript has no file to name. Allowlists that name
  paths are left out too (their condition cannot be checked), and so are stopword lists: gitleaks drops a
  finding whose secret *contains* one of ~1,400 English words, which keeps code review quiet but would let a
  random key through one time in a hundred; a redactor prefers masking.
Needs Python ≥ 3.11 (tomllib). Output: skillgit/secret_rules.py (never edit it by hand, except its last part, from
the `# ---- hand-kept:` line on: our own rules, which a refresh carries over as they are).
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "skillgit" / "secret_rules.py"
CONTEXT_PREFIXES = ("[\\w.-]{0,50}?",)
POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z", "upper": "A-Z",
         "xdigit": "0-9A-Fa-f", "space": " \\t\\r\\n\\v\\f", "punct": "!-/:-@\\[-`{-~", "word": "\\w"}

MIT = """\
Copyright (c) 2019 Zachary Rice

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without limitation
the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to
permit persons to whom the Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial portions of
the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO
THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF
CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
IN THE SOFTWARE."""


def translate(pattern: str) -> str:
    """An RE2 pattern as an equivalent Python `re` pattern (see the module docstring)."""
    out: list[str] = []
    stack: list[int] = []  # for each open group: how many scoped flag groups to close with it
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            esc = pattern[i:i + 2]
            out.append("\\Z" if esc == "\\z" else esc)
            i += 2
            continue
        if in_class:
            posix = re.match(r"\[:(\w+):\]", pattern[i:])
            if posix:
                out.append(POSIX[posix.group(1)])
                i += posix.end()
                continue
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            elif c == "[":
                c = "\\["
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                if pattern.startswith("]", i):
                    out.append("\\]")
                    i += 1
                continue
            out.append(c)
            i += 1
            continue
        flags = re.match(r"\(\?([a-z]+)\)", pattern[i:])
        if flags and (i > 0 or stack):
            out.append(f"(?{flags.group(1)}:")  # a mid-pattern flag: scoped to the rest of its group
            if stack:
                stack[-1] += 1
            else:
                stack.append(1)  # top level: closed at the end
            i += flags.end()
            continue
        if c == "(":
            stack.append(0)
        elif c == ")" and stack:
            out.append(")" * stack.pop())
        out.append(c)
        i += 1
    out.append(")" * sum(stack))
    return "".join(out)


def strip_context(pattern: str) -> str:
    for prefix in CONTEXT_PREFIXES:
        for lead in ("(?i)", "(?i:", ""):
            head = lead + prefix
            if pattern.startswith(head):
                pattern = lead + pattern[len(head):]
            head2 = prefix + lead + prefix
            if lead and pattern.startswith(head2):
                pattern = lead + pattern[len(head2):]
    return pattern


def compiles(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        re.compile(pattern)


def build(config: dict, commit: str, date: str) -> tuple[str, list[str]]:
    rows, dropped = [], []
    for rule in config["rules"]:
        rid = rule["id"]
        if "path" in rule or "regex" not in rule:
            dropped.append(f"{rid}: matches a file name (path), not text")
            continue
        regex = strip_context(translate(rule["regex"]))
        compiles(regex)
        secret, match = [], []
        for allow in rule.get("allowlists", []):
            if "paths" in allow:
                continue
            target = allow.get("regexTarget", "secret")
            for rx in allow.get("regexes", []):
                rx = translate(rx)
                compiles(rx)
                (match if target in ("match", "line") else secret).append(rx)
        rows.append((rid, regex, int(rule.get("secretGroup", 0)), float(rule.get("entropy", 0.0)),
                     tuple(k.lower() for k in rule.get("keywords", ())), tuple(secret), tuple(match)))
    global_allow = []
    for rx in config.get("allowlist", {}).get("regexes", []):
        rx = translate(rx)
        compiles(rx)
        global_allow.append(rx)
    lines = [
        '"""Secret detectors vendored from gitleaks\' maintained rule set — GENERATED, do not edit by hand.',
        "",
        f"Source: https://github.com/gitleaks/gitleaks/blob/{commit}/config/gitleaks.toml ({date}).",
        "Refresh: scripts/refresh_secret_rules.py (its docstring says how and what it changes: RE2 → Python,",
        "the context prefix dropped, path rules / path allowlists / stopwords left out).",
        f"{len(rows)} rules; left out: {len(dropped)} ({'; '.join(dropped) or 'none'}).",
        "",
        "Each rule: (id, pattern, secret group (0: the first group that matched, else the whole match),",
        "           minimum Shannon entropy of the secret (0: none), keywords (lower case; gitleaks' prefilter),",
        "           allowlist patterns tested on the secret, allowlist patterns tested on the whole match).",
        "",
        "gitleaks is distributed under the MIT licence:",
        "",
        *MIT.splitlines(),
        '"""',
        "# ruff: noqa: E501",
        "",
        f"SOURCE = {f'gitleaks/gitleaks@{commit}'!r}",
        "",
        "RULES: tuple[tuple[str, str, int, float, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (",
        *(f"    {row!r}," for row in rows),
        ")",
        "",
        "GLOBAL_ALLOW: tuple[str, ...] = (",
        *(f"    {rx!r}," for rx in global_allow),
        ")",
        "",
    ]
    return "\n".join(lines), dropped


HAND_KEPT = "# ---- hand-kept:"


def hand_kept(path: Path) -> str:
    """The part of the current file from its `HAND_KEPT` line on (our own rules, e.g. `VALUE_RULES`), kept as it
    is; "" when there is none."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    at = text.find(HAND_KEPT)
    return "\n" + text[at:] if at >= 0 else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("toml", type=Path, help="gitleaks' config/gitleaks.toml")
    parser.add_argument("--commit", required=True, help="the gitleaks commit the file comes from")
    parser.add_argument("--date", default="", help="that commit's date (YYYY-MM-DD)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    try:
        import tomllib
    except ModuleNotFoundError:
        parser.error("needs Python ≥ 3.11 (tomllib)")
    text, dropped = build(tomllib.loads(args.toml.read_text(encoding="utf-8")), args.commit, args.date)
    args.out.write_text(text + hand_kept(args.out), encoding="utf-8")
    print(f"wrote {args.out} ({text.count(chr(10))} lines); left out {len(dropped)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
