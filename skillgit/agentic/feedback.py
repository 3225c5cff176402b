"""What the teacher reads of a verifier's run: `verify.feedback` of an agentic task (`spec.FEEDBACK_MODES`).

- `summary` (the default): a neutral account of what the agent's work did wrong, never the verifier's internals.
  The verdict and its counts; for pytest output (any result kind whose output has pytest's shape) each failing
  test by name with its message; for a JUnit report each failing test case with its message; for a `json`
  result its own `feedback` string when it has one; otherwise the lines the verifier printed, without
  tracebacks. A message is the first line of what the verifier's author wrote (`AssertionError: slugify has no
  docstring`, `Failed: DID NOT RAISE ValueError`); an assertion pytest rewrote (`assert 'a-b-' == 'a-b'`, whose
  values are the verifier's expected answers) shows as `AssertionError (the values it compares are not shown)`.
  Never the verifier's source lines, its `E` diff lines or its file paths. A verifier that prints the values it
  compares in its own messages shows them: write what is wrong, or choose `none`.
- `full`: the tail of the output as printed (`FULL_CHARS`; the verifier's source and compared values included).
- `none`: the verdict and its counts only.
Every mode reads the same for the same outcome: durations ("in 0.12s") are cut, so the call journal recognises
the teacher's prompts in a rerun.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from skillgit import process
from skillgit.types import Score

FULL_CHARS = 3000
SUMMARY_CHARS = 1500
MESSAGE_CHARS = 200
MESSAGE_LINES = 12  # printed lines a generic verifier's summary keeps (its last ones)
HIDDEN = "(the values it compares are not shown)"
_DURATION = re.compile(r"(\bin )\d+(?:\.\d+)?s\b(?: \(\d+:\d\d:\d\d\))?")
_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")  # a failure's section in pytest's long/short/native tracebacks
_SECTION_END = re.compile(r"^(={3,}|-{3,}) ")
_SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$")
_LOCATED = re.compile(r"^(?:[A-Za-z]:)?[^\s:]+\.py:\d+: (.+)$")  # --tb=line: path:line: message
_INTROSPECTION = re.compile(r"^(?:(?P<type>[A-Za-z_][\w.]*)\s*:\s*)?assert\b")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Failed|Failure|Exit|Interrupt|Warning|Timeout)"
                        r"(?::|$)")
_FRAME = re.compile(r'^File ".*", line \d+')


@dataclass(frozen=True)
class Case:
    """A failing test (or check) and its message as the verifier's author wrote it."""

    name: str
    message: str = ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def neutral(message: str) -> str:
    """The first line of a failure message, without what the assertion compared (see the module docstring)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = re.sub(r"^E\s+", "", lines[0]) if lines else ""
    m = _INTROSPECTION.match(text)
    if m:
        return f"{m.group('type') or 'AssertionError'} {HIDDEN}"
    if text.endswith("...") and _EXCEPTION.match(text):  # pytest cut the line to the terminal's width
        return text.split(":", 1)[0]
    return _clip(text, MESSAGE_CHARS)


def _test_name(node: str) -> str:
    """`tests/verify/test_x.py::TestA::test_b[1]` → `TestA::test_b[1]`; a file alone (a collection error) is said
    as such, without its path."""
    parts = node.split("::")
    return "::".join(parts[1:]) if len(parts) > 1 else "collecting the tests"


def _block_message(block: list[str]) -> str:
    """The message of one pytest failure section: its first `E` line, else its last exception line."""
    for line in block:
        if line.startswith("E ") and line[1:].strip():
            return line
    found = [line.strip() for line in block if _EXCEPTION.match(line.strip())]
    return found[-1] if found else ""


def pytest_cases(output: str) -> list[Case]:
    """The failing tests of pytest's output, in its order, each with its message (empty when none is found)."""
    lines = output.splitlines()
    named = [(m.group(2), m.group(3) or "") for line in lines if (m := _SUMMARY.match(line.strip()))]
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in lines:
        if _HEADER.match(line.strip()):
            current = []
            blocks.append(current)
        elif _SECTION_END.match(line) and "Captured" not in line:
            current = None
        elif current is not None:
            current.append(line)
    messages = [_block_message(b) for b in blocks] if blocks else \
        [m.group(1) for line in lines if (m := _LOCATED.match(line.strip()))]
    if not named:  # no short summary (-rN): the section headers name the tests
        named = [(f"::{m.group(1)}", "") for line in lines if (m := _HEADER.match(line.strip()))]
    paired = len(messages) == len(named)
    return [Case(_test_name(node), neutral(messages[i] if paired and messages[i] else short))
            for i, (node, short) in enumerate(named)]


def printed_lines(output: str) -> list[str]:
    """What a generic verifier printed, without tracebacks (frames, their source lines, `^^^` markers), pytest's
    `E`/`>` lines and JSON result lines; exception lines through `neutral`; the last `MESSAGE_LINES`, once each."""
    kept: list[str] = []
    after_frame = False
    for raw in output.splitlines():
        text = raw.strip()
        if not text:
            continue
        if after_frame and raw[:1] in (" ", "\t") and not _FRAME.match(text):
            after_frame = False  # the source line a traceback frame quotes
            continue
        after_frame = bool(_FRAME.match(text))
        if after_frame or text.startswith(("Traceback (most recent call last)", "E ", "> ")) or \
                set(text) <= set("^~ "):
            continue
        if text.startswith("{"):
            try:
                json.loads(text)
                continue
            except ValueError:
                pass
        line = neutral(text) if _EXCEPTION.match(text) or _INTROSPECTION.match(text) else _clip(text, MESSAGE_CHARS)
        if line and line not in kept:
            kept.append(line)
    return kept[-MESSAGE_LINES:]


def verdict(kind: str, score: Score, returncode: int, counts: dict[str, int]) -> str:
    """`the verifier passed` / `the verifier failed`, with the counts it rests on."""
    said = "passed" if score.hard >= 1.0 else "failed"
    if counts:
        detail = ", ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "errors", "skipped", "xfailed",
                                                          "xpassed") if counts.get(k))
    elif kind == "exit_code":
        detail = f"exit status {returncode}"
    else:
        detail = f"score {score.soft:.2f}"
    return f"the verifier {said} ({detail})"


def render(mode: str, kind: str, output: str, score: Score, returncode: int, *, counts: dict[str, int],
           cases: list[Case] | None = None, note: str = "") -> str:
    """The feedback of one verifier run in `mode` (see the module docstring). `counts`: pytest's summary counts
    ({} when the output has none); `cases`: a JUnit report's failing cases; `note`: a json result's feedback."""
    if mode == "full":
        return _DURATION.sub(r"\1…s", process.tail(output, FULL_CHARS))
    head = verdict(kind, score, returncode, counts)
    if mode == "none":
        return head
    if cases is None and (counts or any(_SUMMARY.match(line.strip()) for line in output.splitlines())):
        cases = pytest_cases(output)
    if cases is not None:
        details = [f"failed: {c.name}" + (f" — {c.message}" if c.message else "") for c in cases]
    elif note:
        details = [_clip(note.strip(), SUMMARY_CHARS)]
    else:
        details = printed_lines(output)
    return _clip("\n".join([head, *details]), SUMMARY_CHARS)
