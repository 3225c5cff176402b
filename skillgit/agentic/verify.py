"""The verifier: score the workspace after the agent worked.

`verify(spec.verify, workspace, env)` runs the task's command and reads its result:
- `exit_code`: hard = soft = 1 when it exits 0, else 0;
- `pytest`: the summary counts — hard = 1 when nothing failed and something passed, soft = passed / (passed +
  failed + errors); pytest's own exit statuses 2–5 (interrupted, internal error, usage error, no tests) are not a
  verdict about the agent's work;
- `junit:<path>`: a JUnit XML report the command wrote (tests, failures, errors, skipped);
- `json`: the last JSON object printed, `{"passed": n, "total": m}` or `{"score": x}` (0–1).
A verifier that times out, crashes (a signal, a missing report) or cannot run raises `Unknown`: the rollout is then
*unknown* — excluded from the gate and from reflection — never a failed task. `feedback` is what the teacher
reads, as the task's `verify.feedback` says (`feedback.py`: by default a neutral summary — the failing tests and
the verifier's messages, never its source or the values its assertions compare). `verifier_texts(spec)` is the
verifier's own text (the files its command names, and the other files of their folders) for the leak guard.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Mapping

from skillgit import process
from skillgit.agentic import feedback
from skillgit.agentic.spec import AgenticSpec, Verify
from skillgit.judging import JudgeText, command_files, read_judge_file, shown_path
from skillgit.types import Score

_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")


class Unknown(Exception):
    """The verifier could not judge (timeout, crash, a setup that failed): not a verdict on the agent."""


def python_command(command: str) -> str:
    """A leading `python`/`python3` means the interpreter running skillgit (the one that has pytest)."""
    head, sep, rest = command.strip().partition(" ")
    if head in ("python", "python3"):
        return shlex.quote(sys.executable) + sep + rest
    return command


def pytest_counts(output: str) -> dict[str, int]:
    """The counts of pytest's summary line (`3 passed, 1 failed in 0.2s`); {} when there is none."""
    summary = [line for line in output.splitlines() if _COUNT.search(line)]
    if not summary:
        return {}
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(summary[-1]):
        key = "errors" if word.startswith("error") else word
        counts[key] = counts.get(key, 0) + int(number)
    return counts


def verify(spec: Verify, workspace: Path, env: Mapping[str, str],
           wrap: Callable[[str], str] | None = None, record: Path | None = None) -> Score:
    """Score `workspace` with the verifier; `wrap` adjusts the shell command line (the student records the
    command's process group with `workspace.tracked`), `record` is `process.run`'s (the sweep's records)."""
    command = python_command(spec.command)
    try:
        done = process.run(wrap(command) if wrap else command, cwd=workspace, env=env, timeout_s=spec.timeout_s,
                           shell=True, record=record)
    except OSError as exc:
        raise Unknown(f"verifier could not start: {exc}") from None
    output = done.stdout + ("\n" + done.stderr if done.stderr.strip() else "")
    if done.timed_out:
        raise Unknown(f"verifier timed out after {spec.timeout_s:g}s; {done.cleanup.describe('it')}: "
                      f"{process.tail(output, 300)}")
    if done.returncode < 0:
        raise Unknown(f"verifier was killed by signal {-done.returncode}")
    kind, counts = spec.kind, pytest_counts(output)
    cases: list[feedback.Case] | None = None
    note = ""
    if kind == "exit_code":
        ok = 1.0 if done.returncode == 0 else 0.0
        score = Score(ok, ok, "")
    elif kind == "pytest":
        if done.returncode not in (0, 1) or not counts:
            raise Unknown(f"pytest could not judge (exit status {done.returncode}): {process.tail(output, 400)}")
        passed, bad = counts.get("passed", 0), counts.get("failed", 0) + counts.get("errors", 0)
        total = passed + bad
        score = Score(1.0 if bad == 0 and passed > 0 else 0.0, passed / total if total else 0.0, "")
    elif kind == "junit":
        score, cases = _junit(workspace / spec.result.partition(":")[2])
    else:
        score, note = _json(done.stdout)
    text = feedback.render(spec.feedback, kind, output, score, done.returncode, counts=counts, cases=cases,
                           note=note)
    return Score(score.hard, score.soft, text)


def verifier_texts(spec: AgenticSpec, project_root: Path) -> list[JudgeText]:
    """The verifier's own text: the files its command names in the task's workspace source (the fixture folder, or
    the repository's working tree), and the other files of the folders they are in unless that is the workspace's
    top (a verifier's helpers sit next to it: `tests/verify/verifylib.py`)."""
    base = spec.fixture or spec.repo or project_root
    named = command_files(spec.verify.command, base)
    near = [p for f in named if f.parent.resolve() != Path(base).resolve()
            for p in sorted(f.parent.iterdir()) if p.is_file() and p not in named]
    found = [read_judge_file(p, f"the verifier file {shown_path(p, base)} of task '{spec.item_id}'")
             for p in dict.fromkeys([*named, *near[:50]])]
    return [f for f in found if f is not None]


def _junit(path: Path) -> tuple[Score, list[feedback.Case]]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise Unknown(f"no readable JUnit report at {path.name}: {exc}") from None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    ran = tests - sum(int(s.get("skipped", 0)) for s in suites)
    if ran <= 0:
        raise Unknown("the JUnit report lists no test that ran")
    cases = []
    for case in root.iter("testcase"):
        bad_case = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad_case is not None:
            message = bad_case.get("message") or (bad_case.text or "")
            cases.append(feedback.Case(case.get("name", "?"), feedback.neutral(message)))
    return Score(1.0 if bad == 0 else 0.0, (ran - bad) / ran, ""), cases


def _json(stdout: str) -> tuple[Score, str]:
    """The score of the last JSON result line and its own `feedback` string ("" when it has none)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            note = str(data["feedback"]) if isinstance(data.get("feedback"), str) else ""
            if "score" in data:
                value = max(0.0, min(1.0, float(data["score"])))
                return Score(1.0 if value >= 1.0 else 0.0, value, ""), note
            if "passed" in data and data.get("total"):
                soft = float(data["passed"]) / float(data["total"])
                return Score(1.0 if soft >= 1.0 else 0.0, soft, ""), note
    raise Unknown("the verifier printed no JSON result ({\"score\": x} or {\"passed\": n, \"total\": m})")
