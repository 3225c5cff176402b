"""Checks a candidate must pass before the gate scores it: no leaked answers, no copy of the judge's own text, and
a skill within its size budget.

- **Leakage**: optimizers copy training keywords and gold answers into the skill, which then "passes" val by
  memorising. A candidate whose *added* text contains an expected answer of a train or val item (when that answer
  is at least `MIN_ANSWER_CHARS` long), or `leak_ngram` consecutive words of one, is rejected as leakage before it
  is scored; its edits go to the negative buffer like any rejected edit.
- **The judge's text** (issue 20; SkillOpt#154, gepa#261: teachers copy the judge into the skill): `judge_texts`
  gathers what judges these items (`skillgit.judging.JudgeText`: regex patterns, rubrics and reference answers,
  a python or command scorer's files, each agentic task's verifier files — it reads those files) and
  `judge_leak` rejects a candidate whose added text carries a pattern verbatim (at least `MIN_PATTERN_CHARS`), a
  rubric line (at least `MIN_RUBRIC_LINE_CHARS`), a line of a judge's file (at least `MIN_SOURCE_LINE_CHARS`
  and three words), a reference answer, or `leak_ngram` consecutive words of any of them; the reason names what
  leaked (never its text: the reason goes back to the teacher with the rejected edits).
- **Size**: what is loaded into the agent's context — the main file (SKILL.md, or the single-file skill) — is
  budgeted by `skill.max_tokens` (≈ 4 characters a token, the usual rule of thumb); each other file of a package
  (references, scripts: read on demand) by its own, larger per-file budget (`max_file_tokens`, default
  `REFERENCE_FACTOR` × max_tokens); a front matter `description` by `skill.max_description_chars` (Claude Code's
  1,024). A candidate over a budget is rejected — a skill that grows without bound dilutes every instruction in
  it — unless the skill it was made from (`before`) was already over that same budget and the candidate does not
  grow it: a seed over budget never makes every candidate fail (`over_budget(seed)` says so once, at start).
- **The judge's files** (`judge_paths`): the config file, the tasks, a scorer's or verifier's files and agentic
  fixtures, as repository paths; `skill_in_judge` says when the skill's own path is one of them, lies in one or
  holds one — a teacher that edits the skill would then edit the judge (`build_trainer` refuses such a project),
  and `skillgit check` refuses a change that edits them together with the skill.
Each check returns a readable reason or None. No model, no git.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from skillgit import package
from skillgit.agentic import verify
from skillgit.agentic.spec import AgenticSpec
from skillgit.config import EnvCfg
from skillgit.errors import SkillgitError
from skillgit.judging import JudgeText
from skillgit.judging import judge_texts as scorer_texts
from skillgit.types import Item

MIN_ANSWER_CHARS = 12
MIN_PATTERN_CHARS = 6
MIN_RUBRIC_LINE_CHARS = 12
MIN_SOURCE_LINE_CHARS = 24
_WORD = re.compile(r"\w+")


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _answer_text(expected: Any) -> str:
    if expected is None:
        return ""
    return expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False, sort_keys=True)


def added_text(before: str, after: str) -> str:
    """The lines `after` has that `before` has not (per package file for bundles)."""
    old = set(before.splitlines())
    return "\n".join(line for line in after.splitlines() if line not in old)


def leak(before: str, after: str, answers: Iterable[tuple[str, Any]], ngram: int) -> str | None:
    """Why the candidate leaks an expected answer into the skill, or None. `answers`: (item id, expected)."""
    if ngram <= 0:
        return None
    added = added_text(before, after)
    if not added.strip():
        return None
    added_lower = added.lower()
    added_words = _WORD.findall(added_lower)
    grams = {tuple(added_words[i:i + ngram]) for i in range(len(added_words) - ngram + 1)}
    for item_id, expected in answers:
        answer = _answer_text(expected).strip()
        if len(answer) >= MIN_ANSWER_CHARS and answer.lower() in added_lower:
            return f"leakage: the edit copies the expected answer of item {item_id} into the skill"
        words = _WORD.findall(answer.lower())
        for i in range(len(words) - ngram + 1):
            if tuple(words[i:i + ngram]) in grams:
                return (f"leakage: the edit copies {ngram} consecutive words of item {item_id}'s expected answer "
                        "into the skill")
    return None


def judge_texts(scorer: Any, items: Iterable[Item], root: Path | str | None = None) -> list[JudgeText]:
    """The judge's own text for `items`: the scorer's (`skillgit.judging.judge_texts`) and, for agentic items, the
    verifier files (`verify.verifier_texts`; a `repo` workspace is read in `root`: by default the scorer's project
    root, else the task file's folder), each text once."""
    items = list(items)
    texts = list(scorer_texts(scorer, items))
    root = root or getattr(scorer, "root", None)
    for item in items:
        if not AgenticSpec.is_agentic(item):
            continue
        base = Path(root or item.metadata.get("task_dir") or ".")
        try:
            spec = AgenticSpec.from_item(item, base)
        except SkillgitError:
            continue  # a broken spec fails its rollouts with a clear error; nothing to guard here
        texts += verify.verifier_texts(spec, base)
    unique: dict[tuple[str, str], JudgeText] = {}
    for text in texts:
        unique.setdefault((text.kind, text.text), text)
    return list(unique.values())


def _collapse(text: str) -> str:
    return " ".join(text.lower().split())


def _copied_line(text: JudgeText, added: str) -> bool:
    """A pattern verbatim, or a line of a rubric / file, in the added text (case and spacing aside)."""
    if text.kind == "pattern":
        return len(text.text.strip()) >= MIN_PATTERN_CHARS and text.text.strip().lower() in added.lower()
    if text.kind == "reference":
        return len(text.text.strip()) >= MIN_ANSWER_CHARS and _collapse(text.text) in added
    least = MIN_RUBRIC_LINE_CHARS if text.kind == "rubric" else MIN_SOURCE_LINE_CHARS
    for line in text.text.splitlines():
        line = _collapse(line.strip(" \t-*#>•"))
        if len(line) >= least and (text.kind == "rubric" or len(_WORD.findall(line)) >= 3) and line in added:
            return True
    return False


def judge_leak(before: str, after: str, texts: Iterable[JudgeText], ngram: int) -> str | None:
    """Why the candidate copies the judge's own text into the skill, or None (see the module docstring)."""
    if ngram <= 0:
        return None
    added = added_text(before, after)
    if not added.strip():
        return None
    collapsed = _collapse(added)
    words = _WORD.findall(added.lower())
    grams = {tuple(words[i:i + ngram]) for i in range(len(words) - ngram + 1)}
    for text in texts:
        if _copied_line(text, collapsed if text.kind != "pattern" else added):
            what = "a line of " if text.kind in ("rubric", "source") else ""
            return f"leakage: the edit copies {what}{text.where} into the skill"
        if text.kind == "pattern":
            continue  # a pattern's "words" are regex syntax: only a verbatim copy counts
        judge_words = _WORD.findall(text.text.lower())
        if any(tuple(judge_words[i:i + ngram]) in grams for i in range(len(judge_words) - ngram + 1)):
            return f"leakage: the edit copies {ngram} consecutive words of {text.where} into the skill"
    return None


def _description(main: str) -> str:
    if not main.startswith("---"):
        return ""
    head = main.split("\n---", 1)[0]
    for line in head.splitlines()[1:]:
        key, _, value = line.partition(":")
        if key.strip() == "description":
            return value.strip().strip("'\"")
    return ""


REFERENCE_FACTOR = 4  # a package's other files: each may be this many times skill.max_tokens


def _budgets(skill: str, max_tokens: int, max_file_tokens: int | None, max_description_chars: int
             ) -> dict[str, tuple[int, int, str]]:
    """What each budget measures: name → (size, limit, the message's unit and setting)."""
    pkg = package.parse(skill)
    per_file = max_file_tokens if max_file_tokens is not None else REFERENCE_FACTOR * max_tokens
    main = pkg.get(pkg.main) or ""
    out = {pkg.main: (estimate_tokens(main), max_tokens, "skill.max_tokens")}
    for path, text in pkg.files:
        if path != pkg.main:
            out[path] = (estimate_tokens(text), per_file, "the per-file budget of a package's other files")
    out[":description"] = (len(_description(main)), max_description_chars, "skill.max_description_chars")
    return out


def _reason(name: str, size: int, limit: int, setting: str, package_skill: bool) -> str:
    if name == ":description":
        return f"front matter description has {size} characters, over {setting} ({limit})"
    where = f"{name}: " if package_skill else ""
    return f"too large: {where}about {size} tokens, over {setting} ({limit})"


def size(skill: str, max_tokens: int, max_description_chars: int, *, before: str | None = None,
         max_file_tokens: int | None = None) -> str | None:
    """Why the skill is over its size budget, or None (see the module docstring; `before`: the skill the
    candidate was made from)."""
    after = _budgets(skill, max_tokens, max_file_tokens, max_description_chars)
    old = _budgets(before, max_tokens, max_file_tokens, max_description_chars) if before is not None else {}
    is_package = package.is_bundle(skill)
    for name, (tokens, limit, setting) in after.items():
        if tokens <= limit:
            continue
        was = old.get(name)
        if was is not None and was[0] > limit and tokens <= was[0]:
            continue  # already over before, and not grown: the budget is the seed's problem, said at start
        return _reason(name, tokens, limit, setting, is_package)
    return None


def over_budget(skill: str, max_tokens: int, max_description_chars: int, *, max_file_tokens: int | None = None
                ) -> list[str]:
    """The budgets `skill` (the seed) is already over, as readable lines for the start of a run: its candidates
    are then only held to not growing those files."""
    is_package = package.is_bundle(skill)
    return [_reason(name, tokens, limit, setting, is_package) + "; candidates may not grow it"
            for name, (tokens, limit, setting) in _budgets(skill, max_tokens, max_file_tokens,
                                                           max_description_chars).items() if tokens > limit]


# ---------------------------------------------------------------------------------------------- the judge's files
def judge_paths(root: Path, config_path: Path | None, env: EnvCfg, scorer: Any, items: Iterable[Item]) -> list[str]:
    """The repository paths (files or folders, relative to `root`, its top) a verdict rests on besides the skill:
    the config file, the tasks (`env.split_dir`, else `env.tasks` unless it names a hub data set), the judge's own
    files for `items` (a python or command scorer's sources, agentic verifiers: `judge_texts`) and the agentic
    tasks' fixture folders. Paths outside the repository are left out (no commit holds them)."""
    items = list(items)
    found: list[Path] = [config_path] if config_path is not None else []
    tasks = env.split_dir or (None if str(env.tasks).startswith("hf:") else env.tasks)
    if tasks:
        found.append(Path(root) / tasks)
    found += [Path(t.path) for t in judge_texts(scorer, items, root) if t.path]
    for item in items:
        if AgenticSpec.is_agentic(item):
            try:
                fixture = AgenticSpec.from_item(item, Path(root)).fixture
            except SkillgitError:
                continue  # a broken task cannot be scored at all
            if fixture is not None:
                found.append(fixture)
    top, out = Path(root).resolve(), []
    for path in found:
        try:
            rel = path.resolve().relative_to(top).as_posix()
        except ValueError:
            continue
        if rel not in ("", "."):
            out.append(rel)
    return list(dict.fromkeys(out))


def skill_in_judge(skill_path: str, paths: Iterable[str]) -> str | None:
    """The first of the judge's `paths` that the skill's path is, lies in or holds (a package folder); None."""
    skill = skill_path.strip("/")
    return next((p for p in paths if skill == p or skill.startswith(p + "/") or p.startswith(skill + "/")), None)
