"""`spreadsheetbench`: SpreadsheetBench (Ma et al., 2024) — a spreadsheet manipulation instruction on an `.xlsx`
file; the student writes Python code (openpyxl) that produces the modified workbook.

Format read (the published release, `data/sample_data_200` / `spreadsheetbench_912_v0.1`): a `dataset.json` (a JSON
list; JSONL too) of `{"id", "instruction", "spreadsheet_path", "instruction_type", "answer_position"}`, with
`spreadsheet_path` (relative to the dataset file's folder) holding the test cases `<k>_<id>_input.xlsx` and
`<k>_<id>_answer.xlsx` (k = 1, 2, 3; the verified release's `_init`/`_golden` names are read too).

Rollout: the item's text is the paper's single-round prompt (instruction, the first rows of each sheet of the
first test case, instruction type, answer position, and where to read and write: `input_path`, `output_path`).
The reply's last fenced Python block (the whole reply when it has none) is the solution; `score` runs it once per
test case in a sandboxed child (`skillgit.envs.pysandbox`: temp folder, own process group, `timeout_s`).
`env.options.rounds` > 1 is the paper's multi-round setting (5 there): the student sees each run's execution
result on the first test case and may revise, up to that many rounds (`skillgit.envs.sheetrounds`).

Metric (the paper's OJ-style evaluation): a test case passes when every cell of `answer_position` (comma-separated
ranges, `Sheet!A1:B2`, the first sheet when none is named) of the produced workbook equals the answer workbook's
after the evaluator's normalisation (numbers, and numeric text, rounded to 2 decimals; datetimes as Excel serial
days; times as HH:MM; empty text equals an empty cell); items whose id contains `CF` compare fill and font colours
too. hard = the hard restriction (all test cases pass), soft = the soft restriction (the share that pass). Unlike
the published script, every range of a multi-range answer position is compared (it checked only the last one).
The published evaluation opened each output in Excel first (recalculating formulas); nothing here recalculates,
so a formula the code writes has no value — the prompt says to write values.

Judge isolation: feedback says which test cases failed and how (an exception with its line, no output file, a
missing sheet, the cells that differ with the value the code wrote) — never an answer cell's value; the teacher's
reference is the answer position only. Malformed code or an exception is the student's failure, scored 0.
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgit.envs import pysandbox, rows
from skillgit.envs.base import Env
from skillgit.errors import ConfigError
from skillgit.llm.base import Reply, Student
from skillgit.tasks import TaskFileError
from skillgit.textmatch import clip
from skillgit.types import Item, Score

TIMEOUT_S = 30.0
PREVIEW_ROWS = 5  # rows of each sheet shown to the student (the paper's spreadsheet_content)
PREVIEW_COLS = 12
MAX_CASES = 3
PAPER_ROUNDS = 5  # the published multi-round inference's max_turn_num
INSTALL_FIX = "pip install 'openpyxl>=3.1' (it reads and writes the workbooks; the `spreadsheet` extra has it)"

SEED_SKILL = """---
name: spreadsheetbench
description: Solve a spreadsheet manipulation task by writing Python code with openpyxl.
---

# Manipulating spreadsheets with code

