"""Fakes at the seams we own: a scripted teacher (our `LLM` protocol) and a rule-following student.

`ScriptedTeacher` answers each stage from a queue of scripted replies (JSON-able objects, raw strings, or
exceptions to raise) and records every request, so tests can assert what reached the teacher's prompt.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict

from skillgit.llm.base import Reply, Request
from skillgit.types import Item, Usage


def stage_of(request: Request) -> str:
    return request.stage


class ScriptedTeacher:
    def __init__(self, script: dict[str, list] | None = None, default: dict[str, object] | None = None):
        self.script = defaultdict(list, {k: list(v) for k, v in (script or {}).items()})
        self.default = default or {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return "scripted:teacher"

    def prompts(self, stage: str) -> list[str]:
        return ["\n".join(m.content for m in r.messages) for r in self.requests if r.stage == stage]

    def complete(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            queue = self.script[request.stage]
            answer = queue.pop(0) if queue else self.default.get(request.stage)
        if answer is None:
            raise AssertionError(f"no scripted answer for stage {request.stage!r}")
        if isinstance(answer, BaseException):
            raise answer
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Reply(text, Usage(calls=1, prompt_tokens=100, completion_tokens=20), model="scripted")


class KeywordStudent:
    """Answers `expected` when the skill contains the item's metadata keyword, else 'wrong'."""

    def __init__(self):
        self.calls = 0
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return "keyword-student"

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        with self._lock:
            self.calls += 1
        keyword = item.metadata.get("keyword", "")
        text = str(item.expected) if keyword and keyword.lower() in skill.lower() else "wrong"
        return Reply(text, Usage(calls=1, prompt_tokens=10, completion_tokens=2))
