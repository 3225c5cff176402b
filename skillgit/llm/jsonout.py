"""Getting a JSON object out of a model, tolerantly, with one repair round.

Contracts:
- `extract_json(text) -> (obj, error)`: finds a JSON object in a reply — the whole text, a ```json fenced block,
  or the first balanced `{...}` in prose (after dropping `<think>…</think>` blocks that local reasoning models
  emit) — and forgives raw control characters (newlines, tabs) inside strings, which small models emit and
  strict `json.loads` refuses, and trailing commas. Returns `(dict, None)` or `(None, "why not")`; never raises.
- `complete_json(llm, request, *, validate=None) -> JsonResult`: calls `llm`; if no object can be extracted, or
  `validate(obj)` objects (returns an error string, or raises ValueError/TypeError/KeyError), it sends ONE repair
  request (the conversation, the bad reply, the error, "answer with only the JSON object") and tries again. If that
  fails too it gives up with `obj=None` and `error` set. A reply cut off at the output limit is not malformed
  content: it is recorded as such, and its repair asks for a shorter answer without quoting the cut-off text.
  Malformed content never raises; `LLMError` (the API call itself failed) propagates to the caller. `usage` is
  summed over all attempts, `attempts` counts model calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from skillgit.errors import BAD_JSON
from skillgit.llm.base import LLM, Message, Request
from skillgit.types import Usage

Validator = Callable[[dict[str, Any]], "str | None"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_THINK_CLOSE = {name: re.compile(f"</{name}>", re.IGNORECASE) for name in ("think", "thinking", "reasoning")}


def _without_thinking(text: str) -> str:
    """`text` without its `<think>…</think>` blocks (also thinking, reasoning; any case), as
    `re.sub(r"<(think|…)>.*?</\\1>", "", text, flags=DOTALL | IGNORECASE)` gives it, in linear time: that regex
    scanned to the end for every opening tag without a closing one (`<think>` repeated over 140 KB: 13 s)."""
    out, pos, at = [], 0, 0
    last_close = {name: max((m.start() for m in closer.finditer(text)), default=-1)
                  for name, closer in _THINK_CLOSE.items()}
    while (opened := _THINK.search(text, at)) is not None:
        name = opened.group(1).lower()
        close = _THINK_CLOSE[name].search(text, opened.end()) if last_close[name] >= opened.end() else None
        if close is None:  # never closed: kept, and the search goes on after its first character
            at = opened.start() + 1
            continue
        out.append(text[pos:opened.start()])
        pos = at = close.end()
    return "".join(out) + text[pos:]


@dataclass(frozen=True)
class JsonResult:
    obj: dict[str, Any] | None
    text: str  # the last reply's text (the one `obj` came from, or the last bad one)
    error: str | None = None  # why no object was accepted (None when obj is set)
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.obj is not None


def _without_trailing_commas(text: str) -> str:
    """Remove commas directly before `}`/`]`, outside string literals."""
    out: list[str] = []
    i, n, in_str = 0, len(text), False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j >= n or text[j] not in "}]":
                out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _balanced_objects(text: str):
    """Yield each top-level balanced `{...}` substring, scanning left to right and respecting strings."""
    start, depth, in_str, escape = -1, 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start:i + 1]


def _loads(candidate: str) -> tuple[Any, str | None]:
    # strict=False: a raw newline or tab inside a string is what the model meant, not a reason to repair
    try:
        return json.loads(candidate, strict=False), None
    except BAD_JSON as exc:
        first_error = f"invalid JSON: {exc}"
    try:
        return json.loads(_without_trailing_commas(candidate), strict=False), None
    except BAD_JSON:
        return None, first_error


def extract_json(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The first JSON object in `text` (see the module contract) and None, or None and the reason."""
    if not text or not text.strip():
        return None, "empty reply"
    cleaned = _without_thinking(text).strip()
    candidates = [cleaned]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(cleaned)]
    candidates += list(_balanced_objects(cleaned))
    first_error = wrong_type = None
    for candidate in candidates:
        if not candidate:
            continue
        obj, err = _loads(candidate)
        if isinstance(obj, dict):
            return obj, None
        if err is None:
            wrong_type = wrong_type or f"expected a JSON object, got a JSON {type(obj).__name__}"
        first_error = first_error or err
    if wrong_type:
        return None, wrong_type
    if "{" not in cleaned:
        return None, "no JSON object found in the reply"
    return None, first_error or "no complete JSON object found in the reply"


def _check(obj: dict[str, Any], validate: Validator | None) -> str | None:
    if validate is None:
        return None
    try:
        problem = validate(obj)
    except (ValueError, TypeError, KeyError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return problem or None


def _repair_request(request: Request, bad_text: str, error: str) -> Request:
    schema = ""
    if request.json_schema is not None:
        schema = "\nIt must match this JSON schema:\n" + json.dumps(request.json_schema, ensure_ascii=False)
    instruction = (f"Your previous reply could not be used: {error}.{schema}\n"
                   "Answer again with only the corrected JSON object: no prose, no code fences.")
    messages = (*request.messages, Message("assistant", bad_text or "(empty)"), Message("user", instruction))
    return replace(request, messages=tuple(messages))


CUT_OFF = "cut off at the output limit before the JSON object was complete"
_CUT_OFF_MARKS = ("finish_reason=length", "stop_reason=max_tokens")  # what the backends put in `Reply.trace`


def _shorter_request(request: Request) -> Request:
    """The repair for a reply cut off at the output limit: ask again, shorter, *without* the cut-off text (sending
    it back would only make the prompt longer and the next reply as likely to run out)."""
    instruction = ("Your previous reply was cut off at the output limit before the JSON object was complete. "
                   "Answer again with only the JSON object, and keep it short: brief strings, fewer items.")
    return replace(request, messages=(*request.messages, Message("user", instruction)))


def complete_json(llm: LLM, request: Request, *, validate: Validator | None = None) -> JsonResult:
    """Ask `llm` for a JSON object (see the module contract). A reply the backend reports as cut off at the output
    limit (`finish_reason=length`, `stop_reason=max_tokens`) that holds no usable object is recorded as `CUT_OFF`,
    not as malformed JSON, and its repair asks for a shorter answer instead of quoting it."""
    usage = Usage()
    current = request
    text, error = "", None
    for attempt in (1, 2):
        reply = llm.complete(current)  # LLMError propagates: an API failure is not malformed content
        usage = usage + reply.usage
        text = reply.text
        obj, error = extract_json(text)
        if obj is not None:
            error = _check(obj, validate)
            if error is None:
                return JsonResult(obj, text, None, usage, attempt)
        cut_off = obj is None and any(mark in reply.trace for mark in _CUT_OFF_MARKS)
        if cut_off:
            error = CUT_OFF
        if attempt == 1:
            current = _shorter_request(request) if cut_off else _repair_request(request, text,
                                                                                 error or "not a JSON object")
    return JsonResult(None, text, error, usage, 2)
