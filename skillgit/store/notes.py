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
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from skillgit import textsafe
from skillgit.errors import BAD_JSON, GitStateError
from skillgit.records import StepOutcome, to_float
from skillgit.store import refs as R

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
    except BAD_JSON:
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


# ---------------------------------------------------------------------------------------------- untrusted records
# Notes arrive from collaborators through `skillgit pull`: any line may hold any JSON. Typed readers (`show`, the
# log, `pr`, `report`, the negative buffer) read records through `conform`, which checks the fields they use
# against `SHAPES` and drops those of the wrong type, saying what it dropped: a field `"apply": 5` is skipped
# with a message, never a TypeError. A record whose required field is wrong is skipped whole. `null` counts as a
# missing field (silently); unknown kinds and fields are kept untouched for `--json` and `--full`.
Check = Callable[[Any, str, list[str]], Any]
_DROP = object()


def _what(value: Any) -> str:
    """A short description of a JSON value for a message: its type and, for a scalar, the value (cut)."""
    kind = {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}
    text = kind.get(type(value), type(value).__name__)
    if isinstance(value, (bool, int, float, str)):
        shown = json.dumps(value, ensure_ascii=True) if not isinstance(value, float) or math.isfinite(value) \
            else str(value)
        text += f" {shown[:40]}{'…' if len(shown) > 40 else ''}"
    return text


def _scalar(name: str, test: Callable[[Any], bool]) -> Check:
    def check(value: Any, path: str, skipped: list[str]) -> Any:
        if test(value):
            return value
        skipped.append(f"{path}: {_what(value)}, not {name}")
        return _DROP
    return check


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


TEXT = _scalar("text", lambda v: isinstance(v, str))
INT = _scalar("a whole number", _is_int)
NUMBER = _scalar("a finite number", lambda v: (_is_int(v) or isinstance(v, float)) and math.isfinite(v))
RUN = _scalar("a run id", lambda v: isinstance(v, str) and R.parse_run_ref(R.RUNS_PREFIX + v) is not None)
STEP = _scalar("a step (a number or a step name)",
               lambda v: (_is_int(v) and v >= 0) or (isinstance(v, str) and R.parse_step(v) is not None))
def is_commit_id(value: Any) -> bool:
    """A full object id (40 or 64 lowercase hex digits): never an option, a revision expression or a path."""
    return isinstance(value, str) and len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)


COMMIT = _scalar("a commit id", is_commit_id)


def one_of(*choices: str) -> Check:
    return _scalar(" | ".join(choices), lambda v: v in choices)


def list_of(item: Check) -> Check:
    """A list whose items pass `item` (the others are dropped and reported)."""
    def check(value: Any, path: str, skipped: list[str]) -> Any:
        if not isinstance(value, list):
            skipped.append(f"{path}: {_what(value)}, not a list")
            return _DROP
        out = [item(v, f"{path}[{i}]", skipped) for i, v in enumerate(value)]
        return [v for v in out if v is not _DROP]
    return check


def map_of(value_check: Check) -> Check:
    """An object whose values all pass `value_check` (any keys)."""
    def check(value: Any, path: str, skipped: list[str]) -> Any:
        if not isinstance(value, dict):
            skipped.append(f"{path}: {_what(value)}, not an object")
            return _DROP
        out = {k: value_check(v, f"{path}.{k}", skipped) for k, v in value.items() if v is not None}
        return {k: v for k, v in out.items() if v is not _DROP}
    return check


def record_of(fields: dict[str, Check], required: tuple[str, ...] = ()) -> Check:
    """An object whose known `fields` pass their checks (unknown keys kept); dropped whole when a `required` field
    is missing or wrong."""
    def check(value: Any, path: str, skipped: list[str]) -> Any:
        if not isinstance(value, dict):
            skipped.append(f"{path}: {_what(value)}, not an object")
            return _DROP
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None:
                continue
            if key in fields:
                item = fields[key](item, f"{path}.{key}", skipped)
                if item is _DROP:
                    continue
            out[key] = item
        missing = [key for key in required if key not in out]
        if missing:
            skipped.append(f"{path}: skipped whole (no valid {', '.join(missing)})")
            return _DROP
        return out
    return check


USAGE = record_of({**dict.fromkeys(("calls", "prompt_tokens", "completion_tokens", "cached_tokens",
                                    "reasoning_tokens"), INT), "cost_usd": NUMBER, "timings_s": map_of(NUMBER)})
COVERAGE = record_of({"scored": INT, "total": INT, "unscored": list_of(TEXT)})
EDIT = record_of({**dict.fromkeys(("op", "content", "target", "rationale", "source_type", "id", "file"), TEXT),
                  "support_count": INT, "merge_level": INT}, required=("op",))
