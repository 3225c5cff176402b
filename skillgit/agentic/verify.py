"""The verifier: score the workspace after the agent worked.

`verify(spec.verify, workspace, env)` runs the task's command and reads its result:
- `exit_code`: hard = soft = 1 when it exits 0, else 0;
- `pytest`: the summary counts — hard = 1 when nothing failed and something passed, soft = passed / (passed +
  failed + errors); pytest's own exit statuses 2–5 (interrupted, internal error, usage error, no tests) are not a
  verdict about the agent's work;
- `junit:<path>`: a JUnit XML report the command wrote (tests, failures, errors, skipped);
- `json`: the last JSON object printed, `{"passed": n, "total": m}` or `{"score": x}` (0–1).
A verifier that times out, crashes (a signal, a missing report) or cannot run raises `Unknown`: the rollout is then
*unknown* — excluded from the gate and from reflection — never a failed task. `feedback` is the useful tail of
the output (failures are at the end), what the teacher reads.
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
from skillgit.agentic.spec import Verify
from skillgit.types import Score

FEEDBACK_CHARS = 3000
_DURATION = re.compile(r"(\bin )\d+(?:\.\d+)?s\b(?: \(\d+:\d\d:\d\d\))?")
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
    # Durations ("3 passed in 0.12s") change from run to run: the teacher reads feedback, so the same outcome must
    # read the same (a deterministic run, prompts the call journal recognises).
    feedback = _DURATION.sub(r"\1…s", process.tail(output, FEEDBACK_CHARS))
    if done.timed_out:
        raise Unknown(f"verifier timed out after {spec.timeout_s:g}s; {done.cleanup.describe('it')}: "
                      f"{process.tail(output, 300)}")
    if done.returncode < 0:
        raise Unknown(f"verifier was killed by signal {-done.returncode}")
    kind = spec.kind
    if kind == "exit_code":
        ok = 1.0 if done.returncode == 0 else 0.0
        return Score(ok, ok, feedback)
    if kind == "pytest":
        counts = pytest_counts(output)
        if done.returncode not in (0, 1) or not counts:
            raise Unknown(f"pytest could not judge (exit status {done.returncode}): {process.tail(output, 400)}")
        passed, bad = counts.get("passed", 0), counts.get("failed", 0) + counts.get("errors", 0)
        total = passed + bad
        hard = 1.0 if bad == 0 and passed > 0 else 0.0
        return Score(hard, passed / total if total else 0.0, feedback)
    if kind == "junit":
        return _junit(workspace / spec.result.partition(":")[2], feedback)
    return _json(done.stdout, feedback)


def _junit(path: Path, feedback: str) -> Score:
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
    return Score(1.0 if bad == 0 else 0.0, (ran - bad) / ran, feedback)


def _json(stdout: str, feedback: str) -> Score:
    for line in reversed(stdout.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            if "score" in data:
                value = max(0.0, min(1.0, float(data["score"])))
                return Score(1.0 if value >= 1.0 else 0.0, value, feedback)
            if "passed" in data and data.get("total"):
                soft = float(data["passed"]) / float(data["total"])
                return Score(1.0 if soft >= 1.0 else 0.0, soft, feedback)
    raise Unknown("the verifier printed no JSON result ({\"score\": x} or {\"passed\": n, \"total\": m})")
