"""Scorers: a student's output for an item → `Score(hard, soft, feedback)`.

Contracts:
- `SCORER_TYPES` (what `env.scorer.type` may be) is the key list of the one registry, `_REGISTRY`: adding a type is
  one row there. This module imports no config (config validation reads `SCORER_TYPES`).
- `build_scorer(cfg, root)` returns a `Scorer`, a callable `(item, output) -> Score`, safe to call from several
  threads at once (a python scorer must itself be thread-safe). Config problems found while building (a python
  callable that cannot be imported) raise `ConfigError`.
- A call returns a Score with `hard` and `soft` in [0, 1] and `feedback` of at most 300 characters for the
  teacher: a *neutral* account of what the output did wrong (where it departs from the expected answer, with the
  output's own text there; what it lacks or adds), never the judge's internals: no expected answer, pattern or
  expected JSON value. A python or command scorer's feedback is the user's, passed as written.
- Judge isolation (`skillgit.judging`): `teacher_reference(item)` is what a teacher may read as `<expected>` (the
  expected answer; nothing for `regex` with per-item patterns: a pattern is the judge's rule, not an answer);
  `judge_texts(items)` the judge's text the leak guard keeps out of the skill (regex patterns, expected JSON
  values, a python scorer's source file, the files a command scorer names).
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
  (see `scrubbed_env`). (The rubric scorer, a teacher judging items with a rubric: `skillgit.rubric`.)
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
import re
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from skillgit import process
from skillgit.errors import ConfigError, SkillgitError
from skillgit.judging import JudgeText, command_files, read_judge_file, shown_path
from skillgit.textmatch import clip, diff_feedback, normalize_text, similarity, token_f1, tokens
from skillgit.types import Item, Score


class ScorerSettings(Protocol):
    """What the scorers read of `env.scorer` (`config.ScorerCfg`). This module imports no config: the config
    validates `env.scorer.type` against this module's `SCORER_TYPES`."""

    @property
    def type(self) -> str: ...
    @property
    def pattern(self) -> str | None: ...
    @property
    def tolerance(self) -> float: ...
    @property
    def rel_tolerance(self) -> float: ...
    @property
    def fields(self) -> Sequence[str]: ...
    @property
    def callable(self) -> str | None: ...
    @property
    def command(self) -> str | None: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def case_sensitive(self) -> bool: ...
    @property
    def threshold(self) -> float: ...


class ScorerError(SkillgitError):
    """The scorer could not judge an output (not: the output was wrong). The trajectory is an error, not a failure."""


class Scorer(Protocol):
    kind: str

    def __call__(self, item: Item, output: str) -> Score: ...


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

    def __init__(self, cfg: ScorerSettings):
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
        note = "differs from the expected answer only in letter case; " if want.casefold() == got.casefold() else ""
        return Score(0.0, similarity(want, got), diff_feedback(want, got, note))


class NormalizedScorer(_TextScorer):
    kind = "normalized"

    def one(self, expected: str, output: str) -> Score:
        want, got = normalize_text(expected), normalize_text(output)
        if want == got:
            return Score(1.0, 1.0, "correct: matches the expected answer (ignoring case, spacing, punctuation)")
        return Score(0.0, similarity(want, got), diff_feedback(want, got, "compared ignoring case, spacing and "
                                                                           "punctuation: "))


class ContainsScorer(_TextScorer):
    kind = "contains"

    def one(self, expected: str, output: str) -> Score:
        want, got = " ".join(expected.split()), " ".join(output.split())
        if not self.cfg.case_sensitive:
            want, got = want.casefold(), got.casefold()
        if want in got:
            return Score(1.0, 1.0, "correct: the output contains the expected answer")
        if not got.strip():
            return Score(0.0, 0.0, "the output is empty")
        fold = not self.cfg.case_sensitive
        ref = tokens(want, fold)
        present = sum((Counter(ref) & Counter(tokens(got, fold))).values())
        soft = present / len(ref) if ref else 0.0
        return Score(0.0, soft, clip(f"the output does not contain the expected answer: {present} of its "
                                     f"{len(ref)} words appear in the output"))


