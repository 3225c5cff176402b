"""Comparing an output with an expected text: normalisation, token F1, character similarity, and feedback that says
where an output departs from the answer without quoting the answer (what the scorers tell a teacher).

Pure functions over strings (a leaf). Feedback is at most `FEEDBACK_LIMIT` characters (`clip`).
"""

from __future__ import annotations

import difflib
import os
import unicodedata
from collections import Counter

FEEDBACK_LIMIT = 300
_SIMILARITY_CHARS = 2000  # difflib is quadratic; compare at most this much of each side


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


def similarity(expected: str, got: str) -> float:
    """Token F1 when the expected answer has several words, character similarity when it is one."""
    return token_f1(got, expected) if len(expected.split()) > 1 else char_similarity(expected, got)


def _window(text: str, start: int, width: int = 70) -> str:
    piece = text[start:start + width]
    return ("…" if start > 0 else "") + repr(piece)[1:-1] + ("…" if start + width < len(text) else "")


def diff_feedback(expected: str, got: str, prefix: str = "") -> str:
    """What is wrong with `got`, told without `expected` (see the module contract): the output is empty, stops short
    of the expected answer, runs on past it, or departs from it at a character — shown with the output's own text
    there — and, when they differ, how many lines each has."""
    if not got.strip():
        return clip(f"{prefix}the output is empty")
    at = len(os.path.commonprefix([expected, got]))
    lines_got, lines_want = len(got.splitlines()) or 1, len(expected.splitlines()) or 1
    shape = (f" (the output has {lines_got} line{'s' * (lines_got != 1)}, the expected answer {lines_want})"
             if lines_got != lines_want else "")
    if at == len(expected):
        return clip(f"{prefix}the output matches the expected answer up to character {at}, then goes on: "
                    f"'{_window(got, at)}'{shape}")
    if at == len(got):
        return clip(f"{prefix}the output stops short: it matches the start of the expected answer and ends at "
                    f"character {at}{shape}")
    return clip(f"{prefix}the output departs from the expected answer at character {at}: "
                f"'{_window(got, max(0, at - 20))}'{shape}")
