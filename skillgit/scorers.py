"""Scorers: a student's output for an item → `Score(hard, soft, feedback)`.

Contracts:
- `build_scorer(cfg, root)` returns a `Scorer`, a callable `(item, output) -> Score`, safe to call from several
  threads at once (a python scorer must itself be thread-safe). Config problems found while building (a python
  callable that cannot be imported) raise `ConfigError`.
- A call returns a Score with `hard` and `soft` in [0, 1] and `feedback` of at most 300 characters, written for
  the teacher: what was expected against what came, e.g. the first differing segment.
- A wrong or garbled *student* output is a normal low score. A problem of the *scorer* (an item lacks the
  `expected` this scorer needs, a python scorer raises or returns nonsense, a command scorer crashes, times out or
  prints no score) raises `ScorerError`: the loop records that trajectory as an error, not as a failure.
- `expected` may be a list of acceptable answers for the text scorers: the best-scoring one counts.

Types (`env.scorer.type`):
- exact: stripped output == stripped expected (`case_sensitive`). soft: token F1 when the expected answer has
  several words, character similarity (difflib ratio) when it is one word.
- normalized: like exact after NFKC, case folding, punctuation → spaces and whitespace collapsing.
- contains: expected occurs in the output (whitespace-collapsed). soft: share of expected tokens present.
- regex: `re.search(pattern, output)` with `pattern` from the config or, if unset, the item's expected. soft = hard.
- numeric: the last number in the output vs. expected, within max(`tolerance`, `rel_tolerance`·|expected|).
  soft = 1 / (1 + relative error).
- f1: token F1 (case-folded, punctuation removed) as soft; hard = 1 when F1 >= `threshold` (default 1.0: the
  same words in any order).
- json_field: a JSON object in the output (whole, in a ``` fence, or the first decodable one) compared with the
  expected object on `fields` (dotted paths; all of expected's keys when empty). soft = share of fields right.
- python: `callable: module:function`, imported with the project root on sys.path; `function(item, output)`
  returns a Score, a number or bool (hard = soft), `(hard, soft[, feedback])`, or `{hard, soft?, feedback?}`.
- command: a shell command run in the project root with `{"item": ..., "output": ...}` JSON on stdin; it exits 0
  and prints a number, true/false, or a JSON object `{hard, soft?, feedback?}` (the whole stdout or its last line).
  It runs in its own process group, which is killed on timeout, with secrets removed from its environment
  (see `scrubbed_env`).
- rubric (`RubricScorer(judge, fallback)`, built by callers that have a teacher, e.g. `skillgit sleep`; not an
  `env.scorer.type`): an item whose metadata has a `rubric` and that has no `expected` is judged by the teacher
  (`judge`, an `LLM`): one request of stage `judge` with the task's input, the rubric, the reference answer a
  person accepted (`metadata.judge_reference`, when there is one), the student's output and, when the caller
  passes it, the trace (an agent's tool calls and workspace diff). The reply must be a JSON object `{hard, soft,
  feedback}` with hard and soft in [0, 1]; anything else (prose, a wrong shape, a failed call) is a ScorerError:
  the trajectory is unknown, never a failure. Every other item goes to `fallback` (the configured scorer).
"""

from __future__ import annotations

import difflib
import importlib
import json
import math
import os
import re
import sys
import unicodedata
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from skillgit import process
from skillgit.config import ScorerCfg
from skillgit.errors import ConfigError, SkillgitError
from skillgit.types import Item, Score

if TYPE_CHECKING:
    from skillgit.llm.base import LLM, Request

FEEDBACK_LIMIT = 300
_SIMILARITY_CHARS = 2000  # difflib is quadratic; compare at most this much of each side


class ScorerError(SkillgitError):
    """The scorer could not judge an output (not: the output was wrong). The trajectory is an error, not a failure."""


class Scorer(Protocol):
    kind: str

    def __call__(self, item: Item, output: str) -> Score: ...


