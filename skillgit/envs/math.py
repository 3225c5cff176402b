"""`math`: competition/research-style math problems with one final answer (LiveMathematicianBench-style; the
MATH / AIME row shape). The metric is final-answer accuracy: the student's final answer (the last `\\boxed{…}`,
else a `Final answer:` line, else its last line) is equivalent to the reference.

Equivalence (`equivalent`): with `sympy` installed, both answers are parsed as expressions (after a small LaTeX
normalisation: \\frac, \\sqrt, \\cdot, \\pi, ^, \\left/\\right, $ and spaces) and are equal when their difference
simplifies to 0 (so `1/2`, `0.5` and `\\frac{1}{2}` agree); an answer sympy cannot parse, and every answer when
sympy is not installed, is compared as normalised text (no spaces, `$`, `\\left`/`\\right`, trailing period;
case folded). `MathEnv.metric` says which one is in use.

Formats read (JSONL, a JSON list, or a folder of them): `problem` (or `question`), and `answer` — or a `solution`
whose last `\\boxed{…}` is the answer.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from skillgit.envs import rows
from skillgit.envs.base import Env
from skillgit.scorers import clip
from skillgit.tasks import TaskFileError
from skillgit.types import Item, Score

SEED_SKILL = """---
name: math
description: Solve a math problem and state one final answer.
---

# Solving math problems

Work the problem step by step. End with the final answer alone in \\boxed{...}.
"""


def have_sympy() -> bool:
    return importlib.util.find_spec("sympy") is not None


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{…} (or \\fbox{…}) in `text`, braces balanced; None when there is none."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for i in range(brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1:i].strip()
    return None


_FINAL = re.compile(r"(?:final answer|answer)\s*(?:is)?\s*[:：]?\s*(.+)$", re.I)


def final_answer(output: str) -> str | None:
    """The student's final answer (see the module docstring); None for an empty output."""
    text = str(output or "").strip()
    if not text:
        return None
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        match = _FINAL.search(line)
        if match:
            return match.group(1).strip().strip("*").strip()
    return lines[-1]


def normalize(answer: str) -> str:
    text = str(answer).replace("\\left", "").replace("\\right", "").replace("$", "").replace("\\!", "")
    text = re.sub(r"\\text\{([^}]*)\}", r"\1", text)
    return "".join(text.split()).rstrip(".").casefold()


def _to_sympy_text(answer: str) -> str:
    text = normalize(answer).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    for _ in range(5):  # nested \frac / \sqrt
        text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", text)
        text = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", text)
    text = text.replace("\\cdot", "*").replace("\\times", "*").replace("\\pi", "pi").replace("^", "**")
    text = text.replace("{", "(").replace("}", ")")
    return text


_SAFE_CHARS = re.compile(r"[0-9a-z+\-*/().,]{1,200}")
_NAMES = frozenset({"sqrt", "pi", "log", "ln", "exp", "sin", "cos", "tan"})


def _safe(text: str) -> bool:
    """Whether `text` may reach sympy's parser, which evaluates what it parses: only digits, single letters, a few
    function names, operators and brackets; no exponent that could make simplification run for hours."""
    if not _SAFE_CHARS.fullmatch(text):
        return False
    if any(len(word) > 1 and word not in _NAMES for word in re.findall(r"[a-z]+", text)):
        return False
    exponents = [text[m.end():] for m in re.finditer(r"\*\*", text)]
    return len(exponents) <= 3 and all(re.match(r"\(?-?(?:\d{1,2}|[a-z])\)?(?![\d(]|\*\*)", e) for e in exponents)


def _sympy_equal(a: str, b: str) -> bool | None:
    """True/False when sympy can parse both answers, None when it cannot (or is not installed, or an answer is
    not a plain expression: see `_safe`)."""
    if not have_sympy():
        return None
    a_text, b_text = _to_sympy_text(a), _to_sympy_text(b)
    if not (_safe(a_text) and _safe(b_text)):
        return None
    import sympy
    from sympy.parsing.sympy_parser import implicit_multiplication_application, parse_expr, standard_transformations

    transformations = (*standard_transformations, implicit_multiplication_application)
    try:
        left = parse_expr(a_text, transformations=transformations, evaluate=True)
        right = parse_expr(b_text, transformations=transformations, evaluate=True)
        return bool(sympy.simplify(left - right) == 0)
    except Exception:  # sympy raises many kinds on text that is not an expression: then compare as text
        return None


def equivalent(answer: str, reference: str) -> bool:
    if normalize(answer) == normalize(reference):
        return True
    same = _sympy_equal(answer, reference)
    return bool(same)


class MathEnv(Env):
    name = "math"
    summary = "math problems with one final answer (LiveMathematicianBench-style, MATH/AIME rows)"
    metric = ("final-answer accuracy (sympy equivalence)" if have_sympy()
              else "final-answer accuracy (normalised text: sympy is not installed)")
    source = "LiveMathematicianBench / MATH-style rows: problem, answer (or solution with \\boxed{})"
    seed_skill = SEED_SKILL
    sample = "math.jsonl"

    def load(self, path: Path) -> list[Item]:
        def item(row: rows.Row, where: str, item_id: str) -> Item:
            problem = rows.field(row, ("problem", "question", "prompt"), where, "problem")
            answer = row.get("answer")
            if answer in (None, "") and isinstance(row.get("solution"), str):
                answer = last_boxed(row["solution"])
            if answer in (None, ""):
                raise TaskFileError(f"{where}: no answer (looked for `answer`, and \\boxed{{}} in `solution`)",
                                    "each row needs its final answer under `answer`")
            return Item(item_id, str(problem), str(answer),
                        {k: row[k] for k in ("subject", "level", "source") if k in row})

        return rows.items(path, item)

    def score(self, item: Item, output: str) -> Score:
        got = final_answer(output)
        if got is None:
            return Score(0.0, 0.0, "the output is empty")
        if equivalent(got, str(item.expected)):
            return Score(1.0, 1.0, "correct: the final answer is equivalent to the reference")
        how = "\\boxed{}" if last_boxed(str(output)) is not None else "no \\boxed{} answer; read its last line"
        return Score(0.0, 0.0, clip(f"the final answer {got[:80]!r} ({how}) is not equivalent to the reference"))
