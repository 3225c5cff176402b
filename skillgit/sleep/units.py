"""Task units: a session cut into a person's requests and what followed each, with its outcome signals.

Contracts:
- `split_units(session)` cuts a session into task units: a person's request, the agent's work until the next
  request, and its outcome signals — shell commands, test runs with their verdict (pytest, jest/vitest/npm, go,
  cargo summaries; else the exit code), files written, the person's corrections ("no, …", "that's wrong",
  "revert", "still failing", an interruption), revert commands (`git checkout -- …`, `git restore`, `git revert`,
  `git reset --hard`, `git stash`) and acceptance ("thanks", "looks good"). A correction stays in its unit as a
  follow-up; anything else a person says starts a new unit.
- `TaskUnit.skills`: the skills the unit invoked (the readers' `Turn.skills` of kind "skill": the agent's skill
  tool, a person's `/name` command, a skill body read or injected), in the order first used.
- A text unit (nothing run or written) remembers the agent's last answer, and the answer the person *accepted*
  ("thanks", "looks good" after it, with no correction or revert in between): `TaskUnit.accepted_answer`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillgit.sleep.model import Session, ToolCall, Turn

# ------------------------------------------------------------------------------------------------ signals
_CORRECTION = re.compile(
    r"(?i)^\s*(?:no\s*[,.!:;]|nope\b|wrong\b|stop\b|undo\b|revert\b)"
    r"|\b(?:that'?s|that is|this is|it'?s) (?:wrong|not right|incorrect|not what)\b|\bnot what i\b"
    r"|\b(?:does ?n[o']t|did ?n[o']t|still (?:does ?n[o']t)) work\b|\bstill (?:fail\w*|broken|red|wrong|erroring)\b"
    r"|\byou broke\b|\brevert (?:that|this|it|the)\b|\bundo (?:that|this|it)\b|\btry again\b"
    r"|\[request interrupted by user")
_ACCEPT = re.compile(r"(?i)^\s*(?:thanks|thank you|thx|great|perfect|lgtm|looks good|nice|awesome|excellent|"
                     r"that works|works(?: now)?|cool|ok(?:ay)?,? thanks)\b[\s!.,]*")
_REVERT = re.compile(r"\bgit\s+(?:checkout\s+(?:\S+\s+)?--(?:\s|$)|restore\b|revert\b|reset\s+--hard\b|"
                     r"stash(?!\s+(?:list|show)\b))")
_TEST_COMMANDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pytest", re.compile(r"\b(?:py\.test|pytest)\b")),
    ("npm", re.compile(r"\b(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test\b|\b(?:jest|vitest)\b")),
    ("go", re.compile(r"\bgo\s+test\b")),
    ("cargo", re.compile(r"\bcargo\s+(?:test|nextest)\b")),
    ("other", re.compile(r"\bmake\s+(?:test|check)\b|\btox\b|\bnox\b|-m\s+unittest\b|\bctest\b|\bmvn\s+test\b|"
                         r"\bgradle\w*\s+test\b")),
)
_PYTEST_LINE = re.compile(r"(?m)^.*\b\d+ (?:passed|failed|errors?)\b.*\bin [\d.]+s\b.*$|^.*no tests ran.*$")
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")
_JEST = re.compile(r"(?m)^\s*Tests:?\s+(.*)$")


@dataclass(frozen=True)
class TestRun:
    """One run of a test command: `passed` is None when no verdict could be read."""

    __test__ = False  # not a pytest test class
    command: str
    framework: str
    passed: bool | None
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "framework": self.framework, "passed": self.passed, "summary": self.summary}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestRun:
        return cls(str(data.get("command", "")), str(data.get("framework", "")), data.get("passed"),
                   str(data.get("summary", "")))


def detect_test_runner(command: str) -> str | None:
    """The test runner a shell command invokes (pytest, npm, go, cargo, other), or None."""
    for name, pattern in _TEST_COMMANDS:
        if pattern.search(command):
            return name
    return None


def parse_test_output(output: str, exit_code: int | None = None, is_error: bool = False) -> tuple[bool | None, str]:
    """(passed, summary) read from a test runner's output; falls back to the exit code, then to `is_error`."""
    text = output or ""
    lines = _PYTEST_LINE.findall(text)
    if lines:
        line = lines[-1]
        counts = Counter({kind.rstrip("s") if kind.startswith("error") else kind: int(n)
                          for n, kind in _COUNT.findall(line)})
        summary = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no tests ran"
        if counts["failed"] or counts["error"]:
            return False, summary
        return (True, summary) if counts["passed"] else (None, summary)
    jest = _JEST.findall(text)
    if jest and re.search(r"\d+ (?:passed|failed)", jest[-1]):
        summary = jest[-1].strip()
        return ("failed" not in summary), summary
    if re.search(r"(?m)^--- FAIL|^FAIL\b|test result: FAILED", text):
        return False, "FAIL"
    if re.search(r"(?m)^ok\s+\S+|test result: ok\.", text):
        return True, "ok"
    if exit_code is not None:
        return exit_code == 0, f"exit code {exit_code}"
    if is_error:
        return False, "tool error"
    return None, ""


