"""What the stages of a step need from a run, and nothing of the run itself.

`StepContext` bundles the config, the (metered, cached) student, the scorer, the val evaluator, the ledger and the
event sink. `modes`, `epoch` and `decide` take it instead of the `Trainer`, so each can be used — and tested —
without a run. Randomness comes only from `rng(*parts)`: seeded by `train.seed` and the parts the caller names
(a step, an epoch), never by the run id or the clock, so the same project, seed and replies give the same run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from skillgit.config import Config
from skillgit.errors import raise_if_stop_requested
from skillgit.executor import Executor
from skillgit.llm.base import Student
from skillgit.llm.metering import bind_stage
from skillgit.loop.events import EventSink, Progress, StageStarted
from skillgit.loop.gate import Evaluator
from skillgit.loop.ledger import Ledger
from skillgit.loop.spending import Tracker
from skillgit.loop.stages import Scorer
from skillgit.types import Item


@dataclass(frozen=True)
class StepContext:
    cfg: Config
    student: Student
    scorer: Scorer
    evaluator: Evaluator
    ledger: Ledger
    emit: EventSink
    train: tuple[Item, ...]
    executor: Executor | None = None  # where rollouts run (None: this process's threads)
    own_samples: bool = False  # the run's student calls are keyed by its own salt (`evidence.py`): fresh measurements
    spending: Tracker | None = None  # how the run spends α over its gates (`loop/spending.py`); None: α every time

    def stage(self, step: int | str, name: str) -> None:
        """Announce a stage (the display shows it). A safe point: a stop a signal asked for is raised here."""
        raise_if_stop_requested()
        self.emit(StageStarted(str(step), name))

    def student_for(self, stage: str) -> Student:
        """The student booking its calls under `stage` (each phase binds its own: phases may overlap)."""
        return bind_stage(self.student, stage)

    def progress(self, step: int | str, stage: str):
        def report(done: int, total: int) -> None:
            self.emit(Progress(str(step), stage, done, total))
        return report

    def rng(self, *parts: Any) -> random.Random:
        return random.Random(":".join(str(p) for p in (self.cfg.train.seed, *parts)))

    @property
    def workers(self) -> int:
        return self.cfg.env.workers