Write one Python program in a ```python block. Open the workbook at `input_path` with openpyxl, make the change
the instruction asks for within the answer position, and save the workbook to `output_path`.
"""


def openpyxl() -> Any:
    try:
        import openpyxl as module
    except ImportError:
        raise ConfigError("env.name: the spreadsheetbench environment needs openpyxl, which is not installed",
                          INSTALL_FIX) from None
    return module


@dataclass(frozen=True)
class Case:
    input: str  # paths (str: an item's metadata is JSON)
    answer: str


def _cases(folder: Path, item_id: str, where: str) -> list[Case]:
    out = []
    for k in range(1, MAX_CASES + 1):
        pair = [next((folder / f"{k}_{item_id}_{s}.xlsx" for s in names if (folder / f"{k}_{item_id}_{s}.xlsx")
                      .is_file()), None) for names in (("input", "init"), ("answer", "golden"))]
        if pair[0] is not None and pair[1] is not None:
            out.append(Case(str(pair[0].resolve()), str(pair[1].resolve())))
    if not out:
        raise TaskFileError(f"{where}: no test case in {folder} (looked for 1_{item_id}_input.xlsx and "
                            f"1_{item_id}_answer.xlsx)", "keep the spreadsheet/ folder next to dataset.json")
    return out


# ---------------------------------------------------------------------------------------------- positions
_CELL = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d+)$")


def column_number(name: str) -> int:
    number = 0
    for ch in name.upper():
        number = number * 26 + ord(ch) - 64
    return number


def column_name(number: int) -> str:
    name = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        name = chr(65 + rest) + name
    return name


def parse_position(position: str) -> list[tuple[str | None, list[str]]]:
    """`answer_position` → [(sheet or None for the first sheet, [cell names])]; ValueError when malformed."""
    out: list[tuple[str | None, list[str]]] = []
    for part in str(position).split(","):
        part = part.strip()
        if not part:
            continue
        named, _, cells = part.rpartition("!")
        sheet = named.strip().strip("'") or None
        ends = [_CELL.match(end.strip()) for end in cells.split(":")]
        if not 1 <= len(ends) <= 2 or not all(ends):
            raise ValueError(f"not a cell range: {part!r}")
        (c1, r1), (c2, r2) = [(column_number(m.group(1)), int(m.group(2))) for m in (ends[0], ends[-1])]  # type: ignore[union-attr]
        names = [f"{column_name(c)}{r}" for c in range(min(c1, c2), max(c1, c2) + 1)
                 for r in range(min(r1, r2), max(r1, r2) + 1)]
        out.append((sheet, names))
    if not out:
        raise ValueError("empty answer position")
    return out


# ---------------------------------------------------------------------------------------------- comparison
def normalize(value: Any) -> Any:
    """The published evaluator's cell normalisation."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 2)
    if isinstance(value, datetime.datetime):
        delta = value - datetime.datetime(1899, 12, 30)
        return round(delta.days + delta.seconds / 86400.0, 0)
    if isinstance(value, datetime.time):
        return str(value)[:-3]
    if isinstance(value, str):
        try:
            return round(float(value), 2)
        except ValueError:
            return value
    return value


def same_value(expected: Any, got: Any) -> bool:
    a, b = normalize(expected), normalize(got)
    if a in ("", None) and b in ("", None):
        return True
    return type(a) is type(b) and a == b


def _colours(cell: Any) -> tuple[Any, ...]:
    fill, font = cell.fill, cell.font
    return (fill.fgColor.rgb if fill.fgColor else None, fill.bgColor.rgb if fill.bgColor else None,
            font.color.rgb if font is not None and font.color is not None else None)


def compare(answer_file: str, output_file: Path, position: str, colours: bool) -> str:
    """"" when the output workbook matches the answer at `position`, else what differs — with the values the
    output holds, never the answer's."""
    xl = openpyxl()
    if not output_file.is_file():
        return "the code wrote no workbook at output_path"
    try:
        produced = xl.load_workbook(output_file, data_only=True)
    except Exception as exc:  # a corrupt or non-xlsx file the student's code wrote
        return clip(f"the file at output_path is not a readable workbook ({type(exc).__name__})", 200)
    try:
        truth = xl.load_workbook(answer_file, data_only=True)
    except Exception as exc:  # the benchmark's own file: the judge cannot judge, not the student's failure
        from skillgit.scorers import ScorerError

        raise ScorerError(f"cannot read the answer workbook {answer_file}: {type(exc).__name__}",
                          "restore the benchmark's spreadsheet/ folder") from None
    wrong: list[str] = []
    for sheet, cells in parse_position(position):
        name = sheet or truth.sheetnames[0]
        if name not in produced.sheetnames:
            return f"the output workbook has no sheet '{name}' (it has: {', '.join(produced.sheetnames)[:120]})"
        want, have = truth[name], produced[name]
        for cell in cells:
            got = have[cell]
            if not same_value(want[cell].value, got.value) or (colours and _colours(want[cell]) != _colours(got)):
                wrong.append(f"{name}!{cell} (it holds {clip(repr(got.value), 40)})")
    if not wrong:
        return ""
    shown = "; ".join(wrong[:3]) + (f"; … {len(wrong) - 3} more" if len(wrong) > 3 else "")
    return f"{len(wrong)} answer cell{'s' * (len(wrong) != 1)} wrong: {shown}"


def _compare_in(answer_file: str, position: str, colours: bool, folder: Path) -> str:
    return compare(answer_file, folder / pysandbox.OUTPUT, position, colours)


# ---------------------------------------------------------------------------------------------- the prompt
def preview(path: str) -> str:
    """The first rows of every sheet, as the paper's spreadsheet_content."""
    wb = openpyxl().load_workbook(path, data_only=True, read_only=True)
    parts = []
    for ws in wb.worksheets:
        lines = [f"Sheet '{ws.title}':"]
        for number, row in enumerate(ws.iter_rows(max_row=PREVIEW_ROWS, max_col=PREVIEW_COLS, values_only=True),
                                     start=1):
            values = list(row)
            while values and values[-1] is None:
                values.pop()
            lines.append(f"  row {number}: " + " | ".join("" if v is None else clip(str(v), 40) for v in values))
        parts.append("\n".join(lines if len(lines) > 1 else [*lines, "  (empty)"]))
    wb.close()
    return "\n".join(parts)


def prompt(row: dict[str, Any], content: str) -> str:
    return "\n\n".join([
        f"### instruction\n{str(row['instruction']).strip()}",
        "### spreadsheet_path\ninput_path (a variable your code gets; the file input.xlsx in the working folder)",
        f"### spreadsheet_content\n{content}",
        f"### instruction_type\n{row.get('instruction_type') or 'Cell-Level Manipulation'}",
        f"### answer_position\n{row['answer_position']}",
        "### output_path\noutput_path (a variable your code gets; save the modified workbook there)",
        "Write Python code (openpyxl) for the final solution in one ```python block. It runs once per test case: "
        "workbooks of the same layout with other values. The saved workbook is compared as saved, without "
        "recalculation: write computed values, not formulas."])