@lru_cache(maxsize=1024)
def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


class RegexScorer:
    kind = "regex"

    def __init__(self, cfg: ScorerSettings):
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
                return Score(1.0, 1.0, "correct: matches the required pattern")
        which = "the required pattern" if len(patterns) == 1 else f"any of the {len(patterns)} accepted patterns"
        if not output.strip():
            return Score(0.0, 0.0, f"the output is empty: it does not match {which}")
        return Score(0.0, 0.0, f"the output does not match {which}")

    def teacher_reference(self, item: Item) -> Any:
        """An item's expected answer when the pattern is the config's; nothing when `expected` is the pattern."""
        return item.expected if self.cfg.pattern is not None else None

    def judge_texts(self, items: list[Item]) -> list[JudgeText]:
        if self.cfg.pattern is not None:
            return [JudgeText("pattern", "the regex pattern env.scorer.pattern", self.cfg.pattern)]
        return [JudgeText("pattern", f"the expected pattern of item '{i.id}'", str(v)) for i in items
                for v in (i.expected if isinstance(i.expected, (list, tuple)) else [i.expected]) if v is not None]


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

    def __init__(self, cfg: ScorerSettings):
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
                scores.append(Score(0.0, 0.0, "the output has no number"))
                continue
            error = abs(got - want)
            if error <= max(self.cfg.tolerance, self.cfg.rel_tolerance * abs(want)):
                scores.append(Score(1.0, 1.0, f"correct: {got:g} is the expected value"))
                continue
            relative = error / max(abs(want), self.cfg.tolerance, 1e-12)
            how = "close to it (within 1%)" if relative <= 0.01 else \
                "within 10% of it" if relative <= 0.1 else "off by more than 10%"
            scores.append(Score(0.0, 1.0 / (1.0 + relative),
                                f"the last number in the output, {got:g}, is not the expected value: {how}"))
        return _best(scores)


