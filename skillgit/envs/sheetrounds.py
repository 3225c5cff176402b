"""SpreadsheetBench's multi-round setting (`env.options.rounds` > 1; the paper's `row_react_exec`: the data preview
and up to `max_turn_num` = 5 rounds).

The contract, as the published `inference_multiple.py` runs it:
- Round k is ONE `student.run` (journaled and metered like any call) whose user message is the single-round prompt,
  a note on the rounds, and the conversation so far: each earlier round's code and its execution result.
- The reply's code (`extract_code`) is run in the sandbox (`skillgit.envs.pysandbox`) on the FIRST test case's
  input, as the published loop runs it on `1_<id>_input.xlsx`. The execution result the student sees is what the
  run itself produced — its exit, the end of what it printed, the error it raised (traceback tail), and whether it
  wrote the workbook at `output_path` — never a comparison with the answer workbook, which is not opened here.
- The conversation ends at the first round whose run wrote `output_path` (the published stopping rule), or after
  `rounds` rounds. The last reply's code is the solution, scored exactly as in the single-round setting (every test
  case, `SpreadsheetBench.score`), and that score comes with the reply.
- What the teacher reads (`Reply.trace`) is the whole conversation as an agent trace: each round's code (a call)
  and its execution result, shortened by the agent-trace rules, and how it ended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from skillgit.agents.trace import AgentTrace, Step
from skillgit.envs import pysandbox
from skillgit.llm.base import Reply, Student
from skillgit.textmatch import clip
from skillgit.types import Item, Score, Usage

SHOWN_CHARS = 1_500  # of stdout and of stderr, per execution result (their ends: the traceback's last lines)
HISTORY_CHARS = 16_000


def execution_result(item: Item, code: str, timeout_s: float) -> tuple[str, bool]:
    """(what running `code` on the first test case's input produced, whether it wrote output_path)."""
    if not code.strip():
        return "no ```python block in the reply: nothing was run", False
    try:
        compile(code, "solution.py", "exec")
    except SyntaxError as exc:
        return clip(f"SyntaxError: {exc.msg} (solution.py line {exc.lineno}); nothing was run", 400), False
    first_input = item.metadata["cases"][0][0]  # the test case's input workbook (its answer is never opened here)
    ran, wrote = pysandbox.run_code(code, {"input.xlsx": Path(first_input)}, timeout_s,
                                    lambda folder: (folder / pysandbox.OUTPUT).is_file())
    if ran.timed_out:
        status = f"stopped: it ran past the {timeout_s:g}s limit"
    elif ran.returncode != 0:
        status = f"failed: {pysandbox.error_summary(ran)}"
    else:
        status = "ran to the end (exit 0)"
    parts = [f"The code {status}; output_path was {'written' if wrote else 'not written'}."]
    if ran.stdout.strip():
        parts.append("stdout (its end):\n" + ran.stdout.strip()[-SHOWN_CHARS:])
    if ran.returncode != 0 and ran.stderr.strip():
        parts.append("stderr (its end):\n" + ran.stderr.strip()[-SHOWN_CHARS:])
    return "\n".join(parts), wrote


def round_prompt(item: Item, rounds: int, history: list[tuple[str, str]]) -> str:
    note = (f"You have up to {rounds} rounds. Each round, send one ```python block: it is run on input_path and "
            "you see what it printed, the error it raised and whether it wrote output_path. The conversation ends "
            "when a run writes output_path (that code is your solution) or after the last round (your last code "
            "is). Print what you need to see; write output_path only with your final solution.")
    done = []
    for number, (code, result) in enumerate(history, start=1):
        done.append(f"### round {number}: your code\n```python\n{code}\n```\n### round {number}: execution result\n"
                    f"{result}")
    text = "\n\n".join(done)
    if len(text) > HISTORY_CHARS:
        text = "[… earlier rounds omitted …]\n" + text[-HISTORY_CHARS:]
    ask = f"Round {len(history) + 1} of {rounds}: reply with your next ```python block."
    return "\n\n".join(part for part in (item.input, note, text, ask) if part)


def run_rounds(student: Student, skill: str, item: Item, sample: int, *, rounds: int, timeout_s: float,
               extract_code: Callable[[str], str], score: Callable[[Item, str], Score]) -> Reply:
    """The conversation of one item; `extract_code` and `score` are SpreadsheetBench's (the single-round ones)."""
    history: list[tuple[str, str]] = []
    steps: list[Step] = []
    usage, cached, text, wrote = Usage(), True, "", False
    for number in range(1, rounds + 1):
        turn = Item(item.id, round_prompt(item, rounds, history), None, {**item.metadata, "turn": number})
        reply = student.run(skill, turn, sample)  # an LLMError ends the run: an unknown conversation
        usage, cached, text = usage + reply.usage, cached and reply.cached, reply.text
        code = extract_code(text)
        result, wrote = execution_result(item, code, timeout_s)
        history.append((code, result))
        steps += [Step("call", "run code", code or "(no code)"), Step("result", text=result)]
        if wrote:
            break
    how = "a run wrote output_path" if wrote else f"no run wrote output_path in {rounds} rounds"
    steps.append(Step("text", text=f"conversation ended after {len(history)} round"
                                   f"{'s' * (len(history) != 1)} ({how}); the last code is the solution"))
    verdict = score(item, text)
    return Reply(text, usage, trace=AgentTrace(text, tuple(steps)).render(), cached=cached, score=verdict)