_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.S)


def extract_code(text: str) -> str:
    """The last fenced Python block of a reply (a fence without a language counts), else the reply itself when
    it looks like code, else ""."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(str(text or ""))]
    python = [body for lang, body in blocks if lang in ("python", "py", "python3", "")]
    if python:
        return python[-1].strip("\n")
    stripped = str(text or "").strip()
    return stripped if re.search(r"^\s*(import|from)\s+\w+", stripped, re.M) else ""


class SpreadsheetBench(Env):
    name = "spreadsheetbench"
    summary = ("SpreadsheetBench: an instruction on an .xlsx workbook, solved by Python code run in a sandbox"
               + ("" if importlib.util.find_spec("openpyxl") else f" (needs openpyxl: {INSTALL_FIX})"))
    metric = "OJ-style cell match at answer_position: hard restriction (all test cases), soft restriction (share)"
    source = ("SpreadsheetBench (github.com/RUCKBReasoning/SpreadsheetBench, data/*.tar.gz): dataset.json with "
              "spreadsheet/<id>/<k>_<id>_input.xlsx and _answer.xlsx")
    seed_skill = SEED_SKILL
    sample = "dataset.json"
    options_default = {"timeout_s": TIMEOUT_S, "rounds": 1}

    @property
    def rounds(self) -> int:
        value = self.options.get("rounds", 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"env.options.rounds: must be a whole number >= 1, got {value!r}",
                              f"1 is the paper's single-round setting, {PAPER_ROUNDS} its multi-round one")
        return value

    def run(self, student: Student, skill: str, item: Item, sample: int = 0) -> Reply:
        if self.rounds == 1:
            return student.run(skill, item, sample)
        from skillgit.envs.sheetrounds import run_rounds

        return run_rounds(student, skill, item, sample, rounds=self.rounds, timeout_s=self.timeout_s,
                          extract_code=extract_code, score=self.score)

    @property
    def timeout_s(self) -> float:
        value = self.options.get("timeout_s", TIMEOUT_S)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"env.options.timeout_s: must be a number of seconds > 0, got {value!r}",
                              f"e.g. timeout_s: {TIMEOUT_S:g}")
        return float(value)

    def load(self, path: Path) -> list[Item]:
        openpyxl()
        self.timeout_s, self.rounds  # noqa: B018 — a bad option fails `init` and `doctor`, not the first rollout
        path = Path(path)
        base = path.parent if path.is_file() else path
        def item(row: rows.Row, where: str, item_id: str) -> Item:
            for key in ("instruction", "spreadsheet_path", "answer_position"):
                rows.field(row, (key,), where, key)
            try:
                parse_position(row["answer_position"])
            except ValueError as exc:
                raise TaskFileError(f"{where}: answer_position: {exc}", "e.g. \"'Sheet1'!D2:D10\" or \"B2,B5\"") \
                    from None
            cases = _cases((base / str(row["spreadsheet_path"])).resolve(), item_id, where)
            return Item(item_id, prompt(row, preview(cases[0].input)), str(row["answer_position"]),
                        {"cases": [[c.input, c.answer] for c in cases],
                         "instruction_type": str(row.get("instruction_type") or "")})

        return rows.items(path, item)

    def score(self, item: Item, output: str) -> Score:
        openpyxl()
        code = extract_code(output)
        if not code.strip():
            return Score(0.0, 0.0, "the output holds no Python code (expected one ```python block)")
        try:
            compile(code, "solution.py", "exec")
        except SyntaxError as exc:
            return Score(0.0, 0.0, clip(f"the code does not parse: {exc.msg} (solution.py line {exc.lineno})"))
        cases = [Case(*pair) for pair in item.metadata["cases"]]
        colours = "CF" in item.id
        verdicts = []
        for number, case in enumerate(cases, start=1):
            check = functools.partial(_compare_in, case.answer, str(item.expected), colours)
            ran, verdict = pysandbox.run_code(code, {"input.xlsx": Path(case.input)}, self.timeout_s, check)
            if ran.timed_out:
                verdict = f"the code ran past the {self.timeout_s:g}s limit and was stopped"
            elif ran.returncode != 0:
                verdict = f"the code failed: {pysandbox.error_summary(ran)}"
            verdicts.append((number, verdict))
        passed = sum(1 for _, v in verdicts if not v)
        soft = passed / len(cases)
        if passed == len(cases):
            return Score(1.0, 1.0, f"correct on all {len(cases)} test cases")
        grouped: dict[str, list[str]] = {}
        for n, v in verdicts:
            if v:
                grouped.setdefault(v, []).append(str(n))
        failed = "; ".join(f"test case{'s' * (len(ns) > 1)} {', '.join(ns)}: {v}" for v, ns in grouped.items())
        return Score(0.0, soft, clip(f"{passed} of {len(cases)} test cases pass; {failed}", 600))

    def teacher_reference(self, item: Item) -> Any:
        return f"the cells at {item.expected} (their values are the judge's)"
