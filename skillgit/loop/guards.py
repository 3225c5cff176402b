"""Checks a candidate must pass before the gate scores it: no leaked answers, and a skill within its size budget.

- **Leakage**: optimizers copy training keywords and gold answers into the skill, which then "passes" val by
  memorising. A candidate whose *added* text contains an expected answer of a train or val item (when that answer
  is at least `MIN_ANSWER_CHARS` long), or `leak_ngram` consecutive words of one, is rejected as leakage before it
  is scored; its edits go to the negative buffer like any rejected edit.
- **Size**: a skill body over `skill.max_tokens` (≈ 4 characters a token, the usual rule of thumb) or a front
  matter `description` over `skill.max_description_chars` (Claude Code's 1,024) is rejected: a skill that grows
  without bound dilutes every instruction in it.
Both return a readable reason or None. Pure functions: no model, no git.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from skillgit import package

MIN_ANSWER_CHARS = 12
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


def _description(main: str) -> str:
    if not main.startswith("---"):
        return ""
    head = main.split("\n---", 1)[0]
    for line in head.splitlines()[1:]:
        key, _, value = line.partition(":")
        if key.strip() == "description":
            return value.strip().strip("'\"")
    return ""


def size(skill: str, max_tokens: int, max_description_chars: int) -> str | None:
    """Why the skill is over its size budget, or None."""
    pkg = package.parse(skill)
    main = pkg.get(pkg.main) or ""
    tokens = estimate_tokens("".join(text for _, text in pkg.files))
    if tokens > max_tokens:
        return f"too large: about {tokens} tokens, over skill.max_tokens ({max_tokens})"
    description = _description(main)
    if len(description) > max_description_chars:
        return (f"front matter description has {len(description)} characters, over skill.max_description_chars "
                f"({max_description_chars})")
    return None