EDIT_RESULT = record_of({"edit": EDIT, "status": TEXT, "reason": TEXT}, required=("edit", "status"))
SCORES = record_of({"per_item": map_of(list_of(_scalar("a number or null", lambda v: v is None or (
    (_is_int(v) or isinstance(v, float)) and math.isfinite(v))))), "errors": map_of(lambda v, p, s: v),
    "repeats": INT, "samples_scored": INT, "round": TEXT, "fingerprint": map_of(TEXT), "seconds": map_of(NUMBER)})
CHECK = record_of({"name": TEXT, "detail": TEXT, "passed": _scalar("true/false", lambda v: isinstance(v, bool))},
                  required=("name",))
CONTROL = record_of({"round": TEXT, "blob": TEXT, "mean": NUMBER, "items": INT, "samples_scored": INT,
                     "fingerprint": map_of(TEXT)})
_STEP_FIELDS = {"run": RUN, "step": STEP}
# The fields typed readers use, per record kind (what `Store.decide`, `loop.decide` and `review.branch` write).
SHAPES: dict[str, Check] = {
    "decision": record_of({**_STEP_FIELDS, "verdict": one_of("accepted", "rejected"), "step_kind": TEXT,
                           "epoch": INT, "seq": INT, **dict.fromkeys(("score_before", "score_after", "delta",
                                                                       "p_value"), NUMBER),
                           "reason": TEXT, "edits": list_of(TEXT), "coverage": COVERAGE, "parent": COMMIT,
                           "branch": TEXT, "usage": USAGE}, required=("verdict",)),
    "candidate": record_of({**_STEP_FIELDS, "epoch": INT, "step_kind": TEXT, "type": TEXT, "mode": TEXT,
                            "reasoning": TEXT, "apply": list_of(EDIT_RESULT), "edits": list_of(EDIT),
                            "usage": USAGE, "train": record_of({"hard_mean": NUMBER, "soft_mean": NUMBER})}),
    "gate": record_of({**_STEP_FIELDS, "metric": one_of("hard", "soft", "mixed"), "reason": TEXT,
                       **dict.fromkeys(("score_before", "score_after", "p_value", "noise_floor"), NUMBER),
                       "coverage": COVERAGE, "val": SCORES, "base": SCORES, "checks": list_of(CHECK),
                       "fixed": list_of(TEXT), "broke": list_of(TEXT), "incumbent": TEXT,
                       "controls": list_of(CONTROL)}),
    "revert": record_of({"mode": TEXT, "target": TEXT, "reason": TEXT, "from": TEXT}),
    "review": record_of({"run": RUN, "base": TEXT, "head": TEXT}),
}


def conform(record: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """(`record` with every known field of the wrong type dropped — None when the record cannot be used at all —,
    what was dropped, as `kind.field: what it was, not what it should be` lines)."""
    skipped: list[str] = []
    check = SHAPES.get(str(record.get("kind")))
    if check is None:
        return record, skipped
    out = check(record, str(record.get("kind")), skipped)
    return (None if out is _DROP else out), skipped


@dataclass(frozen=True)
class Checked:
    """A note read for typed readers: its usable records (`conform`ed), its raw parsable records (for `--json`
    and `--full`), the lines that do not parse, and what `conform` skipped."""

    records: list[dict[str, Any]]
    raw: list[dict[str, Any]]
    corrupt_lines: int = 0
    skipped: tuple[str, ...] = ()


def conform_all(records: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """`conform` over records: (the usable ones, everything skipped)."""
    kept: list[dict[str, Any]] = []
    skipped: list[str] = []
    for record in records:
        out, problems = conform(record)
        skipped += problems
        if out is not None:
            kept.append(out)
    return kept, skipped


def decode_checked(text: str) -> Checked:
    """Note text → `Checked`: never raises, whatever the text holds."""
    raw, bad = decode_lenient(text)
    records, skipped = conform_all(raw)
    return Checked(records, raw, bad, tuple(skipped))


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
def display_lines(decision: StepOutcome) -> str:
    """The human note `git log` shows under a decided commit: verdict, val change, edits, cost, the gate's reason.
    One or two lines, never JSON."""
    before, after = decision.score_before, decision.score_after
    parts = [f"skillgit: {decision.verdict} {decision.run}/{decision.step}",
             f"val {fmt_score(before)} → {fmt_score(after)} ({(after - before) * 100:+.1f})",
             f"{len(decision.edits)} edit(s)"]
    if decision.usage.cost_usd:
        parts.append(f"${decision.usage.cost_usd:.4f}")
    reason = one_line(decision.reason)
    return " · ".join(parts) + "\n" + (f"  gate: {reason[:160]}\n" if reason else "")
