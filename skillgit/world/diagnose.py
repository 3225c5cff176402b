"""The simulated teacher's eyes: symptoms from an output and an expected text, by surface shape only.

This is an observer's heuristic, the kind of diff a careful human would do. It knows what dates, weights,
codes, prices and names *look like*; it does not know the house rules, which items they affect, or how the
student reads a skill. Everything it returns is derived from the two strings (the scorer's feedback never quotes
the expected text: judge isolation).

A `Symptom(topic, want, detail)` says what differs and what the expected text shows, e.g.
`("date", "iso", "2024-03-05")`, `("separator", "pipe", " | ")`, `("preamble", "none", "Answer")`,
`("extra_text", "none", "Explanation: …")`, `("name", "last_first", "Lovelace, Ada")`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

_LABEL = re.compile(r"^([A-Za-z][A-Za-z ]{0,24}):\s+")
_DATE = re.compile(r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}")
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}")
_WEIGHT = re.compile(r"(-?\d+(?:\.\d+)?)\s*(kg|lb|lbs|g|oz)", re.I)
_PRICE_SYMBOL = re.compile(r"([$€£])\s?(-?\d+(?:\.\d+)?)")
_PRICE_CODE = re.compile(r"(-?\d+(?:\.\d+)?)\s*([A-Z]{3})")
_CODE = re.compile(r"[A-Za-z]{1,4}-\d{1,4}")
_NAME = re.compile(r"[A-Za-z][A-Za-z'\-]*(?:,? [A-Za-z][A-Za-z'\-]*)*")
_SINGLE_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")


@dataclass(frozen=True)
class Symptom:
    topic: str  # preamble | extra_text | separator | date | weight | code | decimals | currency | name | fields | other
    want: str  # what the expected text shows (see module docstring)
    detail: str = ""


def kind_of(part: str) -> str:
    p = part.strip()
    if _DATE.fullmatch(p):
        return "date"
    if _WEIGHT.fullmatch(p):
        return "weight"
    if _PRICE_SYMBOL.fullmatch(p) or _PRICE_CODE.fullmatch(p):
        return "price"
    if _CODE.fullmatch(p):
        return "code"
    if _NAME.fullmatch(p):
        return "name"
    return "other"


def separator_of(text: str) -> str | None:
    for sep in (" | ", "|", "; ", ";", "\t"):
        if sep in text:
            return sep
    return ", " if "," in text else None


def split_fields(record: str) -> tuple[str, list[str]]:
    """(separator, fields) of a one-line record; comma-split names ("Lovelace", "Ada") are joined again."""
    sep = separator_of(record)
    if sep is None:
        return "", [record.strip()] if record.strip() else []
    parts = [p.strip() for p in record.split(sep.strip() if sep.strip() else sep)]
    parts = [p for p in parts if p]
    if sep == ", ":
        merged: list[str] = []
        for p in parts:
            if merged and _SINGLE_WORD.fullmatch(p) and _SINGLE_WORD.fullmatch(merged[-1]):
                merged[-1] = f"{merged[-1]}, {p}"
            else:
                merged.append(p)
        parts = merged
    return sep, parts


def _record_line(lines: list[str], reference: str) -> int:
    scores = [difflib.SequenceMatcher(None, line, reference, autojunk=False).ratio() for line in lines]
    return max(range(len(lines)), key=lambda i: scores[i])


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


def _price_parts(p: str) -> tuple[str, str, bool]:
    """(amount, currency, symbol_first)."""
    m = _PRICE_SYMBOL.fullmatch(p.strip())
    if m:
        return m.group(2), m.group(1), True
    m = _PRICE_CODE.fullmatch(p.strip())
    return (m.group(1), m.group(2), False) if m else ("", "", False)


def compare_field(kind: str, got: str, want: str) -> list[Symptom]:
    if got == want:
        return []
    compare = _COMPARE.get(kind)
    return compare(got, want) if compare else [Symptom("other", kind, want)]


def _date(got: str, want: str) -> list[Symptom]:
    return [Symptom("date", "iso" if _ISO.fullmatch(want) else "as_written", want)]


def _weight(got: str, want: str) -> list[Symptom]:
    g, w = _WEIGHT.fullmatch(got), _WEIGHT.fullmatch(want)
    if g and w and g.group(2).lower() != w.group(2).lower():
        return [Symptom("weight", "kg" if w.group(2).lower() == "kg" else "lb", want)]
    if g and w and _decimals(g.group(1)) != _decimals(w.group(1)):
        return [Symptom("decimals", "two" if _decimals(w.group(1)) == 2 else "as_written", want)]
    return [Symptom("other", "weight", want)]


def _price(got: str, want: str) -> list[Symptom]:
    (ga, _, gs), (wa, _, ws) = _price_parts(got), _price_parts(want)
    out = []
    if gs != ws:
        out.append(Symptom("currency", "symbol_first" if ws else "code_after", want))
    if _decimals(ga) != _decimals(wa):
        out.append(Symptom("decimals", "two" if _decimals(wa) == 2 else "as_written", want))
    return out or [Symptom("other", "price", want)]


def _code(got: str, want: str) -> list[Symptom]:
    if got.lower() == want.lower():
        return [Symptom("code", "upper" if want.isupper() else "lower", want)]
    return [Symptom("other", "code", want)]


def _name(got: str, want: str) -> list[Symptom]:
    if sorted(got.replace(",", " ").split()) == sorted(want.replace(",", " ").split()):
        return [Symptom("name", "last_first" if "," in want else "first_last", want)]
    return [Symptom("other", "name", want)]


_COMPARE: dict[str, Callable[[str, str], list[Symptom]]] = {
    "date": _date, "weight": _weight, "price": _price, "code": _code, "name": _name}


def diagnose(output: str, expected: str | None) -> list[Symptom]:
    """Symptoms of one failed trajectory; [] when there is no expected text to compare with."""
    if expected is None or not expected.strip():
        return []
    out_lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    exp_lines = [line.strip() for line in expected.splitlines() if line.strip()]
    if not out_lines:
        return [Symptom("fields", "all", "empty output")]
    exp_record = exp_lines[0]
    at = _record_line(out_lines, exp_record)
    symptoms: list[Symptom] = []
    if len(out_lines) > len(exp_lines):
        extra = [line for i, line in enumerate(out_lines) if i != at]
        symptoms.append(Symptom("extra_text", "none", extra[0][:80]))
    got_body, want_body = _bodies(out_lines[at], exp_record, symptoms)
    got_sep, got_parts = split_fields(got_body)
    want_sep, want_parts = split_fields(want_body)
    if len(got_parts) > 1 and len(want_parts) > 1 and got_sep.strip() != want_sep.strip():
        name = {"|": "pipe", ",": "comma", ";": "semicolon"}.get(want_sep.strip(), "other")
        symptoms.append(Symptom("separator", name, want_sep))
    return symptoms + _field_symptoms(got_parts, want_parts)


def _bodies(got_record: str, exp_record: str, symptoms: list[Symptom]) -> tuple[str, str]:
    """Both records without their `Label:` preamble; a preamble only one side has is a symptom."""
    got_label, want_label = _LABEL.match(got_record), _LABEL.match(exp_record)
    if got_label and not want_label:
        symptoms.append(Symptom("preamble", "none", got_label.group(1)))
    elif want_label and not got_label:
        symptoms.append(Symptom("preamble", "label", want_label.group(1)))
    return (got_record[got_label.end():] if got_label else got_record,
            exp_record[want_label.end():] if want_label else exp_record)


def _field_symptoms(got_parts: list[str], want_parts: list[str]) -> list[Symptom]:
    """Each expected field matched to a produced one of its kind (by position when the counts agree), compared."""
    symptoms: list[Symptom] = []
    got_kinds = [kind_of(p) for p in got_parts]
    used: set[int] = set()
    for want_part in want_parts:
        kind = kind_of(want_part)
        match = next((i for i, k in enumerate(got_kinds) if k == kind and i not in used), None)
        if match is None and len(got_parts) == len(want_parts):
            match = next((i for i in range(len(got_parts)) if i not in used), None)
        if match is None:
            symptoms.append(Symptom("fields", "all", want_part))
            continue
        used.add(match)
        symptoms.extend(compare_field(kind, got_parts[match], want_part))
    return symptoms
