"""Judge isolation: what of a judge (a scorer, a rubric judge, an agentic verifier) a teacher may read, and the
judge's own text it must never see nor copy into the skill (issue 20: teachers copy the judge's text).

- `teacher_reference(scorer, item)`: what a teacher may read as `item`'s `<expected>` next to a trajectory. Only
  train items ever reach a teacher (reflect and the slow update roll out train items; the gate's val and the
  reported test never go into a prompt); their expected answer is the training signal, as in SkillOpt, whose
  analysts read a train item's reference. A scorer may narrow it (`teacher_reference` method): regex with
  per-item patterns shows nothing (a pattern is the judge's rule, not an answer), the rubric scorer shows the
  answer a person accepted and never the rubric.
- `judge_texts(scorer, items)`: the judge's own text as `JudgeText` records (a scorer's `judge_texts` method):
  regex patterns, a python scorer's source file, the files a command scorer names, rubrics and reference
  answers; agentic verifier files come from `skillgit.agentic.verify.verifier_texts`. The leak guard
  (`loop/guards.py`) rejects a candidate that copies any of it.
- `mask_copies(text, sources)`: `text` with every copy of a source (whole, a line of it, or `MASK_WORDS`
  consecutive words) replaced by `[…]`: for feedback a model wrote with the judge's text in front of it.
- `without_held_out(text, ids)`: a gate reason as a teacher may read it (the negative buffer shows each
  rejection's reason): the val and test items it names (`fixed 4 (rec-0040, …)`, `rec-0141 1.00 → 0.00`, an
  item's error when it went unknown) left out, the counts kept.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from skillgit.types import Item

JUDGE_FILE_CHARS = 200_000  # a judge's file (verifier, scorer source) is read up to this many characters
MAX_FOLDER_FILES = 50  # a folder a command names: at most this many of its files
MASK_WORDS = 5  # mask_copies: this many consecutive words of a source are a copy
MASKED = "[…]"
HELD_OUT = "a held-out item"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class JudgeText:
    """A piece of the judge's own text. `kind`: `pattern` (a regular expression: matched verbatim), `rubric` (its
    lines and runs of words), `reference` (an answer, matched like an expected answer), `source` (a verifier's or
    scorer's file: its long lines and runs of words); `where` names it in a reason ("env.scorer.pattern", "the
    rubric of item 'q1'", "the verifier file tests/verify/test_x.py of task 't1'"); `path` the file it was read
    from ("" for text of the config or a task row): `check` refuses a change that edits the judge's files."""

    kind: str
    where: str
    text: str
    path: str = ""


def teacher_reference(scorer: Any, item: Item) -> Any:
    """What a teacher may read as `item`'s `<expected>` (see the module docstring); a scorer without a
    `teacher_reference` method shows the item's expected answer."""
    own = getattr(scorer, "teacher_reference", None)
    return own(item) if callable(own) else item.expected


def judge_texts(scorer: Any, items: Iterable[Item]) -> list[JudgeText]:
    """The judge's own text of `scorer` for `items` (its `judge_texts` method; none for a scorer without one)."""
    own = getattr(scorer, "judge_texts", None)
    return list(own(list(items))) if callable(own) else []


def read_judge_file(path: Path, where: str) -> JudgeText | None:
    """A judge's text file as a `source` JudgeText; None when it cannot be read or is not text."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(JUDGE_FILE_CHARS)
    except OSError:
        return None
    if b"\0" in data:
        return None
    return JudgeText("source", where, data.decode("utf-8", "replace"), str(path))


def shown_path(path: Path, root: Path) -> str:
    """`path` relative to `root` (its name when it lies outside)."""
    try:
        return path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return path.name


def command_files(command: str, root: Path) -> list[Path]:
    """The files a shell command names: its words that are files under `root`, and the files of a folder it names
    (at most `MAX_FOLDER_FILES`); e.g. `python check.py --strict` → [root/check.py]."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    root = Path(root).resolve()
    found: list[Path] = []
    for word in words:
        if not word.strip() or word.startswith("-") or "=" in word:
            continue
        path = (root / word).resolve()
        if path == root or not path.is_relative_to(root):
            continue
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not {".git", "__pycache__"} & set(p.parts))
            found.extend(files[:MAX_FOLDER_FILES])
    return list(dict.fromkeys(found))


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def mask_copies(text: str, sources: Iterable[str], words: int = MASK_WORDS) -> str:
    """`text` with every copy of a source replaced by `[…]`: a whole source or one of its lines (at least 8
    characters, compared case-insensitively), and every run of `words` consecutive words of a source."""
    sources = [s for s in sources if s and s.strip()]
    if not sources or not text:
        return text
    text = _mask_lines(text, sources)
    grams = {tuple(ws[i:i + words]) for s in sources for ws in [_words(s)] for i in range(len(ws) - words + 1)}
    spans = [(m.start(), m.end(), m.group(0).lower()) for m in _WORD.finditer(text)]
    covered = [False] * len(spans)
    for i in range(len(spans) - words + 1):
        if tuple(w for _, _, w in spans[i:i + words]) in grams:
            covered[i:i + words] = [True] * words
    return _mask_runs(text, spans, covered)


def _mask_lines(text: str, sources: list[str]) -> str:
    """Every copy of a whole source or one of its lines (8 characters or more, any case), longest first."""
    for source in sources:
        for piece in sorted({source.strip(), *(line.strip() for line in source.splitlines())}, key=len,
                            reverse=True):
            if len(piece) >= 8:
                text = re.sub(re.escape(piece), MASKED, text, flags=re.IGNORECASE)
    return text


def _mask_runs(text: str, spans: list[tuple[int, int, str]], covered: list[bool]) -> str:
    """`text` with each run of covered words (`spans`, their start, end and word) replaced by one mask."""
    out, at, i = [], 0, 0
    while i < len(spans):
        if not covered[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(spans) and covered[j + 1]:
            j += 1
        out += [text[at:spans[i][0]], MASKED]
        at, i = spans[j][1], j + 1
    out.append(text[at:])
    return "".join(out)


def without_held_out(text: str, ids: Iterable[str]) -> str:
    """`text` with every item of `ids` it names replaced by `HELD_OUT` (a whole-token match: `rec-0040` is not
    `rec-00401`), a parenthesised list of them dropped (`fixed 4 (rec-0040, rec-0073)` → `fixed 4`) and the error
    text of an item that went unknown left out (`… unknown now (task 'rec-0007': timed out)` → `… unknown now`)."""
    names = frozenset(i for i in ids if i)
    if not names or not text:
        return text
    text = _id_pattern(names).sub(HELD_OUT, text)
    listed = re.escape(HELD_OUT)
    text = re.sub(rf" \({listed}(?:, {listed})*(?: and \d+ more)?\)", "", text)
    return re.sub(r"unknown now \([^)]*\)?", "unknown now", text)


@functools.lru_cache(maxsize=8)
def _id_pattern(names: frozenset[str]) -> re.Pattern[str]:
    """One expression matching any of `names` as a whole token (longest first), compiled once per set."""
    ordered = sorted(names, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ordered)) + r")(?![\w-])")