class F1Scorer(_TextScorer):
    kind = "f1"

    def one(self, expected: str, output: str) -> Score:
        f1 = token_f1(output, expected)
        hard = 1.0 if f1 >= self.cfg.threshold - 1e-9 else 0.0
        if hard:
            return Score(1.0, f1, f"correct: token F1 {f1:.2f}")
        want, got = Counter(tokens(expected)), Counter(tokens(output))
        missing = sum((want - got).values())
        extra = " ".join(list((got - want).elements())[:15])
        return Score(0.0, f1, clip(f"token F1 {f1:.2f}; {missing} word{'s' * (missing != 1)} of the expected answer "
                                   f"missing; words of the output that are not expected: {extra or '-'}"))


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

    def __init__(self, cfg: ScorerSettings):
        self.cfg = cfg

    def judge_texts(self, items: list[Item]) -> list[JudgeText]:
        """Each expected object's field values (a whole answer is guarded like any expected answer)."""
        values = [(i.id, k, v) for i in items if isinstance(i.expected, dict) for k, v in i.expected.items()]
        return [JudgeText("reference", f"the expected JSON value '{k}' of item '{i}'",
                          v if isinstance(v, str) else json.dumps(v, sort_keys=True)) for i, k, v in values]

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
            return Score(0.0, 0.0, clip(f"the output has {what}; an object with the fields {', '.join(fields)} "
                                        "is expected"))
        wrong, missing = [], []
        for name in fields:  # field names are the answer's shape; expected values are never said
            value = _lookup(got, name)
            if value is _MISSING:
                missing.append(name)
            elif not self._same(_lookup(expected, name), value):
                wrong.append(f"{name} (the output has {json.dumps(value, default=str)[:60]})")
        right = len(fields) - len(wrong) - len(missing)
        soft = right / len(fields) if fields else 1.0
        if not wrong and not missing:
            return Score(1.0, 1.0, f"correct: all {len(fields)} fields match")
        parts = ([f"wrong value: {'; '.join(wrong)}"] if wrong else []) + ([f"missing: {', '.join(missing)}"]
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

    def __init__(self, cfg: ScorerSettings, root: Path):
        self.spec = cfg.callable or ""
        self.root = Path(root)
        self.func = _load_callable(self.spec, root)

    def judge_texts(self, items: list[Item]) -> list[JudgeText]:
        """The source file of the scorer's module (none for a builtin; a binary module is not text)."""
        path = Path(getattr(inspect.getmodule(self.func), "__file__", None) or self.root)
        found = read_judge_file(path, f"the python scorer's source {shown_path(path, self.root)}")
        return [found] if found else []

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
    SECRET, PASSWORD, PASSWD or CREDENTIAL, names starting with OPENAI_, ANTHROPIC_ or AZURE_, the names this
    process registered as secrets whatever they are called (`redact.is_secret_name`: a role's `api_key_env`, such
    as a teacher key in `LAB_TEACHER`, and the `.env` keys), and every variable whose value looks like a
    credential whatever its name (`redact.is_secret_value`, as agents get: `DATABASE_URL=postgres://u:pw@h/db`, a
    `ghp_…` token, a secret value copied under another name)."""
    from skillgit.redact import is_secret_name, is_secret_value, secret_values

    source = os.environ if environ is None else environ
    known = secret_values(source)
    return {name: value for name, value in source.items()
            if not any(part in name.upper() for part in _SECRET_PARTS)
            and not name.upper().startswith(_SECRET_PREFIXES) and not is_secret_name(name)
            and not is_secret_value(value, known)}


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

    def __init__(self, cfg: ScorerSettings, root: Path):
        self.command = cfg.command or ""
        self.timeout_s = cfg.timeout_s
        self.root = Path(root)

    def judge_texts(self, items: list[Item]) -> list[JudgeText]:
        """The files the command names (its verifier script and data)."""
        found = [read_judge_file(path, f"the command scorer's file {shown_path(path, self.root)}")
                 for path in command_files(self.command, self.root)]
        return [f for f in found if f is not None]

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


# ---------------------------------------------------------------------------------------------- registry
def _python(cfg: ScorerSettings, root: Path) -> Scorer:
    if not cfg.callable:
        raise ConfigError("env.scorer.callable: the python scorer needs `callable: module:function`",
                          "e.g. `callable: verifiers:score`")
    return PythonScorer(cfg, root)


def _command(cfg: ScorerSettings, root: Path) -> Scorer:
    if not (cfg.command or "").strip():
        raise ConfigError("env.scorer.command: the command scorer needs `command: <shell command>`",
                          "e.g. `command: python check.py`")
    return CommandScorer(cfg, root)


# The one table of scorer types (`env.scorer.type`), in the order users see them: each name → its builder, given
# the settings and the project root (python import path, command working directory).
_REGISTRY: dict[str, Callable[[ScorerSettings, Path], Scorer]] = {
    "exact": lambda cfg, _: ExactScorer(cfg), "normalized": lambda cfg, _: NormalizedScorer(cfg),
    "contains": lambda cfg, _: ContainsScorer(cfg), "regex": lambda cfg, _: RegexScorer(cfg),
    "numeric": lambda cfg, _: NumericScorer(cfg), "f1": lambda cfg, _: F1Scorer(cfg),
    "json_field": lambda cfg, _: JsonFieldScorer(cfg), "python": _python, "command": _command,
}
SCORER_TYPES: tuple[str, ...] = tuple(_REGISTRY)  # what config validation accepts


def build_scorer(cfg: ScorerSettings, root: Path) -> Scorer:
    """The scorer `cfg` describes; `root` is the project root (python import path, command working directory)."""
    build = _REGISTRY.get(cfg.type)
    if build is None:
        raise ConfigError(f"env.scorer.type: {cfg.type!r} is not one of {', '.join(SCORER_TYPES)}",
                          "pick one of the listed types")
    return build(cfg, root)
