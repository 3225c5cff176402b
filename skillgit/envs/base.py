"""The `Env` contract (see `skillgit.envs`), and the two adapters that plug an environment into a session: its
scorer (`EnvScorer`, what `open_session` passes where a config's `env.scorer` would go) and its student
(`EnvStudent`, wrapped around the session's journaled, metered student).

Judge isolation holds as for any scorer: `EnvScorer` forwards `teacher_reference` and `judge_texts` to the
environment; feedback is the environment's neutral account. A multi-turn run's score comes with its reply (like an
agentic student's verdict), so the loop does not score the final action again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgit.judging import JudgeText
from skillgit.llm.base import Reply, Student
from skillgit.types import Item, Score


class Env:
    """One benchmark. Subclasses set the class attributes and implement `load` and `score`; `run` is one call
    unless overridden. `options` are the project's `env.options` (adapter settings, e.g. `max_turns`)."""

    name: str = ""
    summary: str = ""
    metric: str = ""  # the paper's metric, as reports name it ("exact match (F1 as soft)")
    source: str = ""  # where the dataset comes from and in which format `load` reads it
    seed_skill: str = ""  # the starting skill `skillgit init --env` writes
    options_default: dict[str, Any] = {}  # the `env.options` `skillgit init --env` writes (e.g. max_turns)
    sample: str = ""  # the shipped sample under examples/envs/<name>/ (`skillgit init --env` without --data)

    def __init__(self, options: dict[str, Any] | None = None):
        self.options = dict(options or {})

    def load(self, path: Path) -> list[Item]:
        raise NotImplementedError

    def run(self, student: Student, skill: str, item: Item, sample: int = 0) -> Reply:
        return student.run(skill, item, sample)

    def score(self, item: Item, output: str) -> Score:
        raise NotImplementedError

    def teacher_reference(self, item: Item) -> Any:
        return item.expected

    def judge_texts(self, items: list[Item]) -> list[JudgeText]:
        return []


class EnvScorer:
    """An environment as the loop's `Scorer` (judge isolation forwarded)."""

    def __init__(self, env: Env):
        self.env = env
        self.kind = f"env:{env.name}"

    def __call__(self, item: Item, output: str) -> Score:
        return self.env.score(item, output)

    def teacher_reference(self, item: Item) -> Any:
        return self.env.teacher_reference(item)

    def judge_texts(self, items: list[Item]) -> list[JudgeText]:
        return self.env.judge_texts(items)


class EnvStudent:
    """The student as an environment runs it: `run` hands the item to `env.run`, which calls the inner student
    once per turn. `for_stage` keeps the inner student's ledger stage (gate, test) as `bind_stage` asks."""

    def __init__(self, env: Env, inner: Student):
        self.env = env
        self.inner = inner

    @property
    def id(self) -> str:
        return f"env:{self.env.name}:{self.inner.id}"

    def for_stage(self, stage: str) -> "EnvStudent":
        from skillgit.llm.metering import bind_stage

        return EnvStudent(self.env, bind_stage(self.inner, stage))

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        return self.env.run(self.inner, skill, item, sample)