# ---------------------------------------------------------------------------------------------- text helpers
def clip(text: str, limit: int = FEEDBACK_LIMIT) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def normalize_text(text: str, fold_case: bool = True) -> str:
    """NFKC, case-folded (unless `fold_case` is False), punctuation replaced by spaces, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", str(text))
    text = text.casefold() if fold_case else text
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
    return " ".join(text.split())


def tokens(text: str, fold_case: bool = True) -> list[str]:
    return normalize_text(text, fold_case).split()


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD-style bag-of-tokens F1 (case-folded, punctuation removed); 1.0 when both are empty."""
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        return 1.0 if pred == ref else 0.0
    overlap = sum((Counter(pred) & Counter(ref)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(ref)
    return 2 * precision * recall / (precision + recall)


def char_similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a[:_SIMILARITY_CHARS], b[:_SIMILARITY_CHARS], autojunk=False).ratio()


def _similarity(expected: str, got: str) -> float:
    return token_f1(got, expected) if len(expected.split()) > 1 else char_similarity(expected, got)


def _window(text: str, start: int, width: int = 70) -> str:
    piece = text[start:start + width]
    return ("…" if start > 0 else "") + repr(piece)[1:-1] + ("…" if start + width < len(text) else "")


def diff_feedback(expected: str, got: str, prefix: str = "") -> str:
    """'expected X, got Y' for short texts; otherwise the first differing segment of each."""
    if not got.strip():
        return clip(f"{prefix}empty output; expected {expected[:200]!r}")
    if len(expected) <= 100 and len(got) <= 100:
        return clip(f"{prefix}expected {expected!r}, got {got!r}")
    at = len(os.path.commonprefix([expected, got]))
    start = max(0, at - 20)
    return clip(f"{prefix}first difference at character {at}: expected '{_window(expected, start)}', "
                f"got '{_window(got, start)}'")


def _expected_list(item: Item, kind: str) -> list[Any]:
    if item.expected is None:
        raise ScorerError(f"item '{item.id}' has no `expected`, which the {kind} scorer compares with",
                          "add `expected` to the item, or use a python/command scorer (or regex with a pattern)")
    values = list(item.expected) if isinstance(item.expected, (list, tuple)) else [item.expected]
    if not values:
        raise ScorerError(f"item '{item.id}': `expected` is an empty list", "give at least one acceptable answer")
    return values


def _best(scores: list[Score]) -> Score:
    return max(scores, key=lambda s: (s.hard, s.soft))


# ---------------------------------------------------------------------------------------------- built-in scorers
class _TextScorer:
    """Shared shape: compare the output with each acceptable expected text, keep the best."""

    kind = "text"

    def __init__(self, cfg: ScorerCfg):
        self.cfg = cfg

    def __call__(self, item: Item, output: str) -> Score:
        output = "" if output is None else str(output)
        return _best([self.one(str(e), output) for e in _expected_list(item, self.kind)])

    def one(self, expected: str, output: str) -> Score:
        raise NotImplementedError


class ExactScorer(_TextScorer):
    kind = "exact"

    def one(self, expected: str, output: str) -> Score:
        want, got = expected.strip(), output.strip()
        if not self.cfg.case_sensitive:
            want, got = want.casefold(), got.casefold()
        if want == got:
            return Score(1.0, 1.0, "correct: matches the expected answer exactly")
        note = "differs only in letter case; " if want.casefold() == got.casefold() else ""
        return Score(0.0, _similarity(want, got), diff_feedback(expected.strip(), output.strip(), note))


class NormalizedScorer(_TextScorer):
    kind = "normalized"

    def one(self, expected: str, output: str) -> Score:
        want, got = normalize_text(expected), normalize_text(output)
        if want == got:
            return Score(1.0, 1.0, "correct: matches the expected answer (ignoring case, spacing, punctuation)")
        return Score(0.0, _similarity(want, got), diff_feedback(expected.strip(), output.strip()))


class ContainsScorer(_TextScorer):
    kind = "contains"

    def one(self, expected: str, output: str) -> Score:
        want, got = " ".join(expected.split()), " ".join(output.split())
        if not self.cfg.case_sensitive:
            want, got = want.casefold(), got.casefold()
        if want in got:
            return Score(1.0, 1.0, f"correct: the output contains {clip(expected.strip(), 120)!r}")
        fold = not self.cfg.case_sensitive
        ref = tokens(want, fold)
        present = sum((Counter(ref) & Counter(tokens(got, fold))).values())
        soft = present / len(ref) if ref else 0.0
        return Score(0.0, soft, clip(f"the output does not contain {clip(expected.strip(), 120)!r}; "
                                     f"it was {clip(output.strip(), 140)!r}"))


@lru_cache(maxsize=1024)
def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


class RegexScorer:
    kind = "regex"

    def __init__(self, cfg: ScorerCfg):
        self.cfg = cfg
        self.flags = 0 if cfg.case_sensitive else re.IGNORECASE
        if cfg.pattern is not None:
            try:
                _compile(cfg.pattern, self.flags)
            except re.error as exc:
                raise ConfigError(f"env.scorer.pattern: not a valid regular expression: {exc}",
                                  "escape special characters with a backslash") from None

    def __call__(self, item: Item, output: str) -> Score:
        output = "" if output is None else str(output)
        if self.cfg.pattern is not None:
            patterns = [self.cfg.pattern]
        elif item.expected is None:
            raise ScorerError(f"item '{item.id}' has no `expected` pattern and env.scorer.pattern is not set",
                              "set env.scorer.pattern, or put a regular expression in each item's `expected`")
        else:
            patterns = [str(p) for p in _expected_list(item, self.kind)]
        for pattern in patterns:
            try:
                compiled = _compile(pattern, self.flags)
            except re.error as exc:
                raise ScorerError(f"item '{item.id}': `expected` {clip(pattern, 80)!r} is not a valid regular "
                                  f"expression: {exc}", "fix the pattern in the task file") from None
            if compiled.search(output):
                return Score(1.0, 1.0, f"correct: matches /{clip(pattern, 120)}/")
        shown = " or ".join(f"/{clip(p, 80)}/" for p in patterns[:3])
        return Score(0.0, 0.0, clip(f"no match for {shown} in the output {clip(output.strip(), 140)!r}"))


_NUMBER_RE = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+(?:[eE][-+]?\d+)?")


def last_number(text: str) -> float | None:
    """The last number written in `text` ('1,234.5', '-3', '2e-3', '.5'); None when there is none."""
    found = _NUMBER_RE.findall(str(text).replace("\u2212", "-"))
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


class NumericScorer:
    kind = "numeric"

    def __init__(self, cfg: ScorerCfg):
        self.cfg = cfg

    def _expected_number(self, item: Item, value: Any) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number: float | None = float(value)
        else:
            text = str(value).strip().replace(",", "")
            try:
                number = float(text)
            except ValueError:
                number = last_number(str(value))
        if number is None or not math.isfinite(number):
            raise ScorerError(f"item '{item.id}': `expected` {clip(str(value), 80)!r} is not a number",
                              "the numeric scorer needs a number as `expected`")
        return number

    def __call__(self, item: Item, output: str) -> Score:
        output = "" if output is None else str(output)
        got = last_number(output)
        scores = []
        for value in _expected_list(item, self.kind):
            want = self._expected_number(item, value)
            if got is None:
                scores.append(Score(0.0, 0.0, clip(f"no number in the output; expected {want:g}")))
                continue
            error = abs(got - want)
            if error <= max(self.cfg.tolerance, self.cfg.rel_tolerance * abs(want)):
                scores.append(Score(1.0, 1.0, f"correct: {got:g} (expected {want:g})"))
                continue
            relative = error / max(abs(want), self.cfg.tolerance, 1e-12)
            scores.append(Score(0.0, 1.0 / (1.0 + relative),
                                f"expected {want:g}, got {got:g} (the last number in the output)"))
        return _best(scores)


class F1Scorer(_TextScorer):
    kind = "f1"

    def one(self, expected: str, output: str) -> Score:
        f1 = token_f1(output, expected)
        hard = 1.0 if f1 >= self.cfg.threshold - 1e-9 else 0.0
        if hard:
            return Score(1.0, f1, f"correct: token F1 {f1:.2f}")
        want, got = Counter(tokens(expected)), Counter(tokens(output))
        missing = " ".join(list((want - got).elements())[:15])
        extra = " ".join(list((got - want).elements())[:15])
        return Score(0.0, f1, clip(f"token F1 {f1:.2f}; missing: {missing or '-'}; unexpected: {extra or '-'}"))


_MISSING = object()
_FENCE_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """The JSON value in a model's output: the whole text, else the last ``` fenced block that parses, else the
    first `{...}` that decodes; None when nothing parses."""
    text = str(text)
    for candidate in (text.strip(), *reversed(_FENCE_RE.findall(text))):
        try:
            return json.loads(candidate.strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for count, match in enumerate(re.finditer(r"\{", text)):
        if count >= 50:  # bounded: garbage with thousands of braces must not make scoring quadratic
            break
        try:
            return decoder.raw_decode(text, match.start())[0]
        except ValueError:
            continue
    return None


def _lookup(data: Any, path: str) -> Any:
    node = data
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


class JsonFieldScorer:
    kind = "json_field"

    def __init__(self, cfg: ScorerCfg):
        self.cfg = cfg

    def _same(self, want: Any, got: Any) -> bool:
        if isinstance(want, bool) or isinstance(got, bool):
            return want is got or (isinstance(got, str) and got.strip().lower() == str(want).lower())
        if isinstance(want, (int, float)):
            number = got if isinstance(got, (int, float)) else last_number(got) if isinstance(got, str) else None
            if number is None:
                return False
            return abs(number - want) <= max(self.cfg.tolerance, self.cfg.rel_tolerance * abs(want))
        if isinstance(want, str) and isinstance(got, (str, int, float)):
            a, b = want.strip(), str(got).strip()
            return a == b if self.cfg.case_sensitive else a.casefold() == b.casefold()
        return want == got

    def __call__(self, item: Item, output: str) -> Score:
        expected = _expected_list(item, self.kind)[0] if not isinstance(item.expected, dict) else item.expected
        if isinstance(expected, str):
            try:
                expected = json.loads(expected)
            except ValueError:
                expected = None
        if not isinstance(expected, dict):
            raise ScorerError(f"item '{item.id}': `expected` must be a JSON object for the json_field scorer",
                              'write e.g. "expected": {"answer": 42}')
        fields = list(self.cfg.fields) or list(expected)
        for name in fields:
            if _lookup(expected, name) is _MISSING:
                raise ScorerError(f"item '{item.id}': `expected` has no field '{name}' (env.scorer.fields)",
                                  "add the field to the item's expected object, or drop it from env.scorer.fields")
        got = extract_json("" if output is None else output)
        if not isinstance(got, dict):
            what = "no JSON object" if got is None else f"JSON {type(got).__name__}, not an object"
            return Score(0.0, 0.0, clip(f"the output has {what}; expected an object with {', '.join(fields)}"))
        wrong, missing = [], []
        for name in fields:
            value = _lookup(got, name)
            if value is _MISSING:
                missing.append(name)
            elif not self._same(_lookup(expected, name), value):
                wrong.append(f"{name} (expected {json.dumps(_lookup(expected, name))[:60]}, "
                             f"got {json.dumps(value, default=str)[:60]})")
        right = len(fields) - len(wrong) - len(missing)
        soft = right / len(fields) if fields else 1.0
        if not wrong and not missing:
            return Score(1.0, 1.0, f"correct: all {len(fields)} fields match")
        parts = ([f"wrong: {'; '.join(wrong)}"] if wrong else []) + ([f"missing: {', '.join(missing)}"]
                                                                      if missing else [])
        return Score(0.0, soft, clip(f"{right}/{len(fields)} fields right; " + "; ".join(parts)))


# ---------------------------------------------------------------------------------------------- user verifiers
def _unit(value: Any, who: str, name: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0:
        return float(value)
    raise ScorerError(f"{who} gave {name}={clip(repr(value), 60)}; scores must be numbers from 0 to 1",
                      "scale the score into [0, 1]")


def to_score(value: Any, who: str) -> Score:
    """A user verifier's answer → Score. Accepts Score, bool, number, (hard, soft[, feedback]) and
    {hard | score, soft?, feedback?}; anything else raises ScorerError."""
    feedback: Any = ""
    if isinstance(value, Score):
        hard, soft, feedback = value.hard, value.soft, value.feedback
    elif isinstance(value, (bool, int, float)):
        hard = soft = value
    elif isinstance(value, (tuple, list)) and len(value) in (2, 3):
        hard, soft = value[0], value[1]
        feedback = value[2] if len(value) == 3 else ""
    elif isinstance(value, Mapping) and any(k in value for k in ("hard", "score", "soft")):
        hard = value.get("hard", value.get("score", value.get("soft")))
        soft = value.get("soft", hard)
        feedback = value.get("feedback", "")
    else:
        raise ScorerError(f"{who} returned {clip(repr(value), 80)}",
                          "return a number in [0, 1], a bool, (hard, soft) or {hard, soft, feedback}")
    return Score(_unit(hard, who, "hard"), _unit(soft, who, "soft"), clip("" if feedback is None else feedback))


def _load_callable(spec: str, root: Path) -> Callable[..., Any]:
    module_name, _, func_name = spec.partition(":")
    if not module_name or not func_name:
        raise ConfigError(f"env.scorer.callable: expected 'module:function', got {spec!r}",
                          "e.g. `callable: verifiers:score`")
    # The project root goes on sys.path (and stays: the function may import siblings lazily at call time).
    root_text = str(Path(root).resolve())
    if root_text not in sys.path:
        sys.path.insert(0, root_text)
    importlib.invalidate_caches()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ConfigError(f"env.scorer.callable: no module named '{module_name}' in {root_text} or on sys.path",
                              f"create {module_name.replace('.', '/')}.py at the repository root") from None
        raise ConfigError(f"env.scorer.callable: importing '{module_name}' failed: {exc}",
                          "install what the verifier module imports") from None
    except Exception as exc:  # the user's module failed at import time: report it, don't dump a traceback
        raise ConfigError(f"env.scorer.callable: importing '{module_name}' failed: {type(exc).__name__}: "
                          f"{clip(str(exc), 200)}", f"fix {module_name}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ConfigError(f"env.scorer.callable: '{module_name}' has no function '{func_name}'",
                          f"define `def {func_name}(item, output):` in {module_name}")
    return func


class PythonScorer:
    kind = "python"

    def __init__(self, cfg: ScorerCfg, root: Path):
        self.spec = cfg.callable or ""
        self.func = _load_callable(self.spec, root)

    def __call__(self, item: Item, output: str) -> Score:
        who = f"python scorer {self.spec}"
        try:
            value = self.func(item, output)
        except (Exception, SystemExit) as exc:  # the verifier's bug, reported as a scorer error, not a crash
            raise ScorerError(f"{who} raised {type(exc).__name__} on item '{item.id}': {clip(str(exc), 160)}",
                              f"fix {self.spec}; it gets (item, output) and returns a score") from None
        return to_score(value, who)


_SECRET_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_SECRET_PREFIXES = ("OPENAI_", "ANTHROPIC_", "AZURE_")


def scrubbed_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without anything that looks like a credential: names containing KEY, TOKEN,
    SECRET, PASSWORD, PASSWD or CREDENTIAL, and names starting with OPENAI_, ANTHROPIC_ or AZURE_."""
    source = os.environ if environ is None else environ
    return {name: value for name, value in source.items()
            if not any(part in name.upper() for part in _SECRET_PARTS)
            and not name.upper().startswith(_SECRET_PREFIXES)}


def parse_printed_score(stdout: str, who: str) -> Score:
    """What a command verifier printed → Score: the whole stdout, or else its last non-empty line, as JSON."""
    text = stdout.strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for candidate in (text, lines[-1] if lines else ""):
        if not candidate:
            continue
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        return to_score(value, who)
    raise ScorerError(f"{who} printed no score: {clip(text[-120:], 120)!r}" if text else f"{who} printed nothing",
                      'print a number in [0, 1] or {"hard": 1, "soft": 1, "feedback": "..."} as the last line')


class CommandScorer:
    kind = "command"

    def __init__(self, cfg: ScorerCfg, root: Path):
        self.command = cfg.command or ""
        self.timeout_s = cfg.timeout_s
        self.root = Path(root)

    def __call__(self, item: Item, output: str) -> Score:
        who = f"command scorer `{clip(self.command, 60)}`"
        payload = json.dumps({"item": item.to_dict(), "output": output}, ensure_ascii=False, default=str)
        try:  # its own process group: a timeout or Ctrl-C leaves no verifier behind
            done = process.run(self.command, shell=True, cwd=self.root, env=scrubbed_env(), stdin=payload,
                               timeout_s=self.timeout_s, kill_grace_s=0.2)
        except OSError as exc:
            raise ScorerError(f"{who} could not start: {exc.strerror or exc}", "check env.scorer.command") from None
        if done.timed_out:
            raise ScorerError(f"{who} timed out after {self.timeout_s:g}s on item '{item.id}' and was killed",
                              "make the verifier faster or raise env.scorer.timeout_s")
        stdout = done.stdout
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or [stdout.strip()[-120:]]
            raise ScorerError(f"{who} failed with exit code {done.returncode} on item '{item.id}': "
                              f"{clip(tail[0], 160)}",
                              "a verifier exits 0 and prints its score; print 0 for a wrong answer")
        return parse_printed_score(stdout, who)


# ---------------------------------------------------------------------------------------------- rubric (a judge)
JUDGE_STAGE = "judge"
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["hard", "soft", "feedback"],
    "properties": {"hard": {"type": "number", "minimum": 0, "maximum": 1},
                   "soft": {"type": "number", "minimum": 0, "maximum": 1},
                   "feedback": {"type": "string"}}}
JUDGE_SYSTEM = ("You are a strict, fair judge of an AI assistant's work. Judge only what is in front of you against "
                "the rubric (and the reference answer, when one is given: a person accepted it, so an answer "
                "that says the same in other words passes). Reply with ONE JSON object "
                '{"hard": 0 or 1 (pass/fail), "soft": a number from 0 to 1 (partial credit), "feedback": one or two '
                'sentences for whoever improves the assistant: what is wrong or missing}.')
_JUDGE_TEXT_LIMIT = 12000  # characters of output and of trace shown to the judge


_TAG_LINE = re.compile(r"^([ \t]*)((?:&amp;)*&lt;|<)(?=/?[A-Za-z_])", re.M)


def _block(tag: str, text: str) -> str:
    """A protocol block (docs/ARCHITECTURE.md) whose content cannot open or close a block: a line-initial `<tag`
    becomes `&lt;tag` and an escaped one gains one `&amp;` (prompts.py's scheme, for any tag name)."""
    body = _TAG_LINE.sub(lambda m: m.group(1) + ("&lt;" if m.group(2) == "<" else "&amp;" + m.group(2)),
                         str(text).rstrip("\n"))
    return f"<{tag}>\n{body}\n</{tag}>"


def judge_request(item: Item, output: str, trace: str = "") -> "Request":
    """The judge's one request for `item` (see the module contract); deterministic, so the call journal replays it."""
    from skillgit.llm.base import Message, Request

    meta = item.metadata or {}
    parts = [f"<stage>{JUDGE_STAGE}</stage>", _block("task", item.input), _block("rubric", str(meta.get("rubric")))]
    reference = meta.get("judge_reference")
    if isinstance(reference, str) and reference.strip():
        parts.append(_block("reference", reference))
    parts.append(_block("output", clip(output or "", _JUDGE_TEXT_LIMIT)))
    if trace and trace.strip():
        parts.append(_block("trace", clip(trace, _JUDGE_TEXT_LIMIT)))
    return Request((Message("system", JUDGE_SYSTEM), Message("user", "\n\n".join(parts))), stage=JUDGE_STAGE,
                   json_schema=JUDGE_SCHEMA, temperature=0.0, max_tokens=512)


def parse_judgement(text: str, who: str = "the judge") -> Score:
    """The judge's reply → Score; ScorerError (unknown) when it is not a `{hard, soft, feedback}` object."""
    value = extract_json(text)
    if not isinstance(value, Mapping) or "hard" not in value:
        raise ScorerError(f"{who} gave no {{hard, soft, feedback}} object: {clip(str(text).strip(), 120)!r}",
                          "the trajectory counts as unknown; the judge's model may need a JSON mode")
    return to_score(value, who)


class RubricScorer:
    """See the module contract (type `rubric`). Thread-safe when `judge` and `fallback` are."""

    kind = "rubric"

    def __init__(self, judge: "LLM", fallback: Callable[[Item, str], Score] | None = None):
        self.judge = judge
        self.fallback = fallback

    @staticmethod
    def judges(item: Item) -> bool:
        rubric = (item.metadata or {}).get("rubric")
        return item.expected is None and isinstance(rubric, str) and bool(rubric.strip())

    def __call__(self, item: Item, output: str, trace: str = "") -> Score:
        if not self.judges(item):
            if self.fallback is None:
                raise ScorerError(f"item '{item.id}' has neither a rubric nor an expected answer",
                                  "give the item `expected`, or a `rubric` in its metadata")
            return self.fallback(item, output)
        from skillgit.llm.base import LLMError

        try:
            reply = self.judge.complete(judge_request(item, "" if output is None else str(output), trace))
        except LLMError as exc:
            raise ScorerError(f"the judge could not answer on item '{item.id}': {exc.message}",
                              "the trajectory counts as unknown") from None
        return parse_judgement(reply.text, f"the judge ({getattr(self.judge, 'id', 'teacher')})")


# ---------------------------------------------------------------------------------------------- factory
_BUILTIN: dict[str, Callable[[ScorerCfg], Scorer]] = {
    "exact": ExactScorer, "normalized": NormalizedScorer, "contains": ContainsScorer, "regex": RegexScorer,
    "numeric": NumericScorer, "f1": F1Scorer, "json_field": JsonFieldScorer,
}


def build_scorer(cfg: ScorerCfg, root: Path) -> Scorer:
    """The scorer `cfg` describes; `root` is the project root (python import path, command working directory)."""
    if cfg.type in _BUILTIN:
        return _BUILTIN[cfg.type](cfg)
    if cfg.type == "python":
        if not cfg.callable:
            raise ConfigError("env.scorer.callable: the python scorer needs `callable: module:function`",
                              "e.g. `callable: verifiers:score`")
        return PythonScorer(cfg, root)
    if cfg.type == "command":
        if not (cfg.command or "").strip():
            raise ConfigError("env.scorer.command: the command scorer needs `command: <shell command>`",
                              "e.g. `command: python check.py`")
        return CommandScorer(cfg, root)
    known = ", ".join([*_BUILTIN, "python", "command"])
    raise ConfigError(f"env.scorer.type: {cfg.type!r} is not one of {known}", "pick one of the listed types")
