"""`searchqa`: SearchQA (Dunn et al., 2017) — a Jeopardy! clue with the search snippets retrieved for it; the
metric is exact match, with token F1 as the soft score (SQuAD normalisation: lower case, punctuation and the
articles a/an/the removed, whitespace collapsed).

Formats read (JSONL, a JSON list, or a folder of them):
- the published raw files / Hugging Face `kyunghyuncho/search_qa` (`raw_jeopardy`): `question`, `answer`,
  `category`, `search_results` as a list of `{snippet(s), title(s), url(s)}` objects or as one object of lists
  (`{"snippets": [...], "titles": [...]}`);
- processed rows: `question`, `answer` (or `answers`, a list of accepted answers), `snippets` or `context`.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

from skillgit.envs import rows
from skillgit.envs.base import Env
from skillgit.scorers import clip
from skillgit.tasks import TaskFileError
from skillgit.types import Item, Score

MAX_SNIPPETS = 20  # a row's snippets shown to the student (SearchQA rows carry up to ~50)

SEED_SKILL = """---
name: searchqa
description: Answer a Jeopardy!-style question from the search results given with it.
---

# Answering from search results

Read the question and the numbered search results. Reply with the answer only: a short phrase, no sentence,
no explanation.
"""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in str(text).lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def f1(prediction: str, reference: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    overlap = sum((Counter(pred) & Counter(ref)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(ref)
    return 2 * precision * recall / (precision + recall)


def _snippets(row: dict[str, Any]) -> list[str]:
    results = row.get("search_results")
    out: list[str] = []
    if isinstance(results, dict):  # Hugging Face: one object of parallel lists
        titles = results.get("titles") or []
        for i, snippet in enumerate(results.get("snippets") or []):
            title = titles[i] if i < len(titles) and titles[i] else ""
            out.append(f"{title} — {snippet}" if title else str(snippet))
    elif isinstance(results, list):  # the raw files: a list of result objects
        for result in results:
            if isinstance(result, dict):
                snippet = result.get("snippet") or result.get("snippets") or ""
                title = result.get("title") or result.get("titles") or ""
                if snippet:
                    out.append(f"{title} — {snippet}" if title else str(snippet))
            elif isinstance(result, str):
                out.append(result)
    for key in ("snippets", "context"):
        value = row.get(key)
        if isinstance(value, list):
            out += [str(v) for v in value if v]
        elif isinstance(value, str) and value.strip():
            out.append(value)
    return [" ".join(s.split()) for s in out if s and str(s).strip()]


class SearchQA(Env):
    name = "searchqa"
    summary = "SearchQA: a Jeopardy! question with retrieved search snippets, one answer"
    metric = "exact match (token F1 as the soft score)"
    source = ("SearchQA (github.com/nyu-dl/dl4ir-searchQA; Hugging Face kyunghyuncho/search_qa, raw_jeopardy): "
              "JSON/JSONL rows with question, answer, search_results")
    seed_skill = SEED_SKILL
    sample = "searchqa.jsonl"

    def load(self, path: Path) -> list[Item]:
        def item(row: rows.Row, where: str, item_id: str) -> Item:
            question = rows.field(row, ("question", "query", "jeopardy_question"), where, "question")
            answer = rows.field(row, ("answer", "answers"), where, "answer")
            if isinstance(answer, list) and not all(isinstance(a, str) for a in answer):
                raise TaskFileError(f"{where}: `answers` must be a list of strings", "e.g. [\"Paris\"]")
            snippets = _snippets(row)[:MAX_SNIPPETS]
            lines = [f"Question: {' '.join(str(question).split())}"]
            if row.get("category"):
                lines.insert(0, f"Category: {row['category']}")
            lines += ["", "Search results:"] + [f"[{i}] {s}" for i, s in enumerate(snippets, start=1)]
            return Item(item_id, "\n".join(lines), answer, {"snippets": len(snippets)})

        return rows.items(path, item)

    def score(self, item: Item, output: str) -> Score:
        references = item.expected if isinstance(item.expected, list) else [item.expected]
        output = "" if output is None else str(output).strip()
        em = max(exact_match(output, str(r)) for r in references)
        soft = max(f1(output, str(r)) for r in references)
        if em:
            return Score(1.0, 1.0, "correct: exact match")
        if not output:
            return Score(0.0, 0.0, "the output is empty")
        words = len(normalize_answer(output).split())
        return Score(0.0, soft, clip(f"not an exact match; token F1 {soft:.2f}; the answer given has {words} "
                                     f"word{'s' * (words != 1)}: {output[:120]!r}"))
