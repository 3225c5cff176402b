"""`docvqa`: DocVQA (Mathew et al., 2021) — a question about a scanned document page, answered from the page image.
The metric is ANLS (average normalised Levenshtein similarity, threshold 0.5) as the soft score; hard is an exact
match (case-insensitive, surrounding whitespace ignored) with one of the accepted answers.

Format read: the published annotation files (`train_v1.0.json`, `val_v1.0.json`: `{"dataset_name": "docvqa",
"data": [{"questionId", "question", "image": "documents/xyz.png", "answers": [...]}]}`; a JSONL of such rows too),
with `image` relative to the annotation file's folder (`--data` the JSON, the `documents/` folder next to it).

The page image travels only to the student: the item's `metadata.images` names it and the openai, azure and
anthropic backends send it as an image content part. The item's text — what the teacher reads next to the
student's answer — names the page (`[page image: documents/xyz.png]`), never its bytes.
"""

from __future__ import annotations

from pathlib import Path

from skillgit.envs import rows
from skillgit.envs.base import Env
from skillgit.scorers import clip
from skillgit.tasks import TaskFileError
from skillgit.types import Item, Score

THRESHOLD = 0.5

SEED_SKILL = """---
name: docvqa
description: Answer a question about a document page from its image.
---

# Answering questions about documents

Read the page image. Reply with the answer only, copied as it is written on the page.
"""


def levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def anls(prediction: str, answers: list[str], threshold: float = THRESHOLD) -> float:
    """ANLS of one prediction: the best over the accepted answers of 1 - NL, where NL is the Levenshtein distance
    over the longer length (both lower-cased and stripped), and 0 when NL is at least `threshold`."""
    pred = " ".join(str(prediction).lower().split())
    best = 0.0
    for answer in answers:
        ref = " ".join(str(answer).lower().split())
        longest = max(len(pred), len(ref))
        nl = levenshtein(pred, ref) / longest if longest else 0.0
        best = max(best, 1.0 - nl if nl < threshold else 0.0)
    return best


class DocVQA(Env):
    name = "docvqa"
    summary = "DocVQA: a question about a scanned document page, answered from the page image"
    metric = "ANLS (soft; hard = exact match)"
    source = "DocVQA (rrc.cvc.uab.es/?ch=17): val_v1.0.json / train_v1.0.json with the documents/ images"
    seed_skill = SEED_SKILL
    sample = "val_v1.0.json"

    def load(self, path: Path) -> list[Item]:
        path = Path(path)
        def item(row: rows.Row, where: str, item_id: str) -> Item:
            question = rows.field(row, ("question",), where, "question")
            answers = rows.field(row, ("answers", "answer"), where, "answers")
            answers = [answers] if isinstance(answers, str) else answers
            if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                raise TaskFileError(f"{where}: `answers` must be a list of strings", 'e.g. "answers": ["0.28"]')
            image = str(rows.field(row, ("image", "image_path"), where, "image"))
            base = path.parent if path.is_file() else path
            file = (base / image).resolve()
            if not file.is_file():
                raise TaskFileError(f"{where}: image not found: {file}",
                                    "keep the documents/ folder next to the annotation file")
            return Item(str(row.get("questionId") or item_id), f"Question: {question}\n[page image: {image}]", answers,
                        {"images": [str(file)], "image": image})

        return rows.items(path, item)

    def score(self, item: Item, output: str) -> Score:
        answers = [str(a) for a in (item.expected or [])]
        got = "" if output is None else str(output).strip()
        if not got:
            return Score(0.0, 0.0, "the output is empty")
        soft = anls(got, answers)
        if any(" ".join(got.lower().split()) == " ".join(a.lower().split()) for a in answers):
            return Score(1.0, 1.0, "correct: exact match")
        how = "close to an accepted answer" if soft else "not close to any accepted answer (NL ≥ 0.5)"
        return Score(0.0, soft, clip(f"ANLS {soft:.2f}: {got[:100]!r} is {how}"))