# ------------------------------------------------------------------------------------------------ units
@dataclass(frozen=True)
class TaskUnit:
    """A person's request and what followed it, up to their next request."""

    source: str
    session_id: str
    index: int
    request: str
    first_turn: int = 0
    last_turn: int = 0
    followups: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    test_runs: tuple[TestRun, ...] = ()
    paths: tuple[str, ...] = ()
    corrections: int = 0
    reverts: int = 0
    accepted: bool = False
    timestamp: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None
    answer: str = ""  # the agent's last text in the unit
    accepted_answer: str | None = None  # the answer the person accepted (no correction or revert after it)
    skills: tuple[str, ...] = ()  # the skills invoked in the unit (`Turn.skills` of kind "skill"), first use first

    @property
    def session_key(self) -> str:
        return f"{self.source}:{self.session_id}"

    @property
    def last_test(self) -> TestRun | None:
        return self.test_runs[-1] if self.test_runs else None

    @property
    def outcome(self) -> str:
        """failed | passed | unknown: the last test verdict, overridden by a later revert or correction."""
        last = self.last_test
        if self.reverts or (self.corrections and not (last and last.passed)):
            return "failed"
        if last is not None and last.passed is not None:
            return "passed" if last.passed else "failed"
        return "passed" if self.accepted else "unknown"

    @property
    def did_work(self) -> bool:
        return bool(self.commands or self.paths)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "session_id": self.session_id, "index": self.index, "request": self.request,
            "first_turn": self.first_turn, "last_turn": self.last_turn, "followups": list(self.followups),
            "commands": list(self.commands), "test_runs": [t.to_dict() for t in self.test_runs],
            "paths": list(self.paths), "corrections": self.corrections, "reverts": self.reverts,
            "accepted": self.accepted, "timestamp": self.timestamp, "cwd": self.cwd, "git_branch": self.git_branch,
            "git_commit": self.git_commit, "outcome": self.outcome, "answer": self.answer,
            "accepted_answer": self.accepted_answer, "skills": list(self.skills),
        }


def _classify(text: str) -> str:
    if _CORRECTION.search(text):
        return "correction"
    match = _ACCEPT.match(text)
    if match:
        rest = text[match.end():].strip()
        return "acceptance" if len(rest.split()) <= 4 else "acceptance+request"
    return "request"


class _UnitBuilder:
    def __init__(self, session: Session, index: int, request: str, turn: int, ts: str | None) -> None:
        self.fields: dict[str, Any] = {
            "source": session.source, "session_id": session.session_id, "index": index, "request": request,
            "first_turn": turn, "last_turn": turn, "timestamp": ts, "cwd": session.cwd,
            "git_branch": session.git_branch, "git_commit": session.git_commit,
        }
        self.followups: list[str] = []
        self.commands: list[str] = []
        self.tests: list[TestRun] = []
        self.paths: list[str] = []
        self.corrections = self.reverts = 0
        self.accepted = False
        self.answer = ""
        self.accepted_answer: str | None = None
        self.pending: dict[str, ToolCall] = {}
        self.unmatched: list[ToolCall] = []
        self.skills: dict[str, None] = {}

    def turn(self, turn: Turn, i: int) -> None:
        """Any turn of the unit: it reaches turn i, and the skills the turn invoked are the unit's."""
        self.fields["last_turn"] = i
        for use in turn.skills:
            if use.kind == "skill" and use.name:
                self.skills.setdefault(use.name)

    def accept(self) -> None:
        self.accepted = True
        # the person accepted what the agent last said; a revert means they did not keep it after all
        self.accepted_answer = (self.answer or None) if not self.reverts else None

    def correct(self, text: str) -> None:
        self.followups.append(text)
        self.corrections += 1
        self.accepted_answer = None  # a correction after an acceptance takes it back

    def call(self, call: ToolCall) -> None:
        if call.command:
            self.commands.append(call.command)
            if _REVERT.search(call.command):
                self.reverts += 1
                self.accepted_answer = None
        if call.writes:
            self.paths.extend(call.paths)
        if call.call_id:
            self.pending[call.call_id] = call
        else:
            self.unmatched.append(call)

    def result(self, output: str, exit_code: int | None, is_error: bool, call_id: str) -> None:
        call = self.pending.pop(call_id, None) if call_id else None
        if call is None and self.unmatched:
            call = self.unmatched.pop(0)
        framework = detect_test_runner(call.command) if call is not None and call.command else None
        if call is not None and call.command and framework:
            passed, summary = parse_test_output(output, exit_code, is_error)
            self.tests.append(TestRun(call.command, framework, passed, summary))

    def build(self) -> TaskUnit:
        return TaskUnit(**self.fields, followups=tuple(self.followups), commands=tuple(self.commands),
                        test_runs=tuple(self.tests), paths=tuple(dict.fromkeys(self.paths)),
                        corrections=self.corrections, reverts=self.reverts, accepted=self.accepted,
                        answer=self.answer, accepted_answer=self.accepted_answer, skills=tuple(self.skills))


def split_units(session: Session, from_turn: int = 0) -> list[TaskUnit]:
    """The task units of `session` (see the module contract) that reach turn `from_turn` or later."""
    units: list[TaskUnit] = []
    current: _UnitBuilder | None = None
    for i, turn in enumerate(session.turns):
        if turn.role == "user":
            text = turn.text.strip()
            kind = _classify(text)
            if current is not None and kind == "correction":
                current.correct(text)
                current.turn(turn, i)
                continue
            if current is not None and kind.startswith("acceptance"):
                current.accept()
                current.turn(turn, i)
                if kind == "acceptance":
                    continue
                text = _ACCEPT.sub("", text, count=1).strip()
            if current is not None:
                units.append(current.build())
            current = _UnitBuilder(session, len(units), text, i, turn.timestamp)
            current.turn(turn, i)  # a `/skill` command is on the request's own turn
            continue
        if current is None:
            continue
        current.turn(turn, i)
        if turn.text.strip():
            current.answer = turn.text.strip()
        for call in turn.tool_calls:
            current.call(call)
        for result in turn.tool_results:
            current.result(result.output, result.exit_code, result.is_error, result.call_id)
    if current is not None:
        units.append(current.build())
    return [u for u in units if u.last_turn >= from_turn]
