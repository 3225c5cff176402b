"""Payload codecs: JSON-lines notes, commit messages with trailers, and rejected-tag messages. Pure, no git.

Notes are one JSON object per line, each with `"v": 1` and a `"kind"`. Lines are written with sorted keys and no
spaces so that the same record is byte-identical in every clone: `git notes merge -s cat_sort_uniq` can then
merge notes from two clones by concatenating, sorting and de-duplicating lines. Consequently the order of records
inside a note is not meaningful after a merge; readers select records by `kind`. Blank lines (which
`git notes append` inserts between paragraphs) are ignored; unknown keys are kept but never required.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable

from skillgit import textsafe
from skillgit.errors import GitStateError

VERSION = 1
CORRUPT = "(corrupt note)"  # what history/log shows for a note it cannot parse


# ---------------------------------------------------------------------------------------------- JSON lines
def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"note values must be JSON data, got {type(obj).__name__}")


def _clean(value: Any) -> Any:
    # NaN/inf are not JSON; a score that is not a number must not make the whole note unreadable elsewhere.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def encode_record(record: dict[str, Any]) -> str:
    """One record → one line. Adds `"v": 1` when missing; a record without a string `kind` is a bug (ValueError)."""
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str) or not record["kind"]:
        raise ValueError(f"a note record needs a non-empty string 'kind': {record!r}")
    data = {"v": VERSION, **record}
    return json.dumps(_clean(data), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_default,
                      allow_nan=False)


def encode(records: Iterable[dict[str, Any]]) -> str:
    """Records → note text (each line ends with a newline); empty when there are no records."""
    return "".join(encode_record(r) + "\n" for r in records)


def _lines(text: str) -> list[str]:
    # Records are joined by "\n" only. str.splitlines would also split on U+2028, U+0085 and form feeds, which
    # json.dumps(ensure_ascii=False) leaves raw inside strings, and so would cut a valid record in two.
    return text.split("\n")


def _parse_line(line: str) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not isinstance(data.get("v"), int):
        return None
    return data


def decode(text: str, commit: str = "") -> list[dict[str, Any]]:
    """Note text → records. A line that is not a JSON object with `v` and `kind` raises GitStateError that names
    the commit and how to repair the note."""
    records = []
    for number, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        record = _parse_line(line)
        if record is None:
            shown = line if len(line) <= 60 else line[:59] + "…"
            raise GitStateError(
                f"corrupt skillgit note on commit {commit[:12] or '?'}, line {number}: {shown!r}",
                f"repair or remove that line: git notes --ref skillgit edit {commit or '<commit>'}")
        records.append(record)
    return records


def decode_lenient(text: str) -> tuple[list[dict[str, Any]], int]:
    """Note text → (the records that parse, number of lines that do not). For views that must not crash."""
    records, bad = [], 0
    for line in _lines(text):
        if not line.strip():
            continue
        record = _parse_line(line)
        if record is None:
            bad += 1
        else:
            records.append(record)
    return records, bad


def decode_selected(text: str, kinds: Iterable[str]) -> tuple[list[dict[str, Any]], int]:
    """Like `decode_lenient`, but fully parses only records of `kinds`, for views over many notes (the log).
    Other lines are only checked to look like one JSON object per line, so a bad line among them may go unseen;
    `decode` is the strict check."""
    wanted = tuple(f'"kind":"{k}"' for k in kinds)
    records, bad = [], 0
    for line in _lines(text):
        line = line.strip()
        if not line:
            continue
        if not (line.startswith("{") and line.endswith("}")):
            bad += 1
        elif any(w in line for w in wanted) or '"kind":"' not in line:  # not written by us: check it fully
            record = _parse_line(line)
            if record is None:
                bad += 1
            elif record["kind"] in kinds:
                records.append(record)
    return records, bad


def of_kind(records: Iterable[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("kind") == kind]


# ---------------------------------------------------------------------------------------------- commit messages
_TRAILER_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9-]*): (.*)")


def one_line(text: str) -> str:
    """Collapse whitespace (newlines included) so a value fits on one line of a message or trailer; control and
    bidi characters are dropped (see textsafe: plain `git log` prints messages raw)."""
    return " ".join(textsafe.clean(str(text), multiline=False).split())


def format_message(subject: str, body: str, trailers: dict[str, str]) -> str:
    """`subject` + blank line + `body` + blank line + `Key: value` trailers (git's trailer format)."""
    parts = [one_line(subject) or "skill update"]
    body = textsafe.clean(body)  # every message skillgit writes goes through here: none carries an escape
    if body.strip():
        parts.append(body.strip("\n"))
    lines = []
    for key, value in trailers.items():
        if not _TRAILER_RE.fullmatch(f"{key}: x"):
            raise ValueError(f"invalid trailer key {key!r}")
        lines.append(f"{key}: {one_line(value)}")
    if lines:
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def parse_message(message: str) -> tuple[str, str, dict[str, str]]:
    """A commit message → (subject, body without trailers, trailers). Trailers are the last paragraph when every
    line of it is `Key: value`; the first occurrence of a key wins."""
    text = message.strip("\n")
    subject, _, rest = text.partition("\n")
    paragraphs = re.split(r"\n[ \t]*\n", rest.strip("\n")) if rest.strip() else []
    trailers: dict[str, str] = {}
    if paragraphs:
        last = paragraphs[-1].splitlines()
        matches = [m for line in last if (m := _TRAILER_RE.fullmatch(line)) is not None]
        if last and len(matches) == len(last):  # every line of the last paragraph is a trailer
            for m in matches:
                trailers.setdefault(m.group(1), m.group(2).strip())
            paragraphs = paragraphs[:-1]
    return subject.strip(), "\n\n".join(paragraphs), trailers


def edit_lines(body: str) -> list[str]:
    """The edit summaries a body lists (`- op: text` lines)."""
    return [line[2:].strip() for line in body.splitlines() if line.startswith("- ")]


def fmt_score(value: float | None) -> str:
    return "?" if value is None else f"{value:.4f}"


def fmt_delta(value: float | None) -> str:
    return "?" if value is None else f"{value:+.4f}"


def to_float(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


# ---------------------------------------------------------------------------------------------- rejected tags
_SCORES_RE = re.compile(r"^val: (\S+) -> (\S+) \((\S+)\)$", re.M)


def format_rejected_tag(step_label: str, reason: str, before: float, after: float, body: str) -> str:
    """The annotated tag message of a rejected step: reason, scores and the candidate's edit summaries."""
    parts = [f"rejected {step_label}: {one_line(reason) or 'no reason given'}",
             f"val: {fmt_score(before)} -> {fmt_score(after)} ({fmt_delta(after - before)})"]
    body = textsafe.clean(body)
    if body.strip():
        parts.append(body.strip("\n"))
    return "\n\n".join(parts) + "\n"


def parse_rejected_tag(message: str) -> dict[str, Any]:
    """Inverse of `format_rejected_tag`, tolerant of hand-made tags: missing parts come back as None/empty."""
    first = message.strip("\n").partition("\n")[0]
    reason = first.split(": ", 1)[1] if first.startswith("rejected ") and ": " in first else first
    out: dict[str, Any] = {"reason": reason.strip(), "score_before": None, "score_after": None, "delta": None,
                           "edits": edit_lines(message)}
    m = _SCORES_RE.search(message)
    if m:
        out["score_before"], out["score_after"], out["delta"] = (to_float(g) for g in m.groups())
    return out


# ---------------------------------------------------------------------------------------------- display notes
def display_lines(decision: dict[str, Any], edits: int, cost_usd: float | None = None) -> str:
    """The human note `git log` shows under a decided commit: verdict, val change, edits, cost, the gate's reason.
    One or two lines, never JSON."""
    before, after = to_float(decision.get("score_before")), to_float(decision.get("score_after"))
    delta = None if before is None or after is None else after - before
    parts = [f"skillgit: {decision.get('verdict', '?')} {decision.get('run', '')}/{decision.get('step', '')}",
             f"val {fmt_score(before)} → {fmt_score(after)}" + (f" ({delta * 100:+.1f})" if delta is not None else ""),
             f"{edits} edit(s)"]
    if cost_usd:
        parts.append(f"${cost_usd:.4f}")
    reason = one_line(str(decision.get("reason", "")))
    return " · ".join(parts) + "\n" + (f"  gate: {reason[:160]}\n" if reason else "")
